#!/usr/bin/env bash
# The MMO player-minute benchmark (seed 000) on every target, side by side,
# with durable commits everywhere: stackdb synced, SQLite WAL with
# synchronous=full, PostgreSQL with fsync and synchronous commits, Redis
# with appendfsync always (on one node, and on a Redis Cluster of 3 masters
# and 3 replicas: the world is one slot there, docs/REDIS-CLUSTER.md), Cassandra (3 nodes, RF 3,
# commit log `group`: a write is acknowledged once its group is synced; a partition per player
# there, docs/MMO.md). For each target:
# population speed, the login test (8 clients × 1,000 logins), one zone of
# 250 players and two zones at once. Prints a Markdown table for
# docs/BENCHMARKS.md; the result files stay in the printed directory.
#   bench/mmo-targets.sh [ACCOUNTS] [PERIODS] [TARGETS]
#   (defaults: 5000 accounts, 1000 periods, stackdb,sqlite,postgres,redis,redis-cluster,cassandra;
#    `dynamodb` runs on moto, the tests' functional stand-in, in memory and in a
#    smaller world: its figures say nothing about DynamoDB's speed; `cassandra` plays
#    at most 100 periods: three nodes on two cores take about a second a period)
set -euo pipefail
cd "$(dirname "$0")/.."
accounts=${1:-5000}
periods=${2:-1000}
targets=${3:-stackdb,sqlite,postgres,redis,redis-cluster,cassandra}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
bash scripts/install-deps.sh
cargo build --release --locked -p aggro --features cassandra >/dev/null 2>&1
aggro="$CARGO_TARGET_DIR/release/aggro"
work=$(mktemp -d /var/tmp/aggro-mmo-bench.XXXXXX)
svc=$(mktemp -d /var/tmp/aggro-mmo-services.XXXXXX)
cleanup() { bash scripts/services.sh stop "$svc"; rm -rf "$svc" "$work/stackdb" "$work/sqlite.db"*; }
trap cleanup EXIT
AGGRO_DURABLE=1 bash scripts/services.sh start "$svc" >/dev/null
set -a; source "$svc/env"; set +a
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-bench} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-bench}
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "results in $work" >&2
echo "| target | world | items/s populating | logins/s (8 clients) | 1 zone: mean period | 1 zone: × real time | 2 zones: mean period | 2 zones: × real time |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for t in ${targets//,/ }; do
  a=$accounts; p=$periods
  case $t in
    stackdb) url="stackdb:$work/stackdb" ;;
    sqlite) url="sqlite:$work/sqlite.db" ;;
    postgres) url=$AGGRO_TEST_POSTGRES ;;
    redis) url=$AGGRO_TEST_REDIS ;;
    redis-cluster) url=$AGGRO_TEST_REDIS_CLUSTER ;;
    cassandra) url=$AGGRO_TEST_CASSANDRA; p=$(( periods < 100 ? periods : 100 )) ;;
    dynamodb) url=$AGGRO_TEST_DYNAMODB; a=$(( accounts < 200 ? accounts : 200 )); p=$(( periods < 100 ? periods : 100 )) ;;
    *) echo "unknown target $t" >&2; exit 2 ;;
  esac
  pop=$("$aggro" mmo populate --target "$url" --accounts "$a" | grep -o '[0-9]* items/s' | cut -d' ' -f1)
  "$aggro" mmo login --target "$url" --accounts "$a" --clients 8 --logins 1000 -q --out "$work/$t-login.json" >/dev/null
  "$aggro" mmo play --target "$url" --accounts "$a" --players 250 --clients 1 --periods "$p" -q --table-every 0 --seed 1 --out "$work/$t-play1.json" >/dev/null
  "$aggro" mmo play --target "$url" --accounts "$a" --players 250 --clients 2 --periods $(( p / 2 )) -q --table-every 0 --seed 1 --out "$work/$t-play2.json" >/dev/null
  "$aggro" mmo verify --target "$url" --accounts "$a" --result "$work/$t-play1.json" --result "$work/$t-play2.json" >/dev/null
  logins=$(field "$work/$t-login.json" "round(r['extra']['mmo_login']['logins_per_s'])")
  one=$(field "$work/$t-play1.json" "'%.2f ms | %.0f' % (r['extra']['mmo_play']['mean_period_ms'], r['extra']['mmo_play']['player_minute_ratio'])")
  two=$(field "$work/$t-play2.json" "'%.2f ms | %.0f' % (r['extra']['mmo_play']['mean_period_ms'], r['extra']['mmo_play']['player_minute_ratio'])")
  echo "| $t | $a accounts, $p periods | $pop | $logins | $one | $two |"
done
