/**
 * MCP over Streamable HTTP at `/mcp` on a real `memory serve`, through two clients that know
 * nothing of this project:
 * - the MCP TypeScript SDK's `Client` with its `StreamableHTTPClientTransport`, on markdown,
 *   PostgreSQL and Redis: initialize, the tool and resource lists, every tool (the writes read
 *   back through the resources and through /v1), `memory_consolidate` guarded by the view token
 *   `memory_view` prints, `memory_history` and its `revert_to`, `memory_search` on a
 *   personality whose provider is a vector one, the identity-map URL, and a second server over
 *   the same backend answering the same conversation (the transport is stateless);
 * - the MCP Inspector's CLI (`mcp-inspector --cli`, from node_modules), listing the tools of
 *   plain `/mcp` on a keyed server with an `Authorization` header.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MemoryClient, globalMemory, personalityMemory, userProfile } from 'agent-memory';

import { backends } from './support/backends.js';
import { run, type Ran } from './support/process.js';
import {
  callOk,
  callRefused,
  callText,
  connect,
  readResourceText,
  viewToken,
  type Connected,
} from './support/mcp.js';
import {
  markdownConfig,
  mintKey,
  modelDir,
  startServer,
  type RunningServer,
} from './support/server.js';

// Compiled to .test-build/test/: the package is two levels up.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The tools `memory mcp` serves on stdio, in its order, for a caller who may write. */
const TOOLS = [
  'memory_view',
  'memory_add',
  'memory_replace',
  'memory_remove',
  'memory_consolidate',
  'memory_history',
  'memory_notes',
];
/** And on a personality whose provider is a vector one. */
const RECALL_TOOLS = [...TOOLS, 'memory_search'];

const MEMORY_URI = 'memory://personalities/ada/MEMORY.md';
const USER_URI = 'memory://users/grace/USER.md';

/** The personalities every backend's server has; `sage` recalls, when the model is there. */
function personalities(model: string | undefined): string {
  const recall =
    model === undefined
      ? ''
      : `
[providers.recall]
kind = "vector"
source = "db"
model_dir = ${JSON.stringify(model)}
# These tests rank: a query waits for the index however loaded the machine is.
recall = { catch_up_ms = 60000 }
index_dir = "{{dir}}/recall-index"

[personalities.sage]
provider = "recall"
`;
  return `${recall}
[personalities.ada]

[personalities.concierge]
memory_scope = "global"
`;
}

/** The revision numbers a memory_history listing shows, newest first. */
function revisionNumbers(listing: string): number[] {
  return [...listing.matchAll(/^Revision (\d+) · /gm)].map((match) => Number(match[1]));
}

/** A POST of one JSON-RPC request to an MCP URL, as a raw fetch (to see status and headers). */
function rawInitialize(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '0' },
      },
    }),
  });
}

const MODEL = modelDir();

