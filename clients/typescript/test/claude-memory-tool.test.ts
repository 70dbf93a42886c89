/**
 * The Claude memory tool backend, driven the way the SDK's tool runner drives a tool: the
 * object `tool()` returns (built by `betaMemoryTool`) run through the SDK's own
 * `runRunnableTool` with a `tool_use` block of the SDK's types. No call reaches Anthropic.
 */

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';

import type {
  BetaMemoryTool20250818Command,
  BetaToolUseBlock,
} from '@anthropic-ai/sdk/resources/beta';
import { runRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import {
  MemoryClient,
  NetworkError,
  UnauthorizedError,
  note,
  personalityMemory,
  userProfile,
} from 'agent-memory';
import { AgentMemoryToolBackend, idempotencyKeyFor } from 'agent-memory/claude-memory-tool';

import { markdownConfig, startServer, type RunningServer } from './support/server.js';

/** The result a tool_use gets when its write already landed when it first ran. */
function alreadyDone(toolUseId: string, _path?: string): string {
  return (
    `This memory tool call (tool_use ${toolUseId}) was already carried out when it first ran, ` +
    'so nothing was written again. View the files to see their text now.'
  );
}

describe('Claude memory tool over memory serve', () => {
  let server: RunningServer;
  let client: MemoryClient;
  let backend: AgentMemoryToolBackend;
  let calls = 0;

  /** Runs one command as the tool runner would, with a fresh tool_use id unless given. */
  async function run(
    input: BetaMemoryTool20250818Command | Record<string, unknown>,
    id = `toolu_${(calls += 1)}`,
  ): Promise<{ content: string; isError: boolean }> {
    const tool = backend.tool();
    const toolUse: BetaToolUseBlock = { type: 'tool_use', id, name: tool.name, input };
    const outcome = await runRunnableTool(tool, toolUse.input, { toolUse, toolUseBlock: toolUse });
    assert.equal(typeof outcome.content, 'string');
    return { content: outcome.content as string, isError: outcome.isError };
  }

  before(async () => {
    server = await startServer({
      config: markdownConfig(`
[personalities.ada]
caps.memory = { hard = 120 }
`),
    });
    client = new MemoryClient({ baseUrl: server.baseUrl });
  });
  after(async () => {
    await server.stop();
  });
  beforeEach(async () => {
    for (const ref of [personalityMemory('ada'), userProfile('grace')]) {
      await client.documents.replace(ref, '', { ifMatch: '*' });
    }
    for (const listed of (await client.notes.list(personalityMemory('ada'))).notes) {
      await client.notes.delete(note(personalityMemory('ada'), listed.path));
    }
    backend = new AgentMemoryToolBackend({
      client,
      personality: 'ada',
      user: 'grace',
      session: 'chat-1',
    });
  });

  test('the tool definition is the SDK memory tool', () => {
    const tool = backend.tool({ cache_control: { type: 'ephemeral' } });
    assert.equal(tool.type, 'memory_20250818');
    assert.equal(tool.name, 'memory');
    assert.deepEqual(tool.cache_control, { type: 'ephemeral' });
  });

  test('view lists files and folders with their sizes, each path as given', async () => {
    await client.documents.replace(userProfile('grace'), 'Name: Grace.', { ifMatch: '*' });
    await client.notes.create(note(personalityMemory('ada'), 'trips/kyoto.md'), 'Temples.');
    const listing = await run({ command: 'view', path: '/memories' });
    // MEMORY.md is empty, so it is not there; a folder's size is the sum of its files'.
    assert.deepEqual(listing, {
      isError: false,
      content:
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n" +
        '22B\t/memories\n13B\t/memories/USER.md\n9B\t/memories/trips/\n9B\t/memories/trips/kyoto.md',
    });
    assert.deepEqual(await run({ command: 'view', path: '/memories/' }), {
      isError: false,
      content: listing.content.replaceAll('/memories', '/memories/'),
    });
    assert.equal(
      (await run({ command: 'view', path: '/memories/./USER.md/' })).content.split('\n')[0],
      "Here's the content of /memories/./USER.md/ with line numbers:",
    );
  });

  test('view of a file: line numbers in the reference format, view_range and its errors', async () => {
    await client.documents.replace(personalityMemory('ada'), 'one\ntwo\nthree', { ifMatch: '*' });
    assert.deepEqual(await run({ command: 'view', path: '/memories/MEMORY.md' }), {
      isError: false,
      content:
        "Here's the content of /memories/MEMORY.md with line numbers:\n" +
        '     1\tone\n     2\ttwo\n     3\tthree\n     4\t',
    });
    // As the SDK's reference: no range errors, the start clamped to 1, the slice as given.
    const header = "Here's the content of /memories/MEMORY.md with line numbers:\n";
    for (const [range, shown] of [
      [[2, 3], '     2\ttwo\n     3\tthree'],
      [[3, -1], '     3\tthree\n     4\t'],
      [[0, 2], '     1\tone\n     2\ttwo'],
      [[3, 2], ''],
      [[2, 9], '     2\ttwo\n     3\tthree\n     4\t'],
      [[1], '     1\tone\n     2\ttwo\n     3\tthree\n     4\t'],
    ] as const) {
      assert.deepEqual(
        await run({ command: 'view', path: '/memories/MEMORY.md', view_range: [...range] }),
        { isError: false, content: header + shown },
      );
    }
    assert.deepEqual(
      await run({ command: 'view', path: '/memories/MEMORY.md', view_range: ['1', 2] }),
      {
        isError: true,
        content:
          'Error: Invalid `view_range` parameter: ["1",2]. It should be a list of two integers: the first and last line to show (-1 for the end).',
      },
    );
    // A file exists while it holds text: the empty USER.md is not there.
    assert.deepEqual(await run({ command: 'view', path: '/memories/USER.md' }), {
      isError: true,
      content: 'Error: The path /memories/USER.md does not exist. Please provide a valid path.',
    });
  });

  test("paths are checked in the reference backend's words; any other file is a note", async () => {
    assert.deepEqual(await run({ command: 'view', path: '/memories/notes.md' }), {
      isError: true,
      content: 'Error: The path /memories/notes.md does not exist. Please provide a valid path.',
    });
    assert.deepEqual(
      await run({ command: 'create', path: '/memories/notes/x.md', file_text: 'x' }),
      { isError: false, content: 'File created successfully at: /memories/notes/x.md' },
    );
    assert.equal(
      (await client.notes.get(note('personalities/ada/MEMORY.md', 'notes/x.md'))).text,
      'x\n',
    );
    assert.deepEqual(await run({ command: 'view', path: '/etc/passwd' }), {
      isError: true,
      content: 'Error: Path must start with /memories, got: /etc/passwd',
    });
    assert.deepEqual(await run({ command: 'view', path: '/memories/../secrets' }), {
      isError: true,
      content: 'Error: Path /memories/../secrets would escape /memories directory',
    });
    assert.deepEqual(await run({ command: 'view', path: '/memoriesX/MEMORY.md' }), {
      isError: true,
      content: 'Error: Path must start with /memories, got: /memoriesX/MEMORY.md',
    });
    const hidden = await run({ command: 'create', path: '/memories/.secret', file_text: 'x' });
    assert.equal(hidden.isError, true);
    assert.match(
      hidden.content,
      /^Error: \/memories\/\.secret could not be written: .*invalid note path/,
    );
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, '');
  });

  test('create makes a file, keyed on the tool_use id; refused when it exists', async () => {
    assert.deepEqual(
      await run(
        { command: 'create', path: '/memories/USER.md', file_text: 'Name: Grace.\n' },
        'toolu_create',
      ),
      {
        isError: false,
        content: 'File created successfully at: /memories/USER.md',
      },
    );
    const first = await client.history.list(userProfile('grace'), { limit: 1 });
    assert.equal(first.revisions[0]?.idempotency_key, idempotencyKeyFor('toolu_create'));
    assert.equal(first.revisions[0]?.idempotency_key, 'memory-tool:toolu_create');
    assert.equal(first.revisions[0]?.surface, 'tool');
    assert.equal(first.revisions[0]?.session, 'chat-1');

    // The same tool_use run again (a retried turn) writes nothing more: the service knows its
    // key, and says so.
    assert.deepEqual(
      await run(
        { command: 'create', path: '/memories/USER.md', file_text: 'Name: Grace.\n' },
        'toolu_create',
      ),
      { isError: false, content: alreadyDone('toolu_create', '/memories/USER.md') },
    );
    const again = await client.history.list(userProfile('grace'), { limit: 1 });
    assert.equal(again.revisions[0]?.number, first.revisions[0]?.number);

    assert.deepEqual(
      await run({ command: 'create', path: '/memories/USER.md', file_text: 'Name: Grace Hopper.' }),
      { isError: true, content: 'Error: File /memories/USER.md already exists' },
    );
    assert.equal((await client.documents.get(userProfile('grace'))).text, 'Name: Grace.\n');
    // A note: created beside MEMORY.md, refused when it exists.
    assert.equal(
      (await run({ command: 'create', path: '/memories/topics/tea.md', file_text: '# Tea' }))
        .content,
      'File created successfully at: /memories/topics/tea.md',
    );
    assert.equal(
      (await run({ command: 'create', path: '/memories/topics/tea.md', file_text: 'x' })).content,
      'Error: File /memories/topics/tea.md already exists',
    );
  });

  test('str_replace: the edit, its snippet, and old_str missing, not unique or empty', async () => {
    await client.documents.replace(personalityMemory('ada'), 'a\nb\nunits: imperial\nc\nd\ne', {
      ifMatch: '*',
    });
    await run({ command: 'view', path: '/memories/MEMORY.md' });
    assert.deepEqual(
      await run({
        command: 'str_replace',
        path: '/memories/MEMORY.md',
        old_str: 'imperial',
        new_str: 'metric',
      }),
      {
        isError: false,
        content:
          'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n' +
          '     1\ta\n     2\tb\n     3\tunits: metric\n     4\tc\n     5\td',
      },
    );
    assert.equal(
      (await client.documents.get(personalityMemory('ada'))).text,
      'a\nb\nunits: metric\nc\nd\ne\n',
    );
    assert.deepEqual(
      await run({
        command: 'str_replace',
        path: '/memories/MEMORY.md',
        old_str: 'kelvin',
        new_str: 'x',
      }),
      {
        isError: true,
        content:
          'Error: No replacement was performed, old_str `kelvin` did not appear verbatim in /memories/MEMORY.md.',
      },
    );
    await client.documents.update(personalityMemory('ada'), [
      { action: 'add', store: 'memory', content: 'units: metric' },
    ]);
    await run({ command: 'view', path: '/memories/MEMORY.md' });
    assert.deepEqual(
      await run({
        command: 'str_replace',
        path: '/memories/MEMORY.md',
        old_str: 'units',
        new_str: 'x',
      }),
      {
        isError: true,
        content:
          'Error: No replacement was performed. Multiple occurrences of old_str `units` in lines: 3, 8. Please ensure it is unique',
      },
    );
    assert.equal(
      (
        await run({
          command: 'str_replace',
          path: '/memories/MEMORY.md',
          old_str: '',
          new_str: 'x',
        })
      ).content,
      'Error: No replacement was performed: `old_str` must not be empty.',
    );
    // Two edits in a row: the second checks the text the first left.
    assert.equal(
      (
        await run({
          command: 'str_replace',
          path: '/memories/MEMORY.md',
          old_str: 'a\n',
          new_str: 'A\n',
        })
      ).isError,
      false,
    );
    assert.equal(
      (
        await run({
          command: 'str_replace',
          path: '/memories/MEMORY.md',
          old_str: 'A\nb',
          new_str: 'A\nB',
        })
      ).isError,
      false,
    );
    assert.match((await client.documents.get(personalityMemory('ada'))).text, /^A\nB\n/);
  });

  test('insert: at the top, after a line, and out of range', async () => {
    await client.documents.replace(userProfile('grace'), 'Name: Grace.', { ifMatch: '*' });
    assert.deepEqual(
      await run({
        command: 'insert',
        path: '/memories/USER.md',
        insert_line: 0,
        insert_text: '# Grace\n',
      }),
      {
        isError: false,
        content: 'The file /memories/USER.md has been edited.',
      },
    );
    await run({
      command: 'insert',
      path: '/memories/USER.md',
      insert_line: 2,
      insert_text: 'Likes tea.',
    });
    assert.equal(
      (await client.documents.get(userProfile('grace'))).text,
      '# Grace\nName: Grace.\nLikes tea.\n',
    );
    assert.deepEqual(
      await run({ command: 'insert', path: '/memories/USER.md', insert_line: 9, insert_text: 'x' }),
      {
        isError: true,
        content:
          'Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]',
      },
    );
  });

  test('a write after someone else wrote since the view is refused with a message to view again', async () => {
    await client.documents.replace(userProfile('grace'), 'Mine.', { ifMatch: '*' });
    await run({ command: 'view', path: '/memories/USER.md' });
    await client.documents.replace(userProfile('grace'), 'Written elsewhere.', { ifMatch: '*' });
    const refused = await run({
      command: 'str_replace',
      path: '/memories/USER.md',
      old_str: 'Mine.',
      new_str: 'Overwrite.',
    });
    assert.deepEqual(refused, {
      isError: true,
      content:
        'Error: The file /memories/USER.md has changed since you last viewed it (another conversation or a ' +
        'person wrote to it), so nothing was written. View it again, then redo your change.',
    });
    assert.equal((await client.documents.get(userProfile('grace'))).text, 'Written elsewhere.\n');
    await run({ command: 'view', path: '/memories/USER.md' });
    assert.equal(
      (
        await run({
          command: 'str_replace',
          path: '/memories/USER.md',
          old_str: 'Written',
          new_str: 'Seen',
        })
      ).isError,
      false,
    );
  });

  test('a tool_use run again by a fresh backend after the file changed is told it was already carried out', async () => {
    const input = { command: 'create', path: '/memories/USER.md', file_text: 'Name: Grace.' };
    assert.deepEqual(await backend.runToolUse({ id: 'toolu_once', input }), {
      type: 'tool_result',
      tool_use_id: 'toolu_once',
      content: 'File created successfully at: /memories/USER.md',
    });
    // Another process writes; then this process restarts and its retried turn runs the same
    // tool_use with a backend that never viewed the file.
    await client.documents.update(userProfile('grace'), [
      { action: 'add', store: 'user', content: 'Written elsewhere.' },
    ]);
    const fresh = new AgentMemoryToolBackend({ client, personality: 'ada', user: 'grace' });
    assert.deepEqual(await fresh.runToolUse({ id: 'toolu_once', input }), {
      type: 'tool_result',
      tool_use_id: 'toolu_once',
      content: alreadyDone('toolu_once', '/memories/USER.md'),
    });
    // Nothing was written again: the other process's text stays, and one revision has the key.
    assert.equal(
      (await client.documents.get(userProfile('grace'))).text,
      'Name: Grace.\n\nWritten elsewhere.\n',
    );
    const revisions = (await client.history.list(userProfile('grace'), { limit: 10 })).revisions;
    assert.deepEqual(
      revisions
        .filter((revision) => revision.idempotency_key === 'memory-tool:toolu_once')
        .map((revision) => revision.number),
      [revisions[1]?.number],
    );
    // Another server of the deployment (the same root, without the first answer in memory)
    // replays the key's write from the receipts kept with the document: the same result.
    const other = await startServer({
      config: `default_provider = "files"

[providers.files]
kind = "markdown"
root = "${server.dir}/root"

[personalities.ada]
caps.memory = { hard = 120 }
`,
    });
    try {
      const elsewhere = new AgentMemoryToolBackend({
        client: { baseUrl: other.baseUrl },
        personality: 'ada',
        user: 'grace',
      });
      assert.deepEqual(await elsewhere.runToolUse({ id: 'toolu_once', input }), {
        type: 'tool_result',
        tool_use_id: 'toolu_once',
        content: alreadyDone('toolu_once', '/memories/USER.md'),
      });
    } finally {
      await other.stop();
    }
    assert.equal(
      (await client.documents.get(userProfile('grace'))).text,
      'Name: Grace.\n\nWritten elsewhere.\n',
    );
    // The fresh backend reads the file anew, so its next write lands.
    const next = await fresh.runToolUse({
      id: 'toolu_next',
      input: { command: 'insert', path: '/memories/USER.md', insert_line: 0, insert_text: 'Hi.' },
    });
    assert.equal(next.is_error, undefined);
    assert.equal(
      (await client.documents.get(userProfile('grace'))).text,
      'Hi.\nName: Grace.\n\nWritten elsewhere.\n',
    );
  });

  test("the service's no-match and ambiguous-match refusals come back as the tool's texts", async () => {
    // The backend checks old_str on the text it viewed, which the version guard keeps equal to
    // the service's, so only a request changed on its way makes the service disagree: this
    // client's fetch rewrites the edit's old text before it leaves.
    let sentOld = '';
    const tampering = new MemoryClient({
      baseUrl: server.baseUrl,
      fetch: (input, init) => {
        if (input.endsWith('/v1/sync') && typeof init.body === 'string') {
          const body = JSON.parse(init.body) as { updates: Array<Record<string, unknown>> };
          for (const update of body.updates)
            if (update['action'] === 'edit') update['old'] = sentOld;
          return fetch(input, { ...init, body: JSON.stringify(body) });
        }
        return fetch(input, init);
      },
    });
    await client.documents.replace(personalityMemory('ada'), 'tea\ntea\ncoffee', {
      ifMatch: '*',
    });
    const tool = new AgentMemoryToolBackend({
      client: tampering,
      personality: 'ada',
      user: 'grace',
    });
    const edit = {
      command: 'str_replace',
      path: '/memories/MEMORY.md',
      old_str: 'coffee',
      new_str: 'cocoa',
    };

    sentOld = 'juice';
    assert.deepEqual(await tool.runToolUse({ id: 'toolu_no_match', input: edit }), {
      type: 'tool_result',
      tool_use_id: 'toolu_no_match',
      content:
        'Error: No replacement was performed, old_str `coffee` did not appear verbatim in /memories/MEMORY.md.',
      is_error: true,
    });
    sentOld = 'tea';
    assert.deepEqual(await tool.runToolUse({ id: 'toolu_ambiguous', input: edit }), {
      type: 'tool_result',
      tool_use_id: 'toolu_ambiguous',
      content:
        'Error: No replacement was performed. Multiple occurrences of old_str `coffee` in /memories/MEMORY.md. Please ensure it is unique',
      is_error: true,
    });
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, 'tea\ntea\ncoffee\n');
  });

  test("a write over the hard cap comes back with the cap's text", async () => {
    const refused = await run({
      command: 'create',
      path: '/memories/MEMORY.md',
      file_text: 'x'.repeat(200),
    });
    assert.equal(refused.isError, true);
    assert.match(refused.content, /^Error: Nothing was written: .*hard cap of 120/);
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, '');
  });

  test('delete is a revision that revert undoes; a folder is each of its notes', async () => {
    await client.documents.replace(personalityMemory('ada'), 'Keep me.', { ifMatch: '*' });
    assert.deepEqual(await run({ command: 'delete', path: '/memories/MEMORY.md' }), {
      isError: false,
      content: 'Successfully deleted /memories/MEMORY.md',
    });
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, '');
    const history = await client.history.list(personalityMemory('ada'), { limit: 2 });
    const [clearing, before] = history.revisions;
    assert.ok(clearing !== undefined && before !== undefined);
    await client.history.revert(personalityMemory('ada'), before.number);
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, 'Keep me.\n');

    for (const name of ['trips/kyoto.md', 'trips/japan/nara.md']) {
      await run({ command: 'create', path: `/memories/${name}`, file_text: name });
    }
    assert.equal(
      (await run({ command: 'delete', path: '/memories/trips' })).content,
      'Successfully deleted /memories/trips',
    );
    assert.deepEqual((await client.notes.list(personalityMemory('ada'))).notes, []);
    const kyoto = note(personalityMemory('ada'), 'trips/kyoto.md');
    const [, created] = (await client.history.list(kyoto, { limit: 2 })).revisions;
    assert.ok(created !== undefined);
    await client.history.revert(kyoto, created.number);
    assert.equal((await client.notes.get(kyoto)).text, 'trips/kyoto.md\n');

    assert.deepEqual(await run({ command: 'delete', path: '/memories' }), {
      isError: true,
      content: 'Error: Cannot delete the /memories directory itself',
    });
    assert.deepEqual(await run({ command: 'delete', path: '/memories/old.md' }), {
      isError: true,
      content: 'Error: The path /memories/old.md does not exist',
    });
  });

  test('rename moves a file or a folder; refused onto one that exists', async () => {
    await client.documents.replace(personalityMemory('ada'), 'Mine.', { ifMatch: '*' });
    assert.deepEqual(
      await run({
        command: 'rename',
        old_path: '/memories/MEMORY.md',
        new_path: '/memories/old/memory.md',
      }),
      {
        isError: false,
        content: 'Successfully renamed /memories/MEMORY.md to /memories/old/memory.md',
      },
    );
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, '');
    await run({ command: 'rename', old_path: '/memories/old', new_path: '/memories/new' });
    const moved = note(personalityMemory('ada'), 'new/memory.md');
    assert.equal((await client.notes.get(moved)).text, 'Mine.\n');
    assert.equal(
      (await run({ command: 'rename', old_path: '/memories/new', new_path: '/memories/new' }))
        .content,
      'Error: The destination /memories/new already exists',
    );
    assert.equal(
      (await run({ command: 'rename', old_path: '/memories', new_path: '/memories/x' })).content,
      'Error: Cannot rename the /memories directory itself',
    );
    assert.equal(
      (await run({ command: 'rename', old_path: '/tmp/a', new_path: '/memories/x' })).content,
      'Error: Path must start with /memories, got: /tmp/a',
    );
  });

  test('malformed input is an error result, never a crash', async () => {
    assert.deepEqual(await run({ command: 'teleport', path: '/memories' }), {
      isError: true,
      content:
        'Error: Unknown memory tool command "teleport": use view, create, str_replace, insert, delete or rename.',
    });
    assert.deepEqual(await run({ command: 'create', path: '/memories/USER.md' }), {
      isError: true,
      content: 'Error: The `create` command needs `file_text` as a string.',
    });
  });

  test('the service down is thrown to the developer, not made a tool result', async () => {
    const offline = new AgentMemoryToolBackend({
      client: { baseUrl: 'http://127.0.0.1:1', maxRetries: 0 },
      personality: 'ada',
      user: 'grace',
    });
    for (const input of [
      { command: 'view', path: '/memories' },
      { command: 'create', path: '/memories/USER.md', file_text: 'x' },
    ]) {
      await assert.rejects(offline.runToolUse({ id: 'toolu_x', input }), NetworkError);
      await assert.rejects(offline.execute(input, 'toolu_x'), NetworkError);
    }
  });

  test('an unauthorized client is thrown to the developer; a model mistake stays a tool result', async () => {
    const guarded = await startServer({
      config: markdownConfig(''),
      token: 'a-long-admin-token-1234',
    });
    try {
      const noKey = new AgentMemoryToolBackend({
        client: { baseUrl: guarded.baseUrl },
        personality: 'ada',
        user: 'grace',
      });
      await assert.rejects(
        noKey.runToolUse({ id: 'toolu_y', input: { command: 'view', path: '/memories' } }),
        UnauthorizedError,
      );
      assert.deepEqual(
        await noKey.runToolUse({ id: 'toolu_z', input: { command: 'view', path: '/x' } }),
        {
          type: 'tool_result',
          tool_use_id: 'toolu_z',
          content: 'Error: Path must start with /memories, got: /x',
          is_error: true,
        },
      );
    } finally {
      await guarded.stop();
    }
  });

  test('the same str_replace block run twice is already carried out the second time', async () => {
    await client.documents.replace(personalityMemory('ada'), 'Likes tea.', { ifMatch: '*' });
    const block = {
      id: 'toolu_edit_twice',
      input: {
        command: 'str_replace',
        path: '/memories/MEMORY.md',
        old_str: 'tea',
        new_str: 'coffee',
      },
    };
    assert.equal((await backend.runToolUse(block)).is_error, undefined);
    // The same backend, then a fresh one (a restarted process): neither is told old_str is
    // missing, though the first run replaced it.
    assert.deepEqual(await backend.runToolUse(block), {
      type: 'tool_result',
      tool_use_id: 'toolu_edit_twice',
      content: alreadyDone('toolu_edit_twice'),
    });
    const fresh = new AgentMemoryToolBackend({ client, personality: 'ada', user: 'grace' });
    assert.deepEqual(await fresh.runToolUse(block), {
      type: 'tool_result',
      tool_use_id: 'toolu_edit_twice',
      content: alreadyDone('toolu_edit_twice'),
    });
    assert.equal((await client.documents.get(personalityMemory('ada'))).text, 'Likes coffee.\n');
    // A new call whose old_str is not there gets the reference text, and one that is not
    // unique gets the lines it occurs on, from the service's refusal.
    assert.deepEqual(
      await backend.runToolUse({ id: 'toolu_missing', input: { ...block.input, old_str: 'tea' } }),
      {
        type: 'tool_result',
        tool_use_id: 'toolu_missing',
        content:
          'Error: No replacement was performed, old_str `tea` did not appear verbatim in /memories/MEMORY.md.',
        is_error: true,
      },
    );
    await client.documents.replace(personalityMemory('ada'), 'a x\nb\nc x', { ifMatch: '*' });
    assert.deepEqual(
      await fresh.runToolUse({ id: 'toolu_twice', input: { ...block.input, old_str: 'x' } }),
      {
        type: 'tool_result',
        tool_use_id: 'toolu_twice',
        content:
          'Error: No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 3. Please ensure it is unique',
        is_error: true,
      },
    );
  });

  test('runToolUse and the plain handlers write too', async () => {
    const result = await backend.runToolUse({
      id: 'toolu_manual',
      input: {
        command: 'create',
        path: '/memories/MEMORY.md',
        file_text: 'From a loop of my own.',
      },
    });
    assert.deepEqual(result, {
      type: 'tool_result',
      tool_use_id: 'toolu_manual',
      content: 'File created successfully at: /memories/MEMORY.md',
    });
    const revision = (await client.history.list(personalityMemory('ada'), { limit: 1 }))
      .revisions[0];
    assert.equal(revision?.idempotency_key, 'memory-tool:toolu_manual');

    const handlers = backend.handlers();
    assert.equal(
      await handlers.insert({
        command: 'insert',
        path: '/memories/MEMORY.md',
        insert_line: 0,
        insert_text: 'Top.',
      }),
      'The file /memories/MEMORY.md has been edited.',
    );
    assert.equal(
      (await client.documents.get(personalityMemory('ada'))).text,
      'Top.\nFrom a loop of my own.\n',
    );
  });
});
