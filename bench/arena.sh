#!/usr/bin/env bash
# The arena's figures (issue 5), one script, one machine: server and swarm as
# separate processes pinned to CPU 0 and CPU 1, loopback only.
#   bench/arena.sh [MEASURE] [WARMUP] [ROUNDS]     (defaults 10s, 5s and 2: the variants take turns ROUNDS
#   times and each variant's runs are merged, so a drift in the VM's speed falls on all of them alike)
# Writes bench/results/<date>-arena.md and the result files beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
measure=${1:-10s}
warmup=${2:-5s}
rounds=${3:-2}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
cargo build --release -p aggro --locked 2>&1 | grep -vE '^\s+(Compiling|Checking)' || true
cargo build --release -p aggro-arena --example replication_cost --locked 2>&1 | grep -vE '^\s+(Compiling|Checking)' || true
cost="$CARGO_TARGET_DIR/release/examples/replication_cost"
aggro="$CARGO_TARGET_DIR/release/aggro"
day=$(date -u +%Y-%m-%d)
out="bench/results/$day-arena.md"
mkdir -p bench/results
{
  echo "# arena figures, $day, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "## 100 players, everyone relevant to everyone, 60 Hz: base, interleaving 70m:1,400m:2, send flush"
  echo '```'
  echo "$aggro arena bench --players 100 --tick 60 --compare interleave,send-flush --rounds $rounds --duration $measure --warmup $warmup --pin"
  echo '```'
  "$aggro" arena bench --players 100 --tick 60 --compare interleave,send-flush --rounds "$rounds" --duration "$measure" --warmup "$warmup" --pin \
    --port 7800 --out "bench/results/$day-arena-100.json" 2>/dev/null | grep -v '^result:'
  echo
  echo "## 1,000 players, battle-royale spread, interest 1,000 m, 30 Hz: base, interleaving, send flush"
  echo '```'
  echo "$aggro arena bench --players 1000 --tick 30 --interest 1000m --compare interleave,send-flush --rounds $rounds --duration $measure --warmup $warmup --pin"
  echo '```'
  "$aggro" arena bench --players 1000 --tick 30 --interest 1000m --compare interleave,send-flush --rounds "$rounds" --duration "$measure" --warmup "$warmup" --pin \
    --port 7810 --out "bench/results/$day-arena-1000.json" 2>/dev/null | grep -v '^result:'
  echo
  echo "## The swarm: 2,000 bots on one core (30 Hz input, 30 Hz snapshots; interest 300 m keeps the server inside its budget)"
  echo '```'
  echo "$aggro arena bench --players 2000 --tick 30 --interest 300m --duration $measure --warmup $warmup --pin"
  echo '```'
  "$aggro" arena bench --players 2000 --tick 30 --interest 300m --duration "$measure" --warmup "$warmup" --pin \
    --port 7820 --out "bench/results/$day-arena-2000.json" 2>/dev/null | grep -v '^result:'
  echo
  echo "## The flush's own work without the sockets: base against interleaving on the same frames, one process, CPU 0"
  echo '```'
  echo "taskset -c 0 $cost 100 3000"
  echo "taskset -c 0 $cost 1000 300 1000"
  echo '```'
  taskset -c 0 "$cost" 100 3000
  taskset -c 0 "$cost" 1000 300 1000
} | tee "$out"
echo "written: $out"
