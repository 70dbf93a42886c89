/**
 * `/memories` and its two files: which store a path the model gives names, and how the
 * files are described to it when a path names neither.
 *
 * @module
 */

import type { Store } from '../types.js';
import { MemoryToolError } from './error.js';

/** Whose files they are: the personality speaking and the user spoken to. */
export interface Conversation {
  readonly personality: string;
  readonly user: string;
}

export const ROOT = '/memories';
export const FILES: Record<Store, string> = {
  memory: `${ROOT}/MEMORY.md`,
  user: `${ROOT}/USER.md`,
};

/** `/memories`, one of the two files, or (when allowed) null for another path under it. */
export function resolvePath(
  path: string,
  conversation: Conversation,
  options: { mayBeOther: true },
): Store | 'root' | null;
export function resolvePath(path: string, conversation: Conversation): Store | 'root';
export function resolvePath(
  path: string,
  conversation: Conversation,
  options?: { mayBeOther: true },
): Store | 'root' | null {
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
  if (segments.length === 0) return 'root';
  if (segments.length === 1 && segments[0] === 'MEMORY.md') return 'memory';
  if (segments.length === 1 && segments[0] === 'USER.md') return 'user';
  if (options?.mayBeOther === true) return null;
  throw new MemoryToolError(
    `The path ${path} does not exist. Only ${describeFiles(conversation)} exist; put this in one of them.`,
  );
}

/** The file a path names; the directory itself is refused. */
export function fileOnly(path: string, conversation: Conversation): Store {
  const target = resolvePath(path, conversation);
  if (target === 'root') {
    throw new MemoryToolError(
      `The path ${path} is not a file. ${describeFiles(conversation, true)}`,
    );
  }
  return target;
}

/** The two files and what each holds, as a phrase or (`sentence`) a sentence. */
export function describeFiles(conversation: Conversation, sentence = false): string {
  const files =
    `${FILES.memory} (notes for every conversation with ${conversation.personality}) and ` +
    `${FILES.user} (what you know about ${conversation.user})`;
  return sentence ? `Its files are ${files}.` : files;
}
