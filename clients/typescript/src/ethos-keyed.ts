/**
 * Ethos's current, five-method `MemoryProvider` (`prefetch`, `read`, `search`, `sync`, `list`
 * on keys within an opaque `scopeId`) over the agent-memory service: a drop-in for Ethos's
 * `MarkdownFileMemoryProvider` whose documents live wherever the service's `memory.toml`
 * puts them.
 *
 * Ethos's types are declared here structurally (TypeScript checks shapes, not names), so this
 * package does not depend on `@ethosagent/types`.
 *
 * @module
 */

import { clientFrom, type MemoryClient, type MemoryClientOptions } from './client.js';
import { globalMemory, personalityMemory, userProfile, type DocumentRef } from './core/paths.js';
import { isSessionId } from './core/writes.js';
import { InvalidInputError, NotFoundError, invalidInput } from './errors.js';
import type {
  DocumentView,
  MemoryScope,
  MemoryUpdate,
  PersonalityId,
  PersonalityView,
  Store,
  UserId,
} from './types.js';

/** Ethos's `MemoryContext`: whose memory a call is about, and the conversation it comes from. */
export interface EthosKeyedMemoryContext {
  /** `personality:<id>`, `team:<id>` or `user:<id>`. */
  scopeId: string;
  sessionId: string;
  sessionKey: string;
  platform: string;
  workingDir: string;
}

/** Ethos's `MemorySnapshot`: what `prefetch` puts at the top of the prompt. */
export interface EthosMemorySnapshot {
  entries: Array<{ key: string; content: string }>;
}

/** Ethos's `MemoryEntry`: one key's content. */
export interface EthosMemoryEntry {
  key: string;
  content: string;
  metadata?: {
    /** When the document was last written, in ms since the Unix epoch. */
    lastUpdatedAt?: number;
    lastUpdatedBy?: string;
  };
}

/** Ethos's `MemoryEntryRef`: one key `list` shows. */
export interface EthosMemoryEntryRef {
  key: string;
  /** The first paragraph, when `withSummaries` asks for it. */
  summary?: string;
  metadata?: { lastUpdatedAt?: number };
}

/** Ethos's `MemoryUpdate`: one change to one key. */
export type EthosKeyedMemoryUpdate =
  | { action: 'add'; key: string; content: string }
  | { action: 'replace'; key: string; content: string }
  | { action: 'remove'; key: string; substringMatch: string }
  | { action: 'delete'; key: string };

/** Ethos's `SearchOpts`. */
export interface EthosSearchOpts {
  limit?: number | undefined;
  mode?: 'keyword' | 'semantic' | 'hybrid' | undefined;
}

/** Ethos's `ListOpts`. */
export interface EthosListOpts {
  limit?: number | undefined;
  withSummaries?: boolean | undefined;
}

/** Ethos's `MemoryProvider`: the frozen five-method, key-based contract. */
export interface EthosKeyedMemoryProvider {
  prefetch(ctx: EthosKeyedMemoryContext): Promise<EthosMemorySnapshot | null>;
  read(key: string, ctx: EthosKeyedMemoryContext): Promise<EthosMemoryEntry | null>;
  search(
    query: string,
    ctx: EthosKeyedMemoryContext,
    opts?: EthosSearchOpts,
  ): Promise<EthosMemoryEntry[]>;
  sync(updates: EthosKeyedMemoryUpdate[], ctx: EthosKeyedMemoryContext): Promise<void>;
  list(ctx: EthosKeyedMemoryContext, opts?: EthosListOpts): Promise<EthosMemoryEntryRef[]>;
}

/** The two keys there are: the notes (`MEMORY.md`) and the user's profile (`USER.md`). */
export type EthosMemoryKey = 'MEMORY.md' | 'USER.md';

