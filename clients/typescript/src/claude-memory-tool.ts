/**
 * A backend for Claude's memory tool (`memory_20250818`) over the agent-memory service, for
 * `@anthropic-ai/sdk`'s `betaMemoryTool`. Import it from `agent-memory/claude-memory-tool`;
 * the SDK is an optional peer dependency of this package, needed by this entry point only.
 *
 * `/memories/MEMORY.md` is the personality's memory (shared by all its conversations),
 * `/memories/USER.md` what is known about this user (shared by every personality), and every
 * other file under `/memories` a note beside the personality's MEMORY.md. Every write is one
 * `POST /v1/sync` guarded by the version this backend last viewed, keyed on the `tool_use`
 * id so a resent call lands once.
 *
 * The backend ({@link AgentMemoryToolBackend}, here) runs the commands and keeps what the model
 * viewed; its rooms are under `claude-memory-tool/`: `input` checks the model's input, `paths`
 * maps `/memories` onto the pair and the notes, `edits` works out the text a command leaves,
 * `render` is what a view shows, `refusals` what a failed write tells the model (or throws
 * on), and `error` the {@link MemoryToolError} they throw.
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
import { note } from './core/paths.js';
import { isIdempotencyKey } from './core/writes.js';
import { InvalidInputError, NotFoundError } from './errors.js';
import type { IfMatch, MemoryUpdate, PrefetchView, Version, WriteSurface } from './types.js';
import { inserted, matchingLines, occurrences, replacedFirst } from './claude-memory-tool/edits.js';
import { MemoryToolError } from './claude-memory-tool/error.js';
import { checkViewRange, parseCommand } from './claude-memory-tool/input.js';
import { ROOT, isNote, nameOf, storeOf } from './claude-memory-tool/paths.js';
import {
  changedSinceViewed,
  codeOf,
  isStale,
  toolError,
  unmatched,
} from './claude-memory-tool/refusals.js';
import {
  renderEdited,
  renderFile,
  renderListing,
  utf8Length,
} from './claude-memory-tool/render.js';

export { MemoryToolError };

/** Options of {@link AgentMemoryToolBackend}. */
export interface AgentMemoryToolOptions {
  /** A client, or the options to make one. */
  client: MemoryClient | MemoryClientOptions;
  /** The personality speaking: `/memories/MEMORY.md` is its memory, other files its notes. */
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
  /** The text at `version`, when known (after a write it is read again when needed). */
  text: string | undefined;
}

/** Every file under `/memories` with its size, and each file's version, as read. */
interface Tree {
  files: Map<string, number>;
  versions: Map<string, Version>;
}

/** The files under `folder` (`''`: all), by name. */
function under(tree: Tree, folder: string): string[] {
  return [...tree.files.keys()]
    .filter((name) => folder === '' || name.startsWith(`${folder}/`))
    .sort();
}

