#!/usr/bin/env bash
# Apache Cassandra, side by side in one run (the test services' cluster: 3 nodes on 127.0.0.1–3,
# replication factor 3, LOCAL_QUORUM): YCSB's workloads A and C from one property file each, read by
# both tools on the records aggro populated from it — YCSB 0.17 through bench/ycsb/CassandraPeer
# (the DataStax Java driver 3.x, as YCSB's own cassandra binding; one session, one connection per
# node) with N threads, beside aggro's `cql` scenario with N loaders on its one session (also one
# connection per node), closed loop, alternating, two rounds; N = 8 and 32. CPU is each client's own
# (the three nodes share the machine's cores with it, so a client's CPU is the servers' loss).
#   bash bench/cassandra.sh [SECONDS] [RECORDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
records=${2:-50000}
export AGGRO_FEATURES=cassandra
source bench/peers-lib.sh
source bench/ycsb/lib.sh
rm -rf "$work/ycsb-classes"
javac -cp "$ycsb/lib/*" -d "$work/ycsb-classes" bench/ycsb/CassandraPeer.java
url=$AGGRO_TEST_CASSANDRA
hosts=$(echo "${url#cassandra://}" | sed -E 's/:[0-9]+//g')
port=$(echo "$url" | grep -oP ':\K[0-9]+' | head -1)
keyspace=ycsb
target="cassandra://${url#cassandra://}/$keyspace"

ycsb_ac_workloads "$work" "$records"

echo "| YCSB on Cassandra (3 nodes, RF 3) | tool | ops/s | p50 / p99 µs (aggro: from the intended start) | CPU µs/op | peak RSS MiB |"
echo "|---|---|---|---|---|---|"
for w in a c; do
  "$aggro" scenario populate "$work/workload$w" --target "$target" >/dev/null
  for n in 8 32; do
    for round in 1 2; do
      c=$(cpu java -cp "$work/ycsb-classes:$ycsb/lib/*" site.ycsb.Client -t -db aggro.bench.ycsb.CassandraPeer -p hosts="$hosts" -p port="$port" \
        -p cassandra.keyspace=$keyspace -p cassandra.consistency=LOCAL_QUORUM -threads $n -P "$work/workload$w" -p maxexecutiontime="$secs")
      row=$(ycsb_row "$work/out" "$c")
      echo "| ycsb-$w, $n in flight (round $round) | YCSB 0.17 -threads $n | $row | $(rss) |"
      c=$(cpu "$aggro" scenario run "$work/workload$w" --target "$target" --rate max --loaders $n --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/s.json")
      row=$(field "$work/s.json" "f\"{r['totals'][0]['ok']/r['elapsed_s']:.0f}{', %d failed' % r['totals'][0]['errors'] if r['totals'][0]['errors'] else ''} | {r['totals'][0]['latency']['p50_ns']/1e3:.0f} / {r['totals'][0]['latency']['p99_ns']/1e3:.0f} | {$c/max(r['totals'][0]['ok'],1)*1e6:.2f}\"")
      echo "| ycsb-$w, $n in flight (round $round) | aggro scenario --loaders $n --threads 1 | $row | $(rss) |"
    done
  done
done