/** Options of {@link AgentMemoryKeyedProvider}. */
export interface AgentMemoryKeyedProviderOptions {
  /** A client, or the options to make one (`baseUrl`, `apiKey`, ...). */
  client: MemoryClient | MemoryClientOptions;
  /**
   * The user a call under a `personality:<id>` scope talks to, whose `USER.md` that scope's
   * `USER.md` key is. Default: {@link AgentMemoryKeyedProvider.userByIdentity}, the user the
   * service's identity map links the account `(ctx.platform, ctx.sessionKey)` to. Return
   * undefined when no user is known: `USER.md` is then absent from `prefetch`, `read`,
   * `list` and `search`, and a write to it is refused.
   */
  user?:
    | ((ctx: EthosKeyedMemoryContext) => UserId | undefined | Promise<UserId | undefined>)
    | undefined;
  /**
   * The idempotency key of a sync (default: a fresh UUID per call, reused by the client's
   * resends). Return a turn id to make a re-run of the same turn land once too.
   */
  idempotencyKeyFor?:
    | ((updates: EthosKeyedMemoryUpdate[], ctx: EthosKeyedMemoryContext) => string | undefined)
    | undefined;
}

/** A parsed `scopeId`. */
type Scope =
  | { kind: 'personality'; personality: PersonalityId }
  | { kind: 'team'; team: string }
  | { kind: 'user'; user: UserId };

/** One key of a scope and the document behind it (null: no such document for this call). */
interface Slot {
  key: EthosMemoryKey;
  document: DocumentView | null;
}

/** What a scope holds for one call: its keys' documents, and how MEMORY.md is searched. */
interface Resolved {
  slots: Slot[];
  /** The personality, when MEMORY.md is read through a recall provider (search ranks it). */
  recall?: PersonalityId;
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const SCOPE_KEYS: Record<Scope['kind'], readonly EthosMemoryKey[]> = {
  personality: ['MEMORY.md', 'USER.md'],
  team: ['MEMORY.md'],
  user: ['USER.md'],
};
const MAX_SEARCH_LIMIT = 100;

/**
 * Ethos's five-method `MemoryProvider` over the agent-memory service.
 *
 * ```ts
 * const memory = new AgentMemoryKeyedProvider({
 *   client: { baseUrl: 'http://127.0.0.1:8700', apiKey: process.env.MEMORY_API_KEY },
 * });
 * ```
 *
 * Scopes and keys map onto the service's documents:
 * - `personality:<p>`: `MEMORY.md` is the personality's (its own, or the global one when its
 *   `memory_scope` is global); `USER.md` is the conversation's user's (the `user` option).
 * - `team:<id>`: `MEMORY.md` is the global `MEMORY.md`.
 * - `user:<u>`: `USER.md` is `users/<u>/USER.md`.
 *
 * No other key exists: `read` gives null, `list` shows none, `sync` refuses it. `delete`
 * clears a document (a revision that can be reverted), it does not purge it. A document whose
 * text is empty reads as absent, as a missing file does for Ethos's markdown provider.
 */
export class AgentMemoryKeyedProvider implements EthosKeyedMemoryProvider {
  /** The client the provider calls. */
  readonly client: MemoryClient;
  private readonly options: AgentMemoryKeyedProviderOptions;

  constructor(options: AgentMemoryKeyedProviderOptions) {
    this.client = clientFrom(options.client);
    this.options = options;
  }

  /**
   * The user the service's identity map links the account `(ctx.platform, account)` to, where
   * the account is `ctx.sessionKey` without a leading `<platform>:` (Ethos's gateways key a
   * direct conversation by its platform and the account's id); undefined when the account is
   * not linked, or is not one the map can hold.
   */
  async userByIdentity(ctx: EthosKeyedMemoryContext): Promise<UserId | undefined> {
    const prefix = `${ctx.platform}:`;
    const account = ctx.sessionKey.startsWith(prefix)
      ? ctx.sessionKey.slice(prefix.length)
      : ctx.sessionKey;
    if (!ID.test(ctx.platform) || account.trim() !== account || account === '') return undefined;
    try {
      return (await this.client.identities.resolve(ctx.platform, account)).user;
    } catch (error) {
      if (error instanceof NotFoundError || error instanceof InvalidInputError) return undefined;
      throw error;
    }
  }

