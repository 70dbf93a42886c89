/**
 * The text a command leaves, worked out here as the service works it out, so the backend can
 * keep the text at the version a write leaves (held to the service's hash of it) and check a
 * `str_replace` against the text the model viewed.
 *
 * @module
 */

import { MemoryToolError } from './error.js';

/** The text a `replace` update leaves: trimmed and newline-terminated, or empty when blank. */
export function replaced(content: string): string {
  const trimmed = content.trim();
  return trimmed.length === 0 ? '' : `${trimmed}\n`;
}

/** The text with the first occurrence of `old` replaced by `replacement`; undefined without one. */
export function replacedFirst(text: string, old: string, replacement: string): string | undefined {
  const index = text.indexOf(old);
  return index === -1
    ? undefined
    : text.slice(0, index) + replacement + text.slice(index + old.length);
}

/** The text with `insertText` after line `insertLine` (0: at the top), as `insert` leaves it. */
export function inserted(text: string, insertLine: number, insertText: string): string {
  // The SDK's reference backend counts lines without the empty tail a final newline
  // leaves, so a file of four lines ending in a newline takes insert_line 0 to 4.
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (!Number.isInteger(insertLine) || insertLine < 0 || insertLine > lines.length) {
    throw new MemoryToolError(
      `Invalid \`insert_line\` parameter: ${insertLine}. It should be within the range [0, ${lines.length}].`,
    );
  }
  lines.splice(insertLine, 0, insertText.replace(/\n+$/, ''));
  return `${lines.join('\n')}\n`;
}

/**
 * The (1-based) line each occurrence of `needle` starts on, overlapping ones included, as the
 * SDK's reference backend lists them (two on one line name it twice).
 */
export function occurrenceLines(text: string, needle: string): number[] {
  const lines: number[] = [];
  if (needle.length === 0) return lines;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    lines.push(text.slice(0, at).split('\n').length);
  }
  return lines;
}

/** The hex SHA-256 of the text's UTF-8, as the service reports a document's (`sha256_after`). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
