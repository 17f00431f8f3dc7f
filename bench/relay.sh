#!/usr/bin/env bash
# The relay's figures (issue 6), one script, one machine: the relay server and
# the relay swarm as separate processes pinned to CPU 0 and CPU 1, loopback
# only, the Photon guide's profile (rooms of 4, an event of 200 B every 100 ms
# to all members). The planner is fitted on a sweep up to 3,000 CCU and checked against
# runs it was not fitted on.
#   bench/relay.sh [MEASURE] [WARMUP]     (defaults 10s and 6s)
# Writes bench/results/<date>-relay.md and the result files beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
measure=${1:-10s}
warmup=${2:-6s}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
cargo build --release -p aggro --locked 2>&1 | grep -vE '^\s+(Compiling|Checking)' || true
aggro="$CARGO_TARGET_DIR/release/aggro"
day=$(date -u +%Y-%m-%d)
out="bench/results/$day-relay.md"
calib="bench/results/$day-relay-calibration.json"
check="bench/results/$day-relay-check.json"
mkdir -p bench/results
{
  echo "# relay figures, $day, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "## The guide's arithmetic"
  echo '```'
  echo "\$ aggro plan --room-size 4 --send-every 100ms --msg-bytes 200 --ccu 1000 --uplink 100mbit"
  "$aggro" plan --room-size 4 --send-every 100ms --msg-bytes 200 --ccu 1000 --uplink 100mbit
  echo '```'
  echo
  echo "## Calibration sweep (the planner is fitted on these)"
  echo '```'
  echo "aggro arena bench --mode relay --players 1000,2000,3000 --duration $measure --warmup $warmup --pin"
  echo '```'
  "$aggro" arena bench --mode relay --players 1000,2000,3000 --duration "$measure" --warmup "$warmup" --pin --port 7900 --out "$calib" 2>/dev/null | grep -v '^result:'
  echo
  echo "## Runs the planner was not fitted on"
  echo '```'
  echo "aggro arena bench --mode relay --players 4000,6000,8000 --duration $measure --warmup $warmup --pin"
  echo '```'
  "$aggro" arena bench --mode relay --players 4000,6000,8000 --duration "$measure" --warmup "$warmup" --pin --port 7910 --out "$check" 2>/dev/null | grep -v '^result:'
  echo
  echo "## The planner, fitted on the calibration sweep"
  echo '```'
  echo "\$ aggro plan --from $calib --cores 4 --nic 1gbit"
  "$aggro" plan --from "$calib" --cores 4 --nic 1gbit
  echo '```'
  echo
  echo "Predicted against measured server CPU (one process, one core):"
  echo
  echo "| CCU | measured | predicted | error |"
  echo "|---|---|---|---|"
  python3 - "$calib" "$check" "$aggro" <<'PY'
import json, subprocess, sys
calib, check, aggro = sys.argv[1:4]
for row in json.load(open(check))["extra"]["relay_bench"]["rows"]:
    text = subprocess.run([aggro, "plan", "--from", calib, "--ccu", str(row["ccu"])], capture_output=True, text=True, check=True).stdout
    line = [l for l in text.splitlines() if l.startswith(f"at {row['ccu']} CCU")][0]
    predicted = float(line.split(":")[1].split("%")[0])
    measured = row["server_cpu_pct"]
    note = " (saturated: past the line's range)" if row["verdict"]["limit"] != "none" else ""
    print(f"| {row['ccu']} | {measured:.1f}% | {predicted:.1f}% | {(predicted - measured) / measured * 100:+.1f}%{note} |")
PY
} | tee "$out"
echo "written: $out"