  /** The scope's non-blank documents, `MEMORY.md` then `USER.md`; null when there are none. */
  async prefetch(ctx: EthosKeyedMemoryContext): Promise<EthosMemorySnapshot | null> {
    const { slots } = await this.resolve(parseScope(ctx.scopeId), ctx);
    const entries = slots.flatMap(({ key, document }) =>
      document !== null && document.text.trim().length > 0 ? [{ key, content: document.text }] : [],
    );
    return entries.length === 0 ? null : { entries };
  }

  /** The key's document, or null when the scope has no such key or its document is empty. */
  async read(key: string, ctx: EthosKeyedMemoryContext): Promise<EthosMemoryEntry | null> {
    const scope = parseScope(ctx.scopeId);
    if (!SCOPE_KEYS[scope.kind].includes(key as EthosMemoryKey)) return null;
    const { slots } = await this.resolve(scope, ctx);
    const slot = slots.find((candidate) => candidate.key === key);
    return slot === undefined ? null : entryOf(slot);
  }

  /**
   * Entries matching `query`. A personality whose `MEMORY.md` is read through a recall
   * provider has it searched by the service (`POST /v1/search`, best first, then what its index
   * has not covered yet), each entry a `MEMORY.md` entry; every other document (and every
   * document under `mode: 'keyword'`) is matched as Ethos's markdown provider does: the whole
   * document when it contains the query, case-insensitively. Without recall, `mode:
   * 'semantic'` finds nothing, as with Ethos's markdown provider.
   */
  async search(
    query: string,
    ctx: EthosKeyedMemoryContext,
    opts: EthosSearchOpts = {},
  ): Promise<EthosMemoryEntry[]> {
    const scope = parseScope(ctx.scopeId);
    const trimmed = query.trim();
    if (trimmed === '') return [];
    const resolved = await this.resolve(scope, ctx);
    const limit = opts.limit ?? Number.POSITIVE_INFINITY;
    if (limit <= 0) return [];
    const ranked = resolved.recall !== undefined && opts.mode !== 'keyword';
    if (!ranked && opts.mode === 'semantic') return [];

    const found: EthosMemoryEntry[] = [];
    if (ranked) {
      const view = await this.client.search({
        personality: resolved.recall!,
        query: trimmed,
        limit: Math.max(1, Math.min(MAX_SEARCH_LIMIT, Math.floor(limit))),
      });
      // MEMORY.md's own entries: Ethos keys nothing else (its roots hold no notes).
      const entries = [...view.ranked, ...view.unranked];
      const from = [...view.ranked_from, ...view.unranked_from];
      entries.forEach((content, at) => {
        if (from[at] === view.path) found.push({ key: 'MEMORY.md', content });
      });
      if (opts.mode === 'semantic') return found.slice(0, limit);
    }
    const needle = trimmed.toLowerCase();
    for (const slot of resolved.slots) {
      if (ranked && slot.key === 'MEMORY.md') continue;
      const entry = entryOf(slot);
      if (entry !== null && entry.content.toLowerCase().includes(needle)) found.push(entry);
    }
    return found.slice(0, limit);
  }

