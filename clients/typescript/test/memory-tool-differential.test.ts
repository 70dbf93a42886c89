/**
 * Claude's memory tool, ours against the SDK's reference filesystem backend
 * (`BetaLocalFilesystemMemoryTool` of `@anthropic-ai/sdk/tools/memory/node`): the command
 * sequences of test/fixtures/memory-tool.json (scripted and randomised, written by the Python
 * client's tests/memory_tool_sequences.py, which runs the same ones against the Python SDK's)
 * through both, and after every command the same result or refusal, word for word, and the
 * same files, ours read from the markdown files a person opens. The differences the README
 * lists are normalised here, each in one place and said why, and shown to hold below.
 */

import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import type { BetaMemoryTool20250818Command } from '@anthropic-ai/sdk/resources/beta';
import { BetaLocalFilesystemMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';
import { MemoryClient } from 'agent-memory';
import { AgentMemoryToolBackend } from 'agent-memory/claude-memory-tool';

import { markdownConfig, startServer, type RunningServer } from './support/server.js';

type Command = Record<string, unknown> & { command: string };
type Outcome = [kind: 'ok' | 'error', text: string];

const FIXTURE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'test',
  'fixtures',
  'memory-tool.json',
);

async function outcome(run: () => Promise<string>): Promise<Outcome> {
  try {
    return ['ok', await run()];
  } catch (error) {
    return ['error', (error as Error).message];
  }
}

function reference(tool: BetaLocalFilesystemMemoryTool, command: Command): Promise<string> {
  const typed = command as unknown as BetaMemoryTool20250818Command;
  switch (typed.command) {
    case 'view':
      return tool.view(typed);
    case 'create':
      return tool.create(typed);
    case 'str_replace':
      return tool.str_replace(typed);
    case 'insert':
      return tool.insert(typed);
    case 'delete':
      return tool.delete(typed);
    case 'rename':
      return tool.rename(typed);
  }
}

/**
 * Differences: a folder exists while it holds a file, where the reference keeps a directory
 * emptied by a delete or a rename; and a file's text is kept trimmed, ending in one newline
 * (the reference's `insert` past the last line leaves none), so the reference's files are
 * brought to that form after each command.
 */
async function settle(root: string): Promise<void> {
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await walk(path);
        if ((await readdir(path)).length === 0) await rmdir(path);
      } else {
        const text = await readFile(path, 'utf8');
        const kept = text.trim().length === 0 ? '' : `${text.trim()}\n`;
        if (kept !== text) await writeFile(path, kept);
      }
    }
  };
  await walk(root);
}

/**
 * Difference: a folder's size is the sum of its files' sizes, where the reference lists the
 * file system's size of a directory entry (4.0K on most file systems).
 */
function normalised([kind, text]: Outcome): Outcome {
  if (kind !== 'ok' || !text.startsWith("Here're the files and directories")) return [kind, text];
  const [header, root, ...items] = text.split('\n');
  const folder = (line: string): string => `<folder>${line.slice(line.indexOf('\t'))}`;
  const shown = items.map((item) => (item.endsWith('/') ? folder(item) : item));
  return [kind, [header, folder(root ?? ''), ...shown].join('\n')];
}

async function files(root: string, skipHidden = false): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (skipHidden && entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else found[relative(root, path)] = await readFile(path, 'utf8');
    }
  };
  await walk(root);
  return Object.fromEntries(Object.entries(found).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The files a person opens: the pair where it holds text, and the notes. */
async function ours(
  markdown: string,
  personality: string,
  user: string,
): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const [name, path] of [
    ['MEMORY.md', join(markdown, 'personalities', personality, 'MEMORY.md')],
    ['USER.md', join(markdown, 'users', user, 'USER.md')],
  ] as const) {
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text.trim().length > 0) found[name] = text;
  }
  Object.assign(found, await files(join(markdown, 'personalities', personality, 'notes'), true));
  return Object.fromEntries(Object.entries(found).sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("Claude's memory tool against the SDK's reference filesystem backend", () => {
  let server: RunningServer;
  let client: MemoryClient;
  let sequences: Command[][];
  let run = 0;

  async function pair(): Promise<{
    reference: BetaLocalFilesystemMemoryTool;
    referenceRoot: string;
    backend: AgentMemoryToolBackend;
    personality: string;
    user: string;
  }> {
    run += 1;
    const personality = `ada-${run}`;
    const user = `grace-${run}`;
    const base = await mkdtemp(join(tmpdir(), 'memory-tool-reference-'));
    return {
      reference: await BetaLocalFilesystemMemoryTool.init(base),
      referenceRoot: join(base, 'memories'),
      backend: new AgentMemoryToolBackend({ client, personality, user }),
      personality,
      user,
    };
  }

  before(async () => {
    server = await startServer({ config: markdownConfig() });
    client = new MemoryClient({ baseUrl: server.baseUrl });
    sequences = JSON.parse(await readFile(FIXTURE, 'utf8')) as Command[][];
  });
  after(async () => {
    await server.stop();
  });

  test('at least 200 commands, every command among them', () => {
    const commands = sequences.flat();
    assert.ok(commands.length >= 200, `${commands.length} commands`);
    assert.deepEqual(
      new Set(commands.map((command) => command.command)),
      new Set(['view', 'create', 'str_replace', 'insert', 'delete', 'rename']),
    );
  });

  test('every sequence answers and leaves what the reference does', async () => {
    const markdown = join(server.dir, 'root');
    for (const [number, sequence] of sequences.entries()) {
      const { reference: theirs, referenceRoot, backend, personality, user } = await pair();
      for (const [step, command] of sequence.entries()) {
        const expected = normalised(await outcome(() => reference(theirs, command)));
        await settle(referenceRoot);
        const got = normalised(await outcome(() => backend.execute(command)));
        const where = `sequence ${number}, command ${step}: ${JSON.stringify(command)}`;
        assert.deepEqual(got, expected, where);
        assert.deepEqual(
          await ours(markdown, personality, user),
          await files(referenceRoot),
          where,
        );
      }
      await rm(dirname(referenceRoot), { recursive: true, force: true });
    }
  });

  test('differences: an empty file, a path the notes rule refuses, /memoriesX', async () => {
    const { reference: theirs, backend } = await pair();
    const empty = { command: 'create', path: '/memories/empty.md', file_text: '' };
    assert.equal((await outcome(() => reference(theirs, empty)))[0], 'ok');
    const [kind, text] = await outcome(() => backend.execute(empty));
    assert.equal(kind, 'error');
    assert.match(text, /its text is empty/);
    for (const name of ['.hidden.md', 'a:b.md', 'CON.md', 'a\\b.md', 'zero\u200bwidth.md']) {
      const create = { command: 'create', path: `/memories/${name}`, file_text: 'x\n' };
      assert.equal((await outcome(() => reference(theirs, create)))[0], 'ok', name);
      const refused = await outcome(() => backend.execute(create));
      assert.equal(refused[0], 'error', name);
      assert.match(refused[1], /could not be written/, name);
    }
    const outside = { command: 'create', path: '/memoriesX/a.md', file_text: 'x\n' };
    assert.equal((await outcome(() => reference(theirs, outside)))[0], 'ok');
    assert.deepEqual(await outcome(() => backend.execute(outside)), [
      'error',
      'Path must start with /memories, got: /memoriesX/a.md',
    ]);
  });
});