/** Whether `name` is a folder: a path some file is under (`''` always is). */
function isFolder(tree: Tree, name: string): boolean {
  return name === '' || under(tree, name).length > 0;
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
 * What each command means here (results and refusals are the SDK's reference filesystem
 * backend's, word for word, but where the README lists a difference):
 * - `view` of a folder (`/memories` too): its files and folders two levels deep with their
 *   sizes (a folder's: the sum of its files'); of a file: its text with line numbers
 *   (`view_range` honoured). The version viewed guards the next write to that file.
 * - `create`: a note's `create`; one of the pair is written while it is empty. Refused when
 *   the file exists.
 * - `str_replace`: an `edit` update, checked first against the text viewed.
 * - `insert`: the new text computed from the text viewed, written as a `replace`.
 * - `delete`: a note's `delete` (a folder: every note in it, in one call); one of the pair is
 *   emptied. Each is a revision that can be reverted, not a purge.
 * - `rename`: a note's `rename` (a folder: each note, a call each); to or from the pair, the
 *   text is written to the target and the source emptied, in one call.
 * - A file exists while it holds text, a folder while it holds a file.
 * - A `tool_use` run again (a retried turn, by this backend or a fresh one in another
 *   process) writes nothing again: the model is told the call was already carried out.
 */
export class AgentMemoryToolBackend {
  /** The client the backend calls. */
  readonly client: MemoryClient;
  readonly personality: string;
  readonly user: string;
  private readonly session: string | undefined;
  private readonly viewed = new Map<string, Viewed>();
  /** The layout path of the MEMORY.md the notes sit beside, once read. */
  private memoryPath: string | undefined;

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
   * Runs one command; `toolUseId` keys its writes (`memory-tool:<id>`). Throws
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
        return this.rename(command, toolUseId);
    }
  }

  /** `view`: a folder's listing, or a file with line numbers. */
  async view(command: BetaMemoryTool20250818ViewCommand): Promise<string> {
    const name = nameOf(command.path);
    const range = checkViewRange(command.view_range);
    if (name !== '') {
      const current = await this.current(name);
      if (current !== undefined) {
        this.viewed.set(name, current);
        return renderFile(command.path, current.text, range);
      }
    }
    const tree = await this.tree();
    if (!isFolder(tree, name)) {
      throw new MemoryToolError(
        `The path ${command.path} does not exist. Please provide a valid path.`,
      );
    }
    return renderListing(tree.files, name, command.path);
  }

  /** `create`: a new file; refused when it exists. */
  async create(command: BetaMemoryTool20250818CreateCommand, toolUseId?: string): Promise<string> {
    const name = nameOf(command.path);
    if (command.file_text.trim().length === 0) {
      throw new MemoryToolError(
        `File ${command.path} was not created: its text is empty, and a memory file holds text ` +
          '(one left empty no longer exists). Create it with what it should hold.',
      );
    }
    const exists = `File ${command.path} already exists`;
    const store = storeOf(name);
    const update: MemoryUpdate = isNote(name)
      ? { action: 'create', store, note: name, content: command.file_text }
      : { action: 'replace', store, content: command.file_text };
    const tree = await this.tree();
    let done: string | undefined;
    if (tree.files.has(name) && toolUseId !== undefined) {
      // This call may be a retry whose first run created the file: only the service, holding
      // its key, can tell. The write is sent so that it can, guarded by a version no file
      // has: refused (the file exists) when it is not a retry.
      done = await this.write(name, command.path, [update], guard(name, '-'), toolUseId, {
        stale: exists,
      });
    } else if (tree.files.has(name) || isFolder(tree, name)) {
      throw new MemoryToolError(exists);
    } else {
      const ifMatch = isNote(name) ? {} : guard(name, tree.versions.get(name) ?? '');
      done = await this.write(name, command.path, [update], ifMatch, toolUseId);
    }
    if (done !== undefined) return done;
    return `File created successfully at: ${command.path}`;
  }

  /** `str_replace`: replace the one line's occurrence of `old_str` in the text viewed. */
  async str_replace(
    command: BetaMemoryTool20250818StrReplaceCommand,
    toolUseId?: string,
  ): Promise<string> {
    const name = nameOf(command.path);
    const { version, text } = await this.viewedText(name, command.path);
    const store = storeOf(name);
    const noteField = isNote(name) ? { note: name } : {};
    if (command.old_str.length === 0) {
      throw new MemoryToolError('No replacement was performed: `old_str` must not be empty.');
    }
    // Found as the reference backend finds it: the lines that hold old_str (one spanning
    // lines, which no line holds, by where it occurs). With a tool_use id the call may be a
    // retry whose first run already landed (old_str gone since), which only the service
    // (holding the id's key) can tell: the edit is sent and its no-match or ambiguous-match
    // comes back from the service; without an id the check is made here.
    const lines = matchingLines(text, command.old_str);
    if (toolUseId === undefined && lines.length !== 1) {
      throw unmatched(command.path, command.old_str, lines);
    }
    const newText = replacedFirst(text, command.old_str, command.new_str);
    // Held once on its line but more than once in the text (twice on that line): the
    // reference replaces the first, which an edit (one occurrence) cannot say.
    const update: MemoryUpdate =
      newText !== undefined && lines.length === 1 && occurrences(text, command.old_str) > 1
        ? { action: 'replace', store, ...noteField, content: newText }
        : { action: 'edit', store, ...noteField, old: command.old_str, new: command.new_str };
    const done = await this.write(name, command.path, [update], guard(name, version), toolUseId, {
      basedOn: text,
    });
    if (done !== undefined) return done;
    if (newText === undefined) return `The memory file has been edited.`;
    return renderEdited(newText, lines[0] ?? 1);
  }

  /** `insert`: `insert_text` at line `insert_line` (0: at the top) of the text viewed. */
  async insert(command: BetaMemoryTool20250818InsertCommand, toolUseId?: string): Promise<string> {
    const name = nameOf(command.path);
    const { version, text } = await this.viewedText(name, command.path);
    const newText = inserted(text, command.insert_line, command.insert_text);
    const store = storeOf(name);
    const noteField = isNote(name) ? { note: name } : {};
    const done = await this.write(
      name,
      command.path,
      [{ action: 'replace', store, ...noteField, content: newText }],
      guard(name, version),
      toolUseId,
    );
    if (done !== undefined) return done;
    return `The file ${command.path} has been edited.`;
  }

  /**
   * `delete` of a file or a folder's files: revisions that can be reverted, not a purge (one
   * of the pair is emptied).
   */
  async delete(command: BetaMemoryTool20250818DeleteCommand, toolUseId?: string): Promise<string> {
    const name = nameOf(command.path);
    if (name === '') throw new MemoryToolError(`Cannot delete the ${ROOT} directory itself`);
    const current = await this.current(name);
    let done: string | undefined;
    if (current !== undefined) {
      done = await this.write(
        name,
        command.path,
        [leaving(name)],
        guard(name, current.version),
        toolUseId,
      );
    } else {
      const tree = await this.tree();
      const notes = under(tree, name);
      if (notes.length === 0) throw new MemoryToolError(`The path ${command.path} does not exist`);
      // A folder: every note in it, in one call, each still at the version listed.
      const versions = Object.fromEntries(
        notes.map((path) => [path, tree.versions.get(path) ?? '']),
      );
      done = await this.write(
        name,
        command.path,
        notes.map(leaving),
        { notes: { memory: versions } },
        toolUseId,
      );
    }
    return done ?? `Successfully deleted ${command.path}`;
  }

  /** `rename` of a file or a folder's files; refused onto one that exists. */
  async rename(command: BetaMemoryTool20250818RenameCommand, toolUseId?: string): Promise<string> {
    const from = nameOf(command.old_path);
    const to = nameOf(command.new_path);
    if (from === '') throw new MemoryToolError(`Cannot rename the ${ROOT} directory itself`);
    const tree = await this.tree();
    if (tree.files.has(to) || isFolder(tree, to)) {
      throw new MemoryToolError(`The destination ${command.new_path} already exists`);
    }
    let done: string | undefined;
    if (tree.files.has(from)) {
      done = await this.move(tree, from, to, command.old_path, toolUseId, 0);
    } else if (isFolder(tree, from)) {
      if (to.startsWith(`${from}/`)) {
        throw new MemoryToolError(
          `Cannot move ${command.old_path} into itself (${command.new_path})`,
        );
      }
      // A folder: each note moves in a call of its own (a rename is atomic per note).
      let write = 0;
      for (const moved of under(tree, from)) {
        done ??= await this.move(
          tree,
          moved,
          to + moved.slice(from.length),
          command.old_path,
          toolUseId,
          write++,
        );
      }
    } else {
      throw new MemoryToolError(`The path ${command.old_path} does not exist`);
    }
    return done ?? `Successfully renamed ${command.old_path} to ${command.new_path}`;
  }

  /**
   * Moves one file: a note to a note by a rename; to or from the pair by writing the target
   * and emptying the source, in one call.
   */
  private async move(
    tree: Tree,
    from: string,
    to: string,
    shown: string,
    toolUseId: string | undefined,
    write: number,
  ): Promise<string | undefined> {
    if (isNote(from) && isNote(to)) {
      const update: MemoryUpdate = { action: 'rename', store: 'memory', note: from, to };
      return this.write(
        from,
        shown,
        [update],
        guard(from, tree.versions.get(from) ?? ''),
        toolUseId,
        { write, renaming: true },
      );
    }
    const current = await this.current(from);
    if (current === undefined) throw new MemoryToolError(`The path ${shown} does not exist`);
    const arrive: MemoryUpdate = isNote(to)
      ? { action: 'create', store: 'memory', note: to, content: current.text }
      : { action: 'replace', store: storeOf(to), content: current.text };
    return this.write(
      from,
      shown,
      [arrive, leaving(from)],
      guard(from, current.version),
      toolUseId,
      { write },
    );
  }

  private async read(): Promise<PrefetchView> {
    // Reading fails only for reasons of the deployment (unreachable, unauthorized, busy):
    // thrown on to the developer, never a tool result.
    const prefetch = await this.client.prefetch({ personality: this.personality, user: this.user });
    this.memoryPath = prefetch.memory.path;
    return prefetch;
  }

  /** Every file under `/memories`: the pair where it holds text, and the notes. */
  private async tree(): Promise<Tree> {
    const prefetch = await this.read();
    const listed = await this.client.notes.list(prefetch.memory.path);
    const files = new Map<string, number>();
    for (const [name, document] of [
      ['MEMORY.md', prefetch.memory],
      ['USER.md', prefetch.user],
    ] as const) {
      if (document.text.trim().length > 0) files.set(name, utf8Length(document.text));
    }
    // Each file's version, the pair's whether or not it holds text (a create is guarded by the
    // empty one's).
    const versions = new Map<string, Version>([
      ['MEMORY.md', prefetch.memory.version],
      ['USER.md', prefetch.user.version],
    ]);
    for (const item of listed.notes) {
      files.set(item.path, item.bytes);
      versions.set(item.path, item.version);
    }
    return { files, versions };
  }

  /** The file's version and text now; undefined when it does not exist. */
  private async current(name: string): Promise<{ version: Version; text: string } | undefined> {
    let document: { version: Version; text: string };
    if (isNote(name)) {
      const beside = this.memoryPath ?? (await this.read()).memory.path;
      try {
        document = await this.client.notes.get(note(beside, name));
      } catch (error) {
        // None there, or none can be there (a path the notes' rule refuses).
        if (error instanceof NotFoundError || error instanceof InvalidInputError) return undefined;
        throw error;
      }
    } else {
      document = (await this.read())[storeOf(name)];
    }
    if (document.text.trim().length === 0) return undefined;
    return { version: document.version, text: document.text };
  }

  /**
   * The text the model viewed of a file. Viewed implicitly first when it never was; when only
   * the version is known, the text is read again and must still be at that version. Refused
   * when the file does not exist, or is a folder.
   */
  private async viewedText(
    name: string,
    path: string,
  ): Promise<{ version: Version; text: string }> {
    const viewed = this.viewed.get(name);
    if (viewed?.text !== undefined) return { version: viewed.version, text: viewed.text };
    const current = name === '' ? undefined : await this.current(name);
    if (current === undefined) {
      this.viewed.delete(name);
      if (isFolder(await this.tree(), name)) {
        throw new MemoryToolError(`The path ${path} is not a file.`);
      }
      throw new MemoryToolError(`The path ${path} does not exist. Please provide a valid path.`);
    }
    if (viewed !== undefined && current.version !== viewed.version) {
      this.viewed.delete(name);
      throw changedSinceViewed(path);
    }
    this.viewed.set(name, current);
    return current;
  }

  /**
   * One guarded, keyed sync; remembers the version each file it touched is at now. Returns
   * undefined once written, or the result text for a call the service says was already
   * carried out (its key already wrote, for the request as first sent).
   */
  private async write(
    name: string,
    path: string,
    updates: MemoryUpdate[],
    ifMatch: IfMatch,
    toolUseId: string | undefined,
    options: WriteStep = {},
  ): Promise<string | undefined> {
    const surface: WriteSurface = 'tool';
    let report;
    try {
      report = await this.client.sync(
        {
          personality: this.personality,
          user: this.user,
          updates,
          ifMatch,
          surface,
          ...(this.session === undefined ? {} : { session: this.session }),
        },
        { idempotencyKey: idempotencyKeyFor(toolUseId, options.write) },
      );
    } catch (error) {
      return this.refused(error, name, path, updates, toolUseId, options);
    }
    for (const document of report.documents) {
      const touched =
        document.document.kind === 'note'
          ? document.document.path
          : document.store === 'memory'
            ? 'MEMORY.md'
            : 'USER.md';
      this.viewed.set(touched, { version: document.version_after, text: undefined });
    }
    if (
      report.documents.some((document) => document.replayed === true) &&
      toolUseId !== undefined
    ) {
      // A server that no longer holds the first answer replays the key's write from the
      // receipts kept with the document: its report is of the file back then.
      return this.alreadyCarriedOut(name, toolUseId);
    }
    return undefined;
  }

  /**
   * The result of a call whose write landed when it first ran. It does not say which file
   * that write changed: a retried call may name another path than the first run did. What
   * this backend viewed may not be the file now, so the next command reads it anew.
   */
  private alreadyCarriedOut(name: string, toolUseId: string): string {
    this.viewed.delete(name);
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
    name: string,
    path: string,
    updates: readonly MemoryUpdate[],
    toolUseId: string | undefined,
    options: WriteStep,
  ): string {
    const code = codeOf(error);
    if (code === 'key-reused' && toolUseId !== undefined) {
      // The tool_use id's key already wrote, for this call as first sent (the tool's `run`
      // repeated by a retried turn, perhaps from another process, after the file changed):
      // the change is in, and doing it again against the text now would apply it twice.
      return this.alreadyCarriedOut(name, toolUseId);
    }
    const edit = updates.find((update) => update.action === 'edit');
    if (
      isStale(error) ||
      code === 'no-match' ||
      code === 'ambiguous-match' ||
      code === 'note-not-found'
    ) {
      // What this backend viewed is not the file's text now: read it again next time.
      this.viewed.delete(name);
    }
    if ((code === 'no-match' || code === 'ambiguous-match') && edit !== undefined) {
      // The lines are those of the text the edit was based on, which the version guard kept
      // equal to the service's; when they do not show the ambiguity, the file is named.
      const lines = code === 'no-match' ? [] : matchingLines(options.basedOn ?? '', edit.old);
      throw unmatched(path, edit.old, lines, code === 'ambiguous-match', error);
    }
    if (options.stale !== undefined && isStale(error)) {
      throw new MemoryToolError(options.stale, { cause: error });
    }
    throw toolError(error, path, options.renaming === true);
  }
}

