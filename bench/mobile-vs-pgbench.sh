#!/usr/bin/env bash
# The generator's cost against the reference tools, side by side in one run:
#  1. seed-001 write transaction on a local PostgreSQL: aggro vs pgbench,
#     same 8 connections, same skew, same statements, prepared, closed loop;
#  2. Redis: aggro's read (HGET) and write (MULTI/EXEC) vs redis-benchmark
#     GET/SET at the same connection count;
#  3. the harness alone on null: at 1,000,000 scheduled requests per second;
#  4. open loop at a fixed rate on every target: aggro's timer lateness p99
#     (and pgbench -R's schedule lag beside it on PostgreSQL).
# Prints tables (Markdown) for docs/BENCHMARKS.md: CPU per request, peak RSS
# and lateness, each tool beside its peer. Everything on 127.0.0.1.
#   bench/mobile-vs-pgbench.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
source bench/peers-lib.sh

echo "| what | tool | ops/s | CPU s | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|"

# 1. PostgreSQL write transaction.
pg_write_txn
for round in 1 2; do
  c=$(cpu "$AGGRO_PG_BIN/pgbench" -n -M prepared -c $conns -j 1 -T "$secs" -h 127.0.0.1 -p "$pg_port" -U postgres -f "$work/write.sql" postgres)
  tps=$(grep -oP 'tps = \K[0-9.]+' "$work/out" | head -1)
  echo "| pg write txn (round $round) | pgbench -c $conns -j 1 | ${tps%.*} | $c | $(python3 -c "print(f'{$c/($tps*$secs)*1e6:.1f}')") | $(rss) |"
  c=$(cpu "$aggro" mobile run --target "$pg" --workload write --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/pg.json")
  ops=$(field "$work/pg.json" "r['totals'][0]['ok']/r['elapsed_s']")
  echo "| pg write txn (round $round) | aggro --loaders $conns --threads 1 | ${ops%.*} | $c | $(python3 -c "print(f'{$c/($ops*$secs)*1e6:.1f}')") | $(rss) |"
done

# 2. Redis.
redis_port=${AGGRO_TEST_REDIS##*:}
"$aggro" mobile populate --target "$AGGRO_TEST_REDIS" --users 100000 >/dev/null
n=$((secs * 40000))
for pair in "GET read HGET" "SET write MULTI,2×HINCRBY,EXEC"; do
  set -- $pair
  c=$(cpu redis-benchmark -h 127.0.0.1 -p "$redis_port" -c $conns --threads 1 -n $n -t "${1,,}" -r 100000 -q)
  rps=$(grep -oP "$1: \K[0-9.]+" "$work/out" | head -1)
  echo "| redis $1 / $2 | redis-benchmark -c $conns | ${rps%.*} | $c | $(python3 -c "print(f'{$c/$n*1e6:.1f}')") | $(rss) |"
  c=$(cpu "$aggro" mobile run --target "$AGGRO_TEST_REDIS" --workload "$2" --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/r.json")
  ops=$(field "$work/r.json" "r['totals'][0]['ok']/r['elapsed_s']")
  echo "| redis $1 / $2 | aggro $2 ($3) | ${ops%.*} | $c | $(python3 -c "print(f'{$c/($ops*$secs)*1e6:.1f}')") | $(rss) |"
done

# 3. The harness alone.
for rate in 1000000; do
  c=$(cpu "$aggro" mobile run --target null: --rate $rate --loaders 8 --threads 2 --duration "${secs}s" --interval 5s -q --out "$work/null.json")
  ops=$(field "$work/null.json" "r['totals'][0]['ok']/r['elapsed_s']")
  lag=$(field "$work/null.json" "r['lag']['p99_ns']/1000")
  backlog=$(field "$work/null.json" "max(i['backlog'] for i in r['intervals'])")
  echo "| null: at $rate/s | aggro --loaders 8 --threads 2 | ${ops%.*} (max backlog $backlog, timer lateness p99 ${lag} µs) | $c | $(python3 -c "print(f'{$c/($ops*$secs)*1e6:.2f}')") | $(rss) |"
done
# Closed loop: the harness's own cost per request, with no waiting at all.
c=$(cpu "$aggro" mobile run --target null: --rate max --loaders 8 --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/nullmax.json")
ops=$(field "$work/nullmax.json" "r['totals'][0]['ok']/r['elapsed_s']")
echo "| null: closed loop | aggro --loaders 8 --threads 1 | ${ops%.*} | $c | $(python3 -c "print(f'{$c/($ops*$secs)*1e6:.3f}')") | $(rss) |"

# 4. Open loop at a fixed rate: how late the generator starts requests.
echo
echo "| open loop | tool | rate/s | lateness | latency p50 / p99 µs | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"
open_rate=5000
c=$(cpu "$AGGRO_PG_BIN/pgbench" -n -M prepared -c $conns -j 1 -R $open_rate -T "$secs" -h 127.0.0.1 -p "$pg_port" -U postgres -f "$work/write.sql" postgres)
lag=$(grep -oP 'schedule lag: avg \K[0-9.]+ \(max [0-9.]+\) ms' "$work/out" | head -1)
done_n=$(grep -oP 'number of transactions actually processed: \K[0-9]+' "$work/out" | head -1)
echo "| pg write txn | pgbench -R $open_rate | $open_rate | schedule lag avg (max) $lag | — | $(python3 -c "print(f'{$c/$done_n*1e6:.1f}')") | $(rss) |"
stackdb="stackdb:$work/stackdb"
sqlite="sqlite:$work/sqlite.db"
"$aggro" mobile populate --target "$stackdb" --users 100000 >/dev/null
"$aggro" mobile populate --target "$sqlite" --users 100000 >/dev/null
"$aggro" mobile populate --target "$AGGRO_TEST_REDIS" --users 100000 >/dev/null
for target in "$pg write $open_rate" "$AGGRO_TEST_REDIS write $open_rate" "$AGGRO_TEST_REDIS read $open_rate" \
  "$stackdb read $open_rate" "$sqlite read $open_rate"; do
  set -- $target
  for timer in cheap auto; do
    c=$(cpu "$aggro" mobile run --target "$1" --workload "$2" --rate "$3" --loaders $conns --duration "${secs}s" --interval 5s --timer $timer -q --out "$work/o.json")
    row=$(field "$work/o.json" "f\"{r['lag']['p99_ns']/1e3:.1f} µs p99 | {r['totals'][0]['latency']['p50_ns']/1e3:.1f} / {r['totals'][0]['latency']['p99_ns']/1e3:.1f} | {$c/max(r['totals'][0]['ok'],1)*1e6:.1f}\"")
    echo "| ${1%%:*} $2 | aggro --timer $timer | $3 | $row | $(rss) |"
  done
done
