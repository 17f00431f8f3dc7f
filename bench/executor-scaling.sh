#!/usr/bin/env bash
# The executor's scaling with threads, as a ratio to one thread in the same run: `aggro mobile run
# --target null: --rate max` with T threads and T loaders, for T = 1, 2, 4, … up to the machine's cores,
# then 8 threads when that oversubscribes the machine, and the default (--threads 0: one per CPU).
# A bigger machine shows the whole curve. Prints a Markdown table for docs/BENCHMARKS.md.
#   bench/executor-scaling.sh [SECONDS] [ROUNDS]
set -euo pipefail
secs=${1:-3}
rounds=${2:-3}
source "$(dirname "$0")/release.sh"
work=$(mktemp -d /tmp/aggro-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)

points=()
for ((t = 1; t <= cores; t *= 2)); do points+=("$t"); done
[[ " ${points[*]} " == *" $cores "* ]] || points+=("$cores")
((cores < 8)) && points+=(8)
points+=(0)

# One run: requests per second and CPU microseconds per request; a failed request or a run that did
# not complete stops the script (a figure with failures is not a figure).
measure() {
  local t=$1 loaders=$2
  python3 bench/cpu-of.py "$aggro" mobile run --target null: --rate max --threads "$t" --loaders "$loaders" \
    --duration "${secs}s" --interval "${secs}s" -q --out "$work/r.json" >/dev/null 2>"$work/cpu"
  python3 - "$work/r.json" "$work/cpu" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
cpu = float(re.search(r"cpu_seconds=([0-9.]+)", open(sys.argv[2]).read()).group(1))
ok = r["totals"][0]["ok"]
failed = r["totals"][0]["errors"]
if failed or r["stop_reason"]["kind"] != "completed":
    sys.exit(f"a run failed: {failed} requests failed, stop {r['stop_reason']}")
print(f"{ok / r['elapsed_s']:.0f} {cpu / ok * 1e6:.3f}")
PY
}

echo "machine: $cores cores; $(date -u +%F); commit $(git rev-parse --short HEAD); ${secs} s a run, best of $rounds rounds"
echo
echo "| --threads | loaders | requests/s | ÷ one thread | CPU µs/request |"
echo "|---:|---:|---:|---:|---:|"
one=""
for t in "${points[@]}"; do
  loaders=$t
  ((t == 0)) && loaders=$cores
  best=0 cost=0
  for ((r = 0; r < rounds; r++)); do
    read -r ops us < <(measure "$t" "$loaders")
    [[ -n "$ops" ]] || exit 1
    if ((ops > best)); then best=$ops cost=$us; fi
  done
  [[ -z "$one" ]] && one=$best
  label=$t
  ((t == 0)) && label="0 (default: $cores)"
  echo "| $label | $loaders | $best | $(python3 -c "print(f'{$best/$one:.2f}')") | $cost |"
done
echo
echo "Every run completed with 0 failed requests."
