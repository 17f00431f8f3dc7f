#!/usr/bin/env bash
# Latency near a backend's capacity, beside pgbench in the same run: the seed-001 write transaction on a
# local PostgreSQL, 8 connections. First each tool's closed-loop capacity; then an open loop at 50, 70
# and 85 % of aggro's, Poisson arrivals (pgbench -R's), latency counted from each transaction's
# scheduled start by both (pgbench: the per-transaction log's time + schedule lag). A generator whose
# connections each keep a queue of their own reports a slow transaction's queue; a pool (pgbench's
# clients, or aggro's loaders taking a busy one's due slots) does not.
# A row whose run had failures says so after the table row (aggro: errors or a run that did not complete;
# pgbench: its count of failed transactions). Prints a Markdown table for docs/BENCHMARKS.md.
#   bench/near-capacity.sh [SECONDS]      (AGGRO_BIN=path: measure that aggro build instead, e.g. an older one)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
source bench/peers-lib.sh
aggro=${AGGRO_BIN:-$aggro}

pg_write_txn
pgb() { "$AGGRO_PG_BIN/pgbench" -n -M prepared -c $conns -j 1 -T "$secs" -h 127.0.0.1 -p "$pg_port" -U postgres -f "$work/write.sql" "$@" postgres; }

# Closed loop: each tool's capacity.
"$aggro" mobile run --target "$pg" --workload write --rate max --loaders $conns --threads 1 --duration "${secs}s" --interval 5s -q --out "$work/max.json" >/dev/null 2>&1
capacity=$(field "$work/max.json" "round(r['totals'][0]['ok'] / r['elapsed_s'])")
pgb >"$work/out" 2>&1
pg_capacity=$(grep -oP 'tps = \K[0-9.]+' "$work/out" | head -1)
echo "machine: $(nproc) cores; $(date -u +%F); commit $(git rev-parse --short HEAD); ${secs} s a run"
echo "closed loop, $conns connections: aggro $capacity transactions/s, pgbench ${pg_capacity%.*}"
echo
echo "| rate/s (of aggro's capacity) | tool | done/s | latency p50 ms | p99 ms | mean ms |"
echo "|---|---|---:|---:|---:|---:|"
for share in 50 70 85; do
  rate=$((capacity * share / 100))
  (cd "$work" && rm -f pgbench_log.* && pgb -R "$rate" -l >"$work/pgb.out" 2>&1)
  python3 - "$work" "$rate" "$share" "$secs" <<'PY'
import glob, re, sys
work, rate, share, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
# pgbench's own count of failed transactions (PostgreSQL 15 and later print it): a row with failures says so.
failed = re.search(r"number of failed transactions: (\d+)", open(f"{work}/pgb.out").read())
mark = "" if failed and failed.group(1) == "0" else f" FAILED {failed.group(1)} transactions" if failed else " (pgbench printed no failed count)"
# pgbench's log: client, transaction, time µs, script, epoch s, epoch µs, schedule lag µs.
lat = sorted(int(f[2]) + int(f[6]) for p in glob.glob(f"{work}/pgbench_log.*") for f in (l.split() for l in open(p)))
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1000
print(f"| {rate} ({share} %) | pgbench -R | {len(lat) / secs:.0f} | {pick(0.5):.2f} | {pick(0.99):.2f} | {sum(lat) / len(lat) / 1000:.2f} |{mark}")
PY
  "$aggro" mobile run --target "$pg" --workload write --rate "$rate" --pacing poisson --loaders $conns --threads 1 \
    --duration "${secs}s" --interval 5s -q --out "$work/o.json" >/dev/null 2>&1 || true
  field "$work/o.json" "(lambda t: f\"| $rate ($share %) | aggro --pacing poisson | {t['ok'] / r['elapsed_s']:.0f} | {t['latency']['p50_ns'] / 1e6:.2f} | {t['latency']['p99_ns'] / 1e6:.2f} | {t['latency']['mean_ns'] / 1e6:.2f} |\" + ('' if t['errors'] == 0 and r['stop_reason']['kind'] == 'completed' else f\" FAILED {t['errors']} errors, {r['stop_reason']}\"))(r['totals'][0])"
done
