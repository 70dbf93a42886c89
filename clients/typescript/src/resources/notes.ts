/**
 * {@link Notes}: list, read, create, write, update, delete and rename notes, the markdown
 * documents beside the pair, by their id ({@link note}) or layout path
 * (`personalities/<id>/notes/<path>`). Their history is {@link History}'s.
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { Transport } from '../transport.js';
import type {
  DocumentId,
  DocumentReport,
  DocumentView,
  MemoryUpdate,
  NotePath,
  NotesPage,
  Version,
} from '../types.js';
import { optionsObject, type CallOptions } from '../core/arguments.js';
import { notePath, notesPath, type DocumentRef } from '../core/paths.js';
import {
  ifMatchHeaders,
  sessionFields,
  write,
  type DocumentWriteOptions,
  type WriteOptions,
  type WriteResult,
} from '../core/writes.js';

/** Options of {@link Notes.list}. */
export interface NotesListOptions extends CallOptions {
  /** Only the notes whose path starts with this (`projects/`). */
  prefix?: string | undefined;
}

/** Options of {@link Notes.create}: a create is guarded by the note not existing. */
export type CreateOptions = Omit<DocumentWriteOptions, 'ifMatch'>;

/** Options of {@link Notes.write}: `ifMatch` is required by the service (else 428). */
export interface WriteNoteOptions extends DocumentWriteOptions {
  ifMatch: Version;
}

/** Options of {@link Notes.delete}. */
export interface DeleteOptions extends WriteOptions {
  /** The version the note must still be at, or `*`. */
  ifMatch?: Version | undefined;
}

/** Notes by id or layout path. */
export class Notes {
  constructor(private readonly transport: Transport) {}

  /**
   * The notes beside one of the pair (`personalities/ada/MEMORY.md` or its id), by path, each
   * with its size, version, last write and description.
   */
  async list(beside: DocumentId | string, maybeOptions: NotesListOptions = {}): Promise<NotesPage> {
    const options = optionsObject(maybeOptions, 'notes.list');
    const response = await this.transport.request<NotesPage>({
      method: 'GET',
      path: notesPath(beside),
      query: { prefix: options.prefix },
      signal: options.signal,
    });
    return response.body;
  }

  /** The note: text, version (its ETag), location and modified time; {@link NotFoundError} when it does not exist. */
  async get(ref: DocumentRef, maybeOptions: CallOptions = {}): Promise<DocumentView> {
    const options = optionsObject(maybeOptions, 'notes.get');
    const response = await this.transport.request<DocumentView>({
      method: 'GET',
      path: notePath(ref),
      signal: options.signal,
    });
    return response.body;
  }

  /** Create the note; {@link ConflictError} (`note-exists`) when it exists. */
  async create(
    ref: DocumentRef,
    text: string,
    maybeOptions: CreateOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'notes.create');
    return write<DocumentReport>(this.transport, {
      method: 'PUT',
      path: notePath(ref),
      headers: { 'if-none-match': '*' },
      body: { text, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Replace the note's whole text, guarded by `ifMatch` (its version, or `*` to write whatever
   * is there, creating it if need be); blank text deletes it.
   */
  async write(
    ref: DocumentRef,
    text: string,
    options: WriteNoteOptions,
  ): Promise<WriteResult<DocumentReport>> {
    if (typeof options !== 'object' || options === null || options.ifMatch === undefined) {
      throw invalidInput(
        "notes.write needs options with ifMatch: the note's version the new text is based on, " +
          "or '*' to write whatever is there (notes.create makes a new one)",
      );
    }
    return write<DocumentReport>(this.transport, {
      method: 'PUT',
      path: notePath(ref),
      headers: ifMatchHeaders(options.ifMatch, 'notes.write'),
      body: { text, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Apply a batch of updates to this one note, in order, atomically (each naming its scope's
   * store; `note` may be left out); guarded by `ifMatch` when given.
   */
  async update(
    ref: DocumentRef,
    updates: MemoryUpdate[],
    maybeOptions: DocumentWriteOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'notes.update');
    return write<DocumentReport>(this.transport, {
      method: 'POST',
      path: notePath(ref),
      headers: ifMatchHeaders(options.ifMatch, 'notes.update'),
      body: { updates, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /** Delete the note: a revision, so `history.revert` restores it. */
  async delete(
    ref: DocumentRef,
    maybeOptions: DeleteOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'notes.delete');
    return write<DocumentReport>(this.transport, {
      method: 'DELETE',
      path: notePath(ref),
      headers: ifMatchHeaders(options.ifMatch, 'notes.delete'),
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }

  /**
   * Move the note to `to` (a path of the same scope, which must not exist), atomically; the
   * report is the new path's.
   */
  async rename(
    ref: DocumentRef,
    to: NotePath,
    maybeOptions: DocumentWriteOptions = {},
  ): Promise<WriteResult<DocumentReport>> {
    const options = optionsObject(maybeOptions, 'notes.rename');
    return write<DocumentReport>(this.transport, {
      method: 'POST',
      path: notePath(ref, 'rename'),
      headers: ifMatchHeaders(options.ifMatch, 'notes.rename'),
      body: { to, ...sessionFields(options) },
      idempotencyKey: options.idempotencyKey,
      signal: options.signal,
    });
  }
}
