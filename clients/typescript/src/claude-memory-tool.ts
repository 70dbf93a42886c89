/**
 * A backend for Claude's memory tool (`memory_20250818`) over the agent-memory service, for
 * `@anthropic-ai/sdk`'s `betaMemoryTool`. Import it from `agent-memory/claude-memory-tool`;
 * the SDK is an optional peer dependency of this package, needed by this entry point only.
 *
 * `/memories` holds exactly two files: `/memories/MEMORY.md` (the personality's notes, shared
 * by all its conversations) and `/memories/USER.md` (what is known about this user, shared by
 * every personality). Every write is one `POST /v1/sync` guarded by the version this backend
 * last viewed, keyed on the `tool_use` id so a resent call lands once.
 *
 * @module
 */

import { betaMemoryTool, type MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';
import type {
  BetaRunnableTool,
  BetaToolRunContext,
} from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type {
  BetaMemoryTool20250818,
  BetaMemoryTool20250818Command,
  BetaMemoryTool20250818CreateCommand,
  BetaMemoryTool20250818DeleteCommand,
  BetaMemoryTool20250818InsertCommand,
  BetaMemoryTool20250818RenameCommand,
  BetaMemoryTool20250818StrReplaceCommand,
  BetaMemoryTool20250818ViewCommand,
  BetaToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/beta';

import { MemoryClient, type MemoryClientOptions } from './client.js';
import { MemoryError, PreconditionFailedError, RefusedError } from './errors.js';
import type { MemoryUpdate, ProblemCode, Store, Version, WriteSurface } from './types.js';

/** The error a command ends in: its message is the tool result text the model reads. */
export class MemoryToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MemoryToolError';
  }
}

/** Options of {@link AgentMemoryToolBackend}. */
export interface AgentMemoryToolOptions {
  /** A client, or the options to make one. */
  client: MemoryClient | MemoryClientOptions;
  /** The personality speaking: `/memories/MEMORY.md` is its memory. */
  personality: string;
  /** The user spoken to: `/memories/USER.md` is their profile. */
  user: string;
  /** The conversation id, recorded in the revisions the tool's writes make. */
  session?: string | undefined;
}

/** A `tool_use` block of the memory tool: its id and input (as `message.content` holds it). */
export interface MemoryToolUse {
  id: string;
  input: unknown;
}

interface Viewed {
  version: Version;
  /** The text at `version`, when known (after a write it is recomputed and checked). */
  text: string | undefined;
}

const ROOT = '/memories';
const FILES: Record<Store, string> = { memory: `${ROOT}/MEMORY.md`, user: `${ROOT}/USER.md` };
// The reference implementation's format: six-wide right-aligned line numbers, then a tab.
const LINE_NUMBER_WIDTH = 6;

/**
 * Claude's memory tool over the agent-memory service, for one conversation (a personality and
 * a user).
 *
 * ```ts
 * import Anthropic from '@anthropic-ai/sdk';
 * import { AgentMemoryToolBackend } from 'agent-memory/claude-memory-tool';
 *
 * const memory = new AgentMemoryToolBackend({
 *   client: { baseUrl: 'http://127.0.0.1:8700' },
 *   personality: 'ada',
 *   user: 'grace',
 * });
 * const runner = new Anthropic().beta.messages.toolRunner({
 *   model: 'claude-sonnet-4-5',
 *   max_tokens: 1024,
 *   tools: [memory.tool()],
 *   messages: [{ role: 'user', content: 'Remember that I prefer metric units.' }],
 * });
 * ```
 *
 * What each command means here:
 * - `view /memories`: the two files with their sizes; `view` of a file: its text with line
 *   numbers (`view_range` honoured). The version viewed guards the next write to that file.
 * - `create`: replaces the file's whole text (create or overwrite).
 * - `str_replace`: an `edit` update, checked first against the text viewed.
 * - `insert`: the new text computed from the text viewed, written as a `replace`.
 * - `delete` of a file: clears it (a `replace` with ""): a revision that can be reverted,
 *   not a purge. The files themselves always exist.
 * - `rename`: refused; the two files have fixed names.
 * - Any other path: refused, with where to write instead.
 * - A `tool_use` run again (a retried turn, by this backend or a fresh one in another
 *   process) writes nothing again: the model is told the call was already carried out.
 */
export class AgentMemoryToolBackend {
  /** The client the backend calls. */
  readonly client: MemoryClient;
  readonly personality: string;
  readonly user: string;
  private readonly session: string | undefined;
  private readonly viewed = new Map<Store, Viewed>();

