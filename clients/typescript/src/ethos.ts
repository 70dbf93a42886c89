/**
 * Ethos memory providers over the agent-memory service: drop-ins for Ethos's
 * `MarkdownFileMemoryProvider` whose documents live wherever the service's `memory.toml`
 * puts them (markdown, PostgreSQL, Redis, recall).
 *
 * - {@link AgentMemoryKeyedProvider}: Ethos's current five-method, key-based `MemoryProvider`
 *   (`prefetch`, `read`, `search`, `sync`, `list` within a `scopeId`).
 * - {@link AgentMemoryProvider}: the earlier two-method one (`prefetch(ctx)` rendering the
 *   prompt text, `sync(ctx, updates)` by store), keeping the prompt text Ethos rendered.
 * - {@link AgentMemoryLegacyProvider}: the oldest, `prefetch(sessionId, personality)`.
 *
 * The Ethos types are declared here, structurally (TypeScript checks shapes, not names), so
 * this package does not depend on `@ethosagent/types`.
 *
 * @module
 */

import { clientFrom, type MemoryClient, type MemoryClientOptions } from './client.js';
import { invalidInput } from './errors.js';
import { isSessionId } from './core/writes.js';
import type { MemoryUpdate, PrefetchView } from './types.js';

export {
  AgentMemoryKeyedProvider,
  type AgentMemoryKeyedProviderOptions,
  type EthosKeyedMemoryContext,
  type EthosKeyedMemoryProvider,
  type EthosKeyedMemoryUpdate,
  type EthosListOpts,
  type EthosMemoryEntry,
  type EthosMemoryEntryRef,
  type EthosMemoryKey,
  type EthosMemorySnapshot,
  type EthosSearchOpts,
} from './ethos-keyed.js';

/**
 * Ethos's `MemoryLoadContext`: the turn a prefetch or sync is for.
 *
 * Ethos's agent loop fills it for `prefetch` with the session's id and key, its platform and
 * working directory, the active personality's id and `memoryScope`, and the user's message as
 * `query`; its `memory_write` tool passes the same to `sync`, without `query`. Neither sets
 * `userId`, so {@link AgentMemoryProviderOptions.defaultUser} names the user.
 */
export interface EthosMemoryLoadContext {
  /** Ethos's session id; recorded with each revision a sync writes (an empty one is not). */
  sessionId: string;
  sessionKey: string;
  /**
   * The user, when a caller names one: it wins over `defaultUser`. Ethos declares it but its
   * agent loop and memory tools never set it.
   */
  userId?: string | undefined;
  platform: string;
  /** Ignored: Ethos passes its working directory; the service does not read files there. */
  workingDir?: string | undefined;
  /** The active personality; Ethos's `ethos memory` and `/memory` commands pass none. */
  personalityId?: string | undefined;
  /** Ignored: the service's `memory.toml` sets each personality's `memory_scope`. */
  memoryScope?: 'global' | 'per-personality' | undefined;
  /** The current user message, for a personality that recalls. */
  query?: string | undefined;
}

/** Ethos's `MemoryContext`: the text for the top of the system prompt. */
export interface EthosMemoryContext {
  content: string;
  source: 'markdown' | 'vector' | 'honcho' | 'custom';
  truncated: boolean;
}

/** Ethos's `MemoryStore`. */
export type EthosMemoryStore = 'memory' | 'user';

/** Ethos's `MemoryUpdate`, as the model emits it. */
export interface EthosMemoryUpdate {
  store: EthosMemoryStore;
  action: 'add' | 'replace' | 'remove';
  content: string;
  /** Required when action === 'remove'. */
  substringMatch?: string | undefined;
}

/** Ethos's `MemoryProvider` (prefetch before the prompt, sync after the turn). */
export interface EthosMemoryProvider {
  prefetch(ctx: EthosMemoryLoadContext): Promise<EthosMemoryContext | null>;
  sync(ctx: EthosMemoryLoadContext, updates: EthosMemoryUpdate[]): Promise<void>;
}

/** Ethos's markdown provider's default prefetch budget, in chars. */
export const ETHOS_MAX_CHARS = 20_000;

