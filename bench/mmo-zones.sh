#!/usr/bin/env bash
# stackdb's total as zones are added (issue 59): `aggro mmo play --target stackdb:DIR --players 250
# --clients C` for C = 1, 2, 4, … up to the machine's cores (and at least 4), each on a fresh copy of one
# populated world, the same total of periods split over the zones (so each run writes as much and leaves
# the sweep as much to do). The points take turns round by round, so a drift in the machine's or the
# disk's speed falls on every point alike; each point's ratio to one zone is taken within its round (this
# VM's speed drifts by ±15 % from minute to minute), and the median of the rounds is printed.
# Beside them, "2 apart": two processes, each one zone on its own copy of the world (the same periods
# in all), run at once — what two zones get from this machine's cores and disk when they share no
# store, so the shared store's own cost shows as the gap between "2" and "2 apart".
# A run that did not complete, or had a failed operation, stops the script (a figure with failures is not
# a figure). Prints a Markdown table for docs/BENCHMARKS.md.
#   bench/mmo-zones.sh [PERIODS] [ROUNDS]   (AGGRO_BIN=path: measure that aggro build instead)
set -euo pipefail
periods=${1:-2000}
rounds=${2:-5}
source "$(dirname "$0")/release.sh"
aggro=${AGGRO_BIN:-$aggro}
work=$(mktemp -d /tmp/aggro-zones.XXXXXX)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)

points=()
for ((c = 1; c <= cores || c <= 4; c *= 2)); do points+=("$c"); done
[[ " ${points[*]} " == *" $cores "* ]] || points+=("$cores")

"$aggro" mmo populate --target "stackdb:$work/world" --accounts 5000 --world-seed 1 >/dev/null

# One run: player-minutes per minute, and the share of the zones' time spent waiting on the store.
measure() {
  local c=$1
  rm -rf "$work/run"
  cp -r "$work/world" "$work/run"
  sync
  "$aggro" mmo play --target "stackdb:$work/run" --players 250 --clients "$c" --periods $((periods / c)) --seed 1 \
    --quiet --out "$work/r.json" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
failed = sum(t["errors"] for t in r["totals"])
if failed or r["stop_reason"]["kind"] != "completed":
    sys.exit(f"a run failed: {failed} operations failed, stop {r['stop_reason']}")
p = r["extra"]["mmo_play"]
t = p.get("time")
split = "-" if t is None else f"{t['on_core'] * 100:.0f}%/{t['waiting_for_core'] * 100:.0f}%/{t['waiting_on_store'] * 100:.0f}%"
print(f"{p['player_minute_ratio']:.0f} {p['mean_period_ms']:.2f} {split}")
PY
}

# Two processes at once, each one zone on a store of its own: the same figures, summed.
measure_apart() {
  local k pids=()
  for k in a b; do
    rm -rf "$work/run-$k"
    cp -r "$work/world" "$work/run-$k"
  done
  sync
  for k in a b; do
    "$aggro" mmo play --target "stackdb:$work/run-$k" --players 250 --clients 1 --periods $((periods / 2)) --seed 1 \
      --quiet --out "$work/r-$k.json" >/dev/null 2>"$work/err-$k" &
    pids+=($!)
  done
  for k in 0 1; do wait "${pids[$k]}" || { cat "$work"/err-* >&2; exit 1; }; done
  python3 - "$work/r-a.json" "$work/r-b.json" <<'PY'
import json, sys
total, periods = 0.0, []
for f in sys.argv[1:]:
    r = json.load(open(f))
    failed = sum(t["errors"] for t in r["totals"])
    if failed or r["stop_reason"]["kind"] != "completed":
        sys.exit(f"a run failed: {failed} operations failed, stop {r['stop_reason']}")
    p = r["extra"]["mmo_play"]
    total += p["player_minute_ratio"]
    periods.append(p["mean_period_ms"])
print(f"{total:.0f} {sum(periods) / len(periods):.2f} -")
PY
}
points+=("2-apart")

declare -A runs
for ((r = 0; r < rounds; r++)); do
  for c in "${points[@]}"; do
    if [ "$c" = 2-apart ]; then line=$(measure_apart); else line=$(measure "$c"); fi
    runs[$c]+="$line;"
    echo "round $((r + 1)): $c zone(s): $line" >&2
  done
done

echo "machine: $cores cores; $(date -u +%F); commit $(git rev-parse --short HEAD); $periods periods in all per run, median of $rounds rounds"
echo
echo "| zones | player-minutes per minute | ÷ one zone (median of the rounds' ratios) | mean period | zones' time: on a core / waiting for one / waiting on the store |"
echo "|---:|---:|---:|---:|---:|"
for c in "${points[@]}"; do
  python3 - "$c" "${runs[1]}" "${runs[$c]}" <<'PY'
import statistics, sys
rows = lambda text: [r.split() for r in text.strip(";").split(";")]
one, these = rows(sys.argv[2]), rows(sys.argv[3])
ratio = statistics.median(float(t[0]) / float(o[0]) for o, t in zip(one, these))
mid = sorted(these, key=lambda r: float(r[0]))[len(these) // 2]
print(f"| {sys.argv[1].replace('-', ' ')} | {mid[0]} | {ratio:.2f} | {mid[1]} ms | {mid[2]} |")
PY
done
echo
echo "Every run completed with 0 failed operations. All runs (player-minutes per minute):"
for c in "${points[@]}"; do echo "- $c zone(s): $(echo "${runs[$c]}" | tr ';' '\n' | awk 'NF {print $1}' | paste -sd' ')"; done
