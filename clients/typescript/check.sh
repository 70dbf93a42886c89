#!/usr/bin/env bash
# Checks the TypeScript client: installs its dev dependencies from package-lock.json
# (install.sh: npm ci, skipped while node_modules matches the lock), checks that
# src/generated/openapi.ts is what docs/openapi.json generates, then prettier --check, tsc
# --strict over the sources and the tests (test/openapi-types.test.ts holds the hand-written
# src/types.ts to those generated types at compile time), the build (dist/: .js + .d.ts), and
# the tests with node --test against a real `memory serve` ($MEMORY_BIN, default
# $CARGO_TARGET_DIR/debug/memory).
#
# Postgres and Redis cases use MEMORY_TEST_POSTGRES_URL and MEMORY_TEST_REDIS_URL (source
# scripts/services.sh first), and recall cases the embedding model; without them they fail,
# unless MEMORY_SKIP_MISSING_SERVICES=1, which makes them skip (noted in $MEMORY_SKIPPED_LOG).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

major="$(node -p 'process.versions.node.split(".")[0]')"
if ((major < 20)); then
  echo "clients/typescript needs Node 20 or later, found $(node --version)" >&2
  exit 1
fi

./install.sh

echo "== src/generated/openapi.ts is what docs/openapi.json generates"
generated="$(mktemp --suffix=.ts)"
trap 'rm -f "$generated"' EXIT
./scripts/generate-openapi.sh "$generated"
if ! diff -u src/generated/openapi.ts "$generated"; then
  echo "src/generated/openapi.ts is stale: run scripts/generate-openapi.sh and check src/types.ts" >&2
  exit 1
fi

echo "== prettier --check"
npx --no-install prettier --check .

echo "== tsc --strict: build dist/"
rm -rf dist .test-build
npx --no-install tsc -p tsconfig.json

echo "== tsc --strict: tests"
npx --no-install tsc -p tsconfig.test.json

echo "== node --test"
node --test --test-concurrency=1 .test-build/test/*.test.js

echo "== npm pack ships the built entry points"
# prepare (scripts/prepare.mjs) rebuilds dist/ from a clean slate, so a clone packs what it
# imports; test/install.test.ts packs a fresh copy and installs the tarball.
npm pack --dry-run --json 2>/dev/null >"$generated.pack.json"
node -e '
  const [pack] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const files = new Set(pack.files.map((file) => file.path));
  const missing = ["dist/index.js", "dist/index.d.ts", "dist/ethos.js", "dist/claude-memory-tool.js"]
    .filter((path) => !files.has(path));
  if (missing.length > 0) {
    console.error(`npm pack would leave out ${missing.join(", ")}`);
    process.exit(1);
  }
  console.log(`${pack.filename}: ${pack.files.length} files`);
' "$generated.pack.json"
rm -f "$generated.pack.json"
