/**
 * What a failed command tells: the model, in a {@link MemoryToolError}, when it can fix it (a
 * stale view, an old_str that does not match once, a cap), else the developer, with the
 * client's error thrown on.
 *
 * @module
 */

import {
  InvalidInputError,
  MemoryError,
  PreconditionFailedError,
  RefusedError,
} from '../errors.js';
import type { ProblemCode, Store } from '../types.js';
import { MemoryToolError } from './error.js';
import { FILES } from './paths.js';

/**
 * The SDK's texts for an old_str that does not occur exactly once: `lines` are where it
 * occurs in the text the edit was based on (when they do not show the ambiguity the service
 * found, the file is named instead).
 */
export function unmatched(
  store: Store,
  old: string,
  lines: readonly number[],
  ambiguous = lines.length > 1,
  cause?: unknown,
): MemoryToolError {
  if (!ambiguous) {
    return new MemoryToolError(
      `No replacement was performed, old_str \`${old}\` did not appear verbatim in ${FILES[store]}.`,
      { cause },
    );
  }
  const where = lines.length > 1 ? `lines: ${lines.join(', ')}` : FILES[store];
  return new MemoryToolError(
    `No replacement was performed. Multiple occurrences of old_str \`${old}\` in ${where}. Please ensure it is unique`,
    { cause },
  );
}

/** A write refused because the file moved on from the version the model viewed. */
export function changedSinceViewed(store: Store): MemoryToolError {
  return new MemoryToolError(
    `The file ${FILES[store]} has changed since you last viewed it (another conversation or a ` +
      'person wrote to it), so nothing was written. View it again, then redo your change.',
  );
}

/** The problem's `code` of a service error, typed as the codes this client knows. */
export function codeOf(error: unknown): ProblemCode | undefined {
  return error instanceof MemoryError ? (error.code as ProblemCode | undefined) : undefined;
}

/** A write guarded by a version the document has moved on from. */
export function isStale(error: unknown): boolean {
  const code = codeOf(error);
  // A 412 without a code (one only HTTP makes) means the same as `stale-version`.
  return (
    code === 'stale-version' || (error instanceof PreconditionFailedError && code === undefined)
  );
}

/**
 * What a failed service call becomes: a {@link MemoryToolError} (the model's tool result) when
 * the model can fix it, else the error itself, thrown on to the developer (the service is
 * unreachable, refuses the key, is busy or misconfigured: nothing the model could change).
 */
export function toolError(error: unknown, store: Store | undefined): unknown {
  if (error instanceof MemoryToolError) return error;
  if (isStale(error) && store !== undefined) return changedSinceViewed(store);
  if (error instanceof RefusedError) {
    // `hard-cap-exceeded` and any other refusal: the service's detail says what limit or
    // rule the change broke (the cap's text, in bytes), which is what the model needs.
    return new MemoryToolError(`Nothing was written: ${error.detail}`, { cause: error });
  }
  if (error instanceof InvalidInputError && codeOf(error) === 'invalid-update') {
    // The update the model's input made is malformed (its own text): it can fix that.
    return new MemoryToolError(`Nothing was written: ${error.detail}`, { cause: error });
  }
  return error;
}
