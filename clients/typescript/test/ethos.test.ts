/**
 * The Ethos provider: a scripted multi-turn session gives, turn by turn, the prompt text
 * Ethos's own MarkdownFileMemoryProvider gives for the same updates, on markdown, PostgreSQL
 * and Redis behind the service.
 *
 * The expected texts are written by hand from Ethos's provider (extensions/memory-markdown):
 * prefetch pushes `## About You\n\n${USER.md.trim()}` and `## Memory\n\n${MEMORY.md.trim()}`
 * for each non-empty file, joins them with a blank line, and past maxChars keeps
 * `[...truncated]\n\n` + the last maxChars chars; sync's add is
 * `content ? content.trimEnd() + "\n\n" + c.trim() + "\n" : c.trim() + "\n"`, replace is
 * `c.trim() + "\n"`, remove drops the lines containing the match then trimEnd() + "\n", and a
 * remove without a match does nothing.
 *
 * A turn is also driven with exactly the ctx Ethos's agent loop and `memory_write` tool build,
 * which names no user: the provider's `defaultUser` is who the turn is for.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { InvalidInputError, MemoryClient, personalityMemory, userProfile } from 'agent-memory';
import {
  AgentMemoryLegacyProvider,
  AgentMemoryProvider,
  type EthosMemoryLoadContext,
  type EthosMemoryProvider,
  type EthosMemoryUpdate,
} from 'agent-memory/ethos';

import { backends } from './support/backends.js';
import { startServer, type RunningServer } from './support/server.js';

interface Turn {
  /** What Ethos's markdown provider's prefetch returns before this turn (null: no memory). */
  expected: string | null;
  truncated?: boolean;
  /** The updates the model emitted in this turn. */
  updates: EthosMemoryUpdate[];
}

const SESSION: Turn[] = [
  {
    expected: null,
    updates: [
      { store: 'user', action: 'add', content: 'Name: Grace Hopper.' },
      { store: 'memory', action: 'add', content: 'Working on the COBOL compiler.' },
    ],
  },
  {
    expected: '## About You\n\nName: Grace Hopper.\n\n## Memory\n\nWorking on the COBOL compiler.',
    updates: [
      { store: 'memory', action: 'add', content: '  Prefers metric units.  \n' },
      { store: 'user', action: 'add', content: 'Lives in Arlington.\nTakes her tea black.' },
    ],
  },
  {
    expected:
      '## About You\n\nName: Grace Hopper.\n\nLives in Arlington.\nTakes her tea black.' +
      '\n\n## Memory\n\nWorking on the COBOL compiler.\n\nPrefers metric units.',
    updates: [
      { store: 'user', action: 'remove', content: '', substringMatch: 'Arlington' },
      { store: 'memory', action: 'add', content: 'Deadline: Friday.' },
      // No-ops for Ethos's provider: a blank add (trimmed away when rendered) and a remove
      // without a match.
      { store: 'memory', action: 'add', content: '   ' },
      { store: 'memory', action: 'remove', content: '', substringMatch: '' },
    ],
  },
  {
    expected:
      '## About You\n\nName: Grace Hopper.\n\nTakes her tea black.' +
      '\n\n## Memory\n\nWorking on the COBOL compiler.\n\nPrefers metric units.\n\nDeadline: Friday.',
    updates: [
      { store: 'memory', action: 'replace', content: 'Project: COBOL. Deadline moved to Monday.' },
      { store: 'memory', action: 'add', content: 'Prefers metric units.' },
    ],
  },
  {
    expected:
      '## About You\n\nName: Grace Hopper.\n\nTakes her tea black.' +
      '\n\n## Memory\n\nProject: COBOL. Deadline moved to Monday.\n\nPrefers metric units.',
    updates: [
      { store: 'user', action: 'remove', content: '', substringMatch: 'Name:' },
      {
        store: 'memory',
        action: 'add',
        content:
          'Ships on the UNIVAC, which fills a room; the team keeps its punched cards in the east wing.',
      },
    ],
  },
  {
    // 204 chars over a budget of 150: the last 150 behind the marker, cut where they start.
    expected:
      '[...truncated]\n\n: COBOL. Deadline moved to Monday.\n\nPrefers metric units.' +
      '\n\nShips on the UNIVAC, which fills a room; the team keeps its punched cards in the east wing.',
    truncated: true,
    updates: [],
  },
];

/** The untruncated text of the last turn: what the service renders under its own budget. */
const LAST_UNTRUNCATED =
  '## About You\n\nTakes her tea black.\n\n## Memory\n\nProject: COBOL. Deadline moved to Monday.' +
  '\n\nPrefers metric units.\n\nShips on the UNIVAC, which fills a room; the team keeps its punched' +
  ' cards in the east wing.';