for (const backend of backends()) {
  const config = backend.config();
  describe(
    `MCP over HTTP with the TypeScript SDK (${backend.name})`,
    { skip: config === undefined && `${backend.name} not configured` },
    () => {
      let server: RunningServer;
      let second: RunningServer | undefined;
      let v1: MemoryClient;
      let mcp: Connected;
      const opened: Connected[] = [];

      /** A connection to an MCP URL of `server`, closed after the suite. */
      const open = async (path: string, on = server): Promise<Connected> => {
        const connected = await connect(`${on.baseUrl}${path}`);
        opened.push(connected);
        return connected;
      };
      const memoryText = async (): Promise<string> =>
        (await v1.documents.get(personalityMemory('ada'))).text;

      before(async () => {
        server = await startServer({ config: `${config ?? ''}${personalities(MODEL)}` });
        v1 = new MemoryClient({ baseUrl: server.baseUrl });
        mcp = await open('/mcp/ada/grace');
      });
      after(async () => {
        for (const connected of opened) await connected.close();
        await second?.stop();
        await server?.stop();
        backend.cleanup();
      });

      test('initialize: the server is agent-memory, with tools and resources, and stateless', async () => {
        assert.equal(mcp.client.getServerVersion()?.name, 'agent-memory');
        const capabilities = mcp.client.getServerCapabilities();
        assert.ok(capabilities?.tools !== undefined, JSON.stringify(capabilities));
        assert.ok(capabilities?.resources !== undefined, JSON.stringify(capabilities));
        assert.match(mcp.client.getInstructions() ?? '', /^Durable memory across conversations\./);
        // Stateless: no session, and each request is answered by one JSON response.
        assert.equal(mcp.transport.sessionId, undefined);
        const posts = mcp.exchanges.filter((exchange) => exchange.method === 'POST');
        assert.ok(posts.length >= 2, JSON.stringify(mcp.exchanges.map((e) => e.status)));
        for (const exchange of mcp.exchanges) {
          assert.equal(exchange.headers.get('mcp-session-id'), null, exchange.url);
        }
        const [initialize, initialized] = posts;
        assert.equal(initialize?.status, 200);
        assert.match(initialize?.headers.get('content-type') ?? '', /^application\/json\b/);
        assert.equal(initialized?.status, 202, 'the initialized notification');
      });

      test('lists the tools `memory mcp` serves and the two documents as resources', async () => {
        const { tools } = await mcp.client.listTools();
        assert.deepEqual(
          tools.map((tool) => tool.name),
          TOOLS,
        );
        const add = tools.find((tool) => tool.name === 'memory_add');
        assert.deepEqual(add?.inputSchema.required, ['file', 'entry']);
        assert.deepEqual(Object.keys(add?.inputSchema.properties ?? {}), ['file', 'entry']);
        const consolidate = tools.find((tool) => tool.name === 'memory_consolidate');
        assert.ok('viewed' in (consolidate?.inputSchema.properties ?? {}));
        const history = tools.find((tool) => tool.name === 'memory_history');
        assert.ok('revert_to' in (history?.inputSchema.properties ?? {}));

        const { resources } = await mcp.client.listResources();
        assert.deepEqual(
          resources.map(({ uri, name, mimeType }) => ({ uri, name, mimeType })),
          [
            { uri: MEMORY_URI, name: 'MEMORY.md', mimeType: 'text/markdown' },
            { uri: USER_URI, name: 'USER.md', mimeType: 'text/markdown' },
          ],
        );

        // A personality with global scope keeps one MEMORY.md for all.
        const concierge = await open('/mcp/concierge/grace');
        assert.deepEqual(
          (await concierge.client.listResources()).resources.map((resource) => resource.uri),
          ['memory://MEMORY.md', USER_URI],
        );
      });

      test('memory_view of an empty memory, and both resources read empty', async () => {
        const view = await callOk(mcp.client, 'memory_view');
        assert.match(
          view,
          /^\(Your memory is empty: both MEMORY\.md and USER\.md are blank\.\)\n\nMEMORY\.md: 0 bytes\b/,
        );
        assert.match(view, /\. USER\.md: 0 bytes\b/);
        viewToken(view, 'MEMORY.md');
        viewToken(view, 'USER.md');
        assert.equal(await readResourceText(mcp.client, MEMORY_URI), '');
        assert.equal(await readResourceText(mcp.client, USER_URI), '');
      });

      test('memory_add appends to MEMORY.md and USER.md; the writes land', async () => {
        assert.match(
          await callOk(mcp.client, 'memory_add', {
            file: 'MEMORY.md',
            entry: 'Working on the COBOL compiler.',
          }),
          /^Added to MEMORY\.md\. MEMORY\.md is now 31 bytes\b/,
        );
        assert.match(
          await callOk(mcp.client, 'memory_add', { file: 'USER.md', entry: 'Name: Grace.' }),
          /^Added to USER\.md\. USER\.md is now 13 bytes\b/,
        );
        assert.match(
          await callOk(mcp.client, 'memory_add', { file: 'MEMORY.md', entry: 'Deadline: Friday.' }),
          /^Added to MEMORY\.md\. MEMORY\.md is now 50 bytes\b/,
        );
        const memory = 'Working on the COBOL compiler.\n\nDeadline: Friday.\n';
        assert.equal(await readResourceText(mcp.client, MEMORY_URI), memory);
        assert.equal(await readResourceText(mcp.client, USER_URI), 'Name: Grace.\n');
        assert.equal(await memoryText(), memory);
        assert.equal((await v1.documents.get(userProfile('grace'))).text, 'Name: Grace.\n');
        // The view shows it as the prompt would.
        const view = await callOk(mcp.client, 'memory_view');
        assert.match(view, /Working on the COBOL compiler\./);
        assert.match(view, /Name: Grace\./);
        assert.match(view, /MEMORY\.md: 50 bytes\b.*USER\.md: 13 bytes\b/s);
      });

      test('memory_replace edits one passage; a passage that is not there is refused', async () => {
        assert.match(
          await callOk(mcp.client, 'memory_replace', {
            file: 'MEMORY.md',
            old: 'COBOL',
            new: 'Fortran',
          }),
          /^Replaced in MEMORY\.md\. MEMORY\.md is now 52 bytes\b/,
        );
        const memory = 'Working on the Fortran compiler.\n\nDeadline: Friday.\n';
        assert.equal(await readResourceText(mcp.client, MEMORY_URI), memory);
        const refused = await callRefused(mcp.client, 'memory_replace', {
          file: 'MEMORY.md',
          old: 'COBOL',
          new: 'Lisp',
        });
        assert.match(
          refused,
          /^Not replaced: the text to replace occurs 0 times in MEMORY\.md\..*Nothing was written\.$/,
        );
        assert.equal(await memoryText(), memory);
      });

      test('memory_remove drops the lines containing a substring', async () => {
        assert.match(
          await callOk(mcp.client, 'memory_remove', { file: 'MEMORY.md', substring: 'Deadline' }),
          /^Removed 1 line containing "Deadline" from MEMORY\.md\. MEMORY\.md is now 33 bytes\b/,
        );
        assert.equal(
          await readResourceText(mcp.client, MEMORY_URI),
          'Working on the Fortran compiler.\n',
        );
        assert.equal(
          await callOk(mcp.client, 'memory_remove', { file: 'MEMORY.md', substring: 'Deadline' }),
          'No line of MEMORY.md contains "Deadline"; 0 lines removed, nothing changed.',
        );
        assert.equal(await memoryText(), 'Working on the Fortran compiler.\n');
      });

      test('memory_consolidate takes the view token as `viewed`; without one, or a stale one, it is refused', async () => {
        const before = 'Working on the Fortran compiler.\n';
        // A stateless server keeps no view between requests: the token is the view.
        const unviewed = await callRefused(mcp.client, 'memory_consolidate', {
          file: 'MEMORY.md',
          content: 'Project: Fortran compiler.',
        });
        assert.match(unviewed, /^Not consolidated: /);
        assert.match(unviewed, /memory_view/);
        assert.match(unviewed, /Nothing was written\.$/);
        assert.equal(await memoryText(), before);

        const token = viewToken(await callOk(mcp.client, 'memory_view'), 'MEMORY.md');
        assert.match(
          await callOk(mcp.client, 'memory_consolidate', {
            file: 'MEMORY.md',
            content: 'Project: Fortran compiler.\n',
            viewed: token,
          }),
          /^Consolidated MEMORY\.md: 33 → 27 bytes\. MEMORY\.md is now 27 bytes\b/,
        );
        assert.equal(
          await readResourceText(mcp.client, MEMORY_URI),
          'Project: Fortran compiler.\n',
        );
        assert.equal(await memoryText(), 'Project: Fortran compiler.\n');

        // The token names the version viewed, which is no longer the file's.
        const stale = await callRefused(mcp.client, 'memory_consolidate', {
          file: 'MEMORY.md',
          content: 'Project: nothing.\n',
          viewed: token,
        });
        assert.match(stale, /^Not consolidated: MEMORY\.md changed since the view/);
        assert.match(stale, /Nothing was written\.$/);
        assert.equal(await memoryText(), 'Project: Fortran compiler.\n');
      });

      test('memory_history lists the changes with diffs; revert_to puts a text back', async () => {
        const listing = await callOk(mcp.client, 'memory_history', { file: 'MEMORY.md' });
        assert.match(listing, /^MEMORY\.md, the latest changes first:\n\nRevision \d+ · /);
        // Newest first: the consolidation, 33 → 27 bytes, from the tool.
        assert.match(
          listing,
          /^Revision \d+ · [^\n]* UTC · from tool[^\n]* · 33 → 27 bytes · [^\n]*\n[^]*^-Working on the Fortran compiler\.$\n^\+Project: Fortran compiler\.$/m,
        );
        assert.match(listing, /revert_to/);
        const numbers = revisionNumbers(listing);
        assert.ok(numbers.length >= 2, listing);
        assert.deepEqual(
          numbers,
          [...numbers].sort((a, b) => b - a),
          'newest first',
        );
        const [consolidation, beforeIt] = numbers as [number, number];

        const short = await callOk(mcp.client, 'memory_history', { file: 'MEMORY.md', limit: 1 });
        assert.deepEqual(revisionNumbers(short), [consolidation]);
        assert.match(short, /Older revisions are kept too/);

        assert.match(
          await callOk(mcp.client, 'memory_history', { file: 'MEMORY.md', revert_to: beforeIt }),
          new RegExp(
            `^Reverted MEMORY\\.md to the text of revision ${beforeIt}: 27 → 33 bytes\\. This revert is revision ${consolidation + 1}; to undo it, revert_to ${consolidation}\\.`,
          ),
        );
        assert.equal(
          await readResourceText(mcp.client, MEMORY_URI),
          'Working on the Fortran compiler.\n',
        );
        assert.equal(await memoryText(), 'Working on the Fortran compiler.\n');
        const [newest] = (await v1.history.list(personalityMemory('ada'))).revisions;
        assert.equal(newest?.number, consolidation + 1);

        const missing = await callRefused(mcp.client, 'memory_history', {
          file: 'MEMORY.md',
          revert_to: 9_999,
        });
        assert.match(missing, /^Not reverted: MEMORY\.md has no revision 9999\b/);
        assert.equal(await memoryText(), 'Working on the Fortran compiler.\n');
      });

      test('a call carrying an idempotency key in _meta lands once however often it is resent', async () => {
        const meta = { 'agent-memory/idempotency-key': `mcp-${backend.name}-once` };
        const args = { file: 'USER.md', entry: 'Takes her tea black.' };
        const first = await callOk(mcp.client, 'memory_add', args, meta);
        assert.match(first, /^Added to USER\.md\./);
        const again = await callOk(mcp.client, 'memory_add', args, meta);
        assert.equal(again, first);
        assert.equal(
          await readResourceText(mcp.client, USER_URI),
          'Name: Grace.\n\nTakes her tea black.\n',
        );
      });

      test('an unknown tool is a JSON-RPC error naming it; a bad argument a tool error', async () => {
        await assert.rejects(
          mcp.client.callTool({ name: 'memory_nope', arguments: {} }),
          (error: unknown) => {
            assert.ok(error instanceof McpError, String(error));
            assert.equal(error.code, -32602);
            assert.match(error.message, /memory_nope/);
            return true;
          },
        );
        const invalid = await callText(mcp.client, 'memory_add', { file: 'NOTES.md', entry: 'x' });
        assert.equal(invalid.isError, true, invalid.text);
        assert.match(invalid.text, /^Invalid arguments for memory_add: /);
        assert.match(invalid.text, /Nothing was written\.$/);
      });

      test('the identity-map URL opens the linked user; an unlinked account is 404', async () => {
        await v1.identities.link('telegram', '12345', 'grace');
        const linked = await open('/mcp/ada/telegram/12345');
        assert.deepEqual(
          (await linked.client.listResources()).resources.map((resource) => resource.uri),
          [MEMORY_URI, USER_URI],
        );
        assert.equal(
          await readResourceText(linked.client, USER_URI),
          'Name: Grace.\n\nTakes her tea black.\n',
        );
        await callOk(linked.client, 'memory_add', {
          file: 'USER.md',
          entry: 'Lives in Arlington.',
        });
        assert.equal(
          (await v1.documents.get(userProfile('grace'))).text,
          'Name: Grace.\n\nTakes her tea black.\n\nLives in Arlington.\n',
        );

        await assert.rejects(connect(`${server.baseUrl}/mcp/ada/telegram/99999`));
        const unlinked = await rawInitialize(`${server.baseUrl}/mcp/ada/telegram/99999`);
        assert.equal(unlinked.status, 404);
        assert.match(unlinked.headers.get('content-type') ?? '', /^application\/problem\+json/);
      });

      test('a second server over the same backend answers the same conversation', async () => {
        // The markdown root is the first server's; PostgreSQL and Redis are shared anyway.
        const shared = (config ?? '').replaceAll('{{dir}}', server.dir);
        second = await startServer({ config: `${shared}\n[personalities.ada]\n` });
        const other = await open('/mcp/ada/grace', second);
        assert.equal(
          await readResourceText(other.client, MEMORY_URI),
          'Working on the Fortran compiler.\n',
        );

        // Viewed on one server, consolidated on the other.
        const token = viewToken(await callOk(mcp.client, 'memory_view'), 'MEMORY.md');
        assert.match(
          await callOk(other.client, 'memory_consolidate', {
            file: 'MEMORY.md',
            content: 'Project: the Fortran compiler.\n',
            viewed: token,
          }),
          /^Consolidated MEMORY\.md: 33 → 31 bytes\./,
        );
        assert.equal(
          await readResourceText(mcp.client, MEMORY_URI),
          'Project: the Fortran compiler.\n',
        );

        // A write through the second server after a view on the first: the view is stale.
        const seen = viewToken(await callOk(mcp.client, 'memory_view'), 'MEMORY.md');
        await callOk(other.client, 'memory_add', { file: 'MEMORY.md', entry: 'Ship on Friday.' });
        const refused = await callRefused(mcp.client, 'memory_consolidate', {
          file: 'MEMORY.md',
          content: 'Project: nothing.\n',
          viewed: seen,
        });
        assert.match(refused, /^Not consolidated: MEMORY\.md changed since the view/);
        assert.equal(await memoryText(), 'Project: the Fortran compiler.\n\nShip on Friday.\n');
      });

      test(
        'memory_search on a personality whose provider is a vector one',
        { skip: MODEL === undefined && 'no embedding model' },
        async () => {
          const sage = await open('/mcp/sage/grace');
          const { tools } = await sage.client.listTools();
          assert.deepEqual(
            tools.map((tool) => tool.name),
            RECALL_TOOLS,
          );
          const view = tools.find((tool) => tool.name === 'memory_view');
          assert.ok('query' in (view?.inputSchema.properties ?? {}));
          for (const entry of [
            'Grace is allergic to peanuts.',
            'The project deadline is Friday.',
            'Prefers trains to planes.',
          ]) {
            await callOk(sage.client, 'memory_add', { file: 'MEMORY.md', entry });
          }
          assert.equal(
            await callOk(sage.client, 'memory_search', { query: 'food allergy', k: 1 }),
            '1 entry of MEMORY.md for "food allergy", best first:\n\n[1] Grace is allergic to peanuts.',
          );
          const focused = await callOk(sage.client, 'memory_view', { query: 'deadline' });
          assert.match(focused, /The project deadline is Friday\./);
          assert.match(focused, /These are the MEMORY\.md entries most relevant to the query/);
          assert.equal(
            (await v1.documents.get(personalityMemory('sage'))).text,
            'Grace is allergic to peanuts.\n\nThe project deadline is Friday.\n\nPrefers trains to planes.\n',
          );
          // ada's provider cannot recall: no memory_search there.
          await assert.rejects(
            mcp.client.callTool({ name: 'memory_search', arguments: { query: 'x' } }),
            McpError,
          );
        },
      );

      test('the global memory is untouched by all this', async () => {
        assert.equal((await v1.documents.get(globalMemory())).text, '');
      });
    },
  );
}