  /**
   * Applies the updates: under `personality:<p>` with a known user, one `POST /v1/sync`
   * (the personality's scope and caps on both documents, each atomically); otherwise one
   * batch of updates to the one document the keys name. Updates keep their order within a
   * key. A key the scope does not hold, or `USER.md` when no user is known, refuses the whole
   * batch before anything is written.
   */
  async sync(updates: EthosKeyedMemoryUpdate[], ctx: EthosKeyedMemoryContext): Promise<void> {
    const scope = parseScope(ctx.scopeId);
    if (updates.length === 0) return;
    const keys = SCOPE_KEYS[scope.kind];
    for (const update of updates) {
      if (!keys.includes(update.key as EthosMemoryKey)) throw unknownKey(update.key, scope);
    }
    const converted = toStoreUpdates(updates);
    if (converted.length === 0) return;
    const idempotencyKey = this.options.idempotencyKeyFor?.(updates, ctx);
    const meta = {
      surface: 'tool' as const,
      ...(isSessionId(ctx.sessionId) ? { session: ctx.sessionId } : {}),
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    };

    if (scope.kind === 'personality') {
      const user = await this.userOf(ctx);
      if (user !== undefined) {
        const { idempotencyKey: key, ...body } = meta;
        await this.client.sync(
          { personality: scope.personality, user, updates: converted, ...body },
          key === undefined ? {} : { idempotencyKey: key },
        );
        return;
      }
      if (converted.some((update) => update.store === 'user')) throw noUser(scope.personality);
      const personality = await this.personalityView(scope.personality);
      await this.client.documents.update(
        memoryOf(scope.personality, personality.scope),
        converted,
        meta,
      );
      return;
    }
    const document = scope.kind === 'team' ? globalMemory() : userProfile(scope.user);
    await this.client.documents.update(document, converted, meta);
  }

  /** The scope's non-empty documents, `MEMORY.md` then `USER.md`, as Ethos lists its files. */
  async list(
    ctx: EthosKeyedMemoryContext,
    opts: EthosListOpts = {},
  ): Promise<EthosMemoryEntryRef[]> {
    const { slots } = await this.resolve(parseScope(ctx.scopeId), ctx);
    const refs: EthosMemoryEntryRef[] = [];
    for (const slot of slots) {
      const entry = entryOf(slot);
      if (entry === null) continue;
      const ref: EthosMemoryEntryRef = { key: entry.key };
      if (entry.metadata?.lastUpdatedAt !== undefined) {
        ref.metadata = { lastUpdatedAt: entry.metadata.lastUpdatedAt };
      }
      if (opts.withSummaries === true) {
        const summary = firstParagraph(entry.content);
        if (summary !== undefined) ref.summary = summary;
      }
      refs.push(ref);
    }
    return opts.limit !== undefined ? refs.slice(0, Math.max(0, opts.limit)) : refs;
  }

  private async userOf(ctx: EthosKeyedMemoryContext): Promise<UserId | undefined> {
    return this.options.user !== undefined ? this.options.user(ctx) : this.userByIdentity(ctx);
  }

  /** The documents behind the scope's keys, read the way its writes go. */
  private async resolve(scope: Scope, ctx: EthosKeyedMemoryContext): Promise<Resolved> {
    switch (scope.kind) {
      case 'personality': {
        const user = await this.userOf(ctx);
        if (user !== undefined) {
          const view = await this.client.prefetch({ personality: scope.personality, user });
          return {
            slots: [
              { key: 'MEMORY.md', document: view.memory },
              { key: 'USER.md', document: view.user },
            ],
            ...(view.personality.recall ? { recall: scope.personality } : {}),
          };
        }
        const personality = await this.personalityView(scope.personality);
        const memory = await this.client.documents.get(
          memoryOf(scope.personality, personality.scope),
        );
        return {
          slots: [
            { key: 'MEMORY.md', document: memory },
            { key: 'USER.md', document: null },
          ],
          ...(personality.recall ? { recall: scope.personality } : {}),
        };
      }
      case 'team':
        return {
          slots: [{ key: 'MEMORY.md', document: await this.client.documents.get(globalMemory()) }],
        };
      case 'user':
        return {
          slots: [
            { key: 'USER.md', document: await this.client.documents.get(userProfile(scope.user)) },
          ],
        };
    }
  }