  constructor(options: AgentMemoryToolOptions) {
    this.client =
      options.client instanceof MemoryClient ? options.client : new MemoryClient(options.client);
    this.personality = options.personality;
    this.user = options.user;
    this.session = options.session;
  }

  /**
   * The tool for `tools: [...]` of `client.beta.messages.toolRunner` (or any runner calling
   * `run(input, context)`): `betaMemoryTool` over this backend, whose writes are keyed on the
   * `tool_use` id the runner passes in `context.toolUse`.
   */
  tool(
    extraProps?: Omit<BetaMemoryTool20250818, 'type' | 'name'>,
  ): BetaRunnableTool<BetaMemoryTool20250818Command> {
    const tool = betaMemoryTool(this.handlers(), extraProps);
    return {
      ...tool,
      run: (command: BetaMemoryTool20250818Command, context?: BetaToolRunContext) =>
        this.execute(command, context?.toolUse.id),
    };
  }

  /**
   * The handlers `betaMemoryTool(handlers)` takes. The SDK calls handlers without the
   * `tool_use` id, so their writes get a fresh idempotency key each (still landing once across
   * the client's own resends); prefer {@link tool} or {@link runToolUse}, which key on the id.
   */
  handlers(): MemoryToolHandlers {
    return {
      view: (command) => this.execute(command),
      create: (command) => this.execute(command),
      str_replace: (command) => this.execute(command),
      insert: (command) => this.execute(command),
      delete: (command) => this.execute(command),
      rename: (command) => this.execute(command),
    };
  }

  /**
   * Runs one `tool_use` block of the memory tool and returns its `tool_result` block, for a
   * loop of your own: the write is keyed `memory-tool:<id>`, so running the same block twice
   * (a retried turn) writes once. Never throws: failures are `is_error` results.
   */
  async runToolUse(toolUse: MemoryToolUse): Promise<BetaToolResultBlockParam> {
    try {
      const content = await this.execute(toolUse.input, toolUse.id);
      return { type: 'tool_result', tool_use_id: toolUse.id, content };
    } catch (error) {
      return {
        type: 'tool_result',
        tool_use_id: toolUse.id,
        content: `Error: ${error instanceof Error ? error.message : String(error)}`,
        is_error: true,
      };
    }
  }

  /**
   * Runs one command; `toolUseId` keys its write (`memory-tool:<id>`). Throws
   * {@link MemoryToolError} with the text the model should read.
   */
  async execute(input: unknown, toolUseId?: string): Promise<string> {
    const command = parseCommand(input);
    switch (command.command) {
      case 'view':
        return this.view(command);
      case 'create':
        return this.create(command, toolUseId);
      case 'str_replace':
        return this.str_replace(command, toolUseId);
      case 'insert':
        return this.insert(command, toolUseId);
      case 'delete':
        return this.delete(command, toolUseId);
      case 'rename':
        return this.rename(command);
    }
  }

  /** `view`: the directory listing, or a file with line numbers. */
  async view(command: BetaMemoryTool20250818ViewCommand): Promise<string> {
    const target = this.resolve(command.path);
    if (target === 'root') {
      const prefetch = await this.read();
      const memoryBytes = utf8Length(prefetch.memory.text);
      const userBytes = utf8Length(prefetch.user.text);
      return [
        `Here're the files and directories up to 2 levels deep in ${ROOT}, excluding hidden items and node_modules:`,
        `${formatFileSize(memoryBytes + userBytes)}\t${ROOT}`,
        `${formatFileSize(memoryBytes)}\t${FILES.memory}`,
        `${formatFileSize(userBytes)}\t${FILES.user}`,
      ].join('\n');
    }
    const store = target;
    const prefetch = await this.read();
    const document = prefetch[store];
    this.viewed.set(store, { version: document.version, text: document.text });
    const lines = document.text.split('\n');
    let first = 1;
    let shown = lines;
    if (command.view_range !== undefined) {
      const [start, end] = checkViewRange(command.view_range, lines.length);
      first = start;
      shown = lines.slice(start - 1, end === -1 ? lines.length : end);
    }
    const numbered = shown.map((line, index) => `${numberLine(first + index)}\t${line}`);
    return `Here's the content of ${FILES[store]} with line numbers:\n${numbered.join('\n')}`;
  }

  /** `create`: the file's whole new text (create or overwrite). */
  async create(command: BetaMemoryTool20250818CreateCommand, toolUseId?: string): Promise<string> {
    const store = this.fileOnly(command.path);
    const before = await this.viewedText(store);
    const done = await this.write(
      store,
      [{ action: 'replace', store, content: command.file_text }],
      toolUseId,
      replaced(command.file_text),
    );
    if (done !== undefined) return done;
    return before.trim().length === 0
      ? `File created successfully at: ${FILES[store]}`
      : `File ${FILES[store]} has been overwritten with the new text (the previous text is kept in its history).`;
  }

