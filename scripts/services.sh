# Sourced by scripts/test: makes sure the servers the backend tests need are there, and points
# the tests at them through MEMORY_TEST_POSTGRES_URL and MEMORY_TEST_REDIS_URL. Idempotent.
#
# - A URL already set is used as is.
# - Else a local server (Debian's postgresql or redis-server package) is started if it is not
#   running and can be (as root); for PostgreSQL the `test` database is created if missing.
# - Else nothing: the tests start containers with testcontainers when a Docker engine is
#   reachable, or fail, unless MEMORY_SKIP_MISSING_SERVICES=1 (an explicit opt-out) lets them
#   skip; scripts/test then lists the skipped suites at the end. A banner says so up front.
# MEMORY_LOCAL_SERVICES=off leaves local servers alone, so testcontainers is used (GitHub CI).

postgres_answers() { # [database] [port]
  command -v psql >/dev/null 2>&1 &&
    PGCONNECT_TIMEOUT=3 psql -w -h 127.0.0.1 -p "${2:-5432}" -U postgres -d "${1:-postgres}" -tAc 'SELECT 1' >/dev/null 2>&1
}

redis_answers() {
  command -v redis-cli >/dev/null 2>&1 && [[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" == PONG ]]
}

can_start_local() {
  [[ "${MEMORY_LOCAL_SERVICES:-on}" != off && "$(id -u)" == 0 ]] && command -v "$1" >/dev/null 2>&1
}

docker_reachable() {
  [[ -n "${DOCKER_HOST:-}" || -S /var/run/docker.sock ]]
}

no_server() { # <name> <env var>
  if docker_reachable; then
    echo "== no local $1: its tests start a container with testcontainers"
  else
    if [[ "${MEMORY_SKIP_MISSING_SERVICES:-}" == 1 ]]; then
      echo "!!! no $1 and no Docker engine: its tests will SKIP (MEMORY_SKIP_MISSING_SERVICES=1; set $2 to run them)"
    else
      echo "!!! no $1 and no Docker engine: its tests will FAIL (set $2, or MEMORY_SKIP_MISSING_SERVICES=1 to skip them)"
    fi
  fi
}

ensure_postgres() {
  [[ -n "${MEMORY_TEST_POSTGRES_URL:-}" ]] && return 0
  if [[ "${MEMORY_LOCAL_SERVICES:-on}" != off ]] && ! postgres_answers && can_start_local pg_ctlcluster; then
    local version
    version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$version" ]]; then
      echo "== starting the local PostgreSQL $version"
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
      for _ in $(seq 1 30); do postgres_answers && break; sleep 1; done
    fi
  fi
  if [[ "${MEMORY_LOCAL_SERVICES:-on}" == off ]] || ! postgres_answers; then
    no_server PostgreSQL MEMORY_TEST_POSTGRES_URL
    return 0
  fi
  if ! postgres_answers test; then
    createdb -w -h 127.0.0.1 -U postgres test 2>/dev/null || true # another run may have won
  fi
  if postgres_answers test; then
    # No sslmode: sqlx's default (prefer) takes TLS where the server offers it, as Debian's
    # does, which is how the README's URL connects in production. scripts/test runs the
    # deadline tests once more with sslmode=disable.
    export MEMORY_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/test"
    echo "== PostgreSQL tests use $MEMORY_TEST_POSTGRES_URL"
  else
    no_server "PostgreSQL database 'test'" MEMORY_TEST_POSTGRES_URL
  fi
}

ensure_redis() {
  [[ -n "${MEMORY_TEST_REDIS_URL:-}" ]] && return 0
  if [[ "${MEMORY_LOCAL_SERVICES:-on}" != off ]] && ! redis_answers && can_start_local redis-server; then
    echo "== starting the local Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
    for _ in $(seq 1 30); do redis_answers && break; sleep 1; done
  fi
  if [[ "${MEMORY_LOCAL_SERVICES:-on}" == off ]] || ! redis_answers; then
    no_server Redis MEMORY_TEST_REDIS_URL
    return 0
  fi
  export MEMORY_TEST_REDIS_URL="redis://127.0.0.1:6379"
  echo "== Redis tests use $MEMORY_TEST_REDIS_URL"
}

# PgBouncer 1.18 (Debian's) in transaction mode on 127.0.0.1:6433, in front of the local
# PostgreSQL, for memory-postgres's pooled tests (MEMORY_TEST_PGBOUNCER_URL). It accepts no
# startup parameter beyond its defaults, as Debian ships it.
ensure_pgbouncer() {
  [[ -n "${MEMORY_TEST_PGBOUNCER_URL:-}" ]] && return 0
  local port=6433 dir=/tmp/agent-memory-pgbouncer
  if [[ "${MEMORY_TEST_POSTGRES_URL:-}" != *"@127.0.0.1:5432/"* ]]; then
    no_pgbouncer "no local PostgreSQL to put it in front of"
    return 0
  fi
  if ! postgres_answers test "$port" && [[ "${MEMORY_LOCAL_SERVICES:-on}" != off && "$(id -u)" == 0 && -x /usr/sbin/pgbouncer ]]; then
    echo "== starting PgBouncer (transaction mode) on 127.0.0.1:$port"
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<EOF_INI
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
pidfile = $dir/pgbouncer.pid
logfile = $dir/pgbouncer.log
EOF_INI
    echo '"postgres" ""' >"$dir/users.txt"
    chown -R postgres "$dir"
    /usr/sbin/pgbouncer -d -u postgres "$dir/pgbouncer.ini" || true
    for _ in $(seq 1 30); do postgres_answers test "$port" && break; sleep 0.2; done
  fi
  if postgres_answers test "$port"; then
    export MEMORY_TEST_PGBOUNCER_URL="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
    echo "== pooled PostgreSQL tests use $MEMORY_TEST_PGBOUNCER_URL"
  else
    no_pgbouncer "it could not be started (as root, with Debian's pgbouncer package)"
  fi
}

no_pgbouncer() { # <why>
  local then=FAIL
  [[ "${MEMORY_SKIP_MISSING_SERVICES:-}" == 1 ]] && then="SKIP (MEMORY_SKIP_MISSING_SERVICES=1)"
  echo "!!! no PgBouncer, $1: the pooled PostgreSQL tests will $then (set MEMORY_TEST_PGBOUNCER_URL)"
}

# A Redis Cluster of three masters (no replicas) on 127.0.0.1:7101-7103, for memory-redis's
# cluster tests (MEMORY_TEST_REDIS_CLUSTER_URLS, the seed nodes, comma-separated). Made again
# from nothing when it is not whole and healthy. It is this script's own, not a server of the
# machine's, so it is started whenever redis-server is installed, MEMORY_LOCAL_SERVICES=off
# or not.
redis_cluster_ok() {
  command -v redis-cli >/dev/null 2>&1 &&
    redis-cli -h 127.0.0.1 -p 7101 cluster info 2>/dev/null | grep -q '^cluster_state:ok' &&
    [[ "$(redis-cli -h 127.0.0.1 -p 7101 cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')" == 3 ]]
}

ensure_redis_cluster() {
  [[ -n "${MEMORY_TEST_REDIS_CLUSTER_URLS:-}" ]] && return 0
  local ports=(7101 7102 7103) dir=/tmp/agent-memory-redis-cluster port
  if ! redis_cluster_ok && command -v redis-server >/dev/null 2>&1; then
    echo "== starting a Redis Cluster (three masters) on 127.0.0.1:${ports[0]}-${ports[2]}"
    for port in "${ports[@]}"; do
      redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
    for port in "${ports[@]}"; do
      mkdir -p "$dir/$port"
      redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
        --cluster-enabled yes --cluster-config-file "$dir/$port/nodes.conf" \
        --cluster-node-timeout 2000 --dir "$dir/$port" --logfile "$dir/$port/redis.log" || true
    done
    for port in "${ports[@]}"; do
      for _ in $(seq 1 50); do
        [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] && break
        sleep 0.1
      done
    done
    redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes \
      >"$dir/create.log" 2>&1 || true
    for _ in $(seq 1 100); do redis_cluster_ok && break; sleep 0.1; done
  fi
  if redis_cluster_ok; then
    export MEMORY_TEST_REDIS_CLUSTER_URLS="redis://127.0.0.1:7101,redis://127.0.0.1:7102,redis://127.0.0.1:7103"
    echo "== Redis Cluster tests use $MEMORY_TEST_REDIS_CLUSTER_URLS"
  else
    local then=FAIL
    [[ "${MEMORY_SKIP_MISSING_SERVICES:-}" == 1 ]] && then="SKIP (MEMORY_SKIP_MISSING_SERVICES=1)"
    echo "!!! no Redis Cluster (see $dir/create.log): the cluster tests will $then (set MEMORY_TEST_REDIS_CLUSTER_URLS)"
  fi
}

ensure_postgres
ensure_redis
ensure_pgbouncer
ensure_redis_cluster
