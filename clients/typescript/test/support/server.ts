/**
 * Starts a real `memory serve` for a test: a fresh temp root, a memory.toml, a free port
 * (`--port 0`, read back from the "Memory page:" line), stopped and removed at the end.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The `memory` binary: $MEMORY_BIN, else $CARGO_TARGET_DIR/debug/memory. */
export function memoryBin(): string {
  const explicit = process.env['MEMORY_BIN'];
  if (explicit !== undefined && explicit !== '') return explicit;
  const target =
    process.env['CARGO_TARGET_DIR'] ?? join(homedir(), '.cache', 'agent-memory', 'target');
  return join(target, 'debug', 'memory');
}

/** A running server. */
export interface RunningServer {
  baseUrl: string;
  /** The temp directory holding memory.toml and the markdown root (`<dir>/root`). */
  dir: string;
  stop(): Promise<void>;
}

/** Options of {@link startServer}. */
export interface ServerOptions {
  /** memory.toml's text; `{{dir}}` is replaced by the temp directory. */
  config: string;
  /** One admin key, passed as MEMORY_SERVE_TOKEN. */
  token?: string;
}

/** Starts `memory serve --port 0` on a fresh temp directory and waits until it listens. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const bin = memoryBin();
  if (!existsSync(bin)) {
    throw new Error(`no memory binary at ${bin}: build it (cargo build) or set MEMORY_BIN`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'agent-memory-ts-'));
  const configPath = join(dir, 'memory.toml');
  await writeFile(configPath, options.config.replaceAll('{{dir}}', dir));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env['MEMORY_SERVE_TOKEN'];
  if (options.token !== undefined) env['MEMORY_SERVE_TOKEN'] = options.token;
  const child = spawn(bin, ['serve', '--config', configPath, '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  try {
    const baseUrl = await waitForPage(child, () => stderr);
    return {
      baseUrl,
      dir,
      stop: async () => {
        await stopChild(child);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

function waitForPage(child: ChildProcess, stderr: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new Error(`memory serve did not print "Memory page:" within 60 s; stderr:\n${stderr()}`),
      );
    }, 60_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const match = /^Memory page: (http:\/\/\S+?)\/?$/.exec(line);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(`memory serve exited (${code ?? signal}) before listening; stderr:\n${stderr()}`),
      );
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** A fresh API key and its memory.toml line under [serve.keys]. */
export function mintKey(
  name: string,
  scopes: string[],
  restrict: { users?: string[]; personalities?: string[] } = {},
): { key: string; line: string } {
  const key = `amk_${randomBytes(32).toString('hex')}`;
  const sha256 = createHash('sha256').update(key).digest('hex');
  const list = (values: string[]): string => `[${values.map((v) => JSON.stringify(v)).join(', ')}]`;
  let line = `${name} = { sha256 = "${sha256}", scopes = ${list(scopes)}`;
  if (restrict.users !== undefined) line += `, users = ${list(restrict.users)}`;
  if (restrict.personalities !== undefined)
    line += `, personalities = ${list(restrict.personalities)}`;
  return { key, line: `${line} }` };
}

/** A name unique to this run, for Postgres schemas and Redis prefixes. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/**
 * What a test does when something it needs is missing: it throws (fails), unless
 * MEMORY_SKIP_MISSING_SERVICES=1; then the caller skips, and the skip is noted in
 * $MEMORY_SKIPPED_LOG (when set) for scripts/test to list.
 */
function skipOrFail(why: string, fix: string): undefined {
  if (process.env['MEMORY_SKIP_MISSING_SERVICES'] !== '1') {
    throw new Error(`${why}: ${fix}, or set MEMORY_SKIP_MISSING_SERVICES=1 to skip its tests`);
  }
  const log = process.env['MEMORY_SKIPPED_LOG'];
  if (log !== undefined && log !== '') {
    appendFileSync(log, `clients/typescript ${process.argv[1] ?? '?'}: ${why}\n`);
  }
  return undefined;
}

/** A service URL from the environment; undefined (skip) only with MEMORY_SKIP_MISSING_SERVICES=1. */
export function serviceUrl(
  variable: 'MEMORY_TEST_POSTGRES_URL' | 'MEMORY_TEST_REDIS_URL',
): string | undefined {
  const url = process.env[variable];
  if (url !== undefined && url !== '') return url;
  return skipOrFail(`${variable} is not set`, 'start the service (scripts/services.sh)');
}

/** The default embedding model's directory (multilingual-e5-small), when provisioned (scripts/provision-model). */
export function modelDir(): string | undefined {
  const dir =
    process.env['MEMORY_E5_MODEL_DIR'] ??
    join(homedir(), '.cache', 'agent-memory', 'models', 'multilingual-e5-small');
  if (existsSync(join(dir, 'e5-small-q4.bin'))) return dir;
  return skipOrFail(`no embedding model in ${dir}`, 'run scripts/provision-model');
}

/** memory.toml for one markdown provider under `{{dir}}/root`, plus extra lines. */
export function markdownConfig(extra = ''): string {
  return `default_provider = "files"

[providers.files]
kind = "markdown"
root = "{{dir}}/root"

${extra}
`;
}
