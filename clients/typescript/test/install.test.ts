/**
 * The package installs from a checkout as the README's "Install" says, starting from a fresh
 * copy of this directory (no node_modules, no dist/, as a clone has it):
 * - `npm pack` builds dist/ (the `prepare` script installs the locked TypeScript first) and the
 *   tarball, installed into a new project, imports there by its three entry points, type-checks
 *   under `tsc --strict` (NodeNext) and works against a real `memory serve`;
 * - `npm install <path>` links the copy, built.
 * npm fetches what its cache lacks from the registry, as a user's install would.
 */

import assert from 'node:assert/strict';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { MemoryClient, userProfile } from 'agent-memory';

import { run as runCommand, type Ran } from './support/process.js';
import { markdownConfig, startServer, type RunningServer } from './support/server.js';

// Compiled to .test-build/test/: the package is two levels up.
const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PACKAGE = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  devDependencies: Record<string, string>;
};
const SDK_VERSION = PACKAGE.devDependencies['@anthropic-ai/sdk'] ?? '';

/** Runs a command to its end (asynchronously: the test's server keeps answering). */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return runCommand(command, args, { cwd, env, timeoutMs: 300_000 });
}

async function succeed(command: string, args: string[], cwd: string): Promise<Ran> {
  const ran = await run(command, args, cwd, npmEnv());
  assert.equal(
    ran.status,
    0,
    `${command} ${args.join(' ')} in ${cwd} exited ${ran.status}:\n${ran.stdout}\n${ran.stderr}`,
  );
  return ran;
}

/**
 * This process's environment without the npm settings a surrounding `npm test` would pass
 * down (they describe that run, not the projects made here), keeping how to reach the registry.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) && !/^npm_config_(.*registry.*|cache|userconfig)$/i.test(name)) {
      continue;
    }
    env[name] = value;
  }
  // prefer-offline: the packages are in npm's cache after install.sh's `npm ci` of the same
  // lock (and the nested one in `prepare` keeps the setting), so the test needs no registry
  // round trips when the cache is warm.
  return {
    ...env,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_prefer_offline: 'true',
  };
}

/** A copy of this package as a checkout holds it: no node_modules, dist/, test build or tarball. */
function freshCopy(into: string): string {
  const copy = join(into, 'agent-memory-checkout');
  cpSync(PACKAGE_DIR, copy, {
    recursive: true,
    filter: (source) => {
      const [first = ''] = relative(PACKAGE_DIR, source).split(sep);
      return !['node_modules', 'dist', '.test-build'].includes(first) && !first.endsWith('.tgz');
    },
  });
  assert.ok(!existsSync(join(copy, 'node_modules')) && !existsSync(join(copy, 'dist')));
  return copy;
}

/** An empty ES-module project to install into. */
function newProject(into: string): string {
  const project = join(into, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  return project;
}

describe('installing the package from a checkout', () => {
  let server: RunningServer;
  let client: MemoryClient;
  const temps: string[] = [];

  const temp = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-memory-ts-install-'));
    temps.push(dir);
    return dir;
  };

  before(async () => {
    server = await startServer({ config: markdownConfig('[personalities.ada]\n') });
    client = new MemoryClient({ baseUrl: server.baseUrl });
  });
  after(async () => {
    await server.stop();
    for (const dir of temps) rmSync(dir, { recursive: true, force: true });
  });

  test('npm pack in a fresh copy builds dist/; the tarball installs, imports, type-checks and works', async () => {
    const dir = temp();
    const copy = freshCopy(dir);
    await succeed('npm', ['pack', '--pack-destination', dir], copy);
    const tarball = join(dir, `${PACKAGE.name}-${PACKAGE.version}.tgz`);
    assert.ok(existsSync(tarball), `npm pack wrote no ${tarball}`);

    const project = newProject(dir);
    await succeed('npm', ['install', tarball, `@anthropic-ai/sdk@${SDK_VERSION}`], project);
    const installed = join(project, 'node_modules', 'agent-memory');
    assert.ok(!lstatSync(installed).isSymbolicLink(), 'a tarball installs a copy');
    assert.ok(existsSync(join(installed, 'dist', 'index.d.ts')));

    writeFileSync(
      join(project, 'main.mjs'),
      `import { MemoryClient, userProfile } from 'agent-memory';
import { AgentMemoryKeyedProvider } from 'agent-memory/ethos';
import { AgentMemoryToolBackend } from 'agent-memory/claude-memory-tool';

const client = new MemoryClient({ baseUrl: process.env.MEMORY_URL });
new AgentMemoryKeyedProvider({ client });
const backend = new AgentMemoryToolBackend({ client, personality: 'ada', user: 'grace' });
const result = await backend.runToolUse({
  id: 'toolu_install',
  input: { command: 'create', path: '/memories/USER.md', file_text: 'Installed from a tarball.' },
});
console.log(JSON.stringify({ result, resolved: import.meta.resolve('agent-memory') }));
console.log((await client.documents.get(userProfile('grace'))).text);
`,
    );
    const main = await run(process.execPath, ['main.mjs'], project, {
      ...process.env,
      MEMORY_URL: server.baseUrl,
    });
    assert.equal(main.status, 0, main.stdout + main.stderr);
    const [first = '{}'] = main.stdout.split('\n');
    const printed = JSON.parse(first) as { resolved: string; result: { is_error?: boolean } };
    assert.equal(printed.result.is_error, undefined);
    assert.ok(
      fileURLToPath(printed.resolved).startsWith(installed + sep),
      `resolved ${printed.resolved}, not the installed copy`,
    );
    assert.equal(
      (await client.documents.get(userProfile('grace'))).text,
      'Installed from a tarball.\n',
    );

    // The declarations resolve for a TypeScript project (NodeNext), types included.
    writeFileSync(
      join(project, 'main.ts'),
      `import { MemoryClient, type PrefetchView } from 'agent-memory';
import { AgentMemoryKeyedProvider } from 'agent-memory/ethos';
import { AgentMemoryToolBackend } from 'agent-memory/claude-memory-tool';

const client = new MemoryClient({ baseUrl: 'http://127.0.0.1:8700' });
export const provider = new AgentMemoryKeyedProvider({ client });
export const tool = new AgentMemoryToolBackend({ client, personality: 'ada', user: 'grace' }).tool();
export const context = async (): Promise<string | null | undefined> => {
  const before: PrefetchView = await client.prefetch({ personality: 'ada', user: 'grace' });
  return before.context;
};
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ['main.ts'],
      }),
    );
    const tsc = join(PACKAGE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
    const check = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], project, process.env);
    assert.equal(check.status, 0, `tsc in the project:\n${check.stdout}${check.stderr}`);
  });

  test('npm install <path> of a fresh copy links it, built', async () => {
    const dir = temp();
    const copy = freshCopy(dir);
    const project = newProject(dir);
    await succeed('npm', ['install', copy], project);
    assert.ok(lstatSync(join(project, 'node_modules', 'agent-memory')).isSymbolicLink());
    assert.ok(existsSync(join(copy, 'dist', 'index.js')), 'prepare built dist/ in the checkout');
    writeFileSync(
      join(project, 'main.mjs'),
      `import { MemoryClient } from 'agent-memory';
console.log((await new MemoryClient({ baseUrl: process.env.MEMORY_URL }).health()).status);
`,
    );
    const main = await run(process.execPath, ['main.mjs'], project, {
      ...process.env,
      MEMORY_URL: server.baseUrl,
    });
    assert.equal(main.status, 0, main.stdout + main.stderr);
    assert.equal(main.stdout.trim(), 'ok');
  });
});
