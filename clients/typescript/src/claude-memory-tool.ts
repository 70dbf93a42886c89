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
 * The backend ({@link AgentMemoryToolBackend}, here) runs the commands and keeps what the model
 * viewed; its rooms are under `claude-memory-tool/`: `input` checks the model's input, `paths`
 * maps `/memories` onto the two stores, `edits` works out the text a command leaves, `render`
 * is what a view shows, `refusals` what a failed write tells the model (or throws on), and
 * `error` the {@link MemoryToolError} they throw.
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

import { clientFrom, type MemoryClient, type MemoryClientOptions } from './client.js';
import { isIdempotencyKey } from './core/writes.js';
import type { MemoryUpdate, Store, Version, WriteSurface } from './types.js';
import {
  inserted,
  occurrenceLines,
  replaced,
  replacedFirst,
  sha256Hex,
} from './claude-memory-tool/edits.js';
import { MemoryToolError } from './claude-memory-tool/error.js';
import { checkViewRange, parseCommand } from './claude-memory-tool/input.js';
import { FILES, ROOT, describeFiles, fileOnly, resolvePath } from './claude-memory-tool/paths.js';
import {
  changedSinceViewed,
  codeOf,
  isStale,
  toolError,
  unmatched,
} from './claude-memory-tool/refusals.js';
import { renderDirectory, renderEdited, renderFile } from './claude-memory-tool/render.js';

