/**
 * Ethos's five-method, key-based MemoryProvider over the service, on markdown, PostgreSQL and
 * Redis: every method in every scope, and a scripted session whose reads, at each step, are
 * what Ethos's own MarkdownFileMemoryProvider gives for the same updates.
 *
 * The expected values are written by hand from Ethos's provider (extensions/memory-markdown):
 * prefetch returns `{ key, content }` for MEMORY.md then USER.md when the file's content is
 * not blank, else null; read returns the file's content (null when missing); list shows the
 * scope's files; search returns, up to `limit`, each listed file whose content contains the
 * trimmed query case-insensitively (nothing for a blank query or `mode: 'semantic'`). Per
 * key, in order: add is `content ? content.trimEnd() + "\n\n" + c.trim() + "\n" : c.trim() +
 * "\n"`, replace is `c.trim() + "\n"`, remove drops the lines containing the match then
 * `trimEnd() + "\n"` (an empty match does nothing), delete removes the file, and an add
 * after a delete starts from nothing.
 */

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  InvalidInputError,
  MemoryClient,
  globalMemory,
  personalityMemory,
  userProfile,
} from 'agent-memory';
import {
  AgentMemoryKeyedProvider,
  type EthosKeyedMemoryContext,
  type EthosKeyedMemoryUpdate,
  type EthosMemorySnapshot,
} from 'agent-memory/ethos';

import { backends } from './support/backends.js';
import { modelDir, startServer, type RunningServer } from './support/server.js';

/** Ethos's `MemoryProvider` as packages/types/src/memory.ts declares it, for the check below. */
interface EthosMemoryProvider {
  prefetch(
    ctx: MemoryContext,
  ): Promise<{ entries: Array<{ key: string; content: string }> } | null>;
  read(key: string, ctx: MemoryContext): Promise<MemoryEntry | null>;
  search(
    query: string,
    ctx: MemoryContext,
    opts?: { limit?: number; mode?: 'keyword' | 'semantic' | 'hybrid' },
  ): Promise<MemoryEntry[]>;
  sync(updates: MemoryUpdate[], ctx: MemoryContext): Promise<void>;
  list(
    ctx: MemoryContext,
    opts?: { limit?: number; withSummaries?: boolean },
  ): Promise<Array<{ key: string; summary?: string; metadata?: { lastUpdatedAt?: number } }>>;
}
interface MemoryContext {
  scopeId: string;
  sessionId: string;
  sessionKey: string;
  platform: string;
  workingDir: string;
}
interface MemoryEntry {
  key: string;
  content: string;
  metadata?: { lastUpdatedAt?: number; lastUpdatedBy?: string };
}
type MemoryUpdate =
  | { action: 'add'; key: string; content: string }
  | { action: 'replace'; key: string; content: string }
  | { action: 'remove'; key: string; substringMatch: string }
  | { action: 'delete'; key: string };

/** A step of the session: what Ethos's provider reads before it, then the updates. */
interface Step {
  snapshot: EthosMemorySnapshot | null;
  updates: EthosKeyedMemoryUpdate[];
}

