/**
 * {@link MemoryClient}: the agent-memory `/v1` API, typed. The client holds the turn cycle
 * (`prefetch`, `sync`), `search` and `health`, and composes the resources under `resources/`
 * (a class a file: documents, history, identities, directory); what they share is in `core/`
 * (argument checks, keyed writes, pagination, paths).
 *
 * @module
 */

import { errorFromProblem, isProblem } from './errors.js';
import { Transport, type TransportOptions } from './transport.js';
import type {
  Budgets,
  Health,
  IfMatch,
  MemoryUpdate,
  PersonalityId,
  PrefetchRequest,
  PrefetchView,
  Problem,
  SearchRequest,
  SearchView,
  SyncReport,
  SyncRequest,
  UserId,
  WriteSurface,
} from './types.js';
import { argsObject, optionsObject, type CallOptions } from './core/arguments.js';
import { write, type WriteOptions, type WriteResult } from './core/writes.js';
import { Directory, Documents, History, Identities, Notes } from './resources/index.js';

/** Options of a {@link MemoryClient}. */
export type MemoryClientOptions = TransportOptions;

/** The client given, or a new one made from the options given (as the adapters take either). */
export function clientFrom(client: MemoryClient | MemoryClientOptions): MemoryClient {
  return client instanceof MemoryClient ? client : new MemoryClient(client);
}

/** Arguments of {@link MemoryClient.sync}. */
export interface SyncArgs {
  personality: PersonalityId;
  user: UserId;
  updates: MemoryUpdate[];
  /** Versions the touched documents must still be at (from a prefetch); else 412. */
  ifMatch?: IfMatch | undefined;
  /**
   * Byte caps for this call on top of the personality's (the smaller of each applies): a
   * bounded agent sends its own, and a write past the hard cap is refused (`hard-cap-exceeded`).
   */
  caps?: Budgets | undefined;
  /** The conversation id, recorded in the revisions. */
  session?: string | undefined;
  surface?: WriteSurface | undefined;
}

/** Arguments of {@link MemoryClient.prefetch}. */
export interface PrefetchArgs {
  personality: PersonalityId;
  user: UserId;
  /** The user's message, for a personality that recalls. */
  query?: string | undefined;
  /** The most chars of rendered context (default and ceiling: the personality's `max_chars`). */
  maxChars?: number | undefined;
}

/** Arguments of {@link MemoryClient.search}. */
export interface SearchArgs {
  personality: PersonalityId;
  query: string;
  /** The most entries to return (1 to 100, default 8). */
  limit?: number | undefined;
}

/**
 * A client of the agent-memory service: the turn cycle (`prefetch`, `sync`), `documents`,
 * `history`, `search`, `identities`, `directory` and `health`.
 *
 * Writes carry an `Idempotency-Key` (yours or a fresh UUID) and are resent with the same key
 * after a lost reply (a network error, a timeout, a 502/503/504, honouring `Retry-After`), so
 * a write the client retried lands once. Errors are {@link MemoryError} subclasses, one per
 * kind, each carrying the service's problem document.
 *
 * ```ts
 * const memory = new MemoryClient({ baseUrl: 'http://127.0.0.1:8700' });
 * const before = await memory.prefetch({ personality: 'ada', user: 'grace' });
 * await memory.sync({
 *   personality: 'ada',
 *   user: 'grace',
 *   updates: [{ action: 'add', store: 'user', content: 'Name: Grace.' }],
 *   ifMatch: { memory: before.memory.version, user: before.user.version },
 * });
 * ```
 */
export class MemoryClient {
  /** Read, replace, update and purge documents by layout path. */
  readonly documents: Documents;
  /** Notes beside the pair: list, read, create, write, update, delete, rename. */
  readonly notes: Notes;
  /** A document's or a note's revisions: list, read one, diff, revert, redact. */
  readonly history: History;
  /** Platform accounts linked to users. */
  readonly identities: Identities;
  /** The personalities and users the service knows. */
  readonly directory: Directory;
  private readonly transport: Transport;

