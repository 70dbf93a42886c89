/**
 * The HTTP layer under {@link MemoryClient}: one `fetch` per attempt, a timeout per attempt,
 * resends after a lost reply, and error responses turned into typed errors.
 *
 * @module
 */

import {
  MemoryError,
  NetworkError,
  TimeoutError,
  UnexpectedResponseError,
  clientProblem,
  errorFromProblem,
  isProblem,
  kindForStatus,
  type ErrorContext,
} from './errors.js';

/** The `fetch` the client calls: the global one, or any function of its shape. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** How the client reaches the service. */
export interface TransportOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:8700` (a path prefix is kept). */
  baseUrl: string;
  /** An API key from `[serve.keys]`, sent as `Authorization: Bearer <key>`. */
  apiKey?: string | undefined;
  /**
   * How long one attempt may take, in ms (default 35,000: above the service's default
   * `request_timeout_ms` of 30 s, so its own 503/504 arrive before the client gives up).
   */
  timeoutMs?: number | undefined;
  /**
   * How many times a call is resent after a lost reply (a network error, a timeout, or a
   * 502/503/504), default 3. Writes are resent with the same `Idempotency-Key`, so they land
   * once; 0 turns resending off.
   */
  maxRetries?: number | undefined;
  /** The first backoff delay in ms (default 200); it doubles per attempt, with jitter. */
  retryDelayMs?: number | undefined;
  /** The longest wait between two attempts in ms, `Retry-After` included (default 10,000). */
  maxRetryDelayMs?: number | undefined;
  /** The `fetch` to call (default: the global `fetch`). */
  fetch?: FetchLike | undefined;
  /** Headers sent with every request (a tracing header, say). */
  headers?: Record<string, string> | undefined;
}

/** One request of the API. */
export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** The path under the base URL, segments already encoded: `/v1/...`. */
  path: string;
  query?: Record<string, string | number | boolean | null | undefined> | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  /** Set on writes: sent as `Idempotency-Key`, the same on every resend. */
  idempotencyKey?: string | undefined;
  /** Statuses besides 2xx that are answers rather than errors (304 for `If-None-Match`). */
  acceptStatuses?: readonly number[] | undefined;
  /** Aborts the call, between attempts too. */
  signal?: AbortSignal | undefined;
}

/** A response the API gave, parsed. */
export interface ApiResponse<T> {
  status: number;
  body: T;
  headers: Headers;
  /** `Idempotent-Replayed: true`: the service answered a repeat with the first response. */
  replayed: boolean;
  /** How many requests the call sent. */
  attempts: number;
}

const RESEND_STATUSES = new Set([502, 503, 504]);

/** Sends requests, resending after lost replies; shared by every part of a client. */
export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly fetchImpl: FetchLike;
  private readonly extraHeaders: Record<string, string>;

  constructor(options: TransportOptions) {
    if (typeof options.baseUrl !== 'string' || options.baseUrl.length === 0) {
      throw new TypeError('MemoryClient: baseUrl is required, e.g. "http://127.0.0.1:8700"');
    }
    // Validates the URL now rather than on the first call.
    new URL(options.baseUrl);
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.timeoutMs = nonNegative(options.timeoutMs, 35_000, 'timeoutMs');
    this.maxRetries = nonNegative(options.maxRetries, 3, 'maxRetries');
    this.retryDelayMs = nonNegative(options.retryDelayMs, 200, 'retryDelayMs');
    this.maxRetryDelayMs = nonNegative(options.maxRetryDelayMs, 10_000, 'maxRetryDelayMs');
    const globalFetch: FetchLike | undefined =
      typeof fetch === 'function' ? (input, init) => fetch(input, init) : undefined;
    const fetchImpl = options.fetch ?? globalFetch;
    if (fetchImpl === undefined) {
      throw new TypeError('MemoryClient: no global fetch here; pass options.fetch');
    }
    this.fetchImpl = fetchImpl;
    this.extraHeaders = { ...options.headers };
  }

  /** Sends `spec`, resending after a lost reply, and returns the parsed answer or throws. */
  async request<T>(spec: RequestSpec): Promise<ApiResponse<T>> {
    const url = this.url(spec);
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      ...this.extraHeaders,
      ...spec.headers,
    };
    if (this.apiKey !== undefined) headers['authorization'] = `Bearer ${this.apiKey}`;
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    let body: string | undefined;
    if (spec.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(spec.body);
    }
    const context: ErrorContext = {
      method: spec.method,
      path: spec.path,
      ...(spec.idempotencyKey === undefined ? {} : { idempotencyKey: spec.idempotencyKey }),
    };

    let attempt = 0;
    for (;;) {
      attempt += 1;
      const canResend = attempt <= this.maxRetries;
      const outcome = await this.attempt<T>(url, spec, headers, body, {
        ...context,
        attempts: attempt,
      });
      if (outcome.response !== undefined) return { ...outcome.response, attempts: attempt };
      const error = outcome.error;
      if (!canResend || !outcome.resend) throw error;
      await sleep(this.delayBefore(attempt, error.retryAfterSeconds), spec.signal);
    }
  }

  private url(spec: RequestSpec): string {
    const url = new URL(this.baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  /** One send: a response, or the error it ended in and whether a resend may fix it. */
  private async attempt<T>(
    url: string,
    spec: RequestSpec,
    headers: Record<string, string>,
    body: string | undefined,
    context: ErrorContext,
  ): Promise<
    | { response: Omit<ApiResponse<T>, 'attempts'> }
    | { response?: undefined; error: MemoryError; resend: boolean }
  > {
    spec.signal?.throwIfAborted();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    const onCallerAbort = (): void => controller.abort(spec.signal?.reason);
    spec.signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      let response: Response;
      let text: string;
      try {
        response = await this.fetchImpl(url, {
          method: spec.method,
          headers,
          ...(body === undefined ? {} : { body }),
          signal: controller.signal,
        });
        // The body is part of the reply: a connection lost while reading it is a lost reply.
        text = await response.text();
      } catch (cause) {
        spec.signal?.throwIfAborted();
        if (timedOut) {
          const problem = clientProblem(
            'timeout',
            0,
            'Timed out',
            `no response to ${spec.method} ${spec.path} within ${this.timeoutMs} ms` +
              writeHint(spec.idempotencyKey),
            true,
          );
          return { error: new TimeoutError(problem, { ...context, cause }), resend: true };
        }
        const problem = clientProblem(
          'network',
          0,
          'Network error',
          `no response to ${spec.method} ${spec.path}: ${describe(cause)}` +
            writeHint(spec.idempotencyKey),
          true,
        );
        return { error: new NetworkError(problem, { ...context, cause }), resend: true };
      }

      const requestId = response.headers.get('x-request-id') ?? undefined;
      const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'));
      const responseContext: ErrorContext = {
        ...context,
        ...(requestId === undefined ? {} : { requestId }),
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
      };
      const ok = response.ok || (spec.acceptStatuses ?? []).includes(response.status);
      const parsed = parseJson(text);
      if (ok) {
        if (text.length > 0 && parsed === undefined) {
          const problem = clientProblem(
            'unexpected-response',
            response.status,
            'Unexpected response',
            `${spec.method} ${spec.path} answered ${response.status} with a body that is not JSON`,
            false,
          );
          return { error: new UnexpectedResponseError(problem, responseContext), resend: false };
        }
        return {
          response: {
            status: response.status,
            body: parsed as T,
            headers: response.headers,
            replayed: response.headers.get('idempotent-replayed') === 'true',
          },
        };
      }
      const error = errorFor(response.status, parsed, text, spec, responseContext);
      return { error, resend: RESEND_STATUSES.has(response.status) };
    } finally {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** The wait before attempt `attempt + 1`: the server's `Retry-After`, else backoff. */
  private delayBefore(attempt: number, retryAfterSeconds: number | undefined): number {
    if (retryAfterSeconds !== undefined) {
      return Math.min(retryAfterSeconds * 1000, this.maxRetryDelayMs);
    }
    const ceiling = Math.min(this.retryDelayMs * 2 ** (attempt - 1), this.maxRetryDelayMs);
    // Half fixed, half random: concurrent clients that failed together do not resend together.
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }
}

function errorFor(
  status: number,
  parsed: unknown,
  text: string,
  spec: RequestSpec,
  context: ErrorContext,
): MemoryError {
  if (isProblem(parsed)) return errorFromProblem(parsed, context);
  const kind = kindForStatus(status);
  const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  const detail = `${spec.method} ${spec.path} answered ${status} without a problem document${
    excerpt.length > 0 ? `: ${excerpt}` : ''
  }`;
  if (kind === undefined) {
    return new UnexpectedResponseError(
      clientProblem('unexpected-response', status, 'Unexpected response', detail, false),
      context,
    );
  }
  return errorFromProblem(
    clientProblem(kind, status, `HTTP ${status}`, detail, status >= 502),
    context,
  );
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `Retry-After` as seconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - Date.now()) / 1000);
}

function writeHint(idempotencyKey: string | undefined): string {
  return idempotencyKey === undefined
    ? ''
    : `; the write may have landed: resend it with Idempotency-Key ${idempotencyKey} to land it at most once`;
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? ` (${cause.cause.message})` : '';
    return `${cause.message}${inner}`;
  }
  return String(cause);
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) {
    throw new TypeError(`MemoryClient: ${name} must be a number >= 0, got ${String(value)}`);
  }
  return value;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
