#!/usr/bin/env bash
# The planner against a starved server: the reference room's server and the swarm share one core
# (every process of the bench under `taskset -c 0`), so the server waits for the core its load
# generator takes — what a machine share too small for both does. A coarse sweep feeds
# `aggro plan --from … --cores 1`; a finer sweep finds the largest CCU that actually held the
# thresholds (its verdict not Service or Gone); the planner's answer should be within ±15 % of it.
# The server then waits for a core while the swarm runs: its wait (/proc schedstat) is in each row, and
# the planner counts it as load.
#   bash bench/colyseus-starved-plan.sh [COARSE] [FINE] [MEASURED]   (defaults 50,100,150,200; 80,90,…,200; 8s)
set -euo pipefail
cd "$(dirname "$0")/.."
coarse=${1:-50,100,150,200}
fine=${2:-$(seq -s, 80 10 200)}
measured=${3:-8s}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
bash scripts/install-deps.sh >/dev/null
cargo build --release --locked -q -p aggro
aggro="$CARGO_TARGET_DIR/release/aggro"
work=$(mktemp -d /tmp/aggro-starved.XXXXXX)
trap 'rm -rf "$work"' EXIT
sweep() { # PLAYERS OUT
  taskset -c 0 "$aggro" arena bench --mode colyseus --server-cmd "node examples/colyseus/server.mjs" --players "$1" \
    --warmup 3s --duration "$measured" --port 7981 --out "$work/$2.json" >"$work/$2.out"
}
sweep "$coarse" coarse
sweep "$fine" fine
echo "coarse sweep ($coarse):"
grep '^|' "$work/coarse.out"
"$aggro" plan --from "$work/coarse.json" --cores 1 | tee "$work/plan.out"
echo "fine sweep ($fine):"
grep '^|' "$work/fine.out"
python3 - "$work/fine.json" "$work/plan.out" <<'PY'
import json, re, sys
rows = json.load(open(sys.argv[1]))["extra"]["colyseus_bench"]["rows"]
held = [r["joined"] for r in rows if r["verdict"]["limit"] not in ("service", "gone", "swarm_cpu")]
failed = [r["ccu"] for r in rows if r["verdict"]["limit"] in ("service", "gone")]
plan = float(re.search(r"prediction: (\d+) CCU per server", open(sys.argv[2]).read()).group(1))
best = max(held) if held else 0
print(f"largest CCU that held in the fine sweep: {best:.0f} (first failure at {min(failed) if failed else 'none'}); "
      f"the planner said {plan:.0f}: {plan / best * 100 - 100:+.0f}% ({'within' if best and abs(plan / best - 1) <= 0.15 else 'OUTSIDE'} ±15%)")
PY
