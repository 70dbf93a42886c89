/**
 * The README's code runs as written: every fenced block is either run or marked with why not
 * (an info string like "sh no-run: <reason>"). A ```js block runs as an `.mjs` file and a
 * ```ts block is compiled by `tsc --strict` (the js ones are type-checked too, as JavaScript)
 * and its output run, each in a process of its own against a fresh `memory serve` (a fresh root
 * on loopback), with the Anthropic SDK pointed at a fake Messages API on loopback
 * (`ANTHROPIC_BASE_URL`). After each run the test checks what the block did to the server.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, describe, test } from 'node:test';

import { MemoryClient, personalityMemory, userProfile, type DocumentRef } from 'agent-memory';

import {
  startFakeMessagesApi,
  toolResults,
  type FakeMessagesApi,
  type FakeModelScript,
} from './support/fake-messages-api.js';
import { run, type Ran } from './support/process.js';
import { markdownConfig, startServer } from './support/server.js';

// Compiled to .test-build/test/: the package is two levels up.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// Inside the package, so `import 'agent-memory'` resolves to this package's dist/.
const WORK_DIR = join(PACKAGE_DIR, '.test-build', 'readme');

/** A fenced block of the README. */
export interface Block {
  /** The line of its opening fence (1-based). */
  line: number;
  /** The info string's first word (`js`, `ts`, `sh`, ...). */
  lang: string;
  /** The rest of the info string. */
  flags: string;
  source: string;
}

/** Every fenced block of a markdown text, in order. */
export function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i] ?? '');
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i += 1; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i += 1) {
      body.push(lines[i] ?? '');
    }
    assert.ok(i < lines.length, `the fence opened on line ${start + 1} is never closed`);
    blocks.push({
      line: start + 1,
      lang: open[1] ?? '',
      flags: open[2] ?? '',
      source: `${body.join('\n')}\n`,
    });
  }
  return blocks;
}

/** Why a block is not run (`no-run: <reason>` in its info string), or undefined. */
function noRunReason(block: Block): string | undefined {
  const marked = /(?:^|\s)no-run(?::\s*(.*))?$/.exec(block.flags);
  if (marked === null) return undefined;
  return marked[1]?.trim() ?? '';
}

const RUNNABLE = new Set(['js', 'ts']);

/** What a run left behind, for a block's check. */
interface Outcome {
  stdout: string;
  client: MemoryClient;
  api: FakeMessagesApi;
}

/** What one runnable block must have done, found by a text only that block holds. */
interface Expectation {
  marker: string;
  check(outcome: Outcome): Promise<void>;
}

async function text(client: MemoryClient, path: DocumentRef): Promise<string> {
  return (await client.documents.get(path)).text;
}

// What the fake model does in the memory tool example, and so what must land on the server.
const MODEL: FakeModelScript = {
  toolInput: {
    command: 'create',
    path: '/memories/USER.md',
    file_text: 'Prefers metric units.\n',
  },
  finalText: 'Noted: metric units from now on.',
};

// One per runnable block, in README order.
const EXPECTATIONS: Expectation[] = [
  {
    marker: '// Before the turn: the text for the top of the prompt',
    check: async ({ client, stdout }) => {
      assert.match(stdout, /^\(no memory yet\)$/m);
      assert.equal(await text(client, userProfile('grace')), 'Name: Grace.\n');
      assert.equal(await text(client, personalityMemory('ada')), 'Planning a trip to Lisbon.\n');
      const [revision] = (await client.history.list(userProfile('grace'))).revisions;
      assert.equal(revision?.session, 'conversation-42');
      assert.match(revision?.idempotency_key ?? '', /^turn-\d+$/);
    },
  },
  {
    marker: 'const current = await memory.documents.get(profile);',
    check: async ({ client, stdout }) => {
      assert.equal(await text(client, userProfile('grace')), 'Likes tea.\n');
      assert.equal(await text(client, personalityMemory('ada')), 'Prefers SI units.\n');
      assert.equal((await client.identities.resolve('telegram', '12345')).user, 'grace');
      assert.match(stdout, /^null$/m); // the read with If-None-Match: not modified
      assert.match(stdout, /^grace$/m);
      assert.match(stdout, /^ok$/m);
    },
  },
  {
    marker: 'error instanceof PreconditionFailedError',
    check: async ({ client, stdout }) => {
      // The replace from the stale version was refused; the update before it stands.
      assert.equal(await text(client, userProfile('grace')), 'Moved to Porto.\n');
      assert.match(stdout, /^moved on to \S+: /m);
    },
  },
  {
    marker: 'new AgentMemoryKeyedProvider({ client })',
    check: async ({ client, stdout }) => {
      assert.equal(await text(client, userProfile('grace')), 'Name: Grace.\n');
      assert.equal(await text(client, personalityMemory('ada')), 'Planning a trip to Lisbon.\n');
      assert.match(stdout, /key: 'MEMORY.md'/);
      assert.match(stdout, /key: 'USER.md'/);
    },
  },
  {
    marker: 'new AgentMemoryProvider({',
    check: async ({ client, stdout }) => {
      // The ctx Ethos's loop and memory_write tool build, with no userId: defaultUser's USER.md.
      assert.equal(
        stdout,
        '(no memory yet)\n## About You\n\nName: Grace.\n\n## Memory\n\nPlanning a trip to Lisbon.\n',
      );
      assert.equal(await text(client, userProfile('grace')), 'Name: Grace.\n');
      assert.equal(await text(client, personalityMemory('ada')), 'Planning a trip to Lisbon.\n');
      const [revision] = (await client.history.list(userProfile('grace'))).revisions;
      assert.equal(revision?.surface, 'tool');
      assert.match(
        revision?.session ?? '',
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      );
    },
  },
  {
    marker: 'beta.messages.toolRunner(',
    check: async ({ client, stdout, api }) => {
      // The model's create landed, through the runner, keyed on its tool_use and recorded with
      // the conversation.
      assert.equal(await text(client, userProfile('grace')), MODEL.toolInput['file_text']);
      assert.equal(api.toolUseIds.length, 1);
      const [revision] = (await client.history.list(userProfile('grace'))).revisions;
      assert.equal(revision?.surface, 'tool');
      assert.equal(revision?.session, 'conversation-42');
      assert.equal(revision?.idempotency_key, `memory-tool:${api.toolUseIds[0]}`);
      // The runner sent the tool's result back and printed the model's last answer.
      assert.equal(api.requests.length, 2);
      const results = toolResults(api.requests);
      assert.equal(results.length, 1);
      assert.equal(results[0]?.tool_use_id, api.toolUseIds[0]);
      assert.notEqual(results[0]?.is_error, true, JSON.stringify(results[0]));
      assert.ok(stdout.includes(MODEL.finalText), stdout);
    },
  },
  {
    marker: 'memory.runToolUse(toolUse)',
    check: async ({ client, stdout }) => {
      assert.equal(await text(client, userProfile('grace')), 'Prefers SI units.\n');
      assert.match(stdout, /\/memories\/USER\.md/);
      const [revision] = (await client.history.list(userProfile('grace'))).revisions;
      assert.equal(revision?.idempotency_key, 'memory-tool:toolu_02');
    },
  },
];