describe('MCP over HTTP with keys (SDK)', () => {
  const admin = `admin-${'0'.repeat(24)}`;
  const reader = mintKey('reader', ['read']);
  const grace = mintKey('grace-app', ['read', 'write'], {
    users: ['grace'],
    personalities: ['ada'],
  });
  let server: RunningServer;
  const opened: Connected[] = [];

  before(async () => {
    server = await startServer({
      token: admin,
      config: markdownConfig(`
[personalities.ada]

[serve.keys]
${reader.line}
${grace.line}
`),
    });
  });
  after(async () => {
    for (const connected of opened) await connected.close();
    await server.stop();
  });

  const open = async (path: string, key: string): Promise<Connected> => {
    const connected = await connect(`${server.baseUrl}${path}`, {
      Authorization: `Bearer ${key}`,
    });
    opened.push(connected);
    return connected;
  };

  test('no key is 401 with the resource metadata; a wrong key 401 invalid_token', async () => {
    await assert.rejects(connect(`${server.baseUrl}/mcp/ada/grace`));
    const anonymous = await rawInitialize(`${server.baseUrl}/mcp/ada/grace`);
    assert.equal(anonymous.status, 401);
    assert.equal(
      anonymous.headers.get('www-authenticate'),
      `Bearer resource_metadata="${server.baseUrl}/.well-known/oauth-protected-resource/mcp/ada/grace"`,
    );
    const metadata = await fetch(
      `${server.baseUrl}/.well-known/oauth-protected-resource/mcp/ada/grace`,
    );
    assert.equal(metadata.status, 200);
    const body = (await metadata.json()) as { resource?: string; bearer_methods_supported?: [] };
    assert.equal(body.resource, `${server.baseUrl}/mcp/ada/grace`);
    assert.deepEqual(body.bearer_methods_supported, ['header']);

    await assert.rejects(
      connect(`${server.baseUrl}/mcp/ada/grace`, { Authorization: 'Bearer amk_wrong' }),
    );
    const wrong = await rawInitialize(`${server.baseUrl}/mcp/ada/grace`, {
      Authorization: 'Bearer amk_wrong',
    });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
  });

  test('a read key gets the reading tools; a write through it is refused, naming the scope', async () => {
    const readOnly = await open('/mcp/ada/grace', reader.key);
    const { tools } = await readOnly.client.listTools();
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['memory_view', 'memory_history', 'memory_notes'],
    );
    const history = tools.find((tool) => tool.name === 'memory_history');
    assert.ok(!('revert_to' in (history?.inputSchema.properties ?? {})));
    // Reading needs no view token, and a read key is shown none.
    const view = await callOk(readOnly.client, 'memory_view');
    assert.doesNotMatch(view, /View tokens/);
    await assert.rejects(
      readOnly.client.callTool({
        name: 'memory_add',
        arguments: { file: 'USER.md', entry: 'x' },
      }),
      (error: unknown) => {
        assert.ok(error instanceof McpError, String(error));
        assert.match(error.message, /\bwrite\b/);
        return true;
      },
    );
    const v1 = new MemoryClient({ baseUrl: server.baseUrl, apiKey: admin });
    assert.equal((await v1.documents.get(userProfile('grace'))).text, '');
  });

  test('plain /mcp serves the one personality and user of a restricted key; others are 403', async () => {
    const mine = await open('/mcp', grace.key);
    assert.deepEqual(
      (await mine.client.listResources()).resources.map((resource) => resource.uri),
      [MEMORY_URI, USER_URI],
    );
    await callOk(mine.client, 'memory_add', { file: 'USER.md', entry: 'Name: Grace.' });
    const v1 = new MemoryClient({ baseUrl: server.baseUrl, apiKey: admin });
    assert.equal((await v1.documents.get(userProfile('grace'))).text, 'Name: Grace.\n');

    const bob = await rawInitialize(`${server.baseUrl}/mcp/ada/bob`, {
      Authorization: `Bearer ${grace.key}`,
    });
    assert.equal(bob.status, 403);
    assert.match(bob.headers.get('content-type') ?? '', /^application\/problem\+json/);
    // The admin key names no single personality and user: plain /mcp is a 400.
    const unnamed = await rawInitialize(`${server.baseUrl}/mcp`, {
      Authorization: `Bearer ${admin}`,
    });
    assert.equal(unnamed.status, 400);
  });
});

