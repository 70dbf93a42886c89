/**
 * {@link Documents}: read, replace, update and purge documents by layout path.
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { Transport } from '../transport.js';
import type { DocumentReport, DocumentView, MemoryUpdate, PurgedView, Version } from '../types.js';
import { optionsObject, type CallOptions } from '../core/arguments.js';
import { documentPath, type DocumentRef } from '../core/paths.js';
import {
  ifMatchHeaders,
  quoteTag,
  sessionFields,
  write,
  type DocumentWriteOptions,
  type WriteOptions,
  type WriteResult,
} from '../core/writes.js';

/** Options of {@link Documents.replace}: `ifMatch` is required by the service (else 428). */
export interface ReplaceOptions extends DocumentWriteOptions {
  ifMatch: Version;
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
      headers: ifMatchHeaders(options.ifMatch, 'documents.replace'),
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
      headers: ifMatchHeaders(options.ifMatch, 'documents.update'),
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
