/**
 * The MCP TypeScript SDK's client over Streamable HTTP, as the tests of `/mcp` on `memory serve`
 * use it: a connected client that records every HTTP exchange, and helpers for tool results.
 */

import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** One HTTP exchange the SDK's transport made. */
export interface Exchange {
  method: string;
  url: string;
  status: number;
  headers: Headers;
}

/** A connected SDK client, and what its transport sent and got back. */
export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  exchanges: Exchange[];
  close(): Promise<void>;
}

/**
 * Connects the SDK's `Client` to `url` (initialize, then notifications/initialized), with
 * `headers` on every request. Rejects as the SDK does when the server refuses.
 */
export async function connect(
  url: string,
  headers: Record<string, string> = {},
): Promise<Connected> {
  const exchanges: Exchange[] = [];
  const recording = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    exchanges.push({
      method: init?.method ?? 'GET',
      url: String(input),
      status: response.status,
      headers: response.headers,
    });
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: recording,
  });
  const client = new Client({ name: 'agent-memory-tests', version: '0.0.0' });
  await client.connect(transport);
  return {
    client,
    transport,
    exchanges,
    close: () => client.close(),
  };
}

/** A tool call's outcome as the model reads it: its one text block and whether it is an error. */
export interface ToolText {
  text: string;
  isError: boolean;
}

/**
 * Calls a tool and returns its text. The server answers every call with exactly one text
 * block; anything else fails the test.
 */
export async function callText(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
): Promise<ToolText> {
  const result = await client.callTool(
    meta === undefined ? { name, arguments: args } : { name, arguments: args, _meta: meta },
  );
  assert.ok('content' in result && Array.isArray(result.content), JSON.stringify(result));
  const content = result.content as Array<{ type: string; text?: unknown }>;
  assert.equal(content.length, 1, `${name}: ${JSON.stringify(result)}`);
  const [block] = content;
  assert.equal(block?.type, 'text', `${name}: ${JSON.stringify(result)}`);
  assert.equal(typeof block?.text, 'string');
  return { text: block?.text as string, isError: result.isError === true };
}

/** Calls a tool that must succeed; returns its text. */
export async function callOk(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
): Promise<string> {
  const { text, isError } = await callText(client, name, args, meta);
  assert.equal(isError, false, `${name} ${JSON.stringify(args)} failed: ${text}`);
  return text;
}

/** Calls a tool that must be refused (a result with isError); returns its text. */
export async function callRefused(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<string> {
  const { text, isError } = await callText(client, name, args);
  assert.equal(isError, true, `${name} ${JSON.stringify(args)} was not refused: ${text}`);
  return text;
}

/** The text of a resource, checking it is served as one text/markdown content at that URI. */
export async function readResourceText(client: Client, uri: string): Promise<string> {
  const { contents } = await client.readResource({ uri });
  assert.equal(contents.length, 1, JSON.stringify(contents));
  const [content] = contents;
  assert.equal(content?.uri, uri);
  assert.equal(content?.mimeType, 'text/markdown');
  assert.ok(content !== undefined && 'text' in content, JSON.stringify(content));
  return content.text as string;
}

/**
 * The view token `memory_view` (without a query) printed for `file`: 12 hex digits on its
 * "View tokens" line, e.g. `View tokens, for memory_consolidate's viewed: MEMORY.md
 * 1a2b3c4d5e6f, USER.md 0f9e8d7c6b5a.`
 */
export function viewToken(viewText: string, file: 'MEMORY.md' | 'USER.md'): string {
  const line = viewText.split('\n').find((candidate) => /^View tokens\b/.test(candidate));
  assert.ok(line !== undefined, `memory_view printed no view tokens:\n${viewText}`);
  const escaped = file.replace('.', '\\.');
  const match = new RegExp(`${escaped}:? (?:view )?([0-9a-f]{12})\\b`).exec(line);
  assert.ok(match?.[1] !== undefined, `no view token for ${file} in: ${line}`);
  return match[1];
}
