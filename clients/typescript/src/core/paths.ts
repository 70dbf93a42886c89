/**
 * Where a request goes: a document's path (from its id or its layout path) and an identity's,
 * each id one percent-encoded segment.
 *
 * @module
 */

import { invalidInput } from '../errors.js';
import type { DocumentId, PersonalityId, UserId } from '../types.js';
import { describe } from './arguments.js';

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
    case 'note':
      throw invalidInput(
        `${JSON.stringify(id)} is a note, which /v1/documents does not serve yet: read the documents of the pair`,
      );
    default:
      throw invalidInput(
        `${JSON.stringify(id)} is not a document: use globalMemory(), personalityMemory(id) or userProfile(id)`,
      );
  }
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
