/** Every call of MemoryClient against a real `memory serve` on a markdown root. */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  ConflictError,
  InvalidInputError,
  MemoryClient,
  NotFoundError,
  PreconditionFailedError,
  RefusedError,
  globalMemory,
  note,
  notePath,
  personalityMemory,
  userProfile,
  type RevisionItem,
} from 'agent-memory';

import { markdownConfig, modelDir, startServer, type RunningServer } from './support/server.js';

const CONFIG = markdownConfig(`
[mcp]
personality = "ada"
user = "grace"

[personalities.ada]
max_chars = 4000

[personalities.babbage]

[personalities.concierge]
memory_scope = "global"
`);

describe('MemoryClient against memory serve (markdown)', () => {
  let server: RunningServer;
  let memory: MemoryClient;

  before(async () => {
    server = await startServer({ config: CONFIG });
    memory = new MemoryClient({ baseUrl: server.baseUrl });
  });
  after(async () => {
    await server.stop();
  });

  test('health and ready report the provider', async () => {
    const health = await memory.health();
    assert.equal(health.status, 'ok');
    assert.deepEqual(
      health.providers.map((p) => [p.name, p.kind, p.ready]),
      [['files', 'markdown', true]],
    );
    assert.equal((await memory.ready()).status, 'ok');
  });

  test('the turn cycle: prefetch, sync guarded by its versions, prefetch again', async () => {
    const empty = await memory.prefetch({ personality: 'ada', user: 'grace' });
    assert.equal(empty.context ?? null, null);
    assert.equal(empty.memory.path, 'personalities/ada/MEMORY.md');
    assert.equal(empty.user.path, 'users/grace/USER.md');
    assert.equal(empty.personality.id, 'ada');
    assert.equal(empty.personality.recall, false);

    const report = await memory.sync(
      {
        personality: 'ada',
        user: 'grace',
        updates: [
          { action: 'add', store: 'user', content: 'Name: Grace.' },
          { action: 'add', store: 'memory', content: 'Prefers metric units.' },
        ],
        ifMatch: { memory: empty.memory.version, user: empty.user.version },
        session: 'conversation-1',
      },
      { idempotencyKey: 'turn-1' },
    );
    assert.equal(report.idempotencyKey, 'turn-1');
    assert.equal(report.idempotentReplayed, false);
    assert.deepEqual(
      report.documents.map((d) => [d.store, d.written]),
      [
        ['memory', true],
        ['user', true],
      ],
    );

    const after = await memory.prefetch({ personality: 'ada', user: 'grace' });
    assert.equal(
      after.context,
      '## About You\n\nName: Grace.\n\n## Memory\n\nPrefers metric units.',
    );
    assert.equal(after.memory.version, report.documents[0]?.version_after);
    assert.equal(after.user.version, report.documents[1]?.version_after);
    assert.equal(typeof after.user.modified, 'number');

    const limited = await memory.prefetch({ personality: 'ada', user: 'grace', maxChars: 40 });
    assert.ok(limited.context?.startsWith('[...truncated '), limited.context ?? '');
    assert.ok((limited.context?.length ?? 0) <= 40);
  });

  test("a sync's own caps: over the soft cap it says so, past the hard cap nothing is written", async () => {
    const caps = { memory: { soft: 10, hard: 30 } };
    const add = (content: string) =>
      memory.sync({
        personality: 'lovelace',
        user: 'grace',
        updates: [{ action: 'add', store: 'memory', content }],
        caps,
      });
    const over = await add('Twelve bytes');
    assert.equal(over.documents[0]?.over_soft_cap, true);
    await assert.rejects(add('x'.repeat(30)), (error: unknown) => {
      assert.ok(error instanceof RefusedError, String(error));
      assert.equal(error.problem.code, 'hard-cap-exceeded');
      return true;
    });
    const document = await memory.documents.get(personalityMemory('lovelace'));
    assert.equal(document.text, 'Twelve bytes\n');
  });

  test('a sync resent with its key answers the first response and writes nothing', async () => {
    const updates = [{ action: 'add' as const, store: 'memory' as const, content: 'Said once.' }];
    const first = await memory.sync({ personality: 'babbage', user: 'grace', updates });
    const again = await memory.sync(
      { personality: 'babbage', user: 'grace', updates },
      { idempotencyKey: first.idempotencyKey },
    );
    assert.match(first.idempotencyKey, /^[0-9a-f-]{36}$/);
    assert.equal(again.idempotentReplayed, true);
    assert.equal(again.documents[0]?.version_after, first.documents[0]?.version_after);
    const document = await memory.documents.get(personalityMemory('babbage'));
    assert.equal(document.text, 'Said once.\n');
  });

  test('documents: get, get with If-None-Match, replace with If-Match, updates, purge', async () => {
    const ref = userProfile('ida');
    const blank = await memory.documents.get(ref);
    assert.equal(blank.text, '');
    assert.equal(blank.path, 'users/ida/USER.md');
    assert.equal(blank.store, 'user');
    assert.equal(blank.modified ?? null, null);

    const replaced = await memory.documents.replace(ref, 'Name: Ida.', { ifMatch: blank.version });
    assert.equal(replaced.written, true);
    assert.equal(replaced.idempotentReplayed, false);
    const read = await memory.documents.get('users/ida/USER.md');
    assert.equal(read.text, 'Name: Ida.\n');
    assert.equal(read.version, replaced.version_after);
    assert.equal(await memory.documents.get(ref, { ifNoneMatch: read.version }), null);
    assert.equal(
      (await memory.documents.get(ref, { ifNoneMatch: blank.version }))?.text,
      read.text,
    );

    const updated = await memory.documents.update(
      ref,
      [
        { action: 'add', store: 'user', content: 'Lives in Lyon.' },
        { action: 'edit', store: 'user', old: 'Lyon', new: 'Paris' },
        { action: 'remove', store: 'user', substringMatch: 'Name:' },
      ],
      { ifMatch: read.version, session: 'conversation-2' },
    );
    assert.equal(updated.lines_removed, 1);
    // remove drops the line and trims the end only: the blank line after it stays.
    assert.equal((await memory.documents.get(ref)).text, '\nLives in Paris.\n');

    // Unguarded updates apply to whatever is there.
    await memory.documents.update(ref, [{ action: 'add', store: 'user', content: 'Likes tea.' }]);
    assert.equal((await memory.documents.get(ref)).text, '\nLives in Paris.\n\nLikes tea.\n');

    const purged = await memory.documents.purge(ref);
    assert.equal(purged.path, 'users/ida/USER.md');
    assert.ok(purged.bytes > 0);
    assert.ok(purged.revisions >= 3);
    assert.equal((await memory.documents.get(ref)).text, '');
  });

  test('notes: list, get, create, write, update, rename, delete, and their history', async () => {
    const beside = personalityMemory('babbage');
    const kyoto = note(beside, 'trips/kyoto.md');
    assert.equal(notePath(kyoto), '/v1/documents/personalities/babbage/notes/trips/kyoto.md');
    assert.equal(
      notePath('users/grace/notes/a b.md', 'revisions'),
      '/v1/documents/users/grace/revisions/notes/a%20b.md',
    );
    await assert.rejects(memory.notes.get(kyoto), NotFoundError);
    const created = await memory.notes.create(kyoto, '# Kyoto\nTemples.', { session: 's-1' });
    assert.equal(created.written, true);
    await assert.rejects(memory.notes.create(kyoto, 'again'), ConflictError);
    const read = await memory.notes.get('personalities/babbage/notes/trips/kyoto.md');
    assert.equal(read.text, '# Kyoto\nTemples.\n');
    assert.equal(read.version, created.version_after);

    await assert.rejects(
      memory.notes.write(kyoto, 'stale', { ifMatch: 'not-the-version' }),
      PreconditionFailedError,
    );
    const written = await memory.notes.write(kyoto, '# Kyoto\nShrines.', { ifMatch: read.version });
    const updated = await memory.notes.update(
      kyoto,
      [{ action: 'add', store: 'memory', content: 'Maples.' }],
      { ifMatch: written.version_after },
    );
    const listed = await memory.notes.list(beside, { prefix: 'trips/' });
    assert.equal(listed.folder, 'personalities/babbage/notes');
    assert.deepEqual(
      listed.notes.map((item) => [item.path, item.version, item.description]),
      [['trips/kyoto.md', updated.version_after, 'Kyoto']],
    );

    const moved = await memory.notes.rename(kyoto, 'trips/nara.md');
    const nara = note(beside, 'trips/nara.md');
    assert.equal((await memory.notes.get(nara)).version, moved.version_after);
    await assert.rejects(memory.notes.get(kyoto), NotFoundError);
    await memory.notes.delete(nara);
    await assert.rejects(memory.notes.get(nara), NotFoundError);

    const page = await memory.history.list(nara, { text: true });
    assert.deepEqual(
      page.revisions.map((revision) => revision.text ?? ''),
      ['', '# Kyoto\nShrines.\n\nMaples.\n'],
    );
    const arrival = page.revisions[1];
    assert.ok(arrival !== undefined);
    assert.equal((await memory.history.get(nara, arrival.number)).number, arrival.number);
    assert.match((await memory.history.diff(nara)).diff, /-Maples\./);
    await memory.history.revert(nara, arrival.number);
    assert.equal((await memory.notes.get(nara)).text, '# Kyoto\nShrines.\n\nMaples.\n');
    await assert.rejects(memory.documents.get(nara), InvalidInputError);
  });

  test('the global MEMORY.md, by id and by path, is what a global-scope personality reads', async () => {
    const global = await memory.documents.get(globalMemory());
    assert.equal(global.path, 'MEMORY.md');
    await memory.documents.replace('MEMORY.md', 'Office closes at six.', { ifMatch: '*' });
    const view = await memory.prefetch({ personality: 'concierge', user: 'grace' });
    assert.equal(view.personality.scope, 'global');
    assert.equal(view.memory.path, 'MEMORY.md');
    assert.equal(view.memory.text, 'Office closes at six.\n');
  });

  test('history: pages of revisions, one revision, diff, revert', async () => {
    const ref = personalityMemory('historian');
    for (const entry of ['one', 'two', 'three', 'four', 'five']) {
      await memory.documents.update(ref, [{ action: 'add', store: 'memory', content: entry }]);
    }
    const page = await memory.history.list(ref, { limit: 2, text: true, diff: true });
    assert.equal(page.path, 'personalities/historian/MEMORY.md');
    assert.deepEqual(
      page.revisions.map((r) => r.number),
      [5, 4],
    );
    assert.equal(page.revisions[0]?.text, 'one\n\ntwo\n\nthree\n\nfour\n\nfive\n');
    assert.match(page.revisions[0]?.diff ?? '', /^\+five$/m);
    assert.equal(page.next_before, 4);
    const next = await memory.history.list(ref, { limit: 2, before: page.next_before ?? 0 });
    assert.deepEqual(
      next.revisions.map((r) => r.number),
      [3, 2],
    );
    assert.equal(next.revisions[0]?.text, undefined);

    const all: RevisionItem[] = [];
    for await (const revision of memory.history.iterate(ref, { limit: 2 })) all.push(revision);
    assert.deepEqual(
      all.map((r) => r.number),
      [5, 4, 3, 2, 1],
    );
    assert.deepEqual(all[4]?.updates, [{ action: 'add', store: 'memory', content: 'one' }]);

    const second = await memory.history.get(ref, 2);
    assert.equal(second.number, 2);
    assert.equal(second.surface, 'api');
    assert.equal(second.tombstone, false);

    const diff = await memory.history.diff(ref, { from: 1, to: 2 });
    assert.equal(diff.from, 1);
    assert.equal(diff.to, 2);
    assert.match(diff.diff, /^\+two$/m);
    const sinceTwo = await memory.history.diff(ref, { from: 2 });
    assert.match(sinceTwo.diff, /^\+five$/m);

    const current = await memory.documents.get(ref);
    const reverted = await memory.history.revert(ref, 2, { ifMatch: current.version });
    assert.equal(reverted.written, true);
    assert.equal((await memory.documents.get(ref)).text, 'one\n\ntwo\n');
    assert.equal((await memory.history.list(ref, { limit: 1 })).revisions[0]?.number, 6);

    await assert.rejects(memory.history.get(ref, 99), NotFoundError);
  });

  test('history: redact a revision of a document and of a note', async () => {
    const ref = personalityMemory('redactor');
    for (const entry of ['card 4242', 'tea']) {
      await memory.documents.update(ref, [{ action: 'add', store: 'memory', content: entry }]);
    }
    await memory.documents.update(ref, [{ action: 'replace', store: 'memory', content: 'tea' }]);

    const redacted = await memory.history.redact(ref, 1, { idempotencyKey: 'redact-1' });
    assert.equal(redacted.idempotencyKey, 'redact-1');
    assert.equal(redacted.number, 1);
    assert.equal(redacted.text ?? null, null);
    assert.equal(typeof redacted.redacted_at, 'number');
    assert.deepEqual(redacted.updates, []);
    assert.equal(redacted.tombstone, false);
    const listed = await memory.history.list(ref, { text: true });
    assert.deepEqual(
      listed.revisions.map((r) => [r.number, r.text ?? null, r.redacted_at != null]),
      [
        [3, 'tea\n', false],
        [2, 'card 4242\n\ntea\n', false],
        [1, null, true],
      ],
    );
    // Once is enough: again, it is answered as it is.
    const again = await memory.history.redact(ref, 1);
    assert.equal(again.redacted_at, redacted.redacted_at);
    await assert.rejects(memory.history.revert(ref, 1), NotFoundError);
    await assert.rejects(memory.history.redact(ref, 3), (err: unknown) => {
      assert.ok(err instanceof RefusedError);
      assert.equal(err.code, 'revision-in-use');
      return true;
    });
    await assert.rejects(memory.history.redact(ref, 99), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.code, 'revision-not-found');
      return true;
    });

    const secret = note(personalityMemory('redactor'), 'secrets/pin.md');
    await memory.notes.create(secret, 'PIN 1234.');
    const written = await memory.notes.get(secret);
    await memory.notes.write(secret, 'No PIN here.', { ifMatch: written.version });
    const noteRevisions = await memory.history.list(secret);
    const oldest = noteRevisions.revisions.at(-1);
    assert.ok(oldest !== undefined);
    const erased = await memory.history.redact(secret, oldest.number);
    assert.equal(erased.path, 'personalities/redactor/notes/secrets/pin.md');
    assert.equal(typeof erased.redacted_at, 'number');
    assert.equal((await memory.history.get(secret, oldest.number)).text ?? null, null);
    assert.equal((await memory.notes.get(secret)).text, 'No PIN here.\n');
  });

  test('identities: link, resolve, relink, list with cursors, unlink', async () => {
    const linked = await memory.identities.link('telegram', '12345', 'grace');
    assert.equal(linked.identity, 'telegram:12345');
    assert.equal(linked.user, 'grace');
    assert.equal(linked.previous ?? null, null);
    const resolved = await memory.identities.resolve('telegram', '12345');
    assert.deepEqual(resolved, {
      identity: 'telegram:12345',
      platform: 'telegram',
      platform_user: '12345',
      user: 'grace',
    });
    const moved = await memory.identities.link('telegram', '12345', 'ida', { relink: true });
    assert.equal(moved.previous, 'grace');
    assert.equal(moved.user, 'ida');
    // An account id with characters a path needs encoded reaches the service intact.
    await memory.identities.link('slack', 'U1/team a', 'grace');
    await memory.identities.link('email', 'grace@example.org', 'grace');

    const page = await memory.identities.list({ limit: 2 });
    assert.equal(page.items.length, 2);
    assert.equal(typeof page.next_after, 'string');
    const identities: string[] = [];
    for await (const link of memory.identities.iterate({ limit: 2 }))
      identities.push(link.identity);
    assert.deepEqual(identities, ['email:grace@example.org', 'slack:U1/team a', 'telegram:12345']);

    const unlinked = await memory.identities.unlink('telegram', '12345');
    assert.equal(unlinked.previous, 'ida');
    assert.equal(unlinked.user ?? null, null);
    await assert.rejects(memory.identities.resolve('telegram', '12345'), NotFoundError);
  });

  test('directory: personalities and users, page by page', async () => {
    const first = await memory.directory.personalities({ limit: 2 });
    assert.equal(first.default, 'ada');
    assert.equal(first.items.length, 2);
    const personalities: string[] = [];
    for await (const p of memory.directory.iteratePersonalities({ limit: 2 })) {
      personalities.push(p.id);
    }
    assert.ok(['ada', 'babbage', 'concierge'].every((id) => personalities.includes(id)));
    assert.deepEqual(personalities, [...personalities].sort());

    for (const user of ['u1', 'u2', 'u3']) {
      await memory.documents.update(userProfile(user), [
        { action: 'add', store: 'user', content: `I am ${user}.` },
      ]);
    }
    const users = await memory.directory.users({ limit: 2 });
    assert.equal(users.default, 'grace');
    assert.equal(users.items.length, 2);
    const ids: string[] = [];
    for await (const user of memory.directory.iterateUsers({ limit: 2 })) ids.push(user.id);
    assert.ok(
      ['grace', 'u1', 'u2', 'u3'].every((id) => ids.includes(id)),
      ids.join(),
    );
    assert.deepEqual(ids, [...ids].sort());
  });

  test('search needs a personality that recalls', async () => {
    await assert.rejects(memory.search({ personality: 'ada', query: 'units' }), (error) => {
      assert.ok(error instanceof Error && 'kind' in error, String(error));
      return true;
    });
  });

  test('a document path that is not one is refused before any request', async () => {
    let calls = 0;
    const counting = new MemoryClient({
      baseUrl: server.baseUrl,
      fetch: (input, init) => {
        calls += 1;
        return fetch(input, init);
      },
    });
    await assert.rejects(counting.documents.get('notes/x.md'), InvalidInputError);
    await assert.rejects(counting.documents.get(userProfile('..')), InvalidInputError);
    // A leading / is refused as Python's client refuses it, naming the path rules.
    await assert.rejects(counting.documents.get('/users/grace/USER.md'), {
      name: 'InvalidInputError',
      message: /"\/users\/grace\/USER\.md" is not a document path.*no leading \//,
    });
    await assert.rejects(counting.documents.get(userProfile('')), InvalidInputError);
    assert.equal(calls, 0);
  });

  test('options plain JavaScript gets wrong are refused by name before any request', async () => {
    let calls = 0;
    const counting = new MemoryClient({
      baseUrl: server.baseUrl,
      fetch: (input, init) => {
        calls += 1;
        return fetch(input, init);
      },
    });
    // What a caller without the types can do: no options, undefined or another type.
    const loose = counting.documents as unknown as {
      replace: (ref: string, text: string, options?: unknown) => Promise<unknown>;
      update: (ref: string, updates: unknown[], options?: unknown) => Promise<unknown>;
    };
    const path = 'users/grace/USER.md';
    for (const options of [undefined, null, {}, { ifMatch: undefined }, 'v1']) {
      await assert.rejects(loose.replace(path, 'x', options), {
        name: 'InvalidInputError',
        message: /documents\.replace needs options with ifMatch/,
      });
    }
    await assert.rejects(loose.replace(path, 'x', { ifMatch: 42 }), {
      name: 'InvalidInputError',
      message: /documents\.replace: ifMatch must be a version .* got 42/,
    });
    await assert.rejects(loose.update(path, [], null), {
      name: 'InvalidInputError',
      message: /documents\.update: options must be an object, got null/,
    });
    await assert.rejects(loose.update(path, [], { ifMatch: '' }), {
      name: 'InvalidInputError',
      message: /documents\.update: ifMatch must be a version/,
    });
    await assert.rejects(counting.history.revert(path, undefined as unknown as number), {
      name: 'InvalidInputError',
      message: /revision must be a revision number, got undefined/,
    });
    await assert.rejects(counting.identities.resolve('telegram', undefined as unknown as string), {
      name: 'InvalidInputError',
      message: /undefined is not a valid id or path segment/,
    });
    await assert.rejects(
      counting.sync(undefined as unknown as Parameters<MemoryClient['sync']>[0]),
      { name: 'InvalidInputError', message: /client\.sync: its first argument must be an object/ },
    );
    await assert.rejects(counting.documents.purge(path, { idempotencyKey: 'has space' }), {
      name: 'InvalidInputError',
      message: /idempotencyKey must be/,
    });
    assert.equal(calls, 0);
  });
});

