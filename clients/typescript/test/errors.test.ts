/**
 * An error of each kind the API produces, as its class with its problem document, and the
 * client's resend policy (which statuses, the same Idempotency-Key, Retry-After, timeouts).
 */

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';

import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  MemoryClient,
  MemoryError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  PreconditionFailedError,
  RefusedError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  UnexpectedResponseError,
  parseRetryAfter,
  userProfile,
} from 'agent-memory';

import { markdownConfig, mintKey, startServer, type RunningServer } from './support/server.js';

/** Asserts `promise` rejects with `errorClass` and returns the error. */
async function rejection<T extends MemoryError>(
  promise: Promise<unknown>,
  errorClass: abstract new (...args: never[]) => T,
): Promise<T> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof errorClass, `expected ${errorClass.name}, got ${String(error)}`);
    return error;
  }
  assert.fail(`expected ${errorClass.name}, but the call succeeded`);
}

describe('errors from memory serve', () => {
  let server: RunningServer;
  let memory: MemoryClient;

  before(async () => {
    server = await startServer({
      config: markdownConfig(`
[providers.down]
kind = "postgres"
url = "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable"
deadline_ms = 1000
connect_timeout_ms = 200

[personalities.ada]
caps.memory = { soft = 100, hard = 200 }

[personalities.offline]
provider = "down"
`),
    });
    memory = new MemoryClient({
      baseUrl: server.baseUrl,
      maxRetries: 1,
      retryDelayMs: 10,
      maxRetryDelayMs: 50,
    });
  });
  after(async () => {
    await server.stop();
  });

  test('invalid input: a bad id, an unknown field, an empty match', async () => {
    const badId = await rejection(
      memory.prefetch({ personality: 'no such/id', user: 'grace' }),
      InvalidInputError,
    );
    assert.equal(badId.status, 400);
    assert.equal(badId.kind, 'invalid-input');
    assert.equal(badId.problem.type, 'urn:agent-memory:problem:invalid-input');
    assert.equal(badId.retryable, false);
    assert.equal(badId.code, 'invalid-id');
    assert.equal(badId.problem.code, 'invalid-id');
    assert.match(badId.detail, /personality/);
    assert.match(badId.requestId ?? '', /\S/);

    const emptyMatch = await rejection(
      memory.sync({
        personality: 'ada',
        user: 'grace',
        updates: [{ action: 'remove', store: 'memory', substringMatch: '' }],
      }),
      InvalidInputError,
    );
    assert.ok([400, 422].includes(emptyMatch.status), String(emptyMatch.status));
    assert.match(emptyMatch.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);

    const badPath = await rejection(
      memory.documents.get(userProfile('x'.repeat(65))),
      InvalidInputError,
    );
    assert.equal(badPath.status, 400);
  });

  test('not found: an identity not linked, a revision not kept', async () => {
    const unlinked = await rejection(memory.identities.resolve('telegram', '404'), NotFoundError);
    assert.equal(unlinked.status, 404);
    assert.match(unlinked.detail, /telegram:404/);
    await rejection(memory.history.get(userProfile('nobody'), 3), NotFoundError);
  });

  test('412 on a stale If-Match, with the current version (replace and sync)', async () => {
    const ref = userProfile('grace');
    const read = await memory.documents.get(ref);
    const written = await memory.documents.replace(ref, 'Name: Grace.', { ifMatch: read.version });
    const stale = await rejection(
      memory.documents.replace(ref, 'Name: G.', { ifMatch: read.version }),
      PreconditionFailedError,
    );
    assert.equal(stale.status, 412);
    assert.equal(stale.code, 'stale-version');
    assert.equal(stale.currentVersion, written.version_after);
    assert.equal(stale.document, 'users/grace/USER.md');
    assert.equal((await memory.documents.get(ref)).text, 'Name: Grace.\n');

    const staleSync = await rejection(
      memory.sync({
        personality: 'ada',
        user: 'grace',
        updates: [{ action: 'add', store: 'user', content: 'Lives in Lyon.' }],
        ifMatch: { user: read.version },
      }),
      PreconditionFailedError,
    );
    assert.equal(staleSync.currentVersion, written.version_after);
    assert.equal(staleSync.code, 'stale-version');
    // With the current version the same change lands.
    await memory.sync({
      personality: 'ada',
      user: 'grace',
      updates: [{ action: 'add', store: 'user', content: 'Lives in Lyon.' }],
      ifMatch: { user: staleSync.currentVersion ?? null },
    });
  });

  test('conflict: an account linked to another user', async () => {
    await memory.identities.link('telegram', '777', 'grace');
    const taken = await rejection(memory.identities.link('telegram', '777', 'ida'), ConflictError);
    assert.equal(taken.status, 409);
    assert.equal(taken.code, 'identity-taken');
    assert.match(taken.detail, /grace/);
    assert.equal((await memory.identities.resolve('telegram', '777')).user, 'grace');
  });

  test('refused, told apart by code: over the hard cap, an edit matching nothing or twice', async () => {
    const overCap = await rejection(
      memory.sync({
        personality: 'ada',
        user: 'grace',
        updates: [{ action: 'add', store: 'memory', content: 'x'.repeat(300) }],
      }),
      RefusedError,
    );
    assert.equal(overCap.status, 422);
    assert.equal(overCap.code, 'hard-cap-exceeded');
    assert.match(overCap.detail, /hard cap of 200/);
    const noMatch = await rejection(
      memory.sync({
        personality: 'ada',
        user: 'grace',
        updates: [{ action: 'edit', store: 'user', old: 'not there', new: 'x' }],
      }),
      RefusedError,
    );
    assert.equal(noMatch.code, 'no-match');
    assert.match(noMatch.detail, /not there/);

    await memory.documents.replace(userProfile('twice'), 'tea, then tea', { ifMatch: '*' });
    const ambiguous = await rejection(
      memory.documents.update(userProfile('twice'), [
        { action: 'edit', store: 'user', old: 'tea', new: 'coffee' },
      ]),
      RefusedError,
    );
    assert.equal(ambiguous.status, 422);
    assert.equal(ambiguous.code, 'ambiguous-match');
    assert.equal((await memory.documents.get(userProfile('twice'))).text, 'tea, then tea\n');
  });

  test('refused: an Idempotency-Key sent again with another request is key-reused', async () => {
    const request = (content: string) =>
      memory.sync(
        {
          personality: 'ada',
          user: 'keyed',
          updates: [{ action: 'add', store: 'user', content }],
        },
        { idempotencyKey: 'errors-test-turn-1' },
      );
    const first = await request('Booked the train.');
    assert.equal((await request('Booked the train.')).idempotentReplayed, true);
    const reused = await rejection(request('Booked the ferry.'), RefusedError);
    assert.equal(reused.status, 422);
    assert.equal(reused.code, 'key-reused');
    assert.equal(reused.idempotencyKey, 'errors-test-turn-1');
    assert.match(reused.detail, /errors-test-turn-1/);
    const profile = await memory.documents.get(userProfile('keyed'));
    assert.equal(profile.text, 'Booked the train.\n');
    assert.equal(profile.version, first.documents[0]?.version_after);
  });

  test('unavailable: a postgres provider at a closed port (after the resend)', async () => {
    const down = await rejection(
      memory.prefetch({ personality: 'offline', user: 'grace' }),
      UnavailableError,
    );
    assert.equal(down.status, 503);
    assert.equal(down.retryable, true);
    assert.equal(down.attempts, 2);
    const health = await memory.health();
    assert.equal(health.status, 'degraded');
    assert.equal(health.providers.find((p) => p.name === 'down')?.ready, false);
    const ready = await memory.ready();
    assert.equal(ready.status, 'degraded');
    assert.equal(ready.providers.find((p) => p.name === 'files')?.ready, true);
  });

  test('search of a personality that does not recall', async () => {
    const error = await rejection(
      memory.search({ personality: 'ada', query: 'units' }),
      MemoryError,
    );
    assert.ok(error.status >= 400 && error.status < 500, `${error.status} ${error.detail}`);
    assert.match(error.detail, /recall|vector|search/i);
  });
});

