/**
 * {@link MemoryClient}: the agent-memory `/v1` API, typed.
 *
 * @module
 */

import { errorFromProblem, invalidInput, isProblem } from './errors.js';
import { Transport, type ApiResponse, type TransportOptions } from './transport.js';
import type {
  Budgets,
  DocumentId,
  DocumentReport,
  DocumentView,
  Health,
  IdentitiesPage,
  IdentityView,
  IfMatch,
  LinkChange,
  MemoryUpdate,
  PersonalitiesPage,
  PersonalityId,
  PersonalityView,
  PrefetchRequest,
  PrefetchView,
  Problem,
  PurgedView,
  RevisionDiff,
  RevisionEntry,
  RevisionItem,
  RevisionsPage,
  SearchRequest,
  SearchView,
  SyncReport,
  SyncRequest,
  UserId,
  UsersPage,
  UserView,
  Version,
  WriteSurface,
} from './types.js';

/** Options of a {@link MemoryClient}. */
export type MemoryClientOptions = TransportOptions;

/** Per-call options every method takes. */
export interface CallOptions {
  /** Aborts the call (between resends too). */
  signal?: AbortSignal | undefined;
}

/** Per-call options of a write. */
export interface WriteOptions extends CallOptions {
  /**
   * The write's name, the same on every resend (1 to 128 visible ASCII characters). Default: a
   * fresh `crypto.randomUUID()` per call. Give your own to make a retry of the whole call (after
   * a crash, say) land once too: a turn id, a tool_use id.
   */
  idempotencyKey?: string | undefined;
}

/** What every write returns besides the service's answer. */
export interface WriteMeta {
  /** The `Idempotency-Key` the write carried. */
  readonly idempotencyKey: string;
  /** The service answered with the response of an earlier request with the same key. */
  readonly idempotentReplayed: boolean;
}

/** A write's answer and {@link WriteMeta}. */
export type WriteResult<T> = T & WriteMeta;

/**
 * A document: its id object (`{ kind: 'user-profile', user: 'grace' }`, see
 * {@link globalMemory}, {@link personalityMemory}, {@link userProfile}) or its layout path
 * (`MEMORY.md`, `personalities/<id>/MEMORY.md`, `users/<id>/USER.md`).
 */
export type DocumentRef = DocumentId | string;

/** The global `MEMORY.md`, shared by global-scope personalities. */
export function globalMemory(): DocumentId {
  return { kind: 'global-memory' };
}

/** `personalities/<personality>/MEMORY.md`. */
export function personalityMemory(personality: PersonalityId): DocumentId {
  return { kind: 'personality-memory', personality };
}

