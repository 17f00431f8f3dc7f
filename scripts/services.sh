#!/usr/bin/env bash
# Starts (or stops) throwaway backends for aggro's tests on free loopback ports:
# a PostgreSQL cluster (fsync off), Redis (no persistence), a Redis Cluster
# (3 masters and 3 replicas, a 2 s node timeout; AGGRO_REDIS_CLUSTER=0 leaves
# it out), an Apache Cassandra cluster of three nodes on 127.0.0.1-3
# (AGGRO_CASSANDRA=0 leaves it out) and moto's
# DynamoDB-API server (in memory, a functional stand-in for DynamoDB: see
# scripts/moto.sh; AGGRO_DYNAMODB=0 leaves it out). AGGRO_DURABLE=1 starts
# PostgreSQL, Redis and Cassandra durable instead, for benchmarks that compare
# commits on disk: PostgreSQL with fsync and synchronous commits, Redis with
# appendfsync always, Cassandra's commit log `group` (periodic otherwise; moto
# keeps nothing on disk either way).
#
#   scripts/services.sh start DIR   # writes DIR/env with AGGRO_TEST_* URLs
#   scripts/services.sh stop DIR    # stops every server it started, by pid
#
# Everything lives under DIR; nothing is left behind but DIR itself.
set -euo pipefail

cmd=${1:?usage: services.sh start|stop DIR}
dir=${2:?usage: services.sh start|stop DIR}
here=$(cd "$(dirname "$0")" && pwd)

if [ "${AGGRO_DURABLE:-0}" = 1 ]; then
  pg_durability="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
  redis_durability="--appendonly yes --appendfsync always"
  cassandra_commitlog=group
else
  pg_durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  redis_durability="--appendonly no"
  cassandra_commitlog=periodic
fi

free_port() { python3 "$here/free-port.py"; }

# shellcheck source=scripts/retry.sh
source "$here/retry.sh"

wait_for() { # name, tries, command...
  local name=$1 tries=$2; shift 2
  retry_for "$tries" "$@" && return 0
  echo "services: $name did not come up; its log:" >&2
  tail -n 30 "$dir/$name.log" >&2 || true
  return 1
}

start_postgres() {
  local bin port data
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -x "$bin/initdb" ] || { echo "services: PostgreSQL is not installed (run scripts/install-deps.sh)" >&2; return 1; }
  port=$(free_port)
  data="$dir/pg"
  mkdir -p "$data"
  local run_as=()
  : >"$dir/postgres.log"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres "$dir"
    run_as=(runuser -u postgres --)
    runuser -u postgres -- test -w "$dir" || {
      echo "services: the postgres user cannot reach $dir (is a parent directory private?)" >&2; return 1; }
  fi
  "${run_as[@]}" "$bin/initdb" -D "$data" -U postgres -A trust --no-sync >"$dir/postgres.log" 2>&1
  # One role that must log in with a password (SCRAM-SHA-256), as real servers ask.
  "${run_as[@]}" sh -c "{ echo 'host all aggro_scram 127.0.0.1/32 scram-sha-256'; cat '$data/pg_hba.conf'; } >'$data/pg_hba.new' && mv '$data/pg_hba.new' '$data/pg_hba.conf'"
  "${run_as[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data $pg_durability -c max_connections=300" start >/dev/null
  wait_for postgres 100 "$bin/pg_isready" -h 127.0.0.1 -p "$port"
  "${run_as[@]}" "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
    -c "SET password_encryption = 'scram-sha-256'" -c "CREATE ROLE aggro_scram LOGIN PASSWORD 's3cret'" \
    -c "CREATE DATABASE aggro_scram OWNER aggro_scram" >>"$dir/postgres.log" 2>&1
  echo "AGGRO_TEST_POSTGRES=postgres://postgres@127.0.0.1:$port/postgres" >>"$dir/env"
  echo "AGGRO_TEST_POSTGRES_SCRAM=postgres://aggro_scram:s3cret@127.0.0.1:$port/aggro_scram" >>"$dir/env"
  echo "AGGRO_PG_BIN=$bin" >>"$dir/env"
}

start_redis() {
  command -v redis-server >/dev/null || { echo "services: redis-server is not installed (run scripts/install-deps.sh)" >&2; return 1; }
  local port
  port=$(free_port)
  redis-server --bind 127.0.0.1 --port "$port" --save "" $redis_durability --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" >/dev/null
  wait_for redis 100 redis-cli -h 127.0.0.1 -p "$port" ping
  echo "AGGRO_TEST_REDIS=redis://127.0.0.1:$port" >>"$dir/env"
}

start_redis_cluster() {
  local url
  url=$("$here/redis-cluster.sh" start "$dir/cluster" $redis_durability) || return 1
  echo "AGGRO_TEST_REDIS_CLUSTER=$url" >>"$dir/env"
}

start_cassandra() {
  local url
  url=$("$here/cassandra.sh" start "$dir/cassandra" 3 $cassandra_commitlog) || return 1
  echo "AGGRO_TEST_CASSANDRA=$url" >>"$dir/env"
}

start_dynamodb() {
  local python port
  python=$("$here/moto.sh" fetch) || return 1
  port=$(free_port)
  # `exec` makes the background job the server itself, so the recorded pid is the one `stop` kills.
  (cd "$dir" && exec nohup "$python" "$here/moto/server.py" -H 127.0.0.1 -p "$port") >"$dir/dynamodb.log" 2>&1 &
  echo $! >"$dir/dynamodb.pid"
  wait_for dynamodb 300 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
  echo "AGGRO_TEST_DYNAMODB=dynamodb://127.0.0.1:$port" >>"$dir/env"
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    : >"$dir/env"
    start_postgres
    start_redis
    [ "${AGGRO_REDIS_CLUSTER:-1}" = 0 ] || start_redis_cluster
    [ "${AGGRO_CASSANDRA:-1}" = 0 ] || start_cassandra
    [ "${AGGRO_DYNAMODB:-1}" = 0 ] || start_dynamodb
    cat "$dir/env"
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    if [ -f "$dir/pg/postmaster.pid" ]; then
      bin=$(grep '^AGGRO_PG_BIN=' "$dir/env" 2>/dev/null | cut -d= -f2)
      if [ -n "$bin" ]; then
        if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$bin/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true
        else "$bin/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true; fi
      fi
    fi
    for f in redis.pid dynamodb.pid; do
      [ -f "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null || true
    done
    "$here/redis-cluster.sh" stop "$dir/cluster"
    "$here/cassandra.sh" stop "$dir/cassandra"
    ;;
  *) echo "usage: services.sh start|stop DIR" >&2; exit 2 ;;
esac
