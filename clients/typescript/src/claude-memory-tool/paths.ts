/**
 * `/memories` and its files: the name under it a path gives, and which files are the pair.
 * Every other file is a note beside the personality's MEMORY.md.
 *
 * @module
 */

import type { Store } from '../types.js';
import { MemoryToolError } from './error.js';

export const ROOT = '/memories';

/** The two files that are the pair, by their name under `/memories`. */
export const PAIR: Readonly<Record<string, Store>> = { 'MEMORY.md': 'memory', 'USER.md': 'user' };

/** The store a file's name belongs to: the pair's own, or the memory's for a note. */
export function storeOf(name: string): Store {
  return PAIR[name] ?? 'memory';
}

/** Whether a file's name is a note's rather than one of the pair. */
export function isNote(name: string): boolean {
  return PAIR[name] === undefined;
}

/**
 * The name under `/memories` a path gives (`''` for `/memories` itself), `.` and `..`
 * resolved; refused in the SDK reference backend's words when it is not under `/memories`.
 */
export function nameOf(path: string): string {
  if (typeof path !== 'string' || !(path === ROOT || path.startsWith(`${ROOT}/`))) {
    throw new MemoryToolError(`Path must start with ${ROOT}, got: ${String(path)}`);
  }
  const segments: string[] = [];
  for (const segment of path.slice(ROOT.length).split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.pop() === undefined) {
        throw new MemoryToolError(`Path ${path} would escape ${ROOT} directory`);
      }
      continue;
    }
    segments.push(segment);
  }
  return segments.join('/');
}
