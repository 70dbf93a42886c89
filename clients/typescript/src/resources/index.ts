/**
 * The resources a {@link MemoryClient} composes, one a file: `documents`, `notes`, `history`,
 * `identities` and `directory`.
 *
 * @module
 */

export { Documents, type ReplaceOptions } from './documents.js';
export { History, type RevisionsOptions } from './history.js';
export {
  Notes,
  type CreateOptions,
  type DeleteOptions,
  type NotesListOptions,
  type WriteNoteOptions,
} from './notes.js';
export { Identities } from './identities.js';
export { Directory } from './directory.js';
