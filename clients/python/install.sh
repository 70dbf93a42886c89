#!/usr/bin/env bash
# Installs the Python client's locked dev dependencies and the package itself (editable) into a
# venv, and prints the venv's directory as the last line of stdout. Idempotent: the venv is made
# afresh only when requirements-dev.lock, pyproject.toml, the Python version or the checkout
# change (a stamp with their hashes and the checkout's path, written after a successful
# install); otherwise it is used as is and nothing is fetched. The path is in the stamp because
# the package is installed editable: a venv made by another checkout would test that one's code. Every dependency comes from PyPI, pinned with hashes. check.sh runs it
# first; scripts/test runs it early, in the background, so the download overlaps the build.
#
#   MEMORY_PYTHON_CLIENT_VENV  the venv (default ~/.cache/agent-memory/venv-python-client)
#   PYTHON                     the interpreter to build it with (default python3; 3.11+)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lock="$here/requirements-dev.lock"
venv="${MEMORY_PYTHON_CLIENT_VENV:-$HOME/.cache/agent-memory/venv-python-client}"
python="${PYTHON:-python3}"

mkdir -p "$(dirname "$venv")"
# One installer at a time per venv: two runs started together would race on pip.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$venv.install-lock"
  flock 9
fi

stamp="$venv/.agent-memory-stamp"
want_stamp() {
  local pyver
  pyver="$("$venv/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" || return 1
  printf '%s %s python-%s %s\n' "$(sha256sum "$lock" | cut -d' ' -f1)" \
    "$(sha256sum "$here/pyproject.toml" | cut -d' ' -f1)" "$pyver" "$here"
}

if [[ -x "$venv/bin/python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$(want_stamp 2>/dev/null)" ]] \
  && "$venv/bin/python" -c 'import agent_memory, anthropic' >/dev/null 2>&1; then
  echo "== python client venv up to date: $venv" >&2
else
  echo "== installing $lock and the package (editable) into $venv" >&2
  # Made afresh, not upgraded in place, so it holds the lock's packages and nothing else.
  rm -rf "$venv"
  "$python" -m venv "$venv"
  # --no-deps: the lock is complete; --only-binary: every locked package ships wheels, so no
  # unhashed build backend is fetched.
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    --require-hashes --no-deps --only-binary=:all: -r "$lock"
  # The package itself, built by the locked flit-core: nothing fetched.
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    --no-deps --no-build-isolation --editable "$here"
  "$venv/bin/python" -m pip check >&2
  want_stamp > "$stamp.tmp"
  mv "$stamp.tmp" "$stamp"
fi
echo "$venv"