describe('unauthorized and forbidden, with API keys', () => {
  const admin = 'admin-token-0123456789';
  const reader = mintKey('reader', ['read']);
  const alice = mintKey('alice-app', ['read', 'write'], { users: ['alice'] });
  let server: RunningServer;

  before(async () => {
    server = await startServer({
      token: admin,
      config: markdownConfig(`
[serve.keys]
${reader.line}
${alice.line}
`),
    });
  });
  after(async () => {
    await server.stop();
  });

  test('no key and an unknown key are 401; a key without the scope or user is 403', async () => {
    const anonymous = new MemoryClient({ baseUrl: server.baseUrl });
    const missing = await rejection(
      anonymous.documents.get(userProfile('alice')),
      UnauthorizedError,
    );
    assert.equal(missing.status, 401);
    // A problem only HTTP has carries no code.
    assert.equal(missing.code, undefined);
    const wrong = new MemoryClient({ baseUrl: server.baseUrl, apiKey: 'amk_not-a-key' });
    await rejection(wrong.documents.get(userProfile('alice')), UnauthorizedError);

    const readOnly = new MemoryClient({ baseUrl: server.baseUrl, apiKey: reader.key });
    assert.equal((await readOnly.documents.get(userProfile('alice'))).text, '');
    const noWrite = await rejection(
      readOnly.sync({
        personality: 'ada',
        user: 'alice',
        updates: [{ action: 'add', store: 'user', content: 'x' }],
      }),
      ForbiddenError,
    );
    assert.equal(noWrite.status, 403);

    const aliceApp = new MemoryClient({ baseUrl: server.baseUrl, apiKey: alice.key });
    await aliceApp.documents.update(userProfile('alice'), [
      { action: 'add', store: 'user', content: 'Hi.' },
    ]);
    await rejection(aliceApp.documents.get(userProfile('bob')), ForbiddenError);
    await rejection(aliceApp.identities.link('telegram', '1', 'alice'), ForbiddenError);

    const adminClient = new MemoryClient({ baseUrl: server.baseUrl, apiKey: admin });
    assert.equal((await adminClient.identities.link('telegram', '1', 'alice')).user, 'alice');
    assert.equal(
      (await adminClient.documents.purge(userProfile('alice'))).path,
      'users/alice/USER.md',
    );
    // Health stays public.
    assert.equal((await anonymous.health()).status, 'ok');
  });
});

