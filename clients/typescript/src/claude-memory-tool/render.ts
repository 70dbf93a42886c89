/**
 * What a `view` and a `str_replace` show the model, in the format of the SDK's reference
 * backend: a folder's listing with sizes, a file with line numbers, the snippet around an
 * edit.
 *
 * @module
 */

// The reference implementation's format: six-wide right-aligned line numbers, then a tab;
// a listing two levels deep.
const LINE_NUMBER_WIDTH = 6;
const LEVELS = 2;

/**
 * `view` of a folder (`''`: `/memories`): its files and folders two levels deep, names sorted
 * at each level and each folder before what it holds, as the reference backend lists a
 * directory; a folder's size is the sum of its files'. `files` are every file's size by name.
 */
export function renderListing(
  files: ReadonlyMap<string, number>,
  folder: string,
  shown: string,
): string {
  const base = folder === '' ? '' : `${folder}/`;
  const under = [...files.keys()].filter((name) => base === '' || name.startsWith(base));
  const children = new Map<string, Map<string, number>>();
  for (const name of under) {
    const parts = name.slice(base.length).split('/');
    for (let depth = 1; depth <= Math.min(parts.length, LEVELS); depth++) {
      const level = parts.slice(0, depth - 1).join('/');
      const child = `${parts[depth - 1] ?? ''}${depth < parts.length ? '/' : ''}`;
      const sizes = children.get(level) ?? new Map<string, number>();
      sizes.set(child, (sizes.get(child) ?? 0) + (files.get(name) ?? 0));
      children.set(level, sizes);
    }
  }
  const total = under.reduce((sum, name) => sum + (files.get(name) ?? 0), 0);
  const lines = [`${formatFileSize(total)}\t${shown}`];
  const collect = (level: string): void => {
    const entries = [...(children.get(level) ?? new Map<string, number>())];
    entries.sort(([a], [b]) => compare(a.replace(/\/$/, ''), b.replace(/\/$/, '')));
    for (const [child, size] of entries) {
      const relative = level === '' ? child : `${level}/${child}`;
      lines.push(`${formatFileSize(size)}\t${shown}/${relative}`);
      if (child.endsWith('/')) collect(relative.slice(0, -1));
    }
  };
  collect('');
  return [
    `Here're the files and directories up to ${LEVELS} levels deep in ${shown}, excluding hidden items and node_modules:`,
    ...lines,
  ].join('\n');
}

/** `view` of a file: its text with line numbers, within `range` when given (checked). */
export function renderFile(
  path: string,
  text: string,
  range: [number, number] | undefined,
): string {
  // As the SDK's reference backend: every `\n` splits, and a two-number view_range is sliced
  // as given, start clamped to 1, -1 meaning the end.
  const lines = text.split('\n');
  let first = 1;
  let shown = lines;
  if (range !== undefined) {
    const start = Math.max(1, range[0]) - 1;
    first = start + 1;
    shown = lines.slice(start, range[1] === -1 ? lines.length : range[1]);
  }
  const numbered = shown.map((line, index) => `${numberLine(first + index)}\t${line}`);
  return `Here's the content of ${path} with line numbers:\n${numbered.join('\n')}`;
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

/** The order of `Array.prototype.sort()` without a comparator: by UTF-16 code units. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The reference implementation's sizes: 0B, 512B, 1.5K, 2M. */
function formatFileSize(bytes: number): string {
  if (bytes === 0) return '0B';
  const units = ['B', 'K', 'M', 'G'];
  const exponent = Math.min(Math.floor(Math.log(bytes) / Math.log(1024)), units.length - 1);
  const size = bytes / 1024 ** exponent;
  return (size % 1 === 0 ? size.toString() : size.toFixed(1)) + units[exponent];
}

/** The size of a text in UTF-8 bytes, as a listing shows it. */
export function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}
