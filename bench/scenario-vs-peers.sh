#!/usr/bin/env bash
# Scenario files and pgbench scripts against their reference tools, side by
# side in one run (issue 18), everything on 127.0.0.1:
#  1. pgbench's tpcb-like at scale 10, 8 connections, --rate max: pgbench
#     itself vs `aggro pgbench` (TPS, CPU per transaction, peak RSS), -M
#     prepared and -M simple (pgbench's default);
#  2. YCSB's core workloads A and C, YCSB 0.17 (site.ycsb:core from Maven
#     Central) on its no-op BasicDB vs aggro's ycsb-a/c on null:, 8 threads /
#     loaders each, closed loop: the harness's own cost per operation;
#  3. YCSB A and C on Redis and PostgreSQL from one YCSB workload file each,
#     read by both tools: YCSB 0.17 with 8 threads beside aggro on the same 8
#     connections, one thread, closed loop — one loader per connection, and
#     16 per connection pipelined (--connections) — and at a fixed rate, p99
#     from the intended start. YCSB's own redis and jdbc
#     bindings are not on Maven Central, so YCSB runs here through bindings
#     written for this bench (bench/ycsb/: Jedis and the PostgreSQL JDBC
#     driver, as YCSB's bindings use; same layouts);
#  4. a two-step scenario on null: at 1,000,000 scheduled operations/s.
# Prints Markdown tables for docs/BENCHMARKS.md.
#   bench/scenario-vs-peers.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
source bench/peers-lib.sh

