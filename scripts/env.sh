# Sourced by the scripts in this folder: one warm build directory outside the clone, so CI's
# fresh clones and developers' checkouts share compiled dependencies.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agent-memory/target}"
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