const SESSION: Step[] = [
  {
    snapshot: null,
    updates: [
      { action: 'add', key: 'MEMORY.md', content: 'Working on the COBOL compiler.' },
      { action: 'add', key: 'USER.md', content: '  Name: Grace Hopper.  ' },
      { action: 'add', key: 'MEMORY.md', content: 'Prefers metric units.\n' },
    ],
  },
  {
    snapshot: {
      entries: [
        { key: 'MEMORY.md', content: 'Working on the COBOL compiler.\n\nPrefers metric units.\n' },
        { key: 'USER.md', content: 'Name: Grace Hopper.\n' },
      ],
    },
    updates: [
      { action: 'add', key: 'USER.md', content: 'Lives in Arlington.\nTakes her tea black.' },
      { action: 'remove', key: 'MEMORY.md', substringMatch: 'metric' },
      { action: 'add', key: 'MEMORY.md', content: 'Deadline: Friday.' },
      // Nothing for Ethos's provider: a remove without a match.
      { action: 'remove', key: 'MEMORY.md', substringMatch: '' },
    ],
  },
  {
    snapshot: {
      entries: [
        { key: 'MEMORY.md', content: 'Working on the COBOL compiler.\n\nDeadline: Friday.\n' },
        {
          key: 'USER.md',
          content: 'Name: Grace Hopper.\n\nLives in Arlington.\nTakes her tea black.\n',
        },
      ],
    },
    updates: [
      { action: 'remove', key: 'USER.md', substringMatch: 'Arlington' },
      { action: 'delete', key: 'MEMORY.md' },
      { action: 'add', key: 'MEMORY.md', content: 'Project: COBOL.' },
      { action: 'replace', key: 'USER.md', content: '\nName: Grace.\n\n' },
    ],
  },
  {
    snapshot: {
      entries: [
        { key: 'MEMORY.md', content: 'Project: COBOL.\n' },
        { key: 'USER.md', content: 'Name: Grace.\n' },
      ],
    },
    updates: [{ action: 'delete', key: 'USER.md' }],
  },
  {
    snapshot: { entries: [{ key: 'MEMORY.md', content: 'Project: COBOL.\n' }] },
    updates: [{ action: 'delete', key: 'MEMORY.md' }],
  },
  { snapshot: null, updates: [] },
];

const PERSONALITIES = `
[personalities.ada]

[personalities.babbage]

[personalities.concierge]
memory_scope = "global"
`;

function context(scopeId: string, sessionKey = 'telegram:12345'): EthosKeyedMemoryContext {
  return {
    scopeId,
    sessionId: 'session-1',
    sessionKey,
    platform: 'telegram',
    workingDir: '/tmp',
  };
}

/** The keys and contents of entries, without their metadata. */
function contents(entries: Array<{ key: string; content: string }>): Array<[string, string]> {
  return entries.map((entry) => [entry.key, entry.content]);
}

