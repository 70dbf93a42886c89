#!/usr/bin/env node
// The package's `prepare` script: builds dist/ from a clean slate with the locked TypeScript.
//
// npm runs `prepare` after `npm install` / `npm ci` in this directory, before `npm pack` and
// `npm publish`, and in this directory when another project installs it by path
// (`npm install /path/to/clients/typescript`, a link, or `--install-links`, a copy). In the last
// case, and for `npm pack` in a fresh checkout, the dev dependencies are not installed yet; so,
// when the locked TypeScript is missing, this installs them from package-lock.json first
// (`npm ci --include=dev --omit=optional --ignore-scripts` in this directory), as npm does
// itself for a git dependency. Without that, such an install used to link a package with no
// dist/ (nothing to import) and `npm pack` to fail with `tsc: not found`.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const tsc = join(here, 'node_modules', 'typescript', 'bin', 'tsc');

/** Runs a command in this package's directory; exits with its status when it fails. */
function run(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: here, env, stdio: 'inherit' });
  if (result.error !== undefined) {
    console.error(`agent-memory prepare: could not run ${command}: ${result.error.message}`);
    process.exit(1);
  }
  if (result.status !== 0) {
    console.error(`agent-memory prepare: ${[command, ...args].join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
}

/**
 * The environment for the nested `npm ci`: the outer npm's settings minus what says where and
 * what to install (its `npm_config_prefix`, `global`, `omit`, ... describe the project that is
 * installing this package, not this directory), keeping how to reach the registry.
 */
function nestedNpmEnv() {
  const keep =
    /^npm_config_(.*registry.*|cache|userconfig|globalconfig|(https_)?proxy|no_?proxy|cafile|ca|cert|key|strict_ssl|offline|prefer_offline|prefer_online|fetch_.*|loglevel|_auth.*|\/\/.*)$/i;
  const env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) && !keep.test(name)) continue;
    env[name] = value;
  }
  return env;
}

if (!existsSync(tsc)) {
  console.error(
    'agent-memory prepare: installing the build tools from package-lock.json (npm ci) to build dist/',
  );
  // The npm running this script when there is one (npm_execpath), so the same version runs.
  const npmCli = process.env.npm_execpath;
  const [command, prefix] =
    npmCli !== undefined && npmCli.endsWith('.js')
      ? [process.execPath, [npmCli]]
      : [process.platform === 'win32' ? 'npm.cmd' : 'npm', []];
  run(
    command,
    [
      ...prefix,
      'ci',
      '--include=dev',
      // The build needs TypeScript only: not the platform binaries the test clients bring as
      // optional dependencies (Claude Code's native CLI alone is some 400 MB).
      '--omit=optional',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--prefix',
      here,
    ],
    nestedNpmEnv(),
  );
}

rmSync(join(here, 'dist'), { recursive: true, force: true });
run(process.execPath, [tsc, '-p', 'tsconfig.json']);
