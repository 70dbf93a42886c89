#!/usr/bin/env bash
# Runs Schemathesis (all phases, all checks, settings in schemathesis.toml) against a running API
# and prints a summary whose last line is "N passed, N failed".
#
#   MEMORY_API_KEY=... tests/schemathesis/run.sh http://127.0.0.1:PORT [extra `schemathesis run` options]
#
# The schema is read from BASE/v1/openapi.json. Reports (JSON, NDJSON, JUnit) go to
# $SCHEMATHESIS_REPORT_DIR (default: a new temporary directory), which is also the working
# directory of the run, so Hypothesis leaves no .hypothesis/ folder in the work tree.
# MIN_LINK_STEPS (default 1): fewest stateful steps that must follow a link written in the schema.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${1:?usage: run.sh BASE_URL [schemathesis run options]}"
shift
: "${MEMORY_API_KEY:?MEMORY_API_KEY must hold the key the server accepts}"

bin="$("$here/install.sh" | tail -n1)"
out="${SCHEMATHESIS_REPORT_DIR:-$(mktemp -d)}"
mkdir -p "$out"
export HYPOTHESIS_STORAGE_DIRECTORY="$out/.hypothesis"

rc=0
(
  cd "$out"
  "$bin/schemathesis" --config-file "$here/schemathesis.toml" run "${base%/}/v1/openapi.json" \
    --report json,ndjson,junit \
    --report-json-path "$out/report.json" \
    --report-ndjson-path "$out/events.ndjson" \
    --report-junit-path "$out/junit.xml" \
    "$@"
) || rc=$?

if [[ ! -f "$out/report.json" || ! -f "$out/events.ndjson" ]]; then
  echo "schemathesis exited $rc without writing its reports (schema not loaded?)" >&2
  exit $((rc == 0 ? 1 : rc))
fi
"$bin/python" "$here/summarize.py" "$out/report.json" "$out/events.ndjson" \
  --min-link-steps "${MIN_LINK_STEPS:-1}" || rc=$((rc == 0 ? 1 : rc))
echo "schemathesis reports: $out" >&2
exit "$rc"
