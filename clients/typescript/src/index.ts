/**
 * agent-memory: a typed client for the agent-memory service's `/v1` API.
 *
 * - {@link MemoryClient}: the turn cycle (`prefetch`, `sync`), documents, notes, history,
 *   search, identities, the directory and health, with exactly-once writes.
 * - One error class per kind of the service's problems ({@link MemoryError} and its subclasses).
 * - `agent-memory/ethos`: Ethos `MemoryProvider`s over the service.
 * - `agent-memory/claude-memory-tool`: a backend for Claude's memory tool (needs `@anthropic-ai/sdk`).
 *
 * @module
 */

export {
  MemoryClient,
  type MemoryClientOptions,
  type SyncArgs,
  type PrefetchArgs,
  type SearchArgs,
} from './client.js';
export {
  Documents,
  Notes,
  History,
  Identities,
  Directory,
  type CreateOptions,
  type DeleteOptions,
  type NotesListOptions,
  type ReplaceOptions,
  type RevisionsOptions,
  type WriteNoteOptions,
} from './resources/index.js';
export {
  documentPath,
  globalMemory,
  note,
  notePath,
  personalityMemory,
  userProfile,
  type DocumentRef,
} from './core/paths.js';
export { type CallOptions } from './core/arguments.js';
export {
  type WriteOptions,
  type WriteMeta,
  type WriteResult,
  type DocumentWriteOptions,
} from './core/writes.js';
export { type PageOptions } from './core/pagination.js';
export {
  MemoryError,
  InvalidInputError,
  PreconditionFailedError,
  ConflictError,
  RefusedError,
  BusyError,
  UnavailableError,
  OutcomeUnknownError,
  PartiallyAppliedError,
  CorruptError,
  ConfigError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  MethodNotAllowedError,
  NetworkError,
  TimeoutError,
  UnexpectedResponseError,
  errorFromProblem,
  type ErrorContext,
} from './errors.js';
export { parseRetryAfter, type FetchLike, type TransportOptions } from './transport.js';
export type * from './types.js';
export {
  AgentMemoryKeyedProvider,
  AgentMemoryProvider,
  AgentMemoryLegacyProvider,
  ETHOS_MAX_CHARS,
  renderLikeEthos,
  toServiceUpdates,
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
  type AgentMemoryProviderOptions,
  type AgentMemoryLegacyProviderOptions,
  type EthosMemoryContext,
  type EthosMemoryLoadContext,
  type EthosMemoryProvider,
  type EthosMemoryStore,
  type EthosMemoryUpdate,
  type EthosLegacyMemoryContext,
  type EthosLegacyMemoryUpdate,
} from './ethos.js';