  constructor(options: MemoryClientOptions) {
    this.transport = new Transport(options);
    this.documents = new Documents(this.transport);
    this.notes = new Notes(this.transport);
    this.history = new History(this.transport);
    this.identities = new Identities(this.transport);
    this.directory = new Directory(this.transport);
  }

  /** The base URL requests go to, without a trailing slash. */
  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  /**
   * Before the turn: the rendered context for the top of the prompt (`## About You`, then
   * `## Memory`; `context` null when both are blank) and both documents whole, with the
   * versions to pass as `ifMatch` to {@link sync}.
   */
  async prefetch(maybeArgs: PrefetchArgs, maybeOptions: CallOptions = {}): Promise<PrefetchView> {
    const options = optionsObject(maybeOptions, 'client.prefetch');
    const args = argsObject(maybeArgs, 'client.prefetch');
    const body: PrefetchRequest = { personality: args.personality, user: args.user };
    if (args.query !== undefined) body.query = args.query;
    if (args.maxChars !== undefined) body.max_chars = args.maxChars;
    const response = await this.transport.request<PrefetchView>({
      method: 'POST',
      path: '/v1/prefetch',
      body,
      signal: options.signal,
    });
    return response.body;
  }

  /**
   * After the turn: apply the updates the model emitted to the conversation's documents, in
   * order, atomically per document. With `ifMatch`, a document that moved on since refuses
   * the whole call ({@link PreconditionFailedError}).
   */
  async sync(
    maybeArgs: SyncArgs,
    maybeOptions: WriteOptions = {},
  ): Promise<WriteResult<SyncReport>> {
    const options = optionsObject(maybeOptions, 'client.sync');
    const args = argsObject(maybeArgs, 'client.sync');
    const body: SyncRequest = {
      personality: args.personality,
      user: args.user,
      updates: args.updates,
    };
    if (args.ifMatch !== undefined) body.if_match = args.ifMatch;
    if (args.caps !== undefined) body.caps = args.caps;
    if (args.session !== undefined) body.session = args.session;
    if (args.surface !== undefined) body.surface = args.surface;
    return write<SyncReport>(this.transport, {
      method: 'POST',
      path: '/v1/sync',
      body,
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** Search a personality's memory (a personality read through a vector provider). */
  async search(maybeArgs: SearchArgs, maybeOptions: CallOptions = {}): Promise<SearchView> {
    const options = optionsObject(maybeOptions, 'client.search');
    const args = argsObject(maybeArgs, 'client.search');
    const body: SearchRequest = { personality: args.personality, query: args.query };
    if (args.limit !== undefined) body.limit = args.limit;
    const response = await this.transport.request<SearchView>({
      method: 'POST',
      path: '/v1/search',
      body,
      signal: options.signal,
    });
    return response.body;
  }

  /** Liveness and each provider's readiness (`status: 'degraded'` when one is down). */
  async health(maybeOptions: CallOptions = {}): Promise<Health> {
    const options = optionsObject(maybeOptions, 'client.health');
    const response = await this.transport.request<Health>({
      method: 'GET',
      path: '/v1/health',
      signal: options.signal,
    });
    return response.body;
  }

  /**
   * Readiness, as a load balancer's health check sees it: the health report, whose `status`
   * is `degraded` when a provider does not answer (the service then answers 503, which is
   * not resent here). A 503 that is a problem document (busy) is thrown as usual.
   */
  async ready(maybeOptions: CallOptions = {}): Promise<Health> {
    const options = optionsObject(maybeOptions, 'client.ready');
    const response = await this.transport.request<Health | Problem>({
      method: 'GET',
      path: '/v1/health/ready',
      acceptStatuses: [503],
      signal: options.signal,
    });
    if (isProblem(response.body)) throw errorFromProblem(response.body);
    return response.body;
  }
}
