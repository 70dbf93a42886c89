#!/usr/bin/env bash
# Installs the Python side of the HTTP API contract test (Schemathesis, pinned with hashes in
# requirements.lock beside this file) into a venv, and prints the venv's bin directory as the
# last line of stdout. Idempotent: when the venv already holds exactly this lock (a stamp with the
# lock's sha256 and the venv's Python version, written only after a successful install), it
# touches nothing and needs no network.
#
#   bin="$(tests/schemathesis/install.sh | tail -n1)"; "$bin/schemathesis" --version
#
# MEMORY_PYTHON_VENV: where the venv lives (default ~/.cache/agent-memory/venv).
# PYTHON: the interpreter to build it with (default python3; the lock is made for 3.11+).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lock="$here/requirements.lock"
venv="${MEMORY_PYTHON_VENV:-$HOME/.cache/agent-memory/venv}"
python="${PYTHON:-python3}"

mkdir -p "$(dirname "$venv")"
# One installer at a time per venv (two test runs started together would race on pip).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$venv.install-lock"
  flock 9
fi

stamp="$venv/.requirements.lock.stamp"
want_stamp() {
  local pyver
  pyver="$("$venv/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" || return 1
  printf '%s python-%s\n' "$(sha256sum "$lock" | cut -d' ' -f1)" "$pyver"
}

if [[ -x "$venv/bin/python" && -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$(want_stamp 2>/dev/null)" ]] \
  && "$venv/bin/schemathesis" --version >/dev/null 2>&1; then
  echo "schemathesis venv up to date: $venv" >&2
else
  # Made afresh (not upgraded in place), so it holds the lock's packages and nothing else; this
  # also heals a venv whose interpreter was upgraded or removed underneath it.
  rm -rf "$venv"
  "$python" -m venv "$venv"
  echo "installing $lock into $venv" >&2
  # --no-deps: the lock is complete; --only-binary: every locked package ships wheels, so no
  # unhashed build backends are fetched. Output goes to stderr so stdout stays one line.
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    --require-hashes --no-deps --only-binary=:all: -r "$lock" >&2
  "$venv/bin/python" -m pip check >&2
  "$venv/bin/schemathesis" --version >&2
  want_stamp > "$stamp.tmp"
  mv "$stamp.tmp" "$stamp"
fi

echo "$venv/bin"