for (const backend of backends()) {
  const config = backend.config();
  describe(
    `Ethos's five-method MemoryProvider over the service (${backend.name})`,
    { skip: config === undefined && `${backend.name} not configured` },
    () => {
      let server: RunningServer;
      let client: MemoryClient;

      before(async () => {
        server = await startServer({ config: `${config ?? ''}${PERSONALITIES}` });
        client = new MemoryClient({ baseUrl: server.baseUrl });
        await client.identities.link('telegram', '12345', 'grace');
      });
      after(async () => {
        await server?.stop();
        backend.cleanup();
      });

      test("a scripted session reads, step by step, what Ethos's markdown provider reads", async () => {
        let step = 0;
        const ethos: EthosMemoryProvider = new AgentMemoryKeyedProvider({
          client,
          idempotencyKeyFor: (_updates, ctx) => `${ctx.sessionId}:step-${step}`,
        });
        const ctx = context('personality:ada');
        for (const [index, { snapshot, updates }] of SESSION.entries()) {
          step = index;
          const label = `step ${index + 1}`;
          assert.deepEqual(await ethos.prefetch(ctx), snapshot, label);
          const entries = snapshot?.entries ?? [];
          for (const key of ['MEMORY.md', 'USER.md']) {
            const entry = await ethos.read(key, ctx);
            assert.equal(entry?.content, entries.find((e) => e.key === key)?.content, label);
            if (entry !== null) {
              assert.equal(typeof entry.metadata?.lastUpdatedAt, 'number', label);
              assert.ok(Math.abs(Date.now() - entry.metadata!.lastUpdatedAt!) < 600_000, label);
            }
          }
          assert.deepEqual(
            (await ethos.list(ctx)).map((ref) => ref.key),
            entries.map((entry) => entry.key),
            label,
          );
          await ethos.sync(updates, ctx);
        }

        // Each step's sync is one revision the model's tool wrote in this session; a re-run
        // of a step with the same key lands once.
        const [last] = (await client.history.list(personalityMemory('ada'), { limit: 1 }))
          .revisions;
        assert.equal(last?.surface, 'tool');
        assert.equal(last?.session, 'session-1');
        assert.equal(last?.idempotency_key, 'session-1:step-4');
        step = 10;
        const once: EthosKeyedMemoryUpdate[] = [
          { action: 'add', key: 'MEMORY.md', content: 'Once only.' },
        ];
        await ethos.sync(once, ctx);
        await ethos.sync(once, ctx);
        assert.equal((await ethos.read('MEMORY.md', ctx))?.content, 'Once only.\n');
      });

      test('delete clears the document as a revision that can be reverted', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        const ctx = context('user:ida');
        await ethos.sync([{ action: 'add', key: 'USER.md', content: 'Name: Ida.' }], ctx);
        await ethos.sync([{ action: 'delete', key: 'USER.md' }], ctx);
        assert.equal(await ethos.read('USER.md', ctx), null);
        const [cleared, written] = (await client.history.list(userProfile('ida'), { limit: 2 }))
          .revisions;
        assert.deepEqual(cleared?.updates, [{ action: 'replace', store: 'user', content: '' }]);
        await client.history.revert(userProfile('ida'), written!.number);
        assert.equal((await ethos.read('USER.md', ctx))?.content, 'Name: Ida.\n');
      });

      test('list: metadata, summaries and limit', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client, user: () => 'katherine' });
        const ctx = context('personality:babbage');
        await ethos.sync(
          [
            { action: 'add', key: 'USER.md', content: '\n\nName: Katherine.\nNASA.' },
            { action: 'add', key: 'USER.md', content: 'Computes orbits.' },
            { action: 'add', key: 'MEMORY.md', content: 'Engines: difference, analytical.' },
          ],
          ctx,
        );
        const refs = await ethos.list(ctx, { withSummaries: true });
        assert.deepEqual(
          refs.map((ref) => [ref.key, ref.summary]),
          [
            ['MEMORY.md', 'Engines: difference, analytical.'],
            ['USER.md', 'Name: Katherine.\nNASA.'],
          ],
        );
        for (const ref of refs) assert.equal(typeof ref.metadata?.lastUpdatedAt, 'number');
        assert.deepEqual(
          (await ethos.list(ctx, { limit: 1 })).map((ref) => [ref.key, ref.summary]),
          [['MEMORY.md', undefined]],
        );
        assert.deepEqual(await ethos.list(ctx, { limit: 0 }), []);
      });

      test("search matches documents like Ethos's markdown provider", async () => {
        const ethos = new AgentMemoryKeyedProvider({ client, user: () => 'margaret' });
        const ctx = context('personality:babbage');
        await ethos.sync(
          [
            { action: 'replace', key: 'MEMORY.md', content: 'Apollo guidance software.' },
            { action: 'add', key: 'USER.md', content: 'Name: Margaret. Wrote the Apollo code.' },
          ],
          ctx,
        );
        const memory = 'Apollo guidance software.\n';
        const user = 'Name: Margaret. Wrote the Apollo code.\n';
        assert.deepEqual(contents(await ethos.search('  aPOLLO ', ctx)), [
          ['MEMORY.md', memory],
          ['USER.md', user],
        ]);
        assert.deepEqual(contents(await ethos.search('margaret', ctx)), [['USER.md', user]]);
        assert.deepEqual(contents(await ethos.search('apollo', ctx, { limit: 1 })), [
          ['MEMORY.md', memory],
        ]);
        assert.deepEqual(contents(await ethos.search('apollo', ctx, { mode: 'keyword' })), [
          ['MEMORY.md', memory],
          ['USER.md', user],
        ]);
        assert.deepEqual(await ethos.search('apollo', ctx, { mode: 'semantic' }), []);
        assert.deepEqual(await ethos.search('   ', ctx), []);
        assert.deepEqual(await ethos.search('gemini', ctx), []);
        assert.deepEqual(await ethos.search('apollo', ctx, { limit: 0 }), []);
        const [found] = await ethos.search('apollo', ctx);
        assert.equal(typeof found?.metadata?.lastUpdatedAt, 'number');
        assert.deepEqual(contents(await ethos.search('MARGARET', context('user:margaret'))), [
          ['USER.md', user],
        ]);
      });

      test('team:<id> is the global MEMORY.md, which global-scope personalities read', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        const team = context('team:core');
        await ethos.sync([{ action: 'add', key: 'MEMORY.md', content: 'Standup at nine.' }], team);
        assert.equal((await client.documents.get(globalMemory())).text, 'Standup at nine.\n');
        assert.deepEqual(await ethos.prefetch(team), {
          entries: [{ key: 'MEMORY.md', content: 'Standup at nine.\n' }],
        });
        assert.deepEqual(
          (await ethos.list(team)).map((ref) => ref.key),
          ['MEMORY.md'],
        );
        // The same document, read by a personality whose memory_scope is global.
        const concierge = await ethos.prefetch(context('personality:concierge'));
        assert.deepEqual(concierge?.entries[0], {
          key: 'MEMORY.md',
          content: 'Standup at nine.\n',
        });
        assert.equal(await ethos.read('USER.md', team), null);
        await assert.rejects(
          ethos.sync([{ action: 'add', key: 'USER.md', content: 'x' }], team),
          (error: unknown) =>
            error instanceof InvalidInputError &&
            /"USER\.md".*team.*only MEMORY\.md/.test(error.detail),
        );
      });

      test("user:<id> is that user's USER.md, the one every personality shares", async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        const profile = context('user:grace');
        await ethos.sync([{ action: 'add', key: 'USER.md', content: 'Admiral.' }], profile);
        assert.deepEqual(await ethos.prefetch(profile), {
          entries: [{ key: 'USER.md', content: 'Admiral.\n' }],
        });
        // telegram 12345 is grace: any personality's USER.md in that conversation.
        assert.equal(
          (await ethos.read('USER.md', context('personality:babbage')))?.content,
          'Admiral.\n',
        );
        assert.equal((await client.documents.get(userProfile('grace'))).text, 'Admiral.\n');
        assert.equal(await ethos.read('MEMORY.md', profile), null);
        await assert.rejects(
          ethos.sync([{ action: 'add', key: 'MEMORY.md', content: 'x' }], profile),
          /"MEMORY\.md".*user.*only USER\.md/,
        );
      });

      test('without a known user, USER.md is absent and writing it is refused', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        const stranger = context('personality:ada', 'telegram:999');
        const memory = (await ethos.read('MEMORY.md', context('personality:ada')))?.content;
        assert.deepEqual(await ethos.prefetch(stranger), {
          entries: [{ key: 'MEMORY.md', content: memory }],
        });
        assert.equal(await ethos.read('USER.md', stranger), null);
        assert.deepEqual(
          (await ethos.list(stranger)).map((ref) => ref.key),
          ['MEMORY.md'],
        );
        await assert.rejects(
          ethos.sync(
            [
              { action: 'add', key: 'MEMORY.md', content: 'Not written.' },
              { action: 'add', key: 'USER.md', content: 'Unknown.' },
            ],
            stranger,
          ),
          /no user is known for this conversation with ada/,
        );
        assert.equal((await ethos.read('MEMORY.md', stranger))?.content, memory);

        // MEMORY.md is still the personality's: its own, or the global one.
        await ethos.sync([{ action: 'add', key: 'MEMORY.md', content: 'Said hello.' }], stranger);
        assert.equal(
          (await client.documents.get(personalityMemory('ada'))).text,
          `${memory}\nSaid hello.\n`,
        );
        const global = (await client.documents.get(globalMemory())).text;
        await ethos.sync(
          [{ action: 'add', key: 'MEMORY.md', content: 'Lobby open.' }],
          context('personality:concierge', 'telegram:999'),
        );
        assert.equal((await client.documents.get(globalMemory())).text, `${global}\nLobby open.\n`);

        // A user option that knows nobody is the same.
        const nobody = new AgentMemoryKeyedProvider({ client, user: () => undefined });
        assert.equal(await nobody.read('USER.md', context('personality:ada')), null);
      });

      test('any other key is absent, and writing it refuses the whole batch', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        const ctx = context('personality:ada');
        const before = await ethos.read('MEMORY.md', ctx);
        const listed = await ethos.list(ctx);
        for (const key of ['notes.md', 'memory.md', '../USER.md', '']) {
          assert.equal(await ethos.read(key, ctx), null, key);
        }
        await assert.rejects(
          ethos.sync(
            [
              { action: 'add', key: 'MEMORY.md', content: 'Not written.' },
              { action: 'add', key: 'notes.md', content: 'A note.' },
            ],
            ctx,
          ),
          (error: unknown) =>
            error instanceof InvalidInputError &&
            error.detail.includes('"notes.md"') &&
            error.detail.includes('MEMORY.md') &&
            error.detail.includes('USER.md'),
        );
        assert.deepEqual(await ethos.read('MEMORY.md', ctx), before);
        assert.deepEqual(await ethos.list(ctx), listed);
        // An empty batch, and one Ethos's provider does nothing with, send nothing.
        await ethos.sync([], ctx);
        await ethos.sync([{ action: 'remove', key: 'MEMORY.md', substringMatch: '' }], ctx);
        assert.deepEqual(await ethos.read('MEMORY.md', ctx), before);
      });

      test('scopes other than personality:, team: and user: are refused', async () => {
        const ethos = new AgentMemoryKeyedProvider({ client });
        for (const scopeId of [
          'org:acme',
          'personality:',
          'personality:../ada',
          'ada',
          'user:a b',
        ]) {
          await assert.rejects(
            ethos.prefetch(context(scopeId)),
            /unrecognised memory scope/,
            scopeId,
          );
          await assert.rejects(
            ethos.sync([{ action: 'add', key: 'MEMORY.md', content: 'x' }], context(scopeId)),
            InvalidInputError,
            scopeId,
          );
        }
      });
    },
  );
}

