/**
 * {@link History}: a document's or a note's revisions (list, read one, diff, revert, redact).
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { Transport } from '../transport.js';
import type {
  DocumentReport,
  RevisionDiff,
  RevisionEntry,
  RevisionItem,
  RevisionsPage,
} from '../types.js';
import { optionsObject, type CallOptions } from '../core/arguments.js';
import { historyPath, type DocumentRef } from '../core/paths.js';
import {
  ifMatchHeaders,
  sessionFields,
  write,
  type DocumentWriteOptions,
  type WriteOptions,
  type WriteResult,
} from '../core/writes.js';

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

/** A document's revisions. */
export class History {
  constructor(private readonly transport: Transport) {}

  /** One page of revisions, newest first; pass `next_before` as `before` for the next. */
  async list(ref: DocumentRef, maybeOptions: RevisionsOptions = {}): Promise<RevisionsPage> {
    const options = optionsObject(maybeOptions, 'history.list');
    const response = await this.transport.request<RevisionsPage>({
      method: 'GET',
      path: historyPath(ref, 'revisions'),
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
    checkRevision(revision, 'history.get');
    const response = await this.transport.request<RevisionEntry>({
      method: 'GET',
      path: historyPath(ref, `revisions/${encodeURIComponent(String(revision))}`),
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
      path: historyPath(ref, 'diff'),
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
    checkRevision(revision, 'history.revert');
    return write<DocumentReport>(this.transport, {
      method: 'POST',
      path: historyPath(ref, 'revert'),
      headers: ifMatchHeaders(options.ifMatch, 'history.revert'),
      body: { number: revision, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Erase a revision's text and updates for good (its number, time, sizes and hashes stay);
   * answers the revision as the history now shows it: no `text`, `redacted_at` set. The
   * document is untouched, so the revision whose text it holds now is refused
   * ({@link RefusedError}, `code` `revision-in-use`); one redacted already is answered as it is.
   */
  async redact(
    ref: DocumentRef,
    revision: number,
    maybeOptions: WriteOptions = {},
  ): Promise<WriteResult<RevisionEntry>> {
    const options = optionsObject(maybeOptions, 'history.redact');
    checkRevision(revision, 'history.redact');
    return write<RevisionEntry>(this.transport, {
      method: 'POST',
      path: historyPath(ref, `revisions/${encodeURIComponent(String(revision))}/redact`),
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }
}

/** A revision number (0 or more), else refused before anything is sent. */
function checkRevision(revision: number, method: string): void {
  if (!Number.isInteger(revision) || revision < 0) {
    throw invalidInput(`${method}: revision must be a revision number, got ${String(revision)}`);
  }
}
