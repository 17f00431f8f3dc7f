#!/usr/bin/env bash
# One swarm process on every core: the same swarm on T = 1, 2, 4, … threads (up to the machine's cores),
# as ratios to one thread in the same run. Two loads:
#  1. scripted bots with no server (a callback every 100 ms that counts its calls, nothing sent; the
#     server address takes no connection): the Lua engine and the swarm's loop alone — callbacks a
#     second, the process's CPU, its busiest thread, CPU per callback, tick lateness;
#  2. relay bots against the relay server (rooms of 4, an event every 100 ms to all; the server
#     unpinned, on the same cores): CPU per client-second, the busiest thread, delivery, the verdict.
# "bots per core": the bots one core would carry at this cost (bots ÷ the process's cores used); a
# process of T threads carries T × that. A bigger machine shows the whole curve (goal there: T threads
# carry ≥ 0.75 × T × one thread's bots).
# Prints Markdown tables for docs/BENCHMARKS.md.
#   bash bench/swarm-threads.sh [SECONDS] [IDLE_BOTS] [RELAY_BOTS]   (defaults 10, 40000, 2000)
# AGGRO_BIN=path measures that aggro build instead. SWARM_FLAGS adds flags to every swarm (such as SWARM_FLAGS="--read-every 0" for the swarm that reads at
# each readiness).
set -euo pipefail
secs=${1:-10}
idle_bots=${2:-40000}
relay_bots=${3:-2000}
source "$(dirname "$0")/release.sh"
aggro=${AGGRO_BIN:-$aggro}
work=$(mktemp -d /tmp/aggro-swarm-threads.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cores=$(nproc)
echo 'every(100, function() count("tick") end)' >"$work/idle.lua"
points=()
for ((t = 1; t <= cores; t *= 2)); do points+=("$t"); done
[[ " ${points[*]} " == *" $cores "* ]] || points+=("$cores")

# Fields of a swarm result file: a Python expression over its totals `t` and the record `r`.
total() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); t=r['extra']['arena_swarm']['totals']; print(eval(sys.argv[2]))" "$@"; }

echo "machine: $cores cores; $(date -u +%F); commit $(git rev-parse --short HEAD); ${secs} s a run${SWARM_FLAGS:+; swarm flags: $SWARM_FLAGS}"
echo
echo "**1. $idle_bots scripted bots, a callback every 100 ms, no server**"
echo
echo "| --threads | callbacks/s | ÷ one thread | process CPU % | busiest thread % | µs CPU per callback | bots per core | script errors |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
one=""
for t in "${points[@]}"; do
  "$aggro" arena swarm --script "$work/idle.lua" --server ws://127.0.0.1:9 --ccu "$idle_bots" --threads "$t" \
    --connect-rate 1000000 --duration "${secs}s" --interval "${secs}s" --quiet --out "$work/idle.json" ${SWARM_FLAGS:-} >/dev/null 2>&1 || true
  read -r per_s cpu busiest per_core errors < <(total "$work/idle.json" \
    "f\"{dict(r['extra']['script']['counts']).get('tick', 0) / t['end_s']:.0f} {t['cpu_pct']:.0f} {t['busiest_thread_pct']:.0f} {$idle_bots * 100 / max(t['cpu_pct'], 1):.0f} {t['counters']['script_errors']}\"")
  [[ -z "$one" ]] && one=$per_s
  echo "| $t | $per_s | $(python3 -c "print(f'{$per_s/$one:.2f}')") | $cpu | $busiest | $(python3 -c "print(f'{$cpu*1e4/max($per_s,1):.2f}')") | $per_core | $errors |"
done

echo
echo "**2. $relay_bots relay bots against the relay server (rooms of 4, 200 B every 100 ms to all)**"
echo
echo "| --threads | swarm CPU % | busiest thread % | µs CPU per client-second | ÷ one thread | bots per core | events received | missing | delay p99 ms | verdict |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
one=""
for t in "${points[@]}"; do
  port=$(python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  metrics=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  "$aggro" arena serve --mode relay --listen "127.0.0.1:$port" --metrics "127.0.0.1:$metrics" --duration "$((secs + 5))s" \
    --quiet --out "$work/server.json" >/dev/null 2>&1 &
  server=$!
  sleep 0.5
  "$aggro" arena swarm --mode relay --server "127.0.0.1:$port" --server-metrics "127.0.0.1:$metrics" --ccu "$relay_bots" \
    --room-size 4 --send-every 100ms --msg-bytes 200 --threads "$t" --duration "${secs}s" --interval "${secs}s" \
    --quiet --out "$work/relay.json" ${SWARM_FLAGS:-} >"$work/relay.txt" 2>&1 || true
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  read -r cpu busiest us received missing p99 < <(total "$work/relay.json" \
    "f\"{t['cpu_pct']:.0f} {t['busiest_thread_pct']:.0f} {t['cpu_pct'] * 1e4 / $relay_bots:.1f} {t['counters']['events_received']} {t['counters']['reliable_missing'] + t['counters']['unreliable_lost']} {t['delay']['p99_ns'] / 1e6:.2f}\"")
  verdict=$(grep -o 'verdict: [A-Za-z]*' "$work/relay.txt" | cut -d' ' -f2)
  [[ -z "$one" ]] && one=$us
  echo "| $t | $cpu | $busiest | $us | $(python3 -c "print(f'{$us/$one:.2f}')") | $(python3 -c "print(round(1e6/$us))") | $received | $missing | $p99 | $verdict |"
done