/**
 * The ctx Ethos's `memory_write` tool passes to `sync`, field for field, in the era of the
 * two-method `MemoryProvider` (extensions/tools-memory/src/index.ts, from the turn's tool
 * context that packages/core/src/agent-loop.ts fills): the session's id (a UUID) and key, the
 * platform, the working directory, the active personality and its `memoryScope`. No `userId`.
 */
function memoryWriteContext(personalityId: string): EthosMemoryLoadContext {
  return {
    sessionId: randomUUID(),
    sessionKey: 'cli:analytical-engine',
    platform: 'cli',
    workingDir: '/home/marie/analytical-engine',
    personalityId,
    memoryScope: 'per-personality',
  };
}

/** The ctx Ethos's agent loop passes to `prefetch` before a turn: the same, with the message. */
function agentLoopContext(
  toolContext: EthosMemoryLoadContext,
  message: string,
): EthosMemoryLoadContext {
  return { ...toolContext, query: message };
}

/** The one update a `memory_write` call syncs, mapped from its arguments as the tool maps them. */
function memoryWrite(args: {
  store: EthosMemoryUpdate['store'];
  action: EthosMemoryUpdate['action'];
  content: string;
  substring_match?: string;
}): EthosMemoryUpdate[] {
  return [
    {
      store: args.store,
      action: args.action,
      content: args.content,
      substringMatch: args.substring_match,
    },
  ];
}