const README = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
const BLOCKS = fencedBlocks(README);
const RUN = BLOCKS.filter((block) => noRunReason(block) === undefined);

/** Runs a script with node; resolves with how it ended and what it printed. */
function runNode(script: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return run(process.execPath, [script], { env, timeoutMs: 60_000 });
}

/** The compiled file a runnable block runs as. */
function scriptOf(block: Block): string {
  return join(WORK_DIR, 'out', `block-${block.line}.${block.lang === 'ts' ? 'js' : 'mjs'}`);
}

describe('README code', () => {
  before(() => {
    // One tsc --strict run over every block: the ts ones compiled, the js ones checked as
    // JavaScript (checkJs) and copied, so a block that misuses the API fails here too.
    rmSync(WORK_DIR, { recursive: true, force: true });
    mkdirSync(WORK_DIR, { recursive: true });
    for (const block of RUN) {
      writeFileSync(
        join(WORK_DIR, `block-${block.line}.${block.lang === 'ts' ? 'ts' : 'mjs'}`),
        block.source,
      );
    }
    writeFileSync(
      join(WORK_DIR, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.test.json',
        compilerOptions: {
          rootDir: '.',
          outDir: 'out',
          allowJs: true,
          checkJs: true,
          sourceMap: false,
          types: ['node'],
        },
        include: ['*.ts', '*.mjs'],
      }),
    );
    const tsc = join(PACKAGE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
    const build = spawnSync(process.execPath, [tsc, '-p', join(WORK_DIR, 'tsconfig.json')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(build.status, 0, `tsc over the README blocks:\n${build.stdout}${build.stderr}`);
  });

  test('every block is run, or marked no-run with a reason', () => {
    const unmarked = BLOCKS.filter((block) => {
      const reason = noRunReason(block);
      return reason === undefined ? !RUNNABLE.has(block.lang) : reason === '';
    });
    assert.deepEqual(
      unmarked.map((block) => `line ${block.line}: \`\`\`${block.lang} ${block.flags}`),
      [],
      'a block the tests cannot run needs "no-run: <why>" in its info string',
    );
    assert.ok(RUN.length >= 7, `found ${RUN.length} blocks to run`);
  });

  test('each block to run has its check, in order', () => {
    const mismatched = RUN.flatMap((block, index) => {
      const marker = EXPECTATIONS[index]?.marker;
      return marker !== undefined && block.source.includes(marker)
        ? []
        : [`line ${block.line}: expected ${marker ?? 'no more blocks'}`];
    });
    assert.deepEqual(mismatched, []);
    assert.equal(RUN.length, EXPECTATIONS.length);
  });

  for (const [index, block] of RUN.entries()) {
    const expectation = EXPECTATIONS[index];
    test(`the ${block.lang} block on line ${block.line} runs and does what it says`, async () => {
      assert.ok(expectation !== undefined, `no check for the block on line ${block.line}`);
      const server = await startServer({ config: markdownConfig('[personalities.ada]\n') });
      const api = await startFakeMessagesApi(MODEL);
      try {
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          MEMORY_URL: server.baseUrl,
          ANTHROPIC_BASE_URL: api.baseUrl,
          ANTHROPIC_API_KEY: 'sk-ant-fake-key-for-the-readme-test',
        };
        delete env['MEMORY_API_KEY'];
        delete env['ANTHROPIC_AUTH_TOKEN'];
        // Not spawnSync: the fake Messages API answers from this process's event loop.
        const run = await runNode(scriptOf(block), env);
        assert.equal(
          run.status,
          0,
          `the block on line ${block.line} exited ${run.status ?? run.signal}:\n${run.stdout}\n${run.stderr}`,
        );
        // A README that names a retired model, say, prints the SDK's warning: not as written.
        assert.doesNotMatch(run.stderr, /deprecated/i, run.stderr);
        const client = new MemoryClient({ baseUrl: server.baseUrl });
        await expectation.check({ stdout: run.stdout, client, api });
      } finally {
        await api.close();
        await server.stop();
      }
    });
  }
});