  /** `str_replace`: replace the one occurrence of `old_str` in the text viewed. */
  async str_replace(
    command: BetaMemoryTool20250818StrReplaceCommand,
    toolUseId?: string,
  ): Promise<string> {
    const store = this.fileOnly(command.path);
    const text = await this.viewedText(store);
    const path = FILES[store];
    if (command.old_str.length === 0) {
      throw new MemoryToolError(
        `No replacement was performed, old_str is empty: give the text to replace in ${path}.`,
      );
    }
    const lines = occurrenceLines(text, command.old_str);
    if (lines.length === 0) {
      throw new MemoryToolError(
        `No replacement was performed, old_str \`${command.old_str}\` did not appear verbatim in ${path}.`,
      );
    }
    if (lines.length > 1) {
      throw new MemoryToolError(
        `No replacement was performed. Multiple occurrences of old_str \`${command.old_str}\` in lines: ${lines.join(', ')}. Please ensure it is unique`,
      );
    }
    const index = text.indexOf(command.old_str);
    const newText =
      text.slice(0, index) + command.new_str + text.slice(index + command.old_str.length);
    const done = await this.write(
      store,
      [{ action: 'edit', store, old: command.old_str, new: command.new_str }],
      toolUseId,
      newText,
    );
    if (done !== undefined) return done;
    const newLines = newText.split('\n');
    const changed = (lines[0] ?? 1) - 1;
    const start = Math.max(0, changed - 2);
    const end = Math.min(newLines.length, changed + 3);
    const snippet = newLines
      .slice(start, end)
      .map((line, offset) => `${numberLine(start + offset + 1)}\t${line}`);
    return `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${snippet.join('\n')}`;
  }

  /** `insert`: `insert_text` after line `insert_line` (0: at the top) of the text viewed. */
  async insert(command: BetaMemoryTool20250818InsertCommand, toolUseId?: string): Promise<string> {
    const store = this.fileOnly(command.path);
    const text = await this.viewedText(store);
    const lines = text.split('\n');
    if (
      !Number.isInteger(command.insert_line) ||
      command.insert_line < 0 ||
      command.insert_line > lines.length
    ) {
      throw new MemoryToolError(
        `Invalid \`insert_line\` parameter: ${command.insert_line}. It should be within the range of lines of the file: [0, ${lines.length}]`,
      );
    }
    lines.splice(command.insert_line, 0, command.insert_text.replace(/\n$/, ''));
    const newText = lines.join('\n');
    const done = await this.write(
      store,
      [{ action: 'replace', store, content: newText }],
      toolUseId,
      replaced(newText),
    );
    if (done !== undefined) return done;
    return `The file ${FILES[store]} has been edited.`;
  }

  /**
   * `delete` of a file: clears its text (a revision that can be reverted; nothing is purged).
   * The two files always exist, so they are not removed.
   */
  async delete(command: BetaMemoryTool20250818DeleteCommand, toolUseId?: string): Promise<string> {
    const target = this.resolve(command.path);
    if (target === 'root') {
      throw new MemoryToolError(`Cannot delete the ${ROOT} directory itself`);
    }
    await this.viewedText(target);
    const done = await this.write(
      target,
      [{ action: 'replace', store: target, content: '' }],
      toolUseId,
      '',
    );
    if (done !== undefined) return done;
    return (
      `Cleared ${FILES[target]}: its text is now empty. The file itself stays (${ROOT} always holds ` +
      `MEMORY.md and USER.md), and its previous text is kept in its history, where a person can restore it.`
    );
  }

  /** `rename`: refused; the two files have fixed names. */
  async rename(command: BetaMemoryTool20250818RenameCommand): Promise<string> {
    const from = this.resolve(command.old_path, { mayBeOther: true });
    this.resolve(command.new_path, { mayBeOther: true });
    if (from === 'root') throw new MemoryToolError(`Cannot rename the ${ROOT} directory itself`);
    throw new MemoryToolError(
      `Cannot rename ${command.old_path}: ${ROOT} holds exactly two files with fixed names, ` +
        `${this.describeFiles()}. Write into one of them instead (view it, then str_replace, insert or create).`,
    );
  }

