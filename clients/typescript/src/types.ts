/**
 * The wire types of the agent-memory `/v1` API, written against `docs/openapi.json`
 * (components/schemas). Field names are the API's own (snake_case), so a value read from
 * the service can be sent back unchanged.
 *
 * @module
 */

/** An id: 1 to 64 of A-Z, a-z, 0-9, '_' and '-'. */
export type PersonalityId = string;

/** An id: 1 to 64 of A-Z, a-z, 0-9, '_' and '-'. */
export type UserId = string;

/**
 * An opaque token that changes whenever a document's content changes: its `ETag`, what
 * `If-Match` and `if_match` take. Compare versions for equality only.
 */
export type Version = string;

/** Which of the two documents of a conversation an update targets. */
export type Store = 'memory' | 'user';

/** Whose `MEMORY.md` a personality reads and writes. */
export type MemoryScope = 'per-personality' | 'global';

/** Where a write came from, as its revision records it. */
export type Surface = 'tool' | 'cli' | 'web' | 'api' | 'external';

/** Where a write comes from, as its revisions record it (default `api`). */
export type WriteSurface = 'api' | 'tool' | 'web' | 'cli';

/**
 * The scope a note belongs to, named as the always-loaded document it sits beside: the memory
 * the personality reads, or a user's profile.
 */
export type NoteScope =
  | { kind: 'global-memory' }
  | { kind: 'personality-memory'; personality: PersonalityId }
  | { kind: 'user-profile'; user: UserId };

/** A note's path within its scope (`projects/kyoto.md`); the server checks its rule. */
export type NotePath = string;

/** Which note: its scope and its path within it. */
export interface NoteId {
  scope: NoteScope;
  path: NotePath;
}

/** One document, named independently of the backend that stores it: one of the pair, or a note. */
export type DocumentId = NoteScope | ({ kind: 'note' } & NoteId);

/** Append `content` as a new paragraph (refused when blank). */
export interface AddUpdate {
  action: 'add';
  store: Store;
  /** The note of the store's scope to change instead of its document: it must exist. */
  note?: NotePath | null;
  content: string;
}

/** Replace the whole document with `content` (blank clears it). */
export interface ReplaceUpdate {
  action: 'replace';
  store: Store;
  /** The note of the store's scope to write instead of its document: created when missing. */
  note?: NotePath | null;
  content: string;
}

/** Drop every line that contains `substringMatch`, literally and case-sensitively. */
export interface RemoveUpdate {
  action: 'remove';
  store: Store;
  /** The note of the store's scope to change instead of its document: it must exist. */
  note?: NotePath | null;
  substringMatch: string;
}

/** Replace the single occurrence of `old` with `new`, literally. */
export interface EditUpdate {
  action: 'edit';
  store: Store;
  /** The note of the store's scope to change instead of its document: it must exist. */
  note?: NotePath | null;
  old: string;
  new: string;
}

/** Create a note with `content`: refused (`note-exists`) when it exists. */
export interface CreateUpdate {
  action: 'create';
  store: Store;
  note: NotePath;
  content: string;
}

/** Delete a note: its text becomes empty, its history keeps it. */
export interface DeleteUpdate {
  action: 'delete';
  store: Store;
  note: NotePath;
}

/** Move a note to `to` within its scope, atomically: a call of its own. */
export interface RenameUpdate {
  action: 'rename';
  store: Store;
  note: NotePath;
  to: NotePath;
}

/** One change to one document or note, in exactly the JSON forms of the contract. */
export type MemoryUpdate =
  | AddUpdate
  | ReplaceUpdate
  | RemoveUpdate
  | EditUpdate
  | CreateUpdate
  | DeleteUpdate
  | RenameUpdate;

/** Soft and hard limits on a document's size, in UTF-8 bytes after a batch. */
export interface Caps {
  hard?: number | null;
  soft?: number | null;
}

/** The limits on one scope's notes; each is a hard limit. */
export interface NoteCaps {
  max_note_bytes?: number;
  max_notes?: number;
  max_bytes?: number;
}

/** Caps for both documents of a `sync`, and for the notes of each scope. */
export interface Budgets {
  memory?: Caps;
  user?: Caps;
  notes?: NoteCaps;
}

/** What a scope's notes come to after a write. */
export interface ScopeTotals {
  notes: number;
  bytes: number;
}

