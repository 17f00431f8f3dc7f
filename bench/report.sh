#!/usr/bin/env bash
# How long `aggro report` takes, and how big the page is, for a 1-hour run at
# 1-second intervals (issue goal: < 1 s and < 2 MB), and for a 4-hour soak. An hour-long run is
# built from a real one: a 60-second consistent-read run on stackdb at
# 2,000/s (3 operations, 1-second intervals) whose intervals are repeated 60
# times with shifted times, so every interval holds real histograms of the
# size a real hour's would. Also reports an MMO-shaped record (17 operations).
#   bench/report.sh [RUNS]   (default 3 timings of each)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
cargo build --release --locked -p aggro >/dev/null 2>&1
aggro="$CARGO_TARGET_DIR/release/aggro"
work=$(mktemp -d /var/tmp/aggro-report-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$aggro" mobile populate --target "stackdb:$work/db" --users 100000 >/dev/null
"$aggro" mobile run --target "stackdb:$work/db" --users 100000 --workload consistent-read \
  --rate 2000 --duration 60s --interval 1s -q --out "$work/minute.json" >/dev/null
# The run the records are built from must have served every request: say so, or what failed.
python3 - "$work/minute.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ops = ", ".join(f"{o['name']} {o['ok']} ok {o['errors']} errors" for o in d["totals"])
print(f"the minute's run: {ops}")
PY
# Repeat the full intervals to an hour, and to four (a soak's length; leave out a last partial one).
python3 - "$work/minute.json" "$work/hour.json" "$work/four-hours.json" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
full = [i for i in d["intervals"] if i["end_s"] - i["start_s"] > 0.9]
for hours, path in [(1, sys.argv[2]), (4, sys.argv[3])]:
    run = []
    for k in range(3600 * hours):
        i = copy.deepcopy(full[k % len(full)])
        i["start_s"], i["end_s"] = float(k), float(k + 1)
        run.append(i)
    d["intervals"], d["elapsed_s"] = run, 3600.0 * hours
    json.dump(d, open(path, "w"), indent=1)
PY
printf '| record | operations | intervals | result file | report time (s) | page |\n|---|---|---|---|---|---|\n'
measure() {
  local file=$1 ops=$2 best=""
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$aggro" report "$file" -o "$work/page.html" >/dev/null
    t1=$(date +%s.%N)
    best=$(python3 -c "import sys; a=float(sys.argv[1]); b='$best'; print(f'{min(a, float(b)) if b else a:.2f}')" "$(echo "$t1 - $t0" | bc)")
  done
  local intervals
  intervals=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))['intervals']))" "$file")
  printf '| %s | %s | %s | %.1f MB | %s (best of %s) | %.0f kB |\n' "$(basename "$file")" "$ops" "$intervals" \
    "$(echo "$(stat -c %s "$file") / 1000000" | bc -l)" "$best" "$runs" "$(echo "$(stat -c %s "$work/page.html") / 1000" | bc -l)"
}
measure "$work/hour.json" 3
measure "$work/four-hours.json" 3
# The same hour with 17 operations per interval (the MMO run's period + 16 actions).
python3 - "$work/hour.json" "$work/hour-17.json" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
names = ["period"] + [f"action{k}" for k in range(1, 17)]
def widen(ops):
    return [dict(copy.deepcopy(ops[k % len(ops)]), name=n) for k, n in enumerate(names)]
for i in d["intervals"]:
    i["ops"] = widen(i["ops"])
d["totals"], d["operations"] = widen(d["totals"]), names
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
measure "$work/hour-17.json" 17