export { MemoryToolError };

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
 *   model: 'claude-sonnet-5-5',
 *   max_tokens: 1024,
 *   tools: [memory.tool()],
 *   messages: [{ role: 'user', content: 'Remember that I prefer metric units.' }],
 * });
 * const final = await runner.runUntilDone(); // not runner.done(): that waits for another loop
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
    this.client = clientFrom(options.client);
    this.personality = options.personality;
    this.user = options.user;
    this.session = options.session;
  }

  /**
   * The tool for `tools: [...]` of `client.beta.messages.toolRunner` (or any runner calling
   * `run(input, context)`): `betaMemoryTool` over this backend, whose writes are keyed on the
   * `tool_use` id the runner passes in `context.toolUse`. `run` throws a
   * {@link MemoryToolError} for what the model can fix and the client's {@link MemoryError}
   * for a failure of the deployment; note that the SDK's runner turns anything `run` throws
   * into an `is_error` result (use {@link runToolUse} in a loop of your own to get the
   * deployment failures thrown).
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
   * (a retried turn) writes once. What the model can fix (a bad path or range, old_str not
   * found, a stale view, a cap) is an `is_error` result; a failure of the deployment (the
   * service unreachable, unauthorized, busy, ...) is thrown, as the client's
   * {@link MemoryError}, for the developer to handle.
   */
  async runToolUse(toolUse: MemoryToolUse): Promise<BetaToolResultBlockParam> {
    try {
      const content = await this.execute(toolUse.input, toolUse.id);
      return { type: 'tool_result', tool_use_id: toolUse.id, content };
    } catch (error) {
      if (!(error instanceof MemoryToolError)) throw error;
      return {
        type: 'tool_result',
        tool_use_id: toolUse.id,
        content: `Error: ${error.message}`,
        is_error: true,
      };
    }
  }

  /**
   * Runs one command; `toolUseId` keys its write (`memory-tool:<id>`). Throws
   * {@link MemoryToolError} with the text the model should read, or the client's
   * {@link MemoryError} for a failure of the deployment (unreachable, unauthorized, busy, ...).
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
    const target = resolvePath(command.path, this);
    if (target === 'root') {
      const prefetch = await this.read();
      return renderDirectory(prefetch.memory.text, prefetch.user.text);
    }
    const store = target;
    const prefetch = await this.read();
    const document = prefetch[store];
    this.viewed.set(store, { version: document.version, text: document.text });
    return renderFile(store, document.text, checkViewRange(command.view_range));
  }

  /** `create`: the file's whole new text (create or overwrite). */
  async create(command: BetaMemoryTool20250818CreateCommand, toolUseId?: string): Promise<string> {
    const store = fileOnly(command.path, this);
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
    const store = fileOnly(command.path, this);
    const text = await this.viewedText(store);
    const path = FILES[store];
    if (command.old_str.length === 0) {
      throw new MemoryToolError(
        `No replacement was performed, old_str is empty: give the text to replace in ${path}.`,
      );
    }
    // With a tool_use id the call may be a retry whose first run already landed: the text
    // viewed now no longer holds old_str, yet the right answer is "already carried out", which
    // only the service (holding the id's key) can give. So the edit is sent and a no-match or
    // ambiguous-match comes back from the service; without an id the check is made here.
    const lines = occurrenceLines(text, command.old_str);
    if (toolUseId === undefined && lines.length !== 1) {
      throw unmatched(store, command.old_str, lines);
    }
    const newText = replacedFirst(text, command.old_str, command.new_str);
    const done = await this.write(
      store,
      [{ action: 'edit', store, old: command.old_str, new: command.new_str }],
      toolUseId,
      newText,
      text,
    );
    if (done !== undefined) return done;
    if (newText === undefined) return `The memory file has been edited.`;
    return renderEdited(newText, lines[0] ?? 1);
  }

  /** `insert`: `insert_text` after line `insert_line` (0: at the top) of the text viewed. */
  async insert(command: BetaMemoryTool20250818InsertCommand, toolUseId?: string): Promise<string> {
    const store = fileOnly(command.path, this);
    const text = await this.viewedText(store);
    const newText = inserted(text, command.insert_line, command.insert_text);
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
    const target = resolvePath(command.path, this);
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
    const from = resolvePath(command.old_path, this, { mayBeOther: true });
    resolvePath(command.new_path, this, { mayBeOther: true });
    if (from === 'root') throw new MemoryToolError(`Cannot rename the ${ROOT} directory itself`);
    throw new MemoryToolError(
      `Cannot rename ${command.old_path}: ${ROOT} holds exactly two files with fixed names, ` +
        `${describeFiles(this)}. Write into one of them instead (view it, then str_replace, insert or create).`,
    );
  }

  private async read(): Promise<Awaited<ReturnType<MemoryClient['prefetch']>>> {
    // Reading fails only for reasons of the deployment (unreachable, unauthorized, busy):
    // thrown on to the developer, never a tool result.
    return this.client.prefetch({ personality: this.personality, user: this.user });
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
    expectedText: string | undefined,
    basedOn?: string,
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
      return this.refused(error, store, updates, toolUseId, basedOn);
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
      expectedText !== undefined && (await sha256Hex(expectedText)) === document.sha256_after
        ? expectedText
        : undefined;
    this.viewed.set(store, { version: document.version_after, text });
    return undefined;
  }

  /**
   * The result of a call whose write landed when it first ran. It does not say which file
   * that write changed: a retried call may name another path than the first run did. What
   * this backend viewed may not be the file now, so the next command reads it anew.
   */
  private alreadyCarriedOut(store: Store, toolUseId: string): string {
    this.viewed.delete(store);
    return (
      `This memory tool call (tool_use ${toolUseId}) was already carried out when it first ran, ` +
      'so nothing was written again. View the files to see their text now.'
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
    basedOn: string | undefined,
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
    if ((code === 'no-match' || code === 'ambiguous-match') && edit !== undefined) {
      // The lines are those of the text the edit was based on, which the version guard kept
      // equal to the service's; when they do not show the ambiguity, the file is named.
      const lines = code === 'no-match' ? [] : occurrenceLines(basedOn ?? '', edit.old);
      throw unmatched(store, edit.old, lines, code === 'ambiguous-match', error);
    }
    throw toolError(error, store);
  }
}

/** `memory-tool:<tool_use id>`, or a fresh UUID when there is no (usable) id. */
export function idempotencyKeyFor(toolUseId: string | undefined): string {
  if (toolUseId !== undefined) {
    const key = `memory-tool:${toolUseId}`;
    if (isIdempotencyKey(key)) return key;
  }
  return crypto.randomUUID();
}
