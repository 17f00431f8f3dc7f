#!/usr/bin/env bash
# Scripted bots by the hundred thousand in one process: BOTS bots (default 200,000), each with an
# `every(1000, …)` timer that counts its calls, for SECONDS (default 10), beside a run of 1,000 bots
# for the process's own memory. Prints the script errors (must be 0), the callbacks run, the memory
# each bot adds (peak RSS over the 1,000-bot run's, per extra bot) and the CPU per callback (the
# whole run's CPU, starting the bots included, over the callbacks). No server: the bots never
# connect (the swarm's verdict is Gone, exit 1, as expected).
#   bash bench/bots/idle-scale.sh [BOTS] [SECONDS]
set -euo pipefail
bots=${1:-200000}
secs=${2:-10}
source "$(dirname "$0")/../release.sh"
work=$(mktemp -d /tmp/aggro-idle.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'every(1000, function() count("tick") end)' >"$work/idle.lua"

# One swarm of $1 bots: "errors callbacks cpu_seconds max_rss_kib".
swarm() {
  python3 bench/cpu-of.py "$aggro" arena swarm --script "$work/idle.lua" --server ws://127.0.0.1:9 --ccu "$1" \
    --connect-rate 1000000 --duration "${secs}s" --out "$work/r.json" >/dev/null 2>"$work/cpu" || true
  python3 - "$work/r.json" "$work/cpu" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
script = r["extra"]["script"]
ticks = dict(script["counts"]).get("tick", 0)
usage = open(sys.argv[2]).read()
cpu = re.search(r"cpu_seconds=([0-9.]+)", usage).group(1)
rss = re.search(r"max_rss_kib=([0-9]+)", usage).group(1)
print(script["error_count"], ticks, cpu, rss)
PY
}

read -r _ _ _ base_rss < <(swarm 1000)
read -r errors ticks cpu rss < <(swarm "$bots")
echo "machine: $(nproc) cores; $(date -u +%F); commit $(git rev-parse --short HEAD); ${secs} s"
echo
echo "| bots | script errors | callbacks | peak RSS MiB | KB per bot | CPU s | µs CPU per callback |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
python3 -c "
bots, errors, ticks, cpu, rss, base = $bots, $errors, $ticks, $cpu, $rss, $base_rss
print(f'| {bots:,} | {errors} | {ticks:,} | {rss/1024:.0f} | {(rss-base)*1024/(bots-1000)/1000:.2f} | {cpu:.2f} | {cpu/max(ticks,1)*1e6:.2f} |')
"
