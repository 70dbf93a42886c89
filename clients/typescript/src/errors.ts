/**
 * One error class per kind of the service's error classification, each carrying the RFC 9457
 * problem document the service answered with, plus the client's own failures (the network,
 * a timeout, a response that is not the API's).
 *
 * @module
 */

import type { Problem, ProblemCode, ProblemKind, Version } from './types.js';

/** Context the client knows about the call that failed. */
export interface ErrorContext {
  /** The HTTP method and path of the request. */
  method?: string;
  path?: string;
  /** The `Idempotency-Key` the write carried: resend with it to land the write at most once. */
  idempotencyKey?: string;
  /** The server's `X-Request-Id`, for its access log. */
  requestId?: string;
  /** Seconds the server asked to wait before a retry (`Retry-After`). */
  retryAfterSeconds?: number;
  /** How many requests the call sent before giving up. */
  attempts?: number;
  cause?: unknown;
}

/** Every error the client throws. `kind` names the class for code that switches on it. */
export class MemoryError extends Error {
  /** The problem's kind, or the client's own (`network`, `timeout`, `unexpected-response`). */
  readonly kind: ProblemKind | 'network' | 'timeout' | 'unexpected-response';
  /** The HTTP status; 0 when no response came. */
  readonly status: number;
  /** The problem document the service sent (or one the client made for its own failures). */
  readonly problem: Problem;
  /**
   * Which error this is within its kind (the problem's `code`: `no-match`,
   * `ambiguous-match`, `hard-cap-exceeded`, `stale-version`, `identity-taken`, `key-reused`,
   * ...; see {@link ProblemCode}): what to tell refusals apart by, rather than `detail`.
   * Undefined for problems only HTTP has and for the client's own failures.
   */
  readonly code: string | undefined;
  /** Whether sending the same request again later can succeed. */
  readonly retryable: boolean;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly requestId: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly attempts: number | undefined;

  constructor(problem: Problem, context: ErrorContext = {}) {
    super(
      `${problem.title}: ${problem.detail}`,
      context.cause === undefined ? undefined : { cause: context.cause },
    );
    this.name = new.target.name;
    this.kind = problem.kind;
    this.status = problem.status;
    this.problem = problem;
    this.code = typeof problem.code === 'string' ? problem.code : undefined;
    this.retryable = problem.retryable;
    this.method = context.method;
    this.path = context.path;
    this.idempotencyKey = context.idempotencyKey;
    this.requestId = context.requestId;
    this.retryAfterSeconds = context.retryAfterSeconds;
    this.attempts = context.attempts;
  }

  /** The problem's `detail`: what went wrong and what to do, in words for people. */
  get detail(): string {
    return this.problem.detail;
  }

  /** The problem's `title`: a short summary of the kind. */
  get title(): string {
    return this.problem.title;
  }
}

/** 400/413/415/422/428: the request is malformed (bad id, field, update, body, missing If-Match). */
export class InvalidInputError extends MemoryError {}

/** 412: a document moved on since the version the write was guarded by (`stale-version`). */
export class PreconditionFailedError extends MemoryError {
  /** The document's version now: read it again, redo the change, and guard with this. */
  get currentVersion(): Version | undefined {
    return this.problem.current_version ?? undefined;
  }

  /** The document's layout path. */
  get document(): string | undefined {
    return this.problem.document ?? undefined;
  }
}

/** 409: the change conflicts with the state (an identity linked to another user: `identity-taken`). */
export class ConflictError extends MemoryError {}

/**
 * 422: the service refused the change; `code` says why: `hard-cap-exceeded`, `no-match` or
 * `ambiguous-match` (an edit's `old` text found nowhere, or more than once), `key-reused` (an
 * `Idempotency-Key` already used for another request).
 */
export class RefusedError extends MemoryError {}

/** 503: too many requests or writers at once; retry after `retryAfterSeconds`. */
export class BusyError extends MemoryError {}

