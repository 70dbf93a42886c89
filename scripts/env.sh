# Sourced by the scripts in this folder: one warm build directory outside the clone, so CI's
# fresh clones and developers' checkouts share compiled dependencies.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/agent-memory/target}"
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# A section heading with the time since the script started, so a slow run's log shows where its
# time went: `heading == "clippy"` prints `== [7m49s] clippy`. Where MEMORY_SECTIONS_LOG names a
# file (scripts/test sets it, and the scripts it runs inherit it), each heading is also recorded
# there, for section_report.
heading() {
  printf -- '%s [%dm%02ds] %s\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)) "$2"
  if [[ -n "${MEMORY_SECTIONS_LOG:-}" ]]; then
    printf '%s\t%s\t%s\n' "$(date +%s)" "$1" "$2" >>"$MEMORY_SECTIONS_LOG"
  fi
}

# Prints every section recorded in MEMORY_SECTIONS_LOG with how long it took, up to now: a `==`
# section runs until the next `==` one (its `--` subsections indented beneath it), a `--` one
# until the next heading of either kind.
section_report() {
  [[ -s "${MEMORY_SECTIONS_LOG:-}" ]] || return 0
  echo
  echo "== time per section"
  awk -F '\t' -v now="$(date +%s)" '
    function clock(s) { return sprintf("%3dm%02ds", s / 60, s % 60) }
    { start[NR] = $1; level[NR] = $2; name[NR] = $3 }
    END {
      for (i = 1; i <= NR; i++) {
        end = now
        for (j = i + 1; j <= NR; j++) if (level[i] == "--" || level[j] == "==") { end = start[j]; break }
        printf "%s %s%s\n", clock(end - start[i]), (level[i] == "--" ? "    " : ""), name[i]
      }
      printf "%s total\n", clock(now - start[1])
    }' "$MEMORY_SECTIONS_LOG"
}
