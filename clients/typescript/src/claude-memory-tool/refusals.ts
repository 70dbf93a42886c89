/**
 * What a failed command tells: the model, in a {@link MemoryToolError}, when it can fix it (a
 * stale view, an old_str that does not match once, a file that exists or does not, a path the
 * notes' rule refuses, a cap), else the developer, with the client's error thrown on.
 *
 * @module
 */

import {
  ConflictError,
  InvalidInputError,
  MemoryError,
  PreconditionFailedError,
  RefusedError,
} from '../errors.js';
import type { ProblemCode } from '../types.js';
import { MemoryToolError } from './error.js';

/**
 * The SDK's texts for an old_str that does not occur exactly once: `lines` are the lines
 * that hold it in the text the edit was based on (when they do not show the ambiguity the
 * service found, the file is named instead).
 */
export function unmatched(
  path: string,
  old: string,
  lines: readonly number[],
  ambiguous = lines.length > 1,
  cause?: unknown,
): MemoryToolError {
  if (!ambiguous) {
    return new MemoryToolError(
      `No replacement was performed, old_str \`${old}\` did not appear verbatim in ${path}.`,
      { cause },
    );
  }
  const where = lines.length > 1 ? `lines: ${lines.join(', ')}` : path;
  return new MemoryToolError(
    `No replacement was performed. Multiple occurrences of old_str \`${old}\` in ${where}. Please ensure it is unique`,
    { cause },
  );
}

/** A write refused because the file moved on from the version the model viewed. */
export function changedSinceViewed(path: string): MemoryToolError {
  return new MemoryToolError(
    `The file ${path} has changed since you last viewed it (another conversation or a ` +
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
 * What a failed write becomes: a {@link MemoryToolError} (the model's tool result) when the
 * model can fix it, in the reference backend's words where it has them, else the error
 * itself, thrown on to the developer (the service is unreachable, refuses the key, is busy or
 * misconfigured: nothing the model could change).
 */
export function toolError(error: unknown, path: string, renaming: boolean): unknown {
  if (error instanceof MemoryToolError) return error;
  if (isStale(error)) return changedSinceViewed(path);
  const code = codeOf(error);
  if (code === 'note-exists') {
    return new MemoryToolError(
      renaming ? `The destination ${path} already exists` : `File ${path} already exists`,
      { cause: error },
    );
  }
  if (code === 'note-not-found') {
    return new MemoryToolError(`The path ${path} does not exist`, { cause: error });
  }
  if (error instanceof RefusedError || error instanceof ConflictError) {
    // A cap or a collision: the service's detail says what limit or rule the change broke
    // (the cap's text, in bytes; the note already there), which is what the model needs.
    return new MemoryToolError(`Nothing was written: ${error.detail} (${path})`, { cause: error });
  }
  if (error instanceof InvalidInputError) {
    // The model's own path or text (the ids were good enough to read): a name a memory
    // file cannot have, a malformed update.
    return new MemoryToolError(`${path} could not be written: ${error.detail}`, { cause: error });
  }
  return error;
}
