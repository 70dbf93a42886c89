/**
 * Exactly-once writes: 16 concurrent clients add entries through a proxy that forwards every
 * request to `memory serve` but drops every third reply (it closes the client's connection
 * after the service answered, so the write landed and the client never hears of it). The
 * clients resend with the same Idempotency-Key; every acknowledged add must be in the
 * document exactly once.
 */

import assert from 'node:assert/strict';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import { after, before, describe, test } from 'node:test';

import { MemoryClient, personalityMemory } from 'agent-memory';

import { markdownConfig, startServer, type RunningServer } from './support/server.js';

interface DroppingProxy {
  url: string;
  forwarded: number;
  dropped: number;
  close(): Promise<void>;
}

/** An HTTP proxy to `upstream` that forwards each request and withholds every `nth` reply. */
async function droppingProxy(upstream: string, nth: number): Promise<DroppingProxy> {
  const target = new URL(upstream);
  const state = { forwarded: 0, dropped: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: IncomingHttpHeaders = { ...req.headers, host: target.host };
      const forward = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers,
          agent: false,
        },
        (upstreamResponse) => {
          const body: Buffer[] = [];
          upstreamResponse.on('data', (chunk: Buffer) => body.push(chunk));
          upstreamResponse.on('end', () => {
            state.forwarded += 1;
            if (state.forwarded % nth === 0) {
              // The service has answered (the write landed); the client never hears of it.
              state.dropped += 1;
              req.socket.destroy();
              return;
            }
            res.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
            res.end(Buffer.concat(body));
          });
        },
      );
      forward.on('error', () => req.socket.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    url: `http://127.0.0.1:${address.port}`,
    get forwarded() {
      return state.forwarded;
    },
    get dropped() {
      return state.dropped;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const WRITERS = 16;
const ADDS_PER_WRITER = 8;

describe('exactly-once writes through a proxy that drops replies', () => {
  let server: RunningServer;
  let proxy: DroppingProxy;

  before(async () => {
    server = await startServer({ config: markdownConfig('[personalities.ada]\n') });
    proxy = await droppingProxy(server.baseUrl, 3);
  });
  after(async () => {
    await proxy.close();
    await server.stop();
  });

  test(`${WRITERS} concurrent clients: every acknowledged add is present once`, async () => {
    const acknowledged: string[] = [];
    let replays = 0;
    const writer = async (index: number): Promise<void> => {
      const memory = new MemoryClient({ baseUrl: proxy.url, maxRetries: 10, retryDelayMs: 5 });
      for (let n = 0; n < ADDS_PER_WRITER; n += 1) {
        const content = `writer ${index} entry ${n}`;
        // Half of the writers go through /v1/sync, half through a document's /updates.
        const result =
          index % 2 === 0
            ? await memory.sync({
                personality: 'ada',
                user: `writer-${index}`,
                updates: [{ action: 'add', store: 'memory', content }],
              })
            : await memory.documents.update(personalityMemory('ada'), [
                { action: 'add', store: 'memory', content },
              ]);
        if (result.idempotentReplayed) replays += 1;
        acknowledged.push(content);
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, index) => writer(index)));

    assert.equal(acknowledged.length, WRITERS * ADDS_PER_WRITER);
    assert.ok(proxy.dropped >= (WRITERS * ADDS_PER_WRITER) / 3 - 1, `dropped ${proxy.dropped}`);
    assert.ok(replays > 0, 'no resend was answered as a replay');

    const reader = new MemoryClient({ baseUrl: server.baseUrl });
    const text = (await reader.documents.get(personalityMemory('ada'))).text;
    const entries = text.trim().split('\n\n');
    for (const content of acknowledged) {
      assert.equal(
        entries.filter((entry) => entry === content).length,
        1,
        `${content} is not in MEMORY.md exactly once`,
      );
    }
    // Nothing else: no duplicate and no entry that was never asked for.
    assert.equal(entries.length, acknowledged.length);
  });
});