describe('MemoryClient.search against a recall personality', () => {
  const dir = modelDir();
  let server: RunningServer | undefined;

  before(async () => {
    if (dir === undefined) return;
    server = await startServer({
      config: markdownConfig(`
[providers.recall]
kind = "vector"
source = "files"
model_dir = ${JSON.stringify(dir)}
# These tests rank: a query waits for the index however loaded the machine is.
recall = { catch_up_ms = 60000 }

[personalities.ada]
provider = "recall"
`),
    });
  });
  after(async () => {
    await server?.stop();
  });

  test(
    'ranks the entries of MEMORY.md',
    { skip: dir === undefined && 'no embedding model' },
    async () => {
      const memory = new MemoryClient({ baseUrl: server!.baseUrl });
      await memory.sync({
        personality: 'ada',
        user: 'grace',
        updates: [
          { action: 'add', store: 'memory', content: '- Grace is allergic to peanuts.' },
          { action: 'add', store: 'memory', content: '- The project deadline is Friday.' },
          { action: 'add', store: 'memory', content: '- Prefers trains to planes.' },
        ],
      });
      const found = await memory.search({ personality: 'ada', query: 'food allergy', limit: 1 });
      assert.equal(found.path, 'personalities/ada/MEMORY.md');
      assert.deepEqual([...found.ranked, ...found.unranked].length >= 1, true);
      assert.match(found.ranked[0] ?? found.unranked[0] ?? '', /peanuts/);
      assert.deepEqual(
        found.ranked_from,
        found.ranked.map(() => 'personalities/ada/MEMORY.md'),
      );
      const cat = note(personalityMemory('ada'), 'pets/cat.md');
      await memory.notes.create(cat, 'The cat eats wet salmon food twice a day.');
      const inNote = await memory.search({
        personality: 'ada',
        query: 'what does the cat eat',
        limit: 3,
      });
      const entries = [...inNote.ranked, ...inNote.unranked];
      const from = [...inNote.ranked_from, ...inNote.unranked_from];
      const at = entries.indexOf('The cat eats wet salmon food twice a day.');
      assert.notEqual(at, -1, JSON.stringify(inNote));
      assert.equal(from[at], 'personalities/ada/notes/pets/cat.md');
      const view = await memory.prefetch({ personality: 'ada', user: 'grace', query: 'deadline' });
      assert.equal(view.personality.recall, true);
      assert.match(view.context ?? '', /deadline is Friday/);
    },
  );
});