/** A scripted HTTP server: each request gets the next answer; records what came in. */
async function scriptedServer(
  answers: Array<(req: IncomingMessage, res: ServerResponse) => void>,
): Promise<{ url: string; seen: IncomingMessage[]; close: () => Promise<void> }> {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    req.resume();
    const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
    answer?.(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    url: `http://127.0.0.1:${address.port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function problem(
  res: ServerResponse,
  status: number,
  kind: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
  res.end(
    JSON.stringify({
      type: `urn:agent-memory:problem:${kind}`,
      title: kind,
      status,
      detail: `scripted ${kind}`,
      kind,
      retryable: status === 503,
    }),
  );
}

const syncReport = JSON.stringify({ documents: [] });

describe('resending after a lost reply', () => {
  test('503 with Retry-After is resent after that long, with the same Idempotency-Key', async () => {
    const server = await scriptedServer([
      (_req, res) => problem(res, 503, 'busy', { 'retry-after': '1' }),
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
        res.end(syncReport);
      },
    ]);
    try {
      const memory = new MemoryClient({ baseUrl: server.url, retryDelayMs: 1 });
      const started = Date.now();
      const report = await memory.sync(
        { personality: 'ada', user: 'grace', updates: [] },
        { idempotencyKey: 'turn-9' },
      );
      assert.ok(Date.now() - started >= 950, 'Retry-After: 1 was not honoured');
      assert.equal(report.idempotentReplayed, true);
      assert.deepEqual(
        server.seen.map((req) => req.headers['idempotency-key']),
        ['turn-9', 'turn-9'],
      );
    } finally {
      await server.close();
    }
  });

  test('502 and 504 are resent up to maxRetries, then thrown with the key to resend with', async () => {
    const server = await scriptedServer([
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>bad gateway</html>');
      },
      (_req, res) => problem(res, 504, 'outcome-unknown'),
    ]);
    try {
      const memory = new MemoryClient({ baseUrl: server.url, maxRetries: 2, retryDelayMs: 1 });
      const error = await rejection(
        memory.sync({ personality: 'ada', user: 'grace', updates: [] }),
        OutcomeUnknownError,
      );
      assert.equal(server.seen.length, 3);
      assert.equal(error.attempts, 3);
      const keys = new Set(server.seen.map((req) => req.headers['idempotency-key']));
      assert.equal(keys.size, 1);
      assert.equal(error.idempotencyKey, [...keys][0]);
    } finally {
      await server.close();
    }
  });

  test('an error response without a problem document is typed by its status', async () => {
    const server = await scriptedServer([
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>bad gateway</html>');
      },
      (_req, res) => {
        res.writeHead(418, { 'content-type': 'text/plain' });
        res.end('teapot');
      },
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>login</html>');
      },
    ]);
    try {
      const memory = new MemoryClient({ baseUrl: server.url, maxRetries: 0 });
      const gateway = await rejection(memory.health(), UnavailableError);
      assert.equal(gateway.status, 502);
      assert.match(gateway.detail, /bad gateway/);
      const teapot = await rejection(memory.health(), UnexpectedResponseError);
      assert.equal(teapot.status, 418);
      assert.equal(teapot.code, undefined);
      await rejection(memory.health(), UnexpectedResponseError);
    } finally {
      await server.close();
    }
  });

  test('4xx answers are not resent', async () => {
    const server = await scriptedServer([(_req, res) => problem(res, 409, 'conflict')]);
    try {
      const memory = new MemoryClient({ baseUrl: server.url, retryDelayMs: 1 });
      await rejection(memory.identities.link('t', '1', 'u'), ConflictError);
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });

  test('no answer within timeoutMs is a TimeoutError, after the resends', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    assert.ok(address !== null && typeof address === 'object');
    try {
      const memory = new MemoryClient({
        baseUrl: `http://127.0.0.1:${address.port}`,
        timeoutMs: 200,
        maxRetries: 1,
        retryDelayMs: 1,
      });
      const error = await rejection(
        memory.sync(
          { personality: 'ada', user: 'grace', updates: [] },
          { idempotencyKey: 'k-timeout' },
        ),
        TimeoutError,
      );
      assert.ok(error instanceof NetworkError);
      assert.equal(error.status, 0);
      assert.equal(error.attempts, 2);
      assert.match(error.detail, /Idempotency-Key k-timeout/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('a refused connection is a NetworkError', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const address = closed.address();
    assert.ok(address !== null && typeof address === 'object');
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const memory = new MemoryClient({
      baseUrl: `http://127.0.0.1:${address.port}`,
      maxRetries: 1,
      retryDelayMs: 1,
    });
    const error = await rejection(memory.health(), NetworkError);
    assert.equal(error.kind, 'network');
    assert.equal(error.attempts, 2);
  });

  test('an aborted call stops at once, without resending', async () => {
    const server = await scriptedServer([
      (_req, res) => problem(res, 503, 'busy', { 'retry-after': '5' }),
    ]);
    try {
      const memory = new MemoryClient({ baseUrl: server.url, maxRetryDelayMs: 5_000 });
      const controller = new AbortController();
      const call = memory.health({ signal: controller.signal });
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);
      await assert.rejects(call, /caller gave up/);
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });

  test('Retry-After as seconds and as an HTTP date', () => {
    assert.equal(parseRetryAfter('3'), 3);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter('soon'), undefined);
    const inTwoSeconds = new Date(Date.now() + 2000).toUTCString();
    const seconds = parseRetryAfter(inTwoSeconds) ?? -1;
    assert.ok(seconds > 0 && seconds <= 2, String(seconds));
  });
});