/** The refusal of a turn that names no user: an InvalidInputError that says to set defaultUser. */
function namesDefaultUser(error: unknown): boolean {
  assert.ok(error instanceof InvalidInputError, String(error));
  assert.equal(error.kind, 'invalid-input');
  assert.equal(error.code, undefined);
  assert.match(error.detail, /^no user for this turn: .*set the provider's defaultUser/);
  assert.ok(error.detail.indexOf('defaultUser') < error.detail.indexOf('ctx.userId'));
  return true;
}

const PERSONALITIES = `
[personalities.ada]

[personalities.babbage]
`;

for (const backend of backends()) {
  const config = backend.config();
  describe(
    `Ethos provider over the service (${backend.name})`,
    { skip: config === undefined && `${backend.name} not configured` },
    () => {
      let server: RunningServer;

      before(async () => {
        server = await startServer({ config: `${config ?? ''}${PERSONALITIES}` });
      });
      after(async () => {
        await server?.stop();
        backend.cleanup();
      });

      test("a scripted session gives, turn by turn, the prompt text of Ethos's markdown provider", async () => {
        let turn = 0;
        const client = new MemoryClient({ baseUrl: server.baseUrl });
        const ethos: EthosMemoryProvider = new AgentMemoryProvider({
          client,
          maxChars: 150,
          idempotencyKeyFor: (ctx) => `${ctx.sessionId}:turn-${turn}`,
        });
        const service = new AgentMemoryProvider({ client, rendering: 'service' });
        const ctx: EthosMemoryLoadContext = {
          sessionId: 'session-1',
          sessionKey: 'cli:grace',
          userId: 'grace',
          platform: 'cli',
          personalityId: 'ada',
          memoryScope: 'per-personality',
        };
        for (const [index, step] of SESSION.entries()) {
          turn = index;
          const prompt = await ethos.prefetch(ctx);
          assert.equal(prompt?.content ?? null, step.expected, `turn ${index + 1}`);
          if (prompt !== null) assert.equal(prompt.truncated, step.truncated ?? false);
          // The service renders the same text itself (under its own, larger, budget).
          const rendered = await service.prefetch(ctx);
          assert.equal(
            rendered?.content ?? null,
            step.truncated === true ? LAST_UNTRUNCATED : step.expected,
            `turn ${index + 1}, service rendering`,
          );
          await ethos.sync(ctx, step.updates);
        }

        // A turn's sync re-run (a crash and retry of the same turn) lands once.
        turn = 99;
        await ethos.sync(ctx, [{ store: 'memory', action: 'add', content: 'Once only.' }]);
        await ethos.sync(ctx, [{ store: 'memory', action: 'add', content: 'Once only.' }]);
        const text = (await client.documents.get(personalityMemory('ada'))).text;
        assert.equal(text.split('Once only.').length - 1, 1);

        // Each turn's sync is one revision the model's tool wrote, in this session.
        const last = (await client.history.list(personalityMemory('ada'), { limit: 1 }))
          .revisions[0];
        assert.equal(last?.surface, 'tool');
        assert.equal(last?.session, 'session-1');
        assert.equal(last?.idempotency_key, 'session-1:turn-99');
      });

      test("a turn with the ctx Ethos's agent loop builds: defaultUser is the user, and without it nothing is sent", async () => {
        const client = new MemoryClient({ baseUrl: server.baseUrl });
        const toolContext = memoryWriteContext('curie');
        const turnContext = agentLoopContext(toolContext, 'What am I measuring?');
        const ethos = new AgentMemoryProvider({ client, defaultUser: 'marie' });

        assert.equal(await ethos.prefetch(turnContext), null);
        await ethos.sync(
          toolContext,
          memoryWrite({ store: 'user', action: 'add', content: 'Name: Marie.' }),
        );
        await ethos.sync(
          toolContext,
          memoryWrite({ store: 'memory', action: 'add', content: 'Measuring radium.' }),
        );
        assert.deepEqual(await ethos.prefetch(turnContext), {
          content: '## About You\n\nName: Marie.\n\n## Memory\n\nMeasuring radium.',
          source: 'markdown',
          truncated: false,
        });
        const [revision] = (await client.history.list(userProfile('marie'))).revisions;
        assert.equal(revision?.session, toolContext.sessionId);

        // Without defaultUser, the same turn is refused before any request.
        let requests = 0;
        const unnamed = new AgentMemoryProvider({
          client: {
            baseUrl: server.baseUrl,
            fetch: (input, init) => {
              requests += 1;
              return fetch(input, init);
            },
          },
        });
        const elsewhere = memoryWriteContext('noether');
        await assert.rejects(
          unnamed.prefetch(agentLoopContext(elsewhere, 'What am I proving?')),
          namesDefaultUser,
        );
        await assert.rejects(
          unnamed.sync(
            elsewhere,
            memoryWrite({ store: 'memory', action: 'add', content: 'Symmetries conserve.' }),
          ),
          namesDefaultUser,
        );
        assert.equal(requests, 0);
        assert.deepEqual((await client.history.list(personalityMemory('noether'))).revisions, []);
      });

      test('personalities keep their own MEMORY.md and share USER.md; a call without ids is refused', async () => {
        const ethos = new AgentMemoryProvider({
          client: { baseUrl: server.baseUrl },
          defaultPersonality: 'babbage',
          defaultUser: 'ada-lovelace',
        });
        // What Ethos's `ethos memory` command passes: no personality, no user, no session.
        const global: EthosMemoryLoadContext = {
          sessionId: '',
          sessionKey: 'cli',
          platform: 'cli',
        };
        await ethos.sync(global, [
          { store: 'memory', action: 'add', content: 'The engine is analytical.' },
          { store: 'user', action: 'add', content: 'Name: Ada.' },
        ]);
        assert.equal(
          (await ethos.prefetch(global))?.content,
          '## About You\n\nName: Ada.\n\n## Memory\n\nThe engine is analytical.',
        );
        const other = await ethos.prefetch({
          ...global,
          personalityId: 'lovelace',
          userId: 'ada-lovelace',
        });
        assert.equal(other?.content, '## About You\n\nName: Ada.');

        const bare = new AgentMemoryProvider({ client: { baseUrl: server.baseUrl } });
        await assert.rejects(bare.prefetch(global), {
          name: 'InvalidInputError',
          message: /no personality for this call: .*set the provider's defaultPersonality/,
        });
        // An empty batch writes nothing and sends nothing.
        await bare.sync(global, []);
      });

      test('the older prefetch(sessionId, personality) shape', async () => {
        const legacy = new AgentMemoryLegacyProvider({
          client: { baseUrl: server.baseUrl },
          defaultPersonality: 'babbage',
          userForSession: (sessionId) => (sessionId === 'telegram:42' ? 'hedy' : undefined),
        });
        assert.equal(await legacy.prefetch('telegram:42', 'legacy'), null);
        await legacy.sync(
          'telegram:42',
          [
            { action: 'add', content: 'Frequency hopping.' },
            { action: 'add', content: 'Spread spectrum.' },
            { action: 'remove', substringMatch: 'hopping' },
          ],
          'legacy',
        );
        assert.deepEqual(await legacy.prefetch('telegram:42', 'legacy'), {
          projectMemory: '\nSpread spectrum.\n',
          userMemory: null,
        });
        await assert.rejects(legacy.prefetch('unknown-session'), {
          name: 'InvalidInputError',
          message: /no user for this session: set the provider's defaultUser/,
        });
      });
    },
  );
}
