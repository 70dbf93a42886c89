/**
 * The repository README's snippets for connecting MCP clients to `/mcp` over HTTP (the blocks
 * marked `<!-- mcp-snippet: NAME -->`), run against a real keyed `memory serve`:
 * - `typescript-sdk`: compiled by `tsc --strict` and run with `url` and MEMORY_API_KEY set; it
 *   must print the tool names;
 * - `mcp-json` (Cursor, VS Code): parsed, its shape checked, and its URL and header used as
 *   those clients do (`${env:NAME}` from the environment) to list the tools;
 * - `claude-code`: run as written, with Claude Code's CLI from node_modules (its native
 *   binary, through the package's own launcher) and a scratch HOME, then `claude mcp get` and
 *   `claude mcp list` must show the server connected. No login and no model call: these
 *   commands only talk to the MCP server.
 * The README's host and port (127.0.0.1:8700) are replaced by the test server's.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format } from 'node:util';
import { after, before, describe, test } from 'node:test';

import { MemoryClient, userProfile } from 'agent-memory';

import { connect } from './support/mcp.js';
import { run as runCommand, type Ran } from './support/process.js';
import { markdownConfig, mintKey, startServer, type RunningServer } from './support/server.js';

// Compiled to .test-build/test/: the package is two levels up, the repository two more.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README_PATH = join(PACKAGE_DIR, '..', '..', 'README.md');
const WORK_DIR = join(PACKAGE_DIR, '.test-build', 'readme-mcp');

/** Where the README points its clients. */
const README_ORIGIN = 'http://127.0.0.1:8700';

const TOOLS = [
  'memory_view',
  'memory_add',
  'memory_replace',
  'memory_remove',
  'memory_consolidate',
  'memory_history',
  'memory_notes',
];

/** A snippet: the info string and text of the fenced block right after its marker. */
interface Snippet {
  lang: string;
  source: string;
}

/** Every `<!-- mcp-snippet: NAME -->` of a markdown text and the fenced block after it. */
export function mcpSnippets(markdown: string): Map<string, Snippet> {
  const snippets = new Map<string, Snippet>();
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const marker = /^<!-- mcp-snippet: (\S+) -->$/.exec(lines[i] ?? '');
    if (marker?.[1] === undefined) continue;
    const open = /^```(\S*)/.exec(lines[i + 1] ?? '');
    assert.ok(open !== null, `the marker on line ${i + 1} is not followed by a fenced block`);
    const body: string[] = [];
    let j = i + 2;
    for (; j < lines.length && !/^```\s*$/.test(lines[j] ?? ''); j += 1) body.push(lines[j] ?? '');
    assert.ok(j < lines.length, `the block after line ${i + 1} is never closed`);
    assert.ok(!snippets.has(marker[1]), `two snippets named ${marker[1]}`);
    snippets.set(marker[1], { lang: open[1] ?? '', source: `${body.join('\n')}\n` });
  }
  return snippets;
}

const SNIPPETS = mcpSnippets(readFileSync(README_PATH, 'utf8'));

function snippet(name: string, lang: string): string {
  const found = SNIPPETS.get(name);
  assert.ok(found !== undefined, `README.md has no <!-- mcp-snippet: ${name} --> block`);
  assert.equal(found.lang, lang, `the ${name} snippet's language`);
  return found.source;
}

/** Runs a command to its end, asynchronously (the test's server keeps answering). */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return runCommand(command, args, { cwd, env, timeoutMs: 120_000 });
}

function succeeded(ran: Ran, what: string): string {
  assert.equal(ran.status, 0, `${what} exited ${ran.status}:\n${ran.stdout}\n${ran.stderr}`);
  return ran.stdout;
}