/** Options of {@link AgentMemoryProvider}. */
export interface AgentMemoryProviderOptions {
  /** A client, or the options to make one (`baseUrl`, `apiKey`, ...). */
  client: MemoryClient | MemoryClientOptions;
  /**
   * The personality for a call without `personalityId`: Ethos's agent loop and memory tools
   * always pass one, its `ethos memory` and `/memory` commands none. Without either, the call
   * throws.
   */
  defaultPersonality?: string | undefined;
  /**
   * The user this agent talks to, whose `USER.md` every turn reads and writes. Ethos's agent
   * loop passes no `userId`, so with Ethos this is needed: without it (and without
   * `ctx.userId`), prefetch and any sync with something to write throw an
   * `InvalidInputError` before sending anything.
   */
  defaultUser?: string | undefined;
  /**
   * How `prefetch` renders the prompt text:
   * - `'ethos'` (default): from the two documents the service returns, exactly as Ethos's
   *   `MarkdownFileMemoryProvider` does (`## About You`, `## Memory`, and past `maxChars` the
   *   tail behind `[...truncated]`), so switching providers changes no prompt. A personality
   *   that recalls, asked with a query, gets the service's selection instead.
   * - `'service'`: the service's rendered context as is (its truncation marks the cut with
   *   `[...truncated N chars]` at a line start, and its budget is the personality's `max_chars`).
   */
  rendering?: 'ethos' | 'service' | undefined;
  /** The `'ethos'` rendering's budget in chars (Ethos's `maxChars`, default 20,000). */
  maxChars?: number | undefined;
  /**
   * The idempotency key for a sync (default: a fresh UUID per call, reused by the client's
   * resends). Return a turn id to make a re-run of the same turn land once too.
   */
  idempotencyKeyFor?:
    ((ctx: EthosMemoryLoadContext, updates: EthosMemoryUpdate[]) => string | undefined) | undefined;
}

/**
 * Ethos's `MemoryProvider` over the agent-memory service.
 *
 * ```ts
 * const memory = new AgentMemoryProvider({
 *   client: { baseUrl: 'http://127.0.0.1:8700', apiKey: process.env.MEMORY_API_KEY },
 *   defaultUser: 'grace', // Ethos's loop names no user: the person this agent talks to
 * });
 * const loop = new AgentLoop({ ...config, memory });
 * ```
 *
 * `prefetch` is `POST /v1/prefetch`; `sync` is one `POST /v1/sync` carrying every update of
 * the turn (both documents, in order, each atomically) with an idempotency key. Updates that
 * Ethos's own provider treats as no-ops (an `add` of blank content, a `remove` with an empty
 * `substringMatch`) are dropped rather than sent, since the service refuses them.
 */
export class AgentMemoryProvider implements EthosMemoryProvider {
  /** The client the provider calls. */
  readonly client: MemoryClient;
  private readonly options: AgentMemoryProviderOptions;
  private readonly maxChars: number;

  constructor(options: AgentMemoryProviderOptions) {
    this.client = clientFrom(options.client);
    this.options = options;
    this.maxChars = options.maxChars ?? ETHOS_MAX_CHARS;
  }

  /** The prompt text for this turn, or null when both documents are blank. */
  async prefetch(ctx: EthosMemoryLoadContext): Promise<EthosMemoryContext | null> {
    const view = await this.client.prefetch({
      personality: this.personalityOf(ctx),
      user: this.userOf(ctx),
      ...(ctx.query === undefined ? {} : { query: ctx.query }),
    });
    const recalled = view.personality.recall && ctx.query !== undefined;
    if (this.options.rendering === 'service' || recalled) {
      const content = view.context ?? null;
      if (content === null) return null;
      return {
        content,
        source: recalled ? 'vector' : 'custom',
        truncated: content.startsWith('[...truncated '),
      };
    }
    return renderLikeEthos(view, this.maxChars);
  }

  /** Applies the turn's updates through one keyed `POST /v1/sync`. */
  async sync(ctx: EthosMemoryLoadContext, updates: EthosMemoryUpdate[]): Promise<void> {
    const converted = toServiceUpdates(updates);
    if (converted.length === 0) return;
    const idempotencyKey = this.options.idempotencyKeyFor?.(ctx, updates);
    await this.client.sync(
      {
        personality: this.personalityOf(ctx),
        user: this.userOf(ctx),
        updates: converted,
        surface: 'tool',
        ...(isSessionId(ctx.sessionId) ? { session: ctx.sessionId } : {}),
      },
      idempotencyKey === undefined ? {} : { idempotencyKey },
    );
  }

  private personalityOf(ctx: EthosMemoryLoadContext): string {
    const personality = ctx.personalityId ?? this.options.defaultPersonality;
    if (personality === undefined) throw invalidInput(NO_PERSONALITY);
    return personality;
  }

  private userOf(ctx: EthosMemoryLoadContext): string {
    const user = ctx.userId ?? this.options.defaultUser;
    if (user === undefined) throw invalidInput(NO_USER);
    return user;
  }
}

/** Ethos's older `MemoryContext` (its "Custom memory providers" page). */
export interface EthosLegacyMemoryContext {
  projectMemory: string | null;
  userMemory: string | null;
}

/** Ethos's older `MemoryUpdate`: the project memory only. */
export type EthosLegacyMemoryUpdate =
  | { action: 'add'; content: string }
  | { action: 'replace'; content: string }
  | { action: 'remove'; substringMatch: string };

