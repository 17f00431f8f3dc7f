#!/usr/bin/env bash
# The way in of many players through a matchmaking queue (issue 62): the reference Socket.IO game
# (examples/bots/socketio-server.mjs) with MATCH_RATE matches a second of ROOM players, pinned to CPU 0;
# aggro's queue players (examples/bots/socketio-queue.lua without its moves — the way in is the figure,
# not the rooms' traffic) pinned to CPU 1. Prints the funnel — each stage's bots, p50/p99 from each
# bot's intended start, peak per second — and matches a second as the bots saw them beside the server's
# own count. A run with a failed bot, a script error or a bot short of a stage stops the script (a figure
# measured while some bots failed is not a figure).
#   bash bench/bots/funnel.sh [BOTS] [MATCH_RATE] [ROOM] [SECONDS]   (default 2000 30 10 20)
# AGGRO_BIN=path measures that aggro build instead.
set -euo pipefail
bots=${1:-2000}
rate=${2:-30}
room=${3:-10}
secs=${4:-20}
source "$(dirname "$0")/../release.sh"
aggro=${AGGRO_BIN:-$aggro}
work=$(mktemp -d /tmp/aggro-funnel.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
bash scripts/npm-example.sh install bots >/dev/null
port=$(python3 scripts/free-port.py)
(cd examples/bots && PORT=$port MATCH_RATE=$rate ROOM_SIZE=$room exec taskset -c 0 node socketio-server.mjs >/dev/null 2>&1) &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/stats" >/dev/null && break; sleep 0.1; done
# The queue player, its moves left out.
awk '/^  every\(100,/{skip=1} skip&&/^  end\)$/{skip=0; next} !skip' examples/bots/socketio-queue.lua >"$work/queue.lua"
taskset -c 1 "$aggro" arena swarm --script "$work/queue.lua" --server "ws://127.0.0.1:$port" --ccu "$bots" \
  --duration "${secs}s" --interval 1s --quiet --out "$work/r.json" >"$work/out.txt" 2>&1 || true
curl -sf "http://127.0.0.1:$port/stats" >"$work/stats.json"
python3 - "$work/r.json" "$work/stats.json" "$bots" "$rate" "$room" <<'PY'
import json, sys
r, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bots, rate, room = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
t = r["extra"]["arena_swarm"]["totals"]["counters"]
s = r["extra"]["script"]
f = s["funnel"]
short = sum(st["short_at_end"] for st in f["stages"])
if t["failed_joins"] or t["script_errors"] or short or f["started"] != bots:
    sys.exit(f"not a figure: {f['started']} started, {t['failed_joins']} failed joins, {t['script_errors']} script errors, {short} short of a stage")
matched = next(st for st in f["stages"] if st["name"] == "matched")
print(f"{bots} bots, MATCH_RATE={rate:g}, rooms of {room}; verdict {r['extra']['arena_swarm']['verdict']['limit']}")
print()
print("| stage | bots | p50 ms | p99 ms | peak per s |")
print("|---|---:|---:|---:|---:|")
for st in f["stages"]:
    print(f"| {st['name']} | {st['reached']:,} | {st['p50_ms']:.1f} | {st['p99_ms']:.1f} | {st['peak_per_s']:.0f} |")
print()
print(f"matches: the bots saw {matched['reached'] / room:.0f} ({matched['peak_per_s'] / room:.1f} a second at the peak); "
      f"the server formed {stats['matches']} (at most {rate:g} a second), {stats['queued']} queued, {stats['waiting']} still waiting")
PY
