/**
 * Writes: each carries an `Idempotency-Key` (the caller's or a fresh UUID) so that the
 * transport's resends land once, and a guarded one the version it was based on.
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { ApiResponse, Transport } from '../transport.js';
import type { Version, WriteSurface } from '../types.js';
import { describe, type CallOptions } from './arguments.js';

/** Per-call options of a write. */
export interface WriteOptions extends CallOptions {
  /**
   * The write's name, the same on every resend (1 to 128 visible ASCII characters). Default: a
   * fresh `crypto.randomUUID()` per call. Give your own to make a retry of the whole call (after
   * a crash, say) land once too: a turn id, a tool_use id.
   */
  idempotencyKey?: string | undefined;
}

/** What every write returns besides the service's answer. */
export interface WriteMeta {
  /** The `Idempotency-Key` the write carried. */
  readonly idempotencyKey: string;
  /** The service answered with the response of an earlier request with the same key. */
  readonly idempotentReplayed: boolean;
}

/** A write's answer and {@link WriteMeta}. */
export type WriteResult<T> = T & WriteMeta;

/** Options of a guarded document write. */
export interface DocumentWriteOptions extends WriteOptions {
  /** The version the change was based on (`DocumentView.version`, an ETag), or `*`. */
  ifMatch?: Version | undefined;
  session?: string | undefined;
  surface?: WriteSurface | undefined;
}

/**
 * Sends a write keyed on `spec.idempotencyKey` (checked first) or a fresh UUID, the same key
 * on every resend; its answer comes back with {@link WriteMeta}.
 */
export async function write<T>(
  transport: Transport,
  spec: {
    method: 'POST' | 'PUT' | 'DELETE';
    path: string;
    body?: unknown;
    headers?: Record<string, string>;
    idempotencyKey: string | undefined;
    signal: AbortSignal | undefined;
  },
): Promise<WriteResult<T>> {
  if (
    spec.idempotencyKey !== undefined &&
    (typeof spec.idempotencyKey !== 'string' || !isIdempotencyKey(spec.idempotencyKey))
  ) {
    throw invalidInput(
      `idempotencyKey must be 1 to 128 visible ASCII characters, got ${describe(spec.idempotencyKey)}`,
    );
  }
  const idempotencyKey = spec.idempotencyKey ?? crypto.randomUUID();
  const response: ApiResponse<T> = await transport.request<T>({ ...spec, idempotencyKey });
  return Object.assign(response.body as object, {
    idempotencyKey,
    idempotentReplayed: response.replayed,
  }) as WriteResult<T>;
}

const SESSION = /^[^\u0000-\u001f\u007f-\u009f]{1,256}$/;

/** A session the service records with a write: 1 to 256 characters, none a control character. */
export function isSessionId(session: string): boolean {
  return SESSION.test(session);
}

const IDEMPOTENCY_KEY = /^[!-~]{1,128}$/;

/** An `Idempotency-Key` the service takes: 1 to 128 visible ASCII characters. */
export function isIdempotencyKey(key: string): boolean {
  return IDEMPOTENCY_KEY.test(key);
}

/** The `session` and `surface` a document write's body carries, each only when given. */
export function sessionFields(options: DocumentWriteOptions): {
  session?: string;
  surface?: WriteSurface;
} {
  const fields: { session?: string; surface?: WriteSurface } = {};
  if (options.session !== undefined) fields.session = options.session;
  if (options.surface !== undefined) fields.surface = options.surface;
  return fields;
}

/** The `If-Match` header of a write guarded by `ifMatch`; none when it is not guarded. */
export function ifMatchHeaders(
  ifMatch: Version | undefined,
  method: string,
): Record<string, string> {
  return ifMatch === undefined ? {} : { 'if-match': quoteTag(ifMatch, method, 'ifMatch') };
}

/** An entity tag as `If-Match` takes it: `*`, or the version in quotes. */
export function quoteTag(version: Version, method: string, option: string): string {
  // A version is what the service handed out: a non-empty string with no quote or control
  // character. Anything else (undefined from plain JavaScript, a number) would be sent as a
  // tag that matches nothing, e.g. `"undefined"`.
  if (typeof version !== 'string' || !/^(?:W\/)?"?[!#-~]+"?$/.test(version)) {
    throw invalidInput(
      `${method}: ${option} must be a version (a document's \`version\`) or '*', got ${describe(version)}`,
    );
  }
  if (version === '*' || /^(W\/)?".*"$/.test(version)) return version;
  return `"${version}"`;
}
