/**
 * The model's input checked before anything is read or written, so that a malformed one gets
 * a message it can act on rather than a crash.
 *
 * @module
 */

import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta';

import { MemoryToolError } from './error.js';

/** The tool input checked, so a malformed one gets a clear message rather than a crash. */
export function parseCommand(input: unknown): BetaMemoryTool20250818Command {
  if (typeof input !== 'object' || input === null) {
    throw new MemoryToolError('The memory tool input must be an object with a `command`.');
  }
  const record = input as Record<string, unknown>;
  const strings = (...names: string[]): void => {
    for (const name of names) {
      if (typeof record[name] !== 'string') {
        throw new MemoryToolError(
          `The \`${String(record['command'])}\` command needs \`${name}\` as a string.`,
        );
      }
    }
  };
  switch (record['command']) {
    case 'view':
      strings('path');
      break;
    case 'create':
      strings('path', 'file_text');
      break;
    case 'str_replace':
      strings('path', 'old_str', 'new_str');
      break;
    case 'insert':
      strings('path', 'insert_text');
      if (typeof record['insert_line'] !== 'number') {
        throw new MemoryToolError('The `insert` command needs `insert_line` as a number.');
      }
      break;
    case 'delete':
      strings('path');
      break;
    case 'rename':
      strings('old_path', 'new_path');
      break;
    default:
      throw new MemoryToolError(
        `Unknown memory tool command ${JSON.stringify(record['command'])}: use view, create, ` +
          'str_replace, insert, delete or rename.',
      );
  }
  return input as BetaMemoryTool20250818Command;
}

/**
 * The range a `view` shows, checked as the SDK's reference backend does: only a list of
 * integers is accepted (its types allow nothing else), and a list that is not two long, like
 * an absent one, shows the whole file.
 */
export function checkViewRange(range: unknown): [number, number] | undefined {
  if (range === undefined || range === null) return undefined;
  if (
    !Array.isArray(range) ||
    !range.every((value) => typeof value === 'number' && Number.isInteger(value))
  ) {
    throw new MemoryToolError(
      `Invalid \`view_range\` parameter: ${JSON.stringify(range)}. It should be a list of two integers: the first and last line to show (-1 for the end).`,
    );
  }
  return range.length === 2 ? (range as [number, number]) : undefined;
}
