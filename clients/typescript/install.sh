#!/usr/bin/env bash
# Installs the TypeScript client's dev dependencies from package-lock.json with `npm ci`, only
# when the lock changed since the last install (npm ci wipes node_modules). check.sh runs it
# first; scripts/test runs it early, in the background, so the download overlaps the build.
# --ignore-scripts: the package's own `prepare` (the build) is check.sh's to run, after the
# checks before it, and no dependency needs its install script here: the MCP Inspector's does
# nothing when installed as a dependency, and Claude Code's only copies its platform's native
# binary (an optional dependency) over its stub bin/claude.exe, which the tests do not use (they
# run the package's launcher, cli-wrapper.cjs, which finds that binary itself).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp=node_modules/.package-lock.sha256
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$lock_sum" ]]; then
  echo "== npm ci (clients/typescript)"
  npm ci --ignore-scripts --no-audit --no-fund
  echo "$lock_sum" >"$stamp"
fi