/** One document as the API shows it: its text and what guards a write to it. */
export interface DocumentView {
  /**
   * Its path in the layout: `MEMORY.md`, `personalities/<id>/MEMORY.md`, `users/<id>/USER.md`,
   * or a note's (`personalities/<id>/notes/<path>`).
   */
  path: string;
  store: Store;
  /** Its text; empty when it was never written. */
  text: string;
  version: Version;
  /** Where the provider keeps it: a path or a key. */
  location: string;
  /** When its text was last written, in ms since the Unix epoch; null when never written. */
  modified?: number | null;
}

/** One note as a listing shows it: enough to choose which to open. */
export interface NoteItem {
  /** Its path within its scope (`projects/kyoto.md`). */
  path: string;
  bytes: number;
  version: Version;
  /** When its text was last written, in ms since the Unix epoch; null when unknown. */
  modified?: number | null;
  /** Its first heading or first line, shortened. */
  description: string;
}

/** A scope's notes, by path. */
export interface NotesPage {
  /** The scope's folder in the layout: a note's layout path is this, `/`, its path. */
  folder: string;
  notes: NoteItem[];
}

/** One document of a conversation, with the caps the personality writes it under. */
export interface PairDocument extends DocumentView {
  caps: Caps;
}

/** One personality: where its memory lives. */
export interface PersonalityView {
  id: PersonalityId;
  /** The provider its `MEMORY.md` is read and written through, by name. */
  provider: string;
  /** That provider's kind: `markdown`, `postgres`, `redis` or `vector`. */
  kind: string;
  scope: MemoryScope;
  /** Whether its `MEMORY.md` is read through a provider that recalls. */
  recall: boolean;
}

/** What to prefetch: one conversation of a personality with a user. */
export interface PrefetchRequest {
  personality: PersonalityId;
  user: UserId;
  /** The user's message, for a personality that recalls. */
  query?: string | null;
  /** The most chars the rendered context may have (default and ceiling: the personality's). */
  max_chars?: number | null;
}

/** What the agent sees before its turn, and the documents behind it. */
export interface PrefetchView {
  /** `## About You` then `## Memory`, or null when both documents are blank. */
  context?: string | null;
  memory: PairDocument;
  personality: PersonalityView;
  user: PairDocument;
  warnings: string[];
}

/** Versions a `sync` call requires the documents it touches to still be at. */
export interface IfMatch {
  memory?: Version | null;
  user?: Version | null;
  /** Required versions of notes, by their scope's store then their path. */
  notes?: { [store: string]: { [path: string]: Version } };
}

/** A batch of updates after a turn. */
export interface SyncRequest {
  personality: PersonalityId;
  user: UserId;
  updates: MemoryUpdate[];
  if_match?: IfMatch | null;
  /** Caps for this call on top of the personality's: the smaller of each applies. */
  caps?: Budgets | null;
  /** The caller's session (a conversation id), recorded in the revisions. */
  session?: string | null;
  surface?: WriteSurface | null;
}

/** What one write did to one document it touched. */
export interface DocumentReport {
  store: Store;
  document: DocumentId;
  location: string;
  written: boolean;
  version_before: Version;
  version_after: Version;
  sha256_before: string;
  sha256_after: string;
  bytes_before: number;
  bytes_after: number;
  lines_removed: number;
  over_soft_cap: boolean;
  /** Whether this is the report of an earlier call with the same idempotency key. */
  replayed?: boolean;
  /** For a note: its scope's notes after the call. */
  scope?: ScopeTotals | null;
}

/** The result of a `sync` call: one report per document touched, memory first. */
export interface SyncReport {
  documents: DocumentReport[];
  retries?: number;
  warnings?: string[];
}

/** A search of one personality's memory. */
export interface SearchRequest {
  personality: PersonalityId;
  query: string;
  /** The most entries to return, best first (1 to 100, default 8). */
  limit?: number | null;
}

/** The entries a search found. */
export interface SearchView {
  path: string;
  /** The best entries' current text, best first: MEMORY.md's and its notes', ranked together. */
  ranked: string[];
  /** For each entry of `ranked`, the path of the document it is in (`path` for MEMORY.md's own). */
  ranked_from: string[];
  /** Entries the index has not covered yet, in document order (MEMORY.md's first). */
  unranked: string[];
  /** For each entry of `unranked`, the path of the document it is in. */
  unranked_from: string[];
  behind?: string | null;
}

/** What a purge erased. */
export interface PurgedView {
  path: string;
  location: string;
  bytes: number;
  revisions: number;
  tombstone?: number | null;
}