/**
 * Runs the MCP Inspector's CLI from node_modules (never downloaded at test time), with a
 * scratch HOME (it keeps a catalog and stored OAuth there) and no TTY.
 */
function inspector(args: string[], home: string): Promise<Ran> {
  const bin = join(PACKAGE_DIR, 'node_modules', '.bin', 'mcp-inspector');
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env['MCP_AUTO_OPEN_ENABLED'];
  return run(bin, ['--cli', ...args], { env, timeoutMs: 60_000 });
}

describe('the MCP Inspector CLI lists the tools of /mcp on a keyed server', () => {
  const grace = mintKey('grace-app', ['read', 'write'], {
    users: ['grace'],
    personalities: ['ada'],
  });
  const reader = mintKey('grace-reader', ['read'], { users: ['grace'], personalities: ['ada'] });
  let server: RunningServer;
  let home: string;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'agent-memory-ts-inspector-'));
    server = await startServer({
      config: markdownConfig(`
[personalities.ada]

[serve.keys]
${grace.line}
${reader.line}
`),
    });
  });
  after(async () => {
    await server.stop();
    rmSync(home, { recursive: true, force: true });
  });

  const list = (key: string): Promise<Ran> =>
    inspector(
      [
        `${server.baseUrl}/mcp`,
        '--transport',
        'http',
        '--method',
        'tools/list',
        '--header',
        `Authorization: Bearer ${key}`,
      ],
      home,
    );

  test('tools/list with the key in an Authorization header', async () => {
    const run = await list(grace.key);
    assert.equal(
      run.status,
      0,
      `mcp-inspector exited ${run.status}:\n${run.stdout}\n${run.stderr}`,
    );
    const listed = JSON.parse(run.stdout) as { tools: Array<{ name: string }> };
    assert.deepEqual(
      listed.tools.map((tool) => tool.name),
      TOOLS,
    );

    const readOnly = await list(reader.key);
    assert.equal(readOnly.status, 0, `${readOnly.stdout}\n${readOnly.stderr}`);
    assert.deepEqual(
      (JSON.parse(readOnly.stdout) as { tools: Array<{ name: string }> }).tools.map(
        (tool) => tool.name,
      ),
      ['memory_view', 'memory_history', 'memory_notes'],
    );
  });

  test('a wrong key: the CLI fails, asking for authorization', async () => {
    const run = await list('amk_not-a-key');
    assert.notEqual(run.status, 0, run.stdout);
    assert.match(`${run.stdout}\n${run.stderr}`, /auth_required|401|[Uu]nauthorized/);
    assert.doesNotMatch(run.stdout, /memory_view/);
  });
});
