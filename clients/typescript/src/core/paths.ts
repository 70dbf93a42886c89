/**
 * Where a request goes: a document's path (from its id or its layout path) and an identity's,
 * each id one percent-encoded segment.
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { DocumentId, NotePath, NoteScope, PersonalityId, UserId } from '../types.js';
import { describe } from './arguments.js';

/**
 * A document: its id object (`{ kind: 'user-profile', user: 'grace' }`, see
 * {@link globalMemory}, {@link personalityMemory}, {@link userProfile}, {@link note}) or its
 * layout path (`MEMORY.md`, `personalities/<id>/MEMORY.md`, `users/<id>/USER.md`, a note's
 * `personalities/<id>/notes/<path>`).
 */
export type DocumentRef = DocumentId | string;

/** The global `MEMORY.md`, shared by global-scope personalities. */
export function globalMemory(): NoteScope {
  return { kind: 'global-memory' };
}

/** `personalities/<personality>/MEMORY.md`. */
export function personalityMemory(personality: PersonalityId): NoteScope {
  return { kind: 'personality-memory', personality };
}

/** `users/<user>/USER.md`. */
export function userProfile(user: UserId): NoteScope {
  return { kind: 'user-profile', user };
}

/**
 * A note: `path` (`projects/kyoto.md`) beside the document `beside` names (one of the pair,
 * as an id or a layout path: `note('personalities/ada/MEMORY.md', 'projects/kyoto.md')`).
 */
export function note(beside: DocumentId | string, path: NotePath): DocumentId {
  const scope = pairOf(beside);
  return { kind: 'note', scope, path };
}

/** The scope of the notes beside one of the pair, named by its id or its layout path. */
export function pairOf(ref: DocumentId | string): NoteScope {
  const id = typeof ref === 'string' ? parseLayoutPath(ref) : ref;
  if (typeof id !== 'object' || id === null || id.kind === 'note') {
    throw invalidInput(
      `${describe(ref)} is not one of the pair a note sits beside: use MEMORY.md, ` +
        'personalities/<id>/MEMORY.md or users/<id>/USER.md (or their ids)',
    );
  }
  return id;
}

const LAYOUT_PATH = /^(?:MEMORY\.md|personalities\/([^/]+)\/MEMORY\.md|users\/([^/]+)\/USER\.md)$/;

const NOTE_LAYOUT_PATH = /^(?:personalities\/([^/]+)\/|users\/([^/]+)\/)?notes\/(.+)$/;

/** The id a layout path names. */
function parseLayoutPath(ref: string): DocumentId {
  const match = LAYOUT_PATH.exec(ref);
  if (match !== null) {
    if (match[1] !== undefined) return personalityMemory(match[1]);
    if (match[2] !== undefined) return userProfile(match[2]);
    return globalMemory();
  }
  const noted = NOTE_LAYOUT_PATH.exec(ref);
  if (noted?.[3] !== undefined) {
    const scope: NoteScope =
      noted[1] !== undefined
        ? personalityMemory(noted[1])
        : noted[2] !== undefined
          ? userProfile(noted[2])
          : globalMemory();
    return { kind: 'note', scope, path: noted[3] };
  }
  throw invalidInput(
    `${JSON.stringify(ref)} is not a document path: use MEMORY.md, ` +
      'personalities/<id>/MEMORY.md, users/<id>/USER.md or a note beside one ' +
      '(personalities/<id>/notes/<path>; relative: no leading /)',
  );
}

/** The id `ref` names, checked to be an object. */
function idOf(ref: DocumentRef): DocumentId {
  if (typeof ref === 'string') return parseLayoutPath(ref);
  if (typeof ref === 'object' && ref !== null) return ref;
  throw invalidInput(
    `${describe(ref)} is not a document: pass a layout path (users/<id>/USER.md) or ` +
      'globalMemory(), personalityMemory(id), userProfile(id), note(beside, path)',
  );
}

/** `/v1/documents` and the scope's part of the path, each id percent-encoded. */
function scopePrefix(scope: NoteScope): string {
  switch (scope.kind) {
    case 'global-memory':
      return '/v1/documents';
    case 'personality-memory':
      return `/v1/documents/personalities/${pathSegment(scope.personality)}`;
    case 'user-profile':
      return `/v1/documents/users/${pathSegment(scope.user)}`;
    default:
      throw invalidInput(
        `${JSON.stringify(scope)} is not a note's scope: use globalMemory(), personalityMemory(id) or userProfile(id)`,
      );
  }
}

/** `/v1/documents/<layout path>` for one of the pair, each id percent-encoded. */
export function documentPath(ref: DocumentRef): string {
  const id = idOf(ref);
  switch (id.kind) {
    case 'global-memory':
      return '/v1/documents/MEMORY.md';
    case 'personality-memory':
    case 'user-profile':
      return `${scopePrefix(id)}/${id.kind === 'user-profile' ? 'USER.md' : 'MEMORY.md'}`;
    case 'note':
      throw invalidInput(
        `${JSON.stringify(id)} is a note: read and write it with client.notes, not client.documents`,
      );
    default:
      throw invalidInput(
        `${JSON.stringify(id)} is not a document: use globalMemory(), personalityMemory(id) or userProfile(id)`,
      );
  }
}

/**
 * A note's route, or the route of `operation` (`rename`, `revisions`, ...) on it: a note's
 * path holds `/` and ends its routes, so the operation comes before it
 * (`/v1/documents/personalities/ada/revisions/notes/projects/kyoto.md`).
 */
export function notePath(ref: DocumentRef, operation?: string): string {
  const id = idOf(ref);
  if (id.kind !== 'note') {
    throw invalidInput(`${JSON.stringify(ref)} is not a note: use note(beside, path)`);
  }
  if (typeof id.path !== 'string' || id.path.length === 0) {
    throw invalidInput(`${describe(id.path)} is not a note's path`);
  }
  const segments = id.path.split('/').map(pathSegment).join('/');
  const before = operation === undefined ? '' : `/${operation}`;
  return `${scopePrefix(id.scope)}${before}/notes/${segments}`;
}

/** The route of the notes beside one of the pair (`.../notes`). */
export function notesPath(beside: DocumentId | string): string {
  return `${scopePrefix(pairOf(beside))}/notes`;
}

/** The route of `operation` on a document's history: the pair's or a note's. */
export function historyPath(ref: DocumentRef, operation: string): string {
  const id = idOf(ref);
  return id.kind === 'note' ? notePath(id, operation) : `${documentPath(id)}/${operation}`;
}

/** `/v1/identities/<platform>/<platform user>`, each percent-encoded. */
export function identityPath(platform: string, platformUser: string): string {
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
