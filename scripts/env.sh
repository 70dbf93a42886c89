# Sourced by the scripts in this folder: one warm build directory outside the clone, so CI's
# fresh clones and developers' checkouts share compiled dependencies.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agent-memory/target}"
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# A section heading with the time since the script started, so a slow run's log shows where its
# time went: `heading == "clippy"` prints `== [7m49s] clippy`.
heading() { printf -- '%s [%dm%02ds] %s\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)) "$2"; }