/** How one write of a command is told about, besides its updates. */
interface WriteStep {
  /** The text an edit was based on, for the lines a refusal names. */
  basedOn?: string | undefined;
  /** Which of the command's writes this is (from 0), for its idempotency key. */
  write?: number | undefined;
  /** A rename: a target that exists is "the destination". */
  renaming?: boolean | undefined;
  /** What the model is told when the guard fails, instead of "changed since you viewed it". */
  stale?: string | undefined;
}

/** The update that empties a file: a note's delete, or one of the pair left blank. */
function leaving(name: string): MemoryUpdate {
  return isNote(name)
    ? { action: 'delete', store: 'memory', note: name }
    : { action: 'replace', store: storeOf(name), content: '' };
}

/** The `ifMatch` of a write based on the file `name` at `version`. */
function guard(name: string, version: Version): IfMatch {
  if (isNote(name)) return { notes: { memory: { [name]: version } } };
  return storeOf(name) === 'memory' ? { memory: version } : { user: version };
}

/**
 * `memory-tool:<tool_use id>` (`#<n>` added for a command's later writes), or a fresh UUID
 * when there is no (usable) id.
 */
export function idempotencyKeyFor(toolUseId: string | undefined, write = 0): string {
  if (toolUseId !== undefined) {
    const key = `memory-tool:${toolUseId}${write === 0 ? '' : `#${write}`}`;
    if (isIdempotencyKey(key)) return key;
  }
  return crypto.randomUUID();
}
