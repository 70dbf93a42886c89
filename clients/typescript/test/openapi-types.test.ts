/**
 * The hand-written wire types (src/types.ts) against the types generated from the committed
 * docs/openapi.json (src/generated/openapi.ts, kept fresh by check.sh): every assertion below
 * is checked by `tsc --strict`, so a field added, dropped, renamed, retyped or made optional
 * on either side fails the build, not a user. The runtime test checks that the list of
 * schemas compared is the document's whole list.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import type * as Wire from 'agent-memory';

import type { components } from '../src/generated/openapi.js';

type Schemas = components['schemas'];

/**
 * T with intersections flattened and every nested object type spelled out, so two types
 * that say the same thing in different words (`interface B extends A` and `A & {...}`,
 * a named alias and its inline form) compare equal.
 */
type Normalize<T> = T extends (infer E)[]
  ? Normalize<E>[]
  : T extends object
    ? { [K in keyof T]: Normalize<T[K]> }
    : T;

/** T without its index signatures (the hand-written `Problem` admits extension members). */
type KnownMembers<T> = {
  [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K];
};

/**
 * True when A and B are the same type: TypeScript's identity relation, which (unlike
 * assignability) tells `x?: T` from `x: T | undefined`, and a missing optional field from
 * a present one.
 */
type Equals<A, B> =
  (<T>() => T extends Normalize<A> ? 1 : 2) extends <T>() => T extends Normalize<B> ? 1 : 2
    ? true
    : false;

/** Compiles only when given `true`. */
type Assert<T extends true> = T;

/** The hand-written type for each schema of the document. */
interface HandWritten {
  Budgets: Wire.Budgets;
  Caps: Wire.Caps;
  DocumentId: Wire.DocumentId;
  DocumentReport: Wire.DocumentReport;
  DocumentView: Wire.DocumentView;
  Health: Wire.Health;
  HealthStatus: Wire.Health['status'];
  IdentitiesPage: Wire.IdentitiesPage;
  IdentityView: Wire.IdentityView;
  IfMatch: Wire.IfMatch;
  LinkChange: Wire.LinkChange;
  MemoryScope: Wire.MemoryScope;
  MemoryUpdate: Wire.MemoryUpdate;
  NoteCaps: Wire.NoteCaps;
  NoteId: Wire.NoteId;
  NoteItem: Wire.NoteItem;
  NotePath: Wire.NotePath;
  NoteScope: Wire.NoteScope;
  NotesPage: Wire.NotesPage;
  PairDocument: Wire.PairDocument;
  PersonalitiesPage: Wire.PersonalitiesPage;
  PersonalityId: Wire.PersonalityId;
  PersonalityView: Wire.PersonalityView;
  PrefetchRequest: Wire.PrefetchRequest;
  PrefetchView: Wire.PrefetchView;
  Problem: KnownMembers<Wire.Problem>;
  ProviderHealth: Wire.ProviderHealth;
  PurgedView: Wire.PurgedView;
  RevisionDiff: Wire.RevisionDiff;
  RevisionEntry: Wire.RevisionEntry;
  RevisionItem: Wire.RevisionItem;
  RevisionsPage: Wire.RevisionsPage;
  ScopeTotals: Wire.ScopeTotals;
  SearchRequest: Wire.SearchRequest;
  SearchView: Wire.SearchView;
  Store: Wire.Store;
  Surface: Wire.Surface;
  SyncReport: Wire.SyncReport;
  SyncRequest: Wire.SyncRequest;
  UserId: Wire.UserId;
  UserView: Wire.UserView;
  UsersPage: Wire.UsersPage;
  Version: Wire.Version;
  WriteSurface: Wire.WriteSurface;
}

/**
 * Request bodies the resources (src/resources/) build inline from their own arguments
 * (`Idempotency-Key` is a header there), so they have no hand-written type to drift.
 */
type BuiltInline =
  | 'IdempotencyKey'
  | 'LinkRequest'
  | 'RenameRequest'
  | 'ReplaceRequest'
  | 'RevertRequest'
  | 'Session'
  | 'UpdatesRequest';

/** The schemas whose hand-written type differs from the generated one. */
type Drift = {
  [K in keyof HandWritten & keyof Schemas]: Equals<HandWritten[K], Schemas[K]> extends true
    ? never
    : K;
}[keyof HandWritten & keyof Schemas];

/** Compiles only when given `never`; otherwise the error names the schemas that drifted. */
type NoneOf<T extends never> = T;

export type HandWrittenTypesMatchTheDocument = NoneOf<Drift>;
export type EverySchemaIsCovered = Assert<Equals<keyof Schemas, keyof HandWritten | BuiltInline>>;
export type ProblemKindIsTheDocuments = Assert<
  Equals<Wire.ProblemKind, Schemas['Problem']['kind']>
>;
export type UpdateVariantsAreTheDocuments = Assert<
  Equals<
    | Wire.AddUpdate
    | Wire.ReplaceUpdate
    | Wire.RemoveUpdate
    | Wire.EditUpdate
    | Wire.CreateUpdate
    | Wire.DeleteUpdate
    | Wire.RenameUpdate,
    Schemas['MemoryUpdate']
  >
>;

const COMPARED: Record<keyof HandWritten | BuiltInline, true> = {
  Budgets: true,
  Caps: true,
  DocumentId: true,
  DocumentReport: true,
  DocumentView: true,
  Health: true,
  HealthStatus: true,
  IdentitiesPage: true,
  IdentityView: true,
  IfMatch: true,
  LinkChange: true,
  MemoryScope: true,
  MemoryUpdate: true,
  NoteCaps: true,
  NoteId: true,
  NoteItem: true,
  NotePath: true,
  NoteScope: true,
  NotesPage: true,
  PairDocument: true,
  PersonalitiesPage: true,
  PersonalityId: true,
  PersonalityView: true,
  PrefetchRequest: true,
  PrefetchView: true,
  Problem: true,
  ProviderHealth: true,
  PurgedView: true,
  RevisionDiff: true,
  RevisionEntry: true,
  RevisionItem: true,
  RevisionsPage: true,
  ScopeTotals: true,
  SearchRequest: true,
  SearchView: true,
  Store: true,
  Surface: true,
  SyncReport: true,
  SyncRequest: true,
  UserId: true,
  UserView: true,
  UsersPage: true,
  Version: true,
  WriteSurface: true,
  IdempotencyKey: true,
  LinkRequest: true,
  RenameRequest: true,
  ReplaceRequest: true,
  RevertRequest: true,
  Session: true,
  UpdatesRequest: true,
};

test('the types compared at compile time are every schema of docs/openapi.json', () => {
  const document = JSON.parse(
    readFileSync(new URL('../../../../docs/openapi.json', import.meta.url), 'utf8'),
  ) as { components: { schemas: Record<string, unknown> } };
  assert.deepEqual(Object.keys(document.components.schemas).sort(), Object.keys(COMPARED).sort());
});