/** A revision as the API lists it. */
export interface RevisionEntry {
  number: number;
  path: string;
  version: Version;
  version_before: Version;
  /** Milliseconds since the Unix epoch; null for a time before 1970 or past 9999. */
  time?: number | null;
  time_utc: string;
  surface: Surface;
  bytes_before: number;
  bytes_after: number;
  sha256_before: string;
  sha256_after: string;
  updates: MemoryUpdate[];
  tombstone: boolean;
  /**
   * When its text and updates were erased (a redaction), in milliseconds since the Unix epoch;
   * null for a revision not redacted.
   */
  redacted_at?: number | null;
  idempotency_key?: string | null;
  personality?: PersonalityId | null;
  user?: UserId | null;
  session?: string | null;
  /**
   * The whole text after it, when asked for (`text: true`); null for a tombstone or a redacted
   * revision.
   */
  text?: string | null;
}

/** One listed revision, with its change when asked for. */
export interface RevisionItem extends RevisionEntry {
  oldest_kept: boolean;
  diff?: string | null;
}

/** One page of a document's revisions, newest first. */
export interface RevisionsPage {
  path: string;
  revisions: RevisionItem[];
  /** Pass as `before` for the next page; null on the last. */
  next_before?: number | null;
}

/** A diff between two states of one document. */
export interface RevisionDiff {
  from: number;
  to?: number | null;
  /** The unified diff, empty when the texts are equal. */
  diff: string;
}

/** One identity link: an account and the user it is. */
export interface IdentityView {
  identity: string;
  platform: string;
  platform_user: string;
  user: UserId;
}

/** What a link or unlink changed. */
export interface LinkChange {
  identity: string;
  platform: string;
  platform_user: string;
  previous?: UserId | null;
  user?: UserId | null;
}

/** One page of identity links. */
export interface IdentitiesPage {
  items: IdentityView[];
  next_after?: string | null;
}

/** One page of personalities. */
export interface PersonalitiesPage {
  items: PersonalityView[];
  default?: PersonalityId | null;
  next_after?: string | null;
}

/** One user. */
export interface UserView {
  id: UserId;
}

/** One page of users. */
export interface UsersPage {
  items: UserView[];
  default?: UserId | null;
  next_after?: string | null;
}

/** One provider's readiness. */
export interface ProviderHealth {
  name: string;
  kind: string;
  ready: boolean;
  error?: string | null;
}

/** Whether the service is up, and each provider with it. */
export interface Health {
  status: 'ok' | 'degraded';
  providers: ProviderHealth[];
}

/** The error classification's kinds, as `Problem.kind` carries them. */
export type ProblemKind =
  | 'invalid-input'
  | 'precondition-failed'
  | 'conflict'
  | 'refused'
  | 'busy'
  | 'unavailable'
  | 'outcome-unknown'
  | 'partially-applied'
  | 'corrupt'
  | 'config'
  | 'unauthorized'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed';

/**
 * Which error a problem is within its kind (`Problem.code`), as the service names them: the
 * codes this client knows. The service may add codes, so `Problem.code` is typed `string`:
 * compare it with these.
 */
export type ProblemCode =
  | 'invalid-id'
  | 'invalid-update'
  | 'no-match'
  | 'ambiguous-match'
  | 'hard-cap-exceeded'
  | 'stale-version'
  | 'contention'
  | 'unavailable'
  | 'outcome-unknown'
  | 'corrupt'
  | 'partially-applied'
  | 'identity-taken'
  | 'key-reused'
  | 'revision-not-found'
  | 'misrouted'
  | 'not-in-layout'
  | 'invalid-note-path'
  | 'note-not-found'
  | 'note-exists'
  | 'note-collision'
  | 'notes-cap-exceeded'
  | 'config';

/** An RFC 9457 problem document, as every error response of the API carries. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  kind: ProblemKind;
  retryable: boolean;
  /**
   * Which error this is within its kind, stable for code to match on (a {@link ProblemCode}:
   * `no-match`, `hard-cap-exceeded`, `key-reused`, ...); absent for problems only HTTP has
   * (an unknown route, a missing API key).
   */
  code?: string | null;
  /** For `precondition-failed`: the document's version now (also its `ETag`). */
  current_version?: Version | null;
  /** For `precondition-failed` and `hard-cap-exceeded`: the document's layout path. */
  document?: string | null;
  /** For `hard-cap-exceeded`: the UTF-8 bytes the document would have had. */
  bytes?: number | null;
  /** For `hard-cap-exceeded`: the hard cap it would have gone over, in bytes. */
  hard_cap?: number | null;
  /** Extension members the server may add. */
  [member: string]: unknown;
}