describe("Ethos's five-method MemoryProvider on a personality that recalls", () => {
  const dir = modelDir();
  let server: RunningServer | undefined;

  before(async () => {
    if (dir === undefined) return;
    server = await startServer({
      config: `default_provider = "files"
[providers.files]
kind = "markdown"
root = "{{dir}}/root"

[providers.recall]
kind = "vector"
source = "files"
model_dir = ${JSON.stringify(dir)}
# These tests rank: a query waits for the index however loaded the machine is.
recall = { catch_up_ms = 60000 }

[personalities.ada]
provider = "recall"
`,
    });
  });
  after(async () => {
    await server?.stop();
  });

  test(
    "search ranks MEMORY.md's entries through the service and matches USER.md",
    { skip: dir === undefined && 'no embedding model' },
    async () => {
      const ethos = new AgentMemoryKeyedProvider({
        client: { baseUrl: server!.baseUrl },
        user: () => 'grace',
      });
      const ctx = context('personality:ada');
      await ethos.sync(
        [
          { action: 'add', key: 'MEMORY.md', content: '- Grace is allergic to peanuts.' },
          { action: 'add', key: 'MEMORY.md', content: '- The project deadline is Friday.' },
          { action: 'add', key: 'MEMORY.md', content: '- Prefers trains to planes.' },
          { action: 'add', key: 'USER.md', content: 'Name: Grace. Allergic to peanuts.' },
        ],
        ctx,
      );
      const [best] = await ethos.search('food allergy', ctx, { limit: 1 });
      assert.equal(best?.key, 'MEMORY.md');
      assert.match(best?.content ?? '', /peanuts/);
      assert.doesNotMatch(best?.content ?? '', /deadline/);

      const semantic = await ethos.search('peanuts', ctx, { mode: 'semantic' });
      assert.ok(semantic.length >= 1);
      assert.ok(semantic.every((entry) => entry.key === 'MEMORY.md'));
      const hybrid = await ethos.search('peanuts', ctx);
      assert.deepEqual(contents(hybrid.slice(-1)), [
        ['USER.md', 'Name: Grace. Allergic to peanuts.\n'],
      ]);
      assert.ok(hybrid.slice(0, -1).every((entry) => entry.key === 'MEMORY.md'));
      assert.match(hybrid[0]?.content ?? '', /^- Grace is allergic to peanuts\.$/m);

      // Keyword mode matches whole documents, as Ethos's markdown provider does.
      const keyword = await ethos.search('PEANUTS', ctx, { mode: 'keyword' });
      assert.deepEqual(
        keyword.map((entry) => entry.key),
        ['MEMORY.md', 'USER.md'],
      );
      assert.match(keyword[0]?.content ?? '', /deadline is Friday/);
    },
  );
});
