# Sourced by scripts/test: makes sure the servers the backend tests need are there, and points
# the tests at them through MEMORY_TEST_*_URL. Idempotent.
#
# - A URL already set is used as is.
# - Else a local PostgreSQL cluster (Debian's postgresql package) is started if it is not running
#   and it can be (as root), and the `test` database is created if missing.
# - Else nothing: the tests start containers with testcontainers when a Docker engine is
#   reachable, or skip loudly (fail, with MEMORY_REQUIRE_SERVICES=1).
# MEMORY_LOCAL_SERVICES=off skips the local servers, so testcontainers is used (as in GitHub CI).

local_postgres_url="postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

postgres_answers() {
  command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432 -t 2
}

ensure_postgres() {
  if [[ -n "${MEMORY_TEST_POSTGRES_URL:-}" || "${MEMORY_LOCAL_SERVICES:-on}" == off ]]; then
    return 0
  fi
  if ! postgres_answers && [[ "$(id -u)" == 0 ]] && command -v pg_ctlcluster >/dev/null 2>&1; then
    local version
    version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)"
    if [[ -n "$version" ]]; then
      echo "== starting the local PostgreSQL $version"
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
      for _ in $(seq 1 30); do postgres_answers && break; sleep 1; done
    fi
  fi
  if ! postgres_answers; then
    echo "== no local PostgreSQL; the Postgres tests will use testcontainers or skip"
    return 0
  fi
  if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1; then
    createdb -h 127.0.0.1 -U postgres test
  fi
  export MEMORY_TEST_POSTGRES_URL="$local_postgres_url"
  echo "== PostgreSQL tests use $MEMORY_TEST_POSTGRES_URL"
}

ensure_postgres