/** `users/<user>/USER.md`. */
export function userProfile(user: UserId): DocumentId {
  return { kind: 'user-profile', user };
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

/** Options of a guarded document write. */
export interface DocumentWriteOptions extends WriteOptions {
  /** The version the change was based on (`DocumentView.version`, an ETag), or `*`. */
  ifMatch?: Version | undefined;
  session?: string | undefined;
  surface?: WriteSurface | undefined;
}

/** Options of {@link Documents.replace}: `ifMatch` is required by the service (else 428). */
export interface ReplaceOptions extends DocumentWriteOptions {
  ifMatch: Version;
}

/** Options of a page of revisions. */
export interface RevisionsOptions extends CallOptions {
  /** Revisions per page (the service's default when unset). */
  limit?: number | undefined;
  /** Only revisions numbered below this (the previous page's `next_before`). */
  before?: number | undefined;
  /** Include each revision's whole text after it. */
  text?: boolean | undefined;
  /** Include each revision's change as a unified diff. */
  diff?: boolean | undefined;
}

/** Options of a cursor page (`limit`, `after`). */
export interface PageOptions extends CallOptions {
  limit?: number | undefined;
  /** The previous page's `next_after`. */
  after?: string | undefined;
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
  /** A document's revisions: list, read one, diff, revert. */
  readonly history: History;
  /** Platform accounts linked to users. */
  readonly identities: Identities;
  /** The personalities and users the service knows. */
  readonly directory: Directory;
  private readonly transport: Transport;

  constructor(options: MemoryClientOptions) {
    this.transport = new Transport(options);
    this.documents = new Documents(this.transport);
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

/** Documents by layout path. */
export class Documents {
  constructor(private readonly transport: Transport) {}

  /** The document: text, version (its ETag), location and modified time. */
  get(ref: DocumentRef, options?: CallOptions): Promise<DocumentView>;
  /**
   * With `ifNoneMatch` (a version read before): null when the document is still at it (304),
   * else the document.
   */
  get(
    ref: DocumentRef,
    options: CallOptions & { ifNoneMatch: Version },
  ): Promise<DocumentView | null>;
  async get(
    ref: DocumentRef,
    maybeOptions: CallOptions & { ifNoneMatch?: Version } = {},
  ): Promise<DocumentView | null> {
    const options = optionsObject(maybeOptions, 'documents.get');
    const headers: Record<string, string> = {};
    if (options.ifNoneMatch !== undefined) {
      headers['if-none-match'] = quoteTag(options.ifNoneMatch, 'documents.get', 'ifNoneMatch');
    }
    const response = await this.transport.request<DocumentView>({
      method: 'GET',
      path: documentPath(ref),
      headers,
      acceptStatuses: [304],
      signal: options.signal,
    });
    return response.status === 304 ? null : response.body;
  }

  /**
   * Replace the whole text, guarded by `ifMatch` (the version the new text was based on, or
   * `*`): {@link PreconditionFailedError} with the current version when it moved on.
   */
  async replace(
    ref: DocumentRef,
    text: string,
    options: ReplaceOptions,
  ): Promise<WriteResult<DocumentReport>> {
    // Plain JavaScript can omit the options the types require: say what is missing.
    if (typeof options !== 'object' || options === null || options.ifMatch === undefined) {
      throw invalidInput(
        'documents.replace needs options with ifMatch: the version the new text is based on ' +
          "(a document's `version`), or '*' to replace whatever is there",
      );
    }
    return write<DocumentReport>(this.transport, {
      method: 'PUT',
      path: documentPath(ref),
      headers: { 'if-match': quoteTag(options.ifMatch, 'documents.replace', 'ifMatch') },
      body: { text, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Apply a batch of updates to this one document, in order, atomically (each naming this
   * document's store); guarded by `ifMatch` when given.
   */
  async update(
    ref: DocumentRef,
    updates: MemoryUpdate[],
    maybeOptions: DocumentWriteOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'documents.update');
    return write<DocumentReport>(this.transport, {
      method: 'POST',
      path: `${documentPath(ref)}/updates`,
      headers:
        options.ifMatch === undefined
          ? {}
          : { 'if-match': quoteTag(options.ifMatch, 'documents.update', 'ifMatch') },
      body: { updates, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Erase the document and its history (an admin act; a tombstone revision is left). To
   * clear a document keeping its history, {@link replace} it with `""` instead.
   */
  async purge(ref: DocumentRef, maybeOptions: WriteOptions = {}): Promise<WriteResult<PurgedView>> {
    const options = optionsObject(maybeOptions, 'documents.purge');
    return write<PurgedView>(this.transport, {
      method: 'DELETE',
      path: documentPath(ref),
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }
}

/** A document's revisions. */
export class History {
  constructor(private readonly transport: Transport) {}

  /** One page of revisions, newest first; pass `next_before` as `before` for the next. */
  async list(ref: DocumentRef, maybeOptions: RevisionsOptions = {}): Promise<RevisionsPage> {
    const options = optionsObject(maybeOptions, 'history.list');
    const response = await this.transport.request<RevisionsPage>({
      method: 'GET',
      path: `${documentPath(ref)}/revisions`,
      query: {
        limit: options.limit,
        before: options.before,
        text: options.text,
        diff: options.diff,
      },
      signal: options.signal,
    });
    return response.body;
  }

  /** Every kept revision, newest first, fetching pages of `limit` as it goes. */
  async *iterate(
    ref: DocumentRef,
    maybeOptions: RevisionsOptions = {},
  ): AsyncGenerator<RevisionItem> {
    const options = optionsObject(maybeOptions, 'history.iterate');
    let before = options.before;
    for (;;) {
      const page = await this.list(ref, { ...options, before });
      yield* page.revisions;
      if (page.next_before === undefined || page.next_before === null) return;
      before = page.next_before;
    }
  }

  /** One revision; {@link NotFoundError} when it is not kept. */
  async get(
    ref: DocumentRef,
    revision: number,
    maybeOptions: CallOptions = {},
  ): Promise<RevisionEntry> {
    const options = optionsObject(maybeOptions, 'history.get');
    if (!Number.isInteger(revision) || revision < 0) {
      throw invalidInput(
        `history.get: revision must be a revision number, got ${String(revision)}`,
      );
    }
    const response = await this.transport.request<RevisionEntry>({
      method: 'GET',
      path: `${documentPath(ref)}/revisions/${encodeURIComponent(String(revision))}`,
      signal: options.signal,
    });
    return response.body;
  }

  /**
   * The unified diff between two states: `from` (default: the revision before `to`; 0 is the
   * empty document) and `to` (default: the document now).
   */
  async diff(
    ref: DocumentRef,
    range: { from?: number | undefined; to?: number | undefined } = {},
    maybeOptions: CallOptions = {},
  ): Promise<RevisionDiff> {
    const options = optionsObject(maybeOptions, 'history.diff');
    const response = await this.transport.request<RevisionDiff>({
      method: 'GET',
      path: `${documentPath(ref)}/diff`,
      query: { from: range.from, to: range.to },
      signal: options.signal,
    });
    return response.body;
  }

  /** Put the document back to a revision's text: a new revision, guarded by `ifMatch`. */
  async revert(
    ref: DocumentRef,
    revision: number,
    maybeOptions: DocumentWriteOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'history.revert');
    if (!Number.isInteger(revision) || revision < 0) {
      throw invalidInput(
        `history.revert: revision must be a revision number, got ${String(revision)}`,
      );
    }
    return write<DocumentReport>(this.transport, {
      method: 'POST',
      path: `${documentPath(ref)}/revert`,
      headers:
        options.ifMatch === undefined
          ? {}
          : { 'if-match': quoteTag(options.ifMatch, 'history.revert', 'ifMatch') },
      body: { number: revision, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }
}

/** Platform accounts (`telegram` `12345`) linked to users. */
export class Identities {
  constructor(private readonly transport: Transport) {}

  /**
   * Link an account to a user. An account linked to another user is a
   * {@link ConflictError} unless `relink` moves it.
   */
  async link(
    platform: string,
    platformUser: string,
    user: UserId,
    maybeOptions: WriteOptions & { relink?: boolean | undefined } = {},
  ): Promise<WriteResult<LinkChange>> {
    const options = optionsObject(maybeOptions, 'identities.link');
    return write<LinkChange>(this.transport, {
      method: 'PUT',
      path: identityPath(platform, platformUser),
      body: options.relink === undefined ? { user } : { user, relink: options.relink },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** The user an account is linked to; {@link NotFoundError} when it is not linked. */
  async resolve(
    platform: string,
    platformUser: string,
    maybeOptions: CallOptions = {},
  ): Promise<IdentityView> {
    const options = optionsObject(maybeOptions, 'identities.resolve');
    const response = await this.transport.request<IdentityView>({
      method: 'GET',
      path: identityPath(platform, platformUser),
      signal: options.signal,
    });
    return response.body;
  }

  /** Remove an account's link (`previous` says to whom it was linked, null when it was not). */
  async unlink(
    platform: string,
    platformUser: string,
    maybeOptions: WriteOptions = {},
  ): Promise<WriteResult<LinkChange>> {
    const options = optionsObject(maybeOptions, 'identities.unlink');
    return write<LinkChange>(this.transport, {
      method: 'DELETE',
      path: identityPath(platform, platformUser),
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** One page of links, sorted by platform then account. */
  async list(maybeOptions: PageOptions = {}): Promise<IdentitiesPage> {
    return listPage<IdentitiesPage>(
      this.transport,
      '/v1/identities',
      optionsObject(maybeOptions, 'identities.list'),
    );
  }

  /** Every link, page by page. */
  iterate(maybeOptions: PageOptions = {}): AsyncGenerator<IdentityView> {
    const options = optionsObject(maybeOptions, 'identities.iterate');
    return paginate((after) => this.list({ ...options, after }), options.after);
  }
}

/** The personalities and users the service knows. */
export class Directory {
  constructor(private readonly transport: Transport) {}

  /** One page of personalities, sorted by id, with the default one. */
  async personalities(maybeOptions: PageOptions = {}): Promise<PersonalitiesPage> {
    return listPage<PersonalitiesPage>(
      this.transport,
      '/v1/personalities',
      optionsObject(maybeOptions, 'directory.personalities'),
    );
  }

  /** Every personality, page by page. */
  iteratePersonalities(maybeOptions: PageOptions = {}): AsyncGenerator<PersonalityView> {
    const options = optionsObject(maybeOptions, 'directory.iteratePersonalities');
    return paginate((after) => this.personalities({ ...options, after }), options.after);
  }

  /** One page of users, sorted by id, with the default one. */
  async users(maybeOptions: PageOptions = {}): Promise<UsersPage> {
    return listPage<UsersPage>(
      this.transport,
      '/v1/users',
      optionsObject(maybeOptions, 'directory.users'),
    );
  }

  /** Every user, page by page. */
  iterateUsers(maybeOptions: PageOptions = {}): AsyncGenerator<UserView> {
    const options = optionsObject(maybeOptions, 'directory.iterateUsers');
    return paginate((after) => this.users({ ...options, after }), options.after);
  }
}

/** One page of a cursor-paged listing at `path`. */
async function listPage<T>(transport: Transport, path: string, options: PageOptions): Promise<T> {
  const response = await transport.request<T>({
    method: 'GET',
    path,
    query: { limit: options.limit, after: options.after },
    signal: options.signal,
  });
  return response.body;
}

async function* paginate<T>(
  fetchPage: (after: string | undefined) => Promise<{ items: T[]; next_after?: string | null }>,
  start: string | undefined,
): AsyncGenerator<T> {
  let after = start;
  for (;;) {
    const page = await fetchPage(after);
    yield* page.items;
    if (page.next_after === undefined || page.next_after === null) return;
    after = page.next_after;
  }
}

async function write<T>(
  transport: Transport,
  spec: {
    method: 'POST' | 'PUT' | 'DELETE';
    path: string;
    body?: unknown;
    headers?: Record<string, string>;
    idempotencyKey: string | undefined;
    signal: AbortSignal | undefined;
  },
): Promise<WriteResult<T>> {
  if (
    spec.idempotencyKey !== undefined &&
    (typeof spec.idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(spec.idempotencyKey))
  ) {
    throw invalidInput(
      `idempotencyKey must be 1 to 128 visible ASCII characters, got ${describe(spec.idempotencyKey)}`,
    );
  }
  const idempotencyKey = spec.idempotencyKey ?? crypto.randomUUID();
  const response: ApiResponse<T> = await transport.request<T>({ ...spec, idempotencyKey });
  return Object.assign(response.body as object, {
    idempotencyKey,
    idempotentReplayed: response.replayed,
  }) as WriteResult<T>;
}

function sessionFields(options: DocumentWriteOptions): {
  session?: string;
  surface?: WriteSurface;
} {
  const fields: { session?: string; surface?: WriteSurface } = {};
  if (options.session !== undefined) fields.session = options.session;
  if (options.surface !== undefined) fields.surface = options.surface;
  return fields;
}

/** An entity tag as `If-Match` takes it: `*`, or the version in quotes. */
function quoteTag(version: Version, method: string, option: string): string {
  // A version is what the service handed out: a non-empty string with no quote or control
  // character. Anything else (undefined from plain JavaScript, a number) would be sent as a
  // tag that matches nothing, e.g. `"undefined"`.
  if (typeof version !== 'string' || !/^(?:W\/)?"?[!#-~]+"?$/.test(version)) {
    throw invalidInput(
      `${method}: ${option} must be a version (a document's \`version\`) or '*', got ${describe(version)}`,
    );
  }
  if (version === '*' || /^(W\/)?".*"$/.test(version)) return version;
  return `"${version}"`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : String(value);
}

/**
 * The options object of a call from plain JavaScript checked: undefined is no options, and
 * anything else that is not an object is refused before anything is sent.
 */
function optionsObject<T extends object>(options: T | undefined, method: string): T {
  if (options === undefined) return {} as T;
  if (typeof options !== 'object' || options === null) {
    throw invalidInput(`${method}: options must be an object, got ${describe(options)}`);
  }
  return options;
}

function argsObject<T extends object>(args: T, method: string): T {
  if (typeof args !== 'object' || args === null) {
    throw invalidInput(`${method}: its first argument must be an object, got ${describe(args)}`);
  }
  return args;
}

const IDEMPOTENCY_KEY = /^[!-~]{1,128}$/;

const LAYOUT_PATH = /^(?:MEMORY\.md|personalities\/([^/]+)\/MEMORY\.md|users\/([^/]+)\/USER\.md)$/;

/** `/v1/documents/<layout path>` for a document, each id percent-encoded. */
export function documentPath(ref: DocumentRef): string {
  let id: DocumentId;
  if (typeof ref === 'string') {
    const match = LAYOUT_PATH.exec(ref);
    if (match === null) {
      throw invalidInput(
        `${JSON.stringify(ref)} is not a document path: use MEMORY.md, ` +
          'personalities/<id>/MEMORY.md or users/<id>/USER.md (relative: no leading /)',
      );
    }
    if (match[1] !== undefined) id = personalityMemory(match[1]);
    else if (match[2] !== undefined) id = userProfile(match[2]);
    else id = globalMemory();
  } else if (typeof ref === 'object' && ref !== null) {
    id = ref;
  } else {
    throw invalidInput(
      `${describe(ref)} is not a document: pass a layout path (users/<id>/USER.md) or ` +
        'globalMemory(), personalityMemory(id), userProfile(id)',
    );
  }
  switch (id.kind) {
    case 'global-memory':
      return '/v1/documents/MEMORY.md';
    case 'personality-memory':
      return `/v1/documents/personalities/${pathSegment(id.personality)}/MEMORY.md`;
    case 'user-profile':
      return `/v1/documents/users/${pathSegment(id.user)}/USER.md`;
    default:
      throw invalidInput(
        `${JSON.stringify(id)} is not a document: use globalMemory(), personalityMemory(id) or userProfile(id)`,
      );
  }
}

function identityPath(platform: string, platformUser: string): string {
  return `/v1/identities/${pathSegment(platform)}/${pathSegment(platformUser)}`;
}

/**
 * One percent-encoded path segment. `.` and `..` are refused here: URLs resolve them (even
 * encoded) into another path, which would address another document.
 */
function pathSegment(value: string): string {
  if (typeof value !== 'string' || value.length === 0 || /^\.{1,2}$/.test(value)) {
    throw invalidInput(`${describe(value)} is not a valid id or path segment`);
  }
  return encodeURIComponent(value);
}