/** 503: a provider (database, Redis) is unreachable; nothing was written. */
export class UnavailableError extends MemoryError {}

/**
 * 504: a write was sent and no answer came in time; it may have landed. Repeat it only with
 * the same idempotency key (`idempotencyKey`), which lands it at most once.
 */
export class OutcomeUnknownError extends MemoryError {}

/** 500: one of a call's two documents was written and the other was not; the detail names which. */
export class PartiallyAppliedError extends MemoryError {}

/** 500: stored data could not be read (a document, a receipt log). */
export class CorruptError extends MemoryError {}

/** 500: the service's configuration does not allow the call. */
export class ConfigError extends MemoryError {}

/** 401: no API key, or one the service does not know. */
export class UnauthorizedError extends MemoryError {}

/** 403: the key lacks the scope, user or personality the call needs. */
export class ForbiddenError extends MemoryError {}

/** 404: no such route, identity link or kept revision. */
export class NotFoundError extends MemoryError {}

/** 405: the route does not take this method. */
export class MethodNotAllowedError extends MemoryError {}

/**
 * No response: the connection failed or was reset. For a write the outcome is unknown:
 * resend it with the same `idempotencyKey` to land it at most once.
 */
export class NetworkError extends MemoryError {}

/** No response within the client's `timeoutMs`. For a write, as {@link NetworkError}. */
export class TimeoutError extends NetworkError {}

/** A response that is not the API's (a proxy's HTML error page, a body that is not JSON). */
export class UnexpectedResponseError extends MemoryError {}

type ErrorClass = new (problem: Problem, context?: ErrorContext) => MemoryError;

const classByKind: Record<ProblemKind, ErrorClass> = {
  'invalid-input': InvalidInputError,
  'precondition-failed': PreconditionFailedError,
  conflict: ConflictError,
  refused: RefusedError,
  busy: BusyError,
  unavailable: UnavailableError,
  'outcome-unknown': OutcomeUnknownError,
  'partially-applied': PartiallyAppliedError,
  corrupt: CorruptError,
  config: ConfigError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  'not-found': NotFoundError,
  'method-not-allowed': MethodNotAllowedError,
};

/** The error for a problem document: the class of its kind. */
export function errorFromProblem(problem: Problem, context: ErrorContext = {}): MemoryError {
  const errorClass = classByKind[problem.kind] ?? UnexpectedResponseError;
  return new errorClass(problem, context);
}

/** The kind HTTP implies for a status, for error responses that carry no problem document. */
export function kindForStatus(status: number): ProblemKind | undefined {
  switch (status) {
    case 400:
    case 413:
    case 415:
    case 428:
      return 'invalid-input';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not-found';
    case 405:
      return 'method-not-allowed';
    case 409:
      return 'conflict';
    case 412:
      return 'precondition-failed';
    case 502:
    case 503:
      return 'unavailable';
    case 504:
      return 'outcome-unknown';
    default:
      return undefined;
  }
}

/** A problem document made by the client, for failures where the service sent none. */
export function clientProblem(
  kind: ProblemKind | 'network' | 'timeout' | 'unexpected-response',
  status: number,
  title: string,
  detail: string,
  retryable: boolean,
): Problem {
  return {
    type: `urn:agent-memory:problem:${kind}`,
    title,
    status,
    detail,
    // The client's own kinds are not in the service's enum; the class still says which.
    kind: kind as ProblemKind,
    retryable,
  };
}

/** An {@link InvalidInputError} raised by the client itself: nothing was sent. */
export function invalidInput(detail: string): InvalidInputError {
  return new InvalidInputError(clientProblem('invalid-input', 400, 'Invalid input', detail, false));
}

/** Whether a value looks like an RFC 9457 problem document of this API. */
export function isProblem(value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record['kind'] === 'string' &&
    typeof record['status'] === 'number' &&
    typeof record['detail'] === 'string' &&
    typeof record['title'] === 'string'
  );
}
