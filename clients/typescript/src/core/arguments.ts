/**
 * What every call checks of its arguments before anything is sent: plain JavaScript can pass
 * anything where the types ask for an object.
 *
 * @module
 */

import { invalidInput } from '../errors.js';

/** Per-call options every method takes. */
export interface CallOptions {
  /** Aborts the call (between resends too). */
  signal?: AbortSignal | undefined;
}

/**
 * The options object of a call from plain JavaScript checked: undefined is no options, and
 * anything else that is not an object is refused before anything is sent.
 */
export function optionsObject<T extends object>(options: T | undefined, method: string): T {
  if (options === undefined) return {} as T;
  if (typeof options !== 'object' || options === null) {
    throw invalidInput(`${method}: options must be an object, got ${describe(options)}`);
  }
  return options;
}

/** The first argument of a call from plain JavaScript checked: an object, else refused. */
export function argsObject<T extends object>(args: T, method: string): T {
  if (typeof args !== 'object' || args === null) {
    throw invalidInput(`${method}: its first argument must be an object, got ${describe(args)}`);
  }
  return args;
}

/** A value as an error message names it: a string quoted, an object not spelled out. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}