  /**
   * The personality as the service wires it. The directory lists every personality that is
   * configured or holds a document; any other has the defaults (its own `MEMORY.md`, nothing
   * in it to recall).
   */
  private async personalityView(
    id: PersonalityId,
  ): Promise<Pick<PersonalityView, 'scope' | 'recall'>> {
    for await (const personality of this.client.directory.iteratePersonalities({ limit: 500 })) {
      if (personality.id === id) return personality;
      if (personality.id > id) break;
    }
    return { scope: 'per-personality', recall: false };
  }
}

/** Parses a scope id as Ethos's markdown provider does, with the service's id syntax. */
function parseScope(scopeId: string): Scope {
  const colon = scopeId.indexOf(':');
  const prefix = scopeId.slice(0, colon);
  const id = scopeId.slice(colon + 1);
  if (colon > 0 && ID.test(id)) {
    if (prefix === 'personality') return { kind: 'personality', personality: id };
    if (prefix === 'team') return { kind: 'team', team: id };
    if (prefix === 'user') return { kind: 'user', user: id };
  }
  throw invalidInput(
    `unrecognised memory scope: ${JSON.stringify(scopeId)}: use personality:<id>, team:<id> or ` +
      'user:<id>, the id 1 to 64 of A-Z, a-z, 0-9, _ and -',
  );
}

function memoryOf(personality: PersonalityId, scope: MemoryScope): DocumentRef {
  return scope === 'global' ? globalMemory() : personalityMemory(personality);
}

function entryOf({ key, document }: Slot): EthosMemoryEntry | null {
  if (document === null || document.text === '') return null;
  const entry: EthosMemoryEntry = { key, content: document.text };
  if (document.modified !== undefined && document.modified !== null) {
    entry.metadata = { lastUpdatedAt: document.modified };
  }
  return entry;
}

/**
 * Ethos updates as the service's: `delete` clears the document (a `replace` with nothing);
 * an `add` of blank content and a `remove` of an empty match, which Ethos's markdown provider
 * does nothing with, are dropped (the service refuses them).
 */
function toStoreUpdates(updates: readonly EthosKeyedMemoryUpdate[]): MemoryUpdate[] {
  const converted: MemoryUpdate[] = [];
  for (const update of updates) {
    const store: Store = update.key === 'MEMORY.md' ? 'memory' : 'user';
    switch (update.action) {
      case 'add':
        if (update.content.trim().length > 0) {
          converted.push({ action: 'add', store, content: update.content });
        }
        break;
      case 'replace':
        converted.push({ action: 'replace', store, content: update.content });
        break;
      case 'remove':
        if (update.substringMatch) {
          converted.push({ action: 'remove', store, substringMatch: update.substringMatch });
        }
        break;
      case 'delete':
        converted.push({ action: 'replace', store, content: '' });
        break;
      default: {
        const unknown: { action?: unknown } = update;
        throw invalidInput(
          `unknown memory update action ${JSON.stringify(unknown.action)}: use add, replace, ` +
            'remove or delete',
        );
      }
    }
  }
  return converted;
}

function firstParagraph(text: string): string | undefined {
  const paragraph = text
    .split(/\n\s*\n/)
    .map((part) => part.trim())
    .find((part) => part.length > 0);
  return paragraph === undefined || paragraph === '' ? undefined : paragraph;
}

function unknownKey(key: string, scope: Scope): InvalidInputError {
  const held =
    scope.kind === 'personality'
      ? "MEMORY.md (the personality's notes) and USER.md (what is known about the user)"
      : scope.kind === 'team'
        ? 'MEMORY.md (the notes shared by the team)'
        : 'USER.md (what is known about the user)';
  return invalidInput(
    `no memory key ${JSON.stringify(key)} in scope ${scope.kind}: agent-memory keeps only ` +
      `${held} there; write into ${scope.kind === 'personality' ? 'one of them' : 'it'} instead`,
  );
}

function noUser(personality: PersonalityId): InvalidInputError {
  return invalidInput(
    `no user is known for this conversation with ${personality}, so there is no USER.md to ` +
      'write: link the account (PUT /v1/identities/<platform>/<account>) or pass the ' +
      "provider's user option",
  );
}