/** Options of {@link AgentMemoryLegacyProvider}. */
export interface AgentMemoryLegacyProviderOptions {
  client: MemoryClient | MemoryClientOptions;
  /** The personality when none is passed (global scope). */
  defaultPersonality: string;
  /** The user a session talks to (default: `defaultUser` for every session). */
  userForSession?: ((sessionId: string) => string | undefined) | undefined;
  defaultUser?: string | undefined;
}

/**
 * The older `MemoryProvider` shape, `prefetch(sessionId, personality?)` and
 * `sync(sessionId, updates, personality?)`, over the service: `projectMemory` is the
 * personality's `MEMORY.md`, `userMemory` the user's `USER.md`.
 */
export class AgentMemoryLegacyProvider {
  readonly client: MemoryClient;
  private readonly options: AgentMemoryLegacyProviderOptions;

  constructor(options: AgentMemoryLegacyProviderOptions) {
    this.client = clientFrom(options.client);
    this.options = options;
  }

  /** Both documents' text, or null when both are blank. */
  async prefetch(
    sessionId: string,
    personality?: string,
  ): Promise<EthosLegacyMemoryContext | null> {
    const view = await this.client.prefetch({
      personality: personality ?? this.options.defaultPersonality,
      user: this.userFor(sessionId),
    });
    const projectMemory = view.memory.text.trim().length > 0 ? view.memory.text : null;
    const userMemory = view.user.text.trim().length > 0 ? view.user.text : null;
    if (projectMemory === null && userMemory === null) return null;
    return { projectMemory, userMemory };
  }

  /** Applies updates to the project memory (`MEMORY.md`) through one keyed sync. */
  async sync(
    sessionId: string,
    updates: EthosLegacyMemoryUpdate[],
    personality?: string,
  ): Promise<void> {
    const converted = toServiceUpdates(
      updates.map((update) =>
        update.action === 'remove'
          ? {
              store: 'memory',
              action: 'remove',
              content: '',
              substringMatch: update.substringMatch,
            }
          : { store: 'memory', action: update.action, content: update.content },
      ),
    );
    if (converted.length === 0) return;
    await this.client.sync({
      personality: personality ?? this.options.defaultPersonality,
      user: this.userFor(sessionId),
      updates: converted,
      surface: 'tool',
      ...(isSessionId(sessionId) ? { session: sessionId } : {}),
    });
  }

  private userFor(sessionId: string): string {
    const user = this.options.userForSession?.(sessionId) ?? this.options.defaultUser;
    if (user === undefined) throw invalidInput(NO_SESSION_USER);
    return user;
  }
}

/**
 * The prompt text Ethos's `MarkdownFileMemoryProvider.prefetch` gives for these documents:
 * each non-empty document trimmed under its heading, joined by a blank line, and past
 * `maxChars` (UTF-16 units, as JavaScript counts) the last `maxChars` behind `[...truncated]`.
 */
export function renderLikeEthos(view: PrefetchView, maxChars: number): EthosMemoryContext | null {
  const parts: string[] = [];
  if (view.user.text) parts.push(`## About You\n\n${view.user.text.trim()}`);
  if (view.memory.text) parts.push(`## Memory\n\n${view.memory.text.trim()}`);
  if (parts.length === 0) return null;
  let content = parts.join('\n\n');
  const truncated = content.length > maxChars;
  if (truncated) content = `[...truncated]\n\n${content.slice(-maxChars)}`;
  return { content, source: 'markdown', truncated };
}

/** Ethos updates as the service's, dropping the ones Ethos's provider treats as no-ops. */
export function toServiceUpdates(updates: readonly EthosMemoryUpdate[]): MemoryUpdate[] {
  const converted: MemoryUpdate[] = [];
  for (const update of updates) {
    switch (update.action) {
      case 'add':
        if (update.content.trim().length > 0) {
          converted.push({ action: 'add', store: update.store, content: update.content });
        }
        break;
      case 'replace':
        converted.push({ action: 'replace', store: update.store, content: update.content });
        break;
      case 'remove':
        if (update.substringMatch) {
          converted.push({
            action: 'remove',
            store: update.store,
            substringMatch: update.substringMatch,
          });
        }
        break;
      default: {
        const unknown: { action?: unknown } = update;
        throw invalidInput(
          `unknown memory update action ${JSON.stringify(unknown.action)}: use add, replace or remove`,
        );
      }
    }
  }
  return converted;
}

// What a call lacking an id is refused with, naming first the option that fixes it for Ethos as
// it is (whose agent loop never sets `userId`), then the context field a caller may set instead.
const NO_USER =
  "no user for this turn: Ethos's agent loop passes no userId, so set the provider's " +
  'defaultUser (the user this agent talks to), or pass ctx.userId';
const NO_PERSONALITY =
  "no personality for this call: Ethos's `ethos memory` and `/memory` commands pass no " +
  "personalityId, so set the provider's defaultPersonality, or pass ctx.personalityId";
const NO_SESSION_USER =
  "no user for this session: set the provider's defaultUser (the user this agent talks to), " +
  'or return one from userForSession(sessionId)';
