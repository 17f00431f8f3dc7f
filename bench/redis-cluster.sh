#!/usr/bin/env bash
# Redis Cluster, side by side in one run (the test services' cluster: 3 masters, 3 replicas, on
# 127.0.0.1): GET and SET closed loop, aggro (a one-step scenario, --loaders 8 --threads 1, each
# loader with a connection to every master it uses) beside `redis-benchmark --cluster -c 8 --threads 1`
# (8 clients, each on one master), alternating, two rounds; then YCSB A and C on the cluster beside
# the same on one Redis, aggro both. CPU is each client's own.
#   bash bench/redis-cluster.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
source bench/peers-lib.sh
cluster=$AGGRO_TEST_REDIS_CLUSTER
port=${cluster##*:}
per_op() { python3 -c "print(f'{$1/$2*1e6:.2f}')"; }

for op in get set; do
  value='"GET", "${k}"'
  [ $op = set ] && value='"SET", "${k}", "xxx"'
  cat >"$work/$op.toml" <<TOML
name = "$op"
[keys.key]
count = 100000
prefix = "key:"
[[transaction]]
name = "$op"
step = [{ let = ["k = key(key)"] }, { name = "$op", redis = [$value] }]
TOML
done

echo "| what | tool | ops/s | CPU s | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|"
for round in 1 2; do
  for op in GET SET; do
    n=$((secs * 50000))
    c=$(cpu redis-benchmark --cluster -h 127.0.0.1 -p "$port" -c $conns --threads 1 -n $n -t "${op,,}" -r 100000 -q)
    rps=$(grep -oP "$op: \K[0-9.]+" "$work/out" | tail -1)
    echo "| cluster $op (round $round) | redis-benchmark --cluster -c $conns --threads 1 | ${rps%.*} | $c | $(per_op "$c" "$n") | $(rss) |"
    c=$(cpu "$aggro" scenario run "$work/${op,,}.toml" --target "$cluster" --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/r.json")
    ops=$(field "$work/r.json" "r['totals'][0]['ok']/r['elapsed_s']")
    done_n=$(field "$work/r.json" "r['totals'][0]['ok']")
    echo "| cluster $op (round $round) | aggro scenario --loaders $conns --threads 1 | ${ops%.*} | $c | $(per_op "$c" "$done_n") | $(rss) |"
  done
done

echo
echo "| YCSB | target | ops/s | p50 / p99 µs (from the intended start) | errors | CPU µs/op |"
echo "|---|---|---|---|---|---|"
for w in a c; do
  for target in "$cluster" "$AGGRO_TEST_REDIS"; do
    "$aggro" scenario populate "scenarios/ycsb/$w.toml" --target "$target" --set records=100000 >/dev/null
    c=$(cpu "$aggro" scenario run "scenarios/ycsb/$w.toml" --target "$target" --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/y.json")
    row=$(field "$work/y.json" "f\"{r['totals'][0]['ok']/r['elapsed_s']:.0f} | {r['totals'][0]['latency']['p50_ns']/1e3:.0f} / {r['totals'][0]['latency']['p99_ns']/1e3:.0f} | {r['totals'][0]['errors']} | {$c/max(r['totals'][0]['ok'],1)*1e6:.2f}\"")
    where=$([ "$target" = "$cluster" ] && echo "cluster (3 masters)" || echo "one Redis")
    echo "| ycsb-$w | $where | $row |"
  done
done