  /** `/memories`, one of the two files, or (when allowed) null for another path under it. */
  private resolve(path: string, options: { mayBeOther: true }): Store | 'root' | null;
  private resolve(path: string): Store | 'root';
  private resolve(path: string, options?: { mayBeOther: true }): Store | 'root' | null {
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
      `The path ${path} does not exist. Only ${this.describeFiles()} exist; put this in one of them.`,
    );
  }

  private fileOnly(path: string): Store {
    const target = this.resolve(path);
    if (target === 'root') {
      throw new MemoryToolError(`The path ${path} is not a file. ${this.describeFiles(true)}`);
    }
    return target;
  }

  private describeFiles(sentence = false): string {
    const files =
      `${FILES.memory} (notes for every conversation with ${this.personality}) and ` +
      `${FILES.user} (what you know about ${this.user})`;
    return sentence ? `Its files are ${files}.` : files;
  }

  private async read(): Promise<Awaited<ReturnType<MemoryClient['prefetch']>>> {
    try {
      return await this.client.prefetch({ personality: this.personality, user: this.user });
    } catch (error) {
      throw toolError(error, undefined);
    }
  }

  /**
   * The text the model viewed of a file. Viewed implicitly first when it never was; when only
   * the version is known, the text is read again and must still be at that version.
   */
  private async viewedText(store: Store): Promise<string> {
    const viewed = this.viewed.get(store);
    if (viewed?.text !== undefined) return viewed.text;
    const document = (await this.read())[store];
    if (viewed !== undefined && document.version !== viewed.version) {
      this.viewed.delete(store);
      throw changedSinceViewed(store);
    }
    this.viewed.set(store, { version: document.version, text: document.text });
    return document.text;
  }

  /**
   * One guarded, keyed sync; remembers the version it left and the text expected at it.
   * Returns undefined once written, or the result text for a call the service says was
   * already carried out (its key already wrote, for the request as first sent).
   */
  private async write(
    store: Store,
    updates: MemoryUpdate[],
    toolUseId: string | undefined,
    expectedText: string,
  ): Promise<string | undefined> {
    const viewed = this.viewed.get(store);
    if (viewed === undefined) throw new Error('internal: write before view');
    const surface: WriteSurface = 'tool';
    let report;
    try {
      report = await this.client.sync(
        {
          personality: this.personality,
          user: this.user,
          updates,
          ifMatch: { [store]: viewed.version },
          surface,
          ...(this.session === undefined ? {} : { session: this.session }),
        },
        { idempotencyKey: idempotencyKeyFor(toolUseId) },
      );
    } catch (error) {
      return this.refused(error, store, updates, toolUseId);
    }
    const document = report.documents.find((entry) => entry.store === store);
    if (document === undefined) {
      this.viewed.delete(store);
      return undefined;
    }
    if (document.replayed === true && toolUseId !== undefined) {
      // A server that no longer holds the first answer replays the key's write from the
      // receipts kept with the document: its report is of the file back then.
      return this.alreadyCarriedOut(store, toolUseId);
    }
    // The service normalises some writes (a replace is stored trimmed and newline-terminated):
    // keep the expected text only when its hash is the one the service reports.
    const text =
      (await sha256Hex(expectedText)) === document.sha256_after ? expectedText : undefined;
    this.viewed.set(store, { version: document.version_after, text });
    return undefined;
  }

  /**
   * The result of a call whose write landed when it first ran. What this backend viewed may
   * not be the file now, so the next command reads it anew.
   */
  private alreadyCarriedOut(store: Store, toolUseId: string): string {
    this.viewed.delete(store);
    return (
      `This memory tool call (tool_use ${toolUseId}) was already carried out: its change to ` +
      `${FILES[store]} was written when the call first ran, so nothing was written again. ` +
      'View the file to see its text now.'
    );
  }

  /**
   * What a write the service refused tells the model, told apart by the problem's `code`:
   * the result text of a call already carried out (`key-reused` on the `tool_use` id's key),
   * else the {@link MemoryToolError} to throw.
   */
  private refused(
    error: unknown,
    store: Store,
    updates: readonly MemoryUpdate[],
    toolUseId: string | undefined,
  ): string {
    const code = codeOf(error);
    if (code === 'key-reused' && toolUseId !== undefined) {
      // The tool_use id's key already wrote, for this call as first sent (the tool's `run`
      // repeated by a retried turn, perhaps from another process, after the file changed):
      // the change is in, and doing it again against the text now would apply it twice.
      return this.alreadyCarriedOut(store, toolUseId);
    }
    const edit = updates.find((update) => update.action === 'edit');
    if (isStale(error) || code === 'no-match' || code === 'ambiguous-match') {
      // What this backend viewed is not the file's text now: read it again next time.
      this.viewed.delete(store);
    }
    if (code === 'no-match' && edit !== undefined) {
      throw new MemoryToolError(
        `No replacement was performed, old_str \`${edit.old}\` did not appear verbatim in ${FILES[store]}.`,
        { cause: error },
      );
    }
    if (code === 'ambiguous-match' && edit !== undefined) {
      throw new MemoryToolError(
        `No replacement was performed. Multiple occurrences of old_str \`${edit.old}\` in ${FILES[store]}. Please ensure it is unique`,
        { cause: error },
      );
    }
    throw toolError(error, store);
  }
}

