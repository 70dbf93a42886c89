/**
 * What a `view` and a `str_replace` show the model, in the format of the SDK's reference
 * backend: the directory listing with sizes, a file with line numbers, the snippet around an
 * edit.
 *
 * @module
 */

import type { Store } from '../types.js';
import { FILES, ROOT } from './paths.js';

// The reference implementation's format: six-wide right-aligned line numbers, then a tab.
const LINE_NUMBER_WIDTH = 6;

/** `view /memories`: the directory and its two files, each with its size. */
export function renderDirectory(memoryText: string, userText: string): string {
  const memoryBytes = utf8Length(memoryText);
  const userBytes = utf8Length(userText);
  return [
    `Here're the files and directories up to 2 levels deep in ${ROOT}, excluding hidden items and node_modules:`,
    `${formatFileSize(memoryBytes + userBytes)}\t${ROOT}`,
    `${formatFileSize(memoryBytes)}\t${FILES.memory}`,
    `${formatFileSize(userBytes)}\t${FILES.user}`,
  ].join('\n');
}

/** `view` of a file: its text with line numbers, within `range` when given (checked). */
export function renderFile(
  store: Store,
  text: string,
  range: [number, number] | undefined,
): string {
  // As the SDK's reference backend: every `\n` splits (an empty file is one empty line 1),
  // and a two-number view_range is sliced as given, start clamped to 1, -1 meaning the end.
  const lines = text.split('\n');
  let first = 1;
  let shown = lines;
  if (range !== undefined) {
    const start = Math.max(1, range[0]) - 1;
    first = start + 1;
    shown = lines.slice(start, range[1] === -1 ? lines.length : range[1]);
  }
  const numbered = shown.map((line, index) => `${numberLine(first + index)}\t${line}`);
  return `Here's the content of ${FILES[store]} with line numbers:\n${numbered.join('\n')}`;
}

/** What a `str_replace` answers: the lines around `line` (1-based) of the new text. */
export function renderEdited(newText: string, line: number): string {
  const newLines = newText.split('\n');
  const changed = line - 1;
  const start = Math.max(0, changed - 2);
  const end = Math.min(newLines.length, changed + 3);
  const snippet = newLines
    .slice(start, end)
    .map((text, offset) => `${numberLine(start + offset + 1)}\t${text}`);
  return `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${snippet.join('\n')}`;
}

function numberLine(line: number): string {
  return String(line).padStart(LINE_NUMBER_WIDTH, ' ');
}

/** The reference implementation's sizes: 0B, 512B, 1.5K, 2M. */
function formatFileSize(bytes: number): string {
  if (bytes === 0) return '0B';
  const units = ['B', 'K', 'M', 'G'];
  const exponent = Math.min(Math.floor(Math.log(bytes) / Math.log(1024)), units.length - 1);
  const size = bytes / 1024 ** exponent;
  return (size % 1 === 0 ? size.toString() : size.toFixed(1)) + units[exponent];
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}