describe("the README's MCP snippets against a keyed server", () => {
  // The README's URL is /mcp/coder/ada: personality coder, user ada.
  const key = mintKey('ada-agent', ['read', 'write'], { users: ['ada'], personalities: ['coder'] });
  let server: RunningServer;
  const temps: string[] = [];
  const temp = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-memory-ts-readme-mcp-'));
    temps.push(dir);
    return dir;
  };

  before(async () => {
    server = await startServer({
      config: markdownConfig(`
[personalities.coder]

[serve.keys]
${key.line}
`),
    });
  });
  after(async () => {
    await server.stop();
    for (const dir of temps) rmSync(dir, { recursive: true, force: true });
  });

  test('the snippets are all there, each in its language', () => {
    assert.deepEqual(
      ['claude-code', 'mcp-json', 'typescript-sdk'].map((name) => SNIPPETS.get(name)?.lang),
      ['sh', 'json', 'ts'],
    );
  });

  test('typescript-sdk: compiles under tsc --strict, runs and prints the tool names', async () => {
    rmSync(WORK_DIR, { recursive: true, force: true });
    mkdirSync(WORK_DIR, { recursive: true });
    // The snippet uses `url`, as a function's parameter would be.
    writeFileSync(
      join(WORK_DIR, 'snippet.ts'),
      `const url: string = process.env['MEMORY_MCP_URL'] ?? '';\n${snippet('typescript-sdk', 'ts')}`,
    );
    writeFileSync(
      join(WORK_DIR, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.test.json',
        compilerOptions: { rootDir: '.', outDir: 'out', sourceMap: false, types: ['node'] },
        include: ['*.ts'],
      }),
    );
    const tsc = join(PACKAGE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
    const build = spawnSync(process.execPath, [tsc, '-p', join(WORK_DIR, 'tsconfig.json')], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(build.status, 0, `tsc over the snippet:\n${build.stdout}${build.stderr}`);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MEMORY_MCP_URL: `${server.baseUrl}/mcp/coder/ada`,
      MEMORY_API_KEY: key.key,
    };
    const ran = await run(process.execPath, [join(WORK_DIR, 'out', 'snippet.js')], WORK_DIR, env);
    assert.equal(succeeded(ran, 'the typescript-sdk snippet'), `${format(TOOLS)}\n`);

    // Without the key the same code fails: it did send it.
    const anonymous = await run(process.execPath, [join(WORK_DIR, 'out', 'snippet.js')], WORK_DIR, {
      ...env,
      MEMORY_API_KEY: 'amk_not-a-key',
    });
    assert.notEqual(anonymous.status, 0, anonymous.stdout);
  });

  test('mcp-json: mcpServers.memory has the URL and the Authorization header; they connect', async () => {
    const config = JSON.parse(snippet('mcp-json', 'json')) as unknown;
    assert.ok(typeof config === 'object' && config !== null);
    assert.deepEqual(Object.keys(config), ['mcpServers']);
    const { mcpServers } = config as { mcpServers: Record<string, unknown> };
    assert.deepEqual(Object.keys(mcpServers), ['memory']);
    const memory = mcpServers['memory'] as { url: unknown; headers: unknown };
    assert.deepEqual(Object.keys(memory), ['url', 'headers']);
    assert.equal(memory.url, `${README_ORIGIN}/mcp/coder/ada`);
    assert.deepEqual(memory.headers, { Authorization: 'Bearer ${env:MEMORY_API_KEY}' });

    // As Cursor and VS Code use it: ${env:NAME} from the environment.
    const environment: Record<string, string> = { MEMORY_API_KEY: key.key };
    const headers = Object.fromEntries(
      Object.entries(memory.headers as Record<string, string>).map(([name, value]) => [
        name,
        value.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
          const resolved = environment[variable];
          assert.ok(resolved !== undefined, `the snippet reads ${variable}`);
          return resolved;
        }),
      ]),
    );
    const url = String(memory.url).replace(README_ORIGIN, server.baseUrl);
    const connected = await connect(url, headers);
    try {
      assert.deepEqual(
        (await connected.client.listTools()).tools.map((tool) => tool.name),
        TOOLS,
      );
    } finally {
      await connected.close();
    }
  });

  /** Claude Code's `claude`, as a command on PATH, in a scratch HOME and project. */
  const claude = (apiKey: string): { env: NodeJS.ProcessEnv; project: string } => {
    const home = temp();
    const bin = join(home, 'bin');
    const project = join(home, 'project');
    mkdirSync(bin);
    mkdirSync(project);
    // The package's launcher runs its platform's native binary (an optional dependency):
    // install.sh runs no install scripts, so bin/claude.exe stays the package's stub.
    const launcher = join(
      PACKAGE_DIR,
      'node_modules',
      '@anthropic-ai',
      'claude-code',
      'cli-wrapper.cjs',
    );
    writeFileSync(
      join(bin, 'claude'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(launcher)} "$@"\n`,
    );
    chmodSync(join(bin, 'claude'), 0o755);
    // Nothing of this machine's own Claude Code settings or credentials: a bare environment.
    const env: NodeJS.ProcessEnv = {
      PATH: [bin, process.env['PATH'] ?? '/usr/bin:/bin'].join(delimiter),
      HOME: home,
      TMPDIR: tmpdir(),
      MEMORY_API_KEY: apiKey,
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    return { env, project };
  };

  /** The claude-code snippet as written, pointed at the test server. */
  const claudeCodeSnippet = (): string => {
    const source = snippet('claude-code', 'sh');
    assert.ok(source.includes(README_ORIGIN), source);
    return source.replaceAll(README_ORIGIN, server.baseUrl);
  };

  test('claude-code: `claude mcp add` as written; `claude mcp get` and `list` show it connected', async () => {
    const { env, project } = claude(key.key);
    const url = `${server.baseUrl}/mcp/coder/ada`;
    succeeded(
      await run('sh', ['-c', claudeCodeSnippet()], project, env),
      'the claude-code snippet',
    );

    const got = succeeded(
      await run('claude', ['mcp', 'get', 'memory'], project, env),
      'claude mcp get',
    );
    assert.match(got, /^\s*Status: ✔ Connected$/m);
    assert.match(got, /^\s*Type: http$/m);
    assert.ok(got.includes(`URL: ${url}\n`), got);
    assert.ok(got.includes(`Authorization: Bearer ${key.key}\n`), 'the shell put the key in');

    const listed = succeeded(await run('claude', ['mcp', 'list'], project, env), 'claude mcp list');
    assert.ok(listed.includes(`memory: ${url} (HTTP) - ✔ Connected\n`), listed);

    // What Claude Code saw is the server's: the memory is still empty.
    const v1 = new MemoryClient({ baseUrl: server.baseUrl, apiKey: key.key });
    assert.equal((await v1.documents.get(userProfile('ada'))).text, '');
  });

  test('claude-code with a wrong key: the server is not shown connected', async () => {
    const { env, project } = claude('amk_not-a-key');
    succeeded(
      await run('sh', ['-c', claudeCodeSnippet()], project, env),
      'the claude-code snippet',
    );
    const got = await run('claude', ['mcp', 'get', 'memory'], project, env);
    assert.match(got.stdout, /^\s*Status: ✘ Failed to connect$/m, `${got.stdout}\n${got.stderr}`);
    assert.match(got.stdout, /\(HTTP 401\)/);
    assert.doesNotMatch(got.stdout, /✔ Connected/);
  });
});