# YCSB 0.17 and its drivers (bench/ycsb/lib.sh); the bench's bindings compiled.
source bench/ycsb/lib.sh
rm -rf "$work/ycsb-classes"
javac -cp "$ycsb/lib/*" -d "$work/ycsb-classes" bench/ycsb/*.java
per_op() { python3 -c "print(f'{$1/$2*1e6:.2f}')"; }

echo "| what | tool | ops/s | CPU s | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|"

# 1. tpcb-like at scale 10.
"$AGGRO_PG_BIN/pgbench" -i -q -s 10 -h 127.0.0.1 -p "$pg_port" -U postgres postgres >/dev/null 2>&1
for mode in prepared simple; do
for round in 1 2; do
  c=$(cpu "$AGGRO_PG_BIN/pgbench" -n -M $mode -b tpcb-like -c $conns -j 1 -T "$secs" -h 127.0.0.1 -p "$pg_port" -U postgres postgres)
  tps=$(grep -oP 'tps = \K[0-9.]+' "$work/out" | head -1)
  echo "| tpcb-like s=10 (round $round) | pgbench -M $mode -c $conns -j 1 | ${tps%.*} | $c | $(per_op "$c" "$(python3 -c "print($tps*$secs)")") | $(rss) |"
  # pgbench's own command line, given to aggro.
  c=$(cpu "$aggro" pgbench -n -M $mode -b tpcb-like -c $conns -j 1 -T "$secs" --target "$pg" --interval 5s -q --out "$work/tpcb.json")
  ops=$(field "$work/tpcb.json" "r['totals'][0]['ok']/r['elapsed_s']")
  n=$(field "$work/tpcb.json" "r['totals'][0]['ok']")
  echo "| tpcb-like s=10 (round $round) | aggro pgbench -M $mode -c $conns -j 1 | ${ops%.*} | $c | $(per_op "$c" "$n") | $(rss) |"
done
done

# 2. YCSB A and C: the harness alone (YCSB's BasicDB vs aggro's null:).
for w in a c; do
  case $w in
    a) props="readproportion=0.5 updateproportion=0.5" ;;
    c) props="readproportion=1 updateproportion=0" ;;
  esac
  args=(-p recordcount=100000 -p operationcount=1000000000 -p workload=site.ycsb.workloads.CoreWorkload -p readallfields=true
        -p scanproportion=0 -p insertproportion=0 -p requestdistribution=zipfian -p basicdb.verbose=false -p maxexecutiontime="$secs")
  for p in $props; do args+=(-p "$p"); done
  c=$(cpu java -cp "$ycsb/lib/*" site.ycsb.Client -t -db site.ycsb.BasicDB "${args[@]}" -threads $conns)
  ops=$(grep -oP 'OVERALL\], Throughput\(ops/sec\), \K[0-9.]+' "$work/out")
  n=$(python3 -c "print($ops*$secs)")
  echo "| YCSB $w on a no-op store | YCSB 0.17 BasicDB -threads $conns | ${ops%.*} | $c | $(per_op "$c" "$n") | $(rss) |"
  c=$(cpu "$aggro" scenario run "scenarios/ycsb/$w.toml" --target null: --set records=100000 --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/y.json")
  n=$(field "$work/y.json" "r['totals'][0]['ok']")
  ops=$(field "$work/y.json" "r['totals'][0]['ok']/r['elapsed_s']")
  echo "| YCSB $w on a no-op store | aggro ycsb-$w on null: --loaders $conns --threads 1 | ${ops%.*} | $c | $(per_op "$c" "$n") | $(rss) |"
done

# 4. A two-step scenario at 1,000,000 scheduled operations per second.
cat >"$work/two.toml" <<'TOML'
[keys.user]
count = 100000
distribution = "scrambled-zipfian"
[[transaction]]
name = "two"
step = [
  { let = ["k = key(user)"] },
  { name = "get", kv = [["get", "${k}"]] },
  { name = "put", kv = [["put", "${k}", "${random(1, 100)}"]] },
]
TOML
c=$(cpu "$aggro" scenario run "$work/two.toml" --target null: --rate 1000000 --loaders 8 --threads 2 --duration "${secs}s" --interval 5s -q --out "$work/two.json")
n=$(field "$work/two.json" "r['totals'][0]['ok']")
row=$(field "$work/two.json" "f\"{r['totals'][0]['ok']/r['elapsed_s']:.0f} (max backlog {max(i['backlog'] for i in r['intervals'])}, timer lateness p99 {r['lag']['p99_ns']/1e3:.1f} µs)\"")
echo "| two-step scenario at 1,000,000/s | aggro scenario on null: --loaders 8 --threads 2 | $row | $c | $(per_op "$c" "$n") | $(rss) |"

# 3. YCSB A and C on the real servers: one YCSB workload file per workload,
#    read by both tools (aggro translates it onto scenarios/ycsb/core.toml):
#    YCSB itself (the bench's bindings), then aggro closed loop and at a fixed
#    rate, on the records aggro populated from the same file.
echo
echo "| YCSB on a server | tool | rate | ops/s | p50 / p99 µs (aggro: from the intended start) | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"
redis_port=${AGGRO_TEST_REDIS##*:}
ycsb_ac_workloads "$work" 100000
for target in "$AGGRO_TEST_REDIS" "$pg"; do
  case $target in
    redis*) binding=(-db aggro.bench.ycsb.RedisPeer -p redis.port="$redis_port") ;;
    *) binding=(-db aggro.bench.ycsb.JdbcPeer -p db.url="jdbc:postgresql://127.0.0.1:$pg_port/postgres" -p db.user=postgres) ;;
  esac
  for w in a c; do
    "$aggro" scenario populate "$work/workload$w" --target "$target" >/dev/null
    c=$(cpu java -cp "$work/ycsb-classes:$ycsb/lib/*" site.ycsb.Client -t "${binding[@]}" -threads $conns -P "$work/workload$w" -p maxexecutiontime="$secs")
    row=$(ycsb_row "$work/out" "$c")
    echo "| ycsb-$w on ${target%%:*} | YCSB 0.17 -threads $conns | max | $row | $(rss) |"
    # One loader per connection (as YCSB's threads), then the same connections carrying 16 loaders each
    # (--connections: requests pipelined in batches, answered in order).
    for shape in "max $conns" "5000 $conns" "max $((conns * 16)) --connections $conns"; do
      set -- $shape
      rate=$1 loaders=$2
      shift 2
      c=$(cpu "$aggro" scenario run "$work/workload$w" --target "$target" --rate $rate --loaders $loaders "$@" --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/s.json")
      row=$(field "$work/s.json" "f\"{r['totals'][0]['ok']/r['elapsed_s']:.0f} | {r['totals'][0]['latency']['p50_ns']/1e3:.0f} / {r['totals'][0]['latency']['p99_ns']/1e3:.0f} | {$c/max(r['totals'][0]['ok'],1)*1e6:.2f}\"")
      echo "| ycsb-$w on ${target%%:*} | aggro --loaders $loaders $* --threads 1 | $rate | $row | $(rss) |"
    done
  done
done

# 5. Seed 001's trio as scenario files beside the built-in commands: same
#    target, loaders, seed and skew, closed loop.
echo
echo "| trio | target | built-in ops/s | scenario ops/s | ratio | built-in / scenario p99 µs | CPU µs/op built-in / scenario |"
echo "|---|---|---|---|---|---|---|"
stackdb="stackdb:$work/trio-stackdb"
sqlite="sqlite:$work/trio.db"
for target in "$stackdb" "$sqlite" "$pg" "$AGGRO_TEST_REDIS"; do
  for w in write consistent-read read; do
    "$aggro" mobile populate --target "$target" --users 100000 >/dev/null
    c1=$(cpu "$aggro" mobile run --target "$target" --workload $w --rate max --loaders $conns --threads 1 --seed 7 --duration "${secs}s" --interval 5s -q --out "$work/m.json")
    "$aggro" scenario populate "scenarios/mobile/$w.toml" --target "$target" >/dev/null
    c2=$(cpu "$aggro" scenario run "scenarios/mobile/$w.toml" --target "$target" --rate max --loaders $conns --threads 1 --seed 7 --duration "${secs}s" --interval 5s -q --out "$work/s.json")
    python3 - "$work/m.json" "$work/s.json" "$c1" "$c2" "${target%%:*}" "$w" <<'PY'
import json, sys
m, s = (json.load(open(p)) for p in sys.argv[1:3])
c1, c2 = float(sys.argv[3]), float(sys.argv[4])
rate = lambda r: r['totals'][0]['ok'] / r['elapsed_s']
p99 = lambda r: r['totals'][0]['latency']['p99_ns'] / 1e3
per = lambda r, c: c / max(r['totals'][0]['ok'], 1) * 1e6
print(f"| {sys.argv[6]} | {sys.argv[5]} | {rate(m):.0f} | {rate(s):.0f} | {rate(s)/rate(m):.2f} | {p99(m):.0f} / {p99(s):.0f} | {per(m, c1):.1f} / {per(s, c2):.1f} |")
PY
  done
done
