/** Running a command to its end from a test, without blocking the event loop (the test's own
 * `memory serve` fixtures keep answering meanwhile). */

import { spawn } from 'node:child_process';

/** How a command ended and what it printed. */
export interface Ran {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Where and how long a command runs. */
export interface RunOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Killed with SIGKILL past this. */
  timeoutMs: number;
}

/** Runs `command` with `args`, stdin closed, to its end (or its timeout). */
export function run(command: string, args: string[], options: RunOptions): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', reject);
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}
