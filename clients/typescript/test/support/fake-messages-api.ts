/**
 * A stand-in for Anthropic's Messages API on loopback, for the README's memory tool example:
 * the SDK reaches it through `ANTHROPIC_BASE_URL`, as it would reach Anthropic. Asked without a
 * tool result it answers with one `tool_use` of the memory tool; asked with one (the runner
 * sending the tool's answer back) it ends the turn. It keeps every request, so a test can check
 * what the SDK sent back.
 *
 * It holds message threads as the API does (the SDK's tool runner uses them): a request with
 * `thread: { type: 'create' }` starts one, and `{ type: 'continue', previous_message_id }` sends
 * only the new messages, the tools and history being the thread's. An unknown or already
 * continued id is refused with the API's `error.details.error_code`, which the SDK recovers
 * from by sending the whole conversation again.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Messages request as the fake received it (the JSON body). */
export interface MessagesRequest {
  model?: string;
  tools?: Tool[];
  messages?: Message[];
  stream?: boolean;
  thread?: { type?: string; previous_message_id?: string };
}

interface Tool {
  type?: string;
  name?: string;
}

interface Message {
  role: string;
  content: unknown;
}

/** A thread the fake holds: its tools and its conversation up to its last reply. */
interface Thread {
  tools: Tool[];
  messages: Message[];
  continued: boolean;
}

/** What the fake model does. */
export interface FakeModelScript {
  /** The memory tool command of its one `tool_use`. */
  toolInput: Record<string, unknown>;
  /** The text of its final, `end_turn` message. */
  finalText: string;
}

/** A running fake. */
export interface FakeMessagesApi {
  /** For `ANTHROPIC_BASE_URL`: `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** Every request to `/v1/messages`, in order. */
  requests: MessagesRequest[];
  /** The ids of the `tool_use` blocks it answered with, in order. */
  toolUseIds: string[];
  close(): Promise<void>;
}

/** A `tool_result` block as the SDK sends it. */
export interface ToolResult {
  type?: string;
  tool_use_id?: string;
  is_error?: boolean;
  content?: unknown;
}

/** The `tool_result` blocks the requests carried (what the SDK sent back for each call). */
export function toolResults(requests: MessagesRequest[]): ToolResult[] {
  const results: ToolResult[] = [];
  for (const request of requests) {
    for (const message of request.messages ?? []) {
      if (!Array.isArray(message.content)) continue;
      for (const block of message.content as ToolResult[]) {
        if (block.type === 'tool_result') results.push(block);
      }
    }
  }
  return results;
}

/** Starts the fake on 127.0.0.1 and a free port. */
export async function startFakeMessagesApi(script: FakeModelScript): Promise<FakeMessagesApi> {
  const requests: MessagesRequest[] = [];
  const toolUseIds: string[] = [];

  const answer = (response: ServerResponse, status: number, body: unknown): void => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  // Anthropic's error shape, so the SDK raises it with the message in view.
  const refuse = (
    response: ServerResponse,
    status: number,
    message: string,
    errorCode?: string,
  ): void => {
    answer(response, status, {
      type: 'error',
      error: {
        type: status === 404 ? 'not_found_error' : 'invalid_request_error',
        message: `fake Messages API: ${message}`,
        ...(errorCode === undefined ? {} : { details: { error_code: errorCode } }),
      },
    });
  };
  const threads = new Map<string, Thread>();

  const handle = (request: IncomingMessage, body: string, response: ServerResponse): void => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'POST' || path !== '/v1/messages') {
      refuse(response, 404, `no route ${request.method} ${request.url}`);
      return;
    }
    let parsed: MessagesRequest;
    try {
      parsed = JSON.parse(body) as MessagesRequest;
    } catch {
      refuse(response, 400, 'the body is not JSON');
      return;
    }
    requests.push(parsed);
    if (parsed.stream === true) {
      refuse(response, 400, 'streaming is not played');
      return;
    }
    // The conversation so far: the thread's, continued with this request's messages, or the
    // request's own.
    let tools = parsed.tools ?? [];
    let messages = parsed.messages ?? [];
    if (parsed.thread?.type === 'continue') {
      const id = parsed.thread.previous_message_id ?? '';
      const thread = threads.get(id);
      if (thread === undefined) {
        refuse(response, 404, `no thread ends at ${id}`, 'thread_not_found');
        return;
      }
      if (thread.continued) {
        refuse(
          response,
          409,
          `the thread at ${id} was continued already`,
          'thread_already_continued',
        );
        return;
      }
      thread.continued = true;
      tools = thread.tools;
      messages = [...thread.messages, ...messages];
    } else if (parsed.thread !== undefined && parsed.thread.type !== 'create') {
      refuse(response, 400, `unknown thread type ${JSON.stringify(parsed.thread.type)}`);
      return;
    }
    if (!tools.some((t) => t.type === 'memory_20250818' && t.name === 'memory')) {
      refuse(response, 400, 'the request offers no memory tool (memory_20250818)');
      return;
    }
    const last = messages.at(-1);
    const answered =
      last?.role === 'user' &&
      Array.isArray(last.content) &&
      (last.content as { type?: string }[]).some((block) => block.type === 'tool_result');
    const id = `msg_fake_${requests.length}`;
    let content: unknown[];
    let stopReason: string;
    if (answered) {
      content = [{ type: 'text', text: script.finalText }];
      stopReason = 'end_turn';
    } else {
      const toolUseId = `toolu_fake_${toolUseIds.length + 1}`;
      toolUseIds.push(toolUseId);
      content = [{ type: 'tool_use', id: toolUseId, name: 'memory', input: script.toolInput }];
      stopReason = 'tool_use';
    }
    if (parsed.thread !== undefined) {
      const history = [...messages, { role: 'assistant', content }];
      threads.set(id, { tools, messages: history, continued: false });
    }
    answer(response, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: parsed.model ?? 'claude-fake',
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
    });
  };

  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => handle(request, body, response));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    toolUseIds,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
