# Sourced by scripts/test and scripts/bench: the demo's prerequisites (scripts/prerequisites.sh)
# and what only the tests and benchmarks need, installed idempotently:
#
# - PgBouncer (Debian package), which scripts/services.sh starts for the pooled Postgres tests.
# - redis-server and redis-cli (Debian packages), for the Redis Cluster and Sentinel tests,
#   which start servers of their own.
# - Chromium (Debian package), for the Memory page's browser test; the test installs its
#   driver, playwright-core, from npm itself.

source "$(dirname "${BASH_SOURCE[0]}")/prerequisites.sh"

if [[ ! -x /usr/sbin/pgbouncer ]]; then
  apt_install "memory-postgres's pooled tests run through it" pgbouncer
fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt_install "memory-redis's cluster and Sentinel tests run servers of their own" redis-server redis-tools
fi

if [[ ! -x /usr/bin/chromium ]]; then
  apt_install "the Memory page's browser test drives it" chromium
fi