/** The text a `replace` update leaves: trimmed and newline-terminated, or empty when blank. */
function replaced(content: string): string {
  const trimmed = content.trim();
  return trimmed.length === 0 ? '' : `${trimmed}\n`;
}

function changedSinceViewed(store: Store): MemoryToolError {
  return new MemoryToolError(
    `The file ${FILES[store]} has changed since you last viewed it (another conversation or a ` +
      'person wrote to it), so nothing was written. View it again, then redo your change.',
  );
}

/** The problem's `code` of a service error, typed as the codes this client knows. */
function codeOf(error: unknown): ProblemCode | undefined {
  return error instanceof MemoryError ? (error.code as ProblemCode | undefined) : undefined;
}

/** A write guarded by a version the document has moved on from. */
function isStale(error: unknown): boolean {
  const code = codeOf(error);
  // A 412 without a code (one only HTTP makes) means the same as `stale-version`.
  return (
    code === 'stale-version' || (error instanceof PreconditionFailedError && code === undefined)
  );
}

function toolError(error: unknown, store: Store | undefined): MemoryToolError {
  if (error instanceof MemoryToolError) return error;
  if (isStale(error) && store !== undefined) return changedSinceViewed(store);
  if (error instanceof RefusedError) {
    // `hard-cap-exceeded` and any other refusal: the service's detail says what limit or
    // rule the change broke (the cap's text, in bytes), which is what the model needs.
    return new MemoryToolError(`Nothing was written: ${error.detail}`, { cause: error });
  }
  if (error instanceof MemoryError) {
    return new MemoryToolError(`The memory service failed (${error.kind}): ${error.detail}`, {
      cause: error,
    });
  }
  return new MemoryToolError(
    `The memory service failed: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

const KEY = /^[!-~]{1,128}$/;

/** `memory-tool:<tool_use id>`, or a fresh UUID when there is no (usable) id. */
export function idempotencyKeyFor(toolUseId: string | undefined): string {
  if (toolUseId !== undefined) {
    const key = `memory-tool:${toolUseId}`;
    if (KEY.test(key)) return key;
  }
  return crypto.randomUUID();
}

function checkViewRange(range: unknown, lineCount: number): [number, number] {
  if (
    !Array.isArray(range) ||
    range.length !== 2 ||
    !range.every((value) => typeof value === 'number' && Number.isInteger(value))
  ) {
    throw new MemoryToolError('Invalid `view_range`. It should be a list of two integers.');
  }
  const [start, end] = range as [number, number];
  const shown = `[${start}, ${end}]`;
  if (start < 1 || start > lineCount) {
    throw new MemoryToolError(
      `Invalid \`view_range\`: ${shown}. Its first element \`${start}\` should be within the range of lines of the file: [1, ${lineCount}]`,
    );
  }
  if (end !== -1 && end < start) {
    throw new MemoryToolError(
      `Invalid \`view_range\`: ${shown}. Its second element \`${end}\` should be larger or equal than its first \`${start}\``,
    );
  }
  if (end > lineCount) {
    throw new MemoryToolError(
      `Invalid \`view_range\`: ${shown}. Its second element \`${end}\` should be smaller than the number of lines in the file: \`${lineCount}\``,
    );
  }
  return [start, end];
}

/** The (1-based) lines where `needle` starts, each once, for every occurrence in `text`. */
function occurrenceLines(text: string, needle: string): number[] {
  const lines = new Set<number>();
  let occurrences = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    occurrences += 1;
    lines.add(text.slice(0, at).split('\n').length);
  }
  const sorted = [...lines].sort((a, b) => a - b);
  // Two occurrences on one line still make old_str ambiguous: name that line twice.
  if (occurrences > 1 && sorted.length === 1) return [sorted[0] ?? 1, sorted[0] ?? 1];
  return sorted;
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

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The tool input checked, so a malformed one gets a clear message rather than a crash. */
function parseCommand(input: unknown): BetaMemoryTool20250818Command {
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
