/**
 * The text a command leaves, worked out as the SDK's reference backend works it out, so the
 * backend checks a `str_replace` against the text the model viewed and writes what an
 * `insert` leaves.
 *
 * @module
 */

import { MemoryToolError } from './error.js';

/** The text with the first occurrence of `old` replaced by `replacement`; undefined without one. */
export function replacedFirst(text: string, old: string, replacement: string): string | undefined {
  const index = text.indexOf(old);
  return index === -1
    ? undefined
    : text.slice(0, index) + replacement + text.slice(index + old.length);
}

/**
 * The text with `insertText` at line `insertLine` (0: at the top), as the reference backend
 * inserts it: every `\n` splits, so a final newline counts a last, empty line.
 */
export function inserted(text: string, insertLine: number, insertText: string): string {
  const lines = text.split('\n');
  if (!Number.isInteger(insertLine) || insertLine < 0 || insertLine > lines.length) {
    throw new MemoryToolError(
      `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range of lines of the file: [0, ${lines.length}]`,
    );
  }
  lines.splice(insertLine, 0, insertText.replace(/\n$/, ''));
  return lines.join('\n');
}

/**
 * The (1-based) lines that hold `needle`, as the reference backend finds an `old_str`: a line
 * once however often it holds it. A needle spanning lines, which no line holds, is found where
 * it starts (the reference never finds one).
 */
export function matchingLines(text: string, needle: string): number[] {
  const lines: number[] = [];
  if (needle.includes('\n')) {
    for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
      lines.push(text.slice(0, at).split('\n').length);
    }
    return lines;
  }
  text.split('\n').forEach((line, index) => {
    if (line.includes(needle)) lines.push(index + 1);
  });
  return lines;
}

/** How many times `needle` occurs in `text`, overlapping occurrences included (as the service counts). */
export function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) count++;
  return count;
}
