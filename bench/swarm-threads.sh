#!/usr/bin/env bash
# One swarm process on every core: the same swarm on T = 1, 2, 4, … threads (up to the machine's cores),
# as ratios to one thread in the same run, and beside each T > 1 the same bots split over T processes of
# one thread each (`--worker i/T`, run at once: "T apart") — what the split alone costs, with no thread
# sharing a process. Two loads:
#  1. scripted bots with no server (a callback every 100 ms that counts its calls, nothing sent; the
#     server address takes no connection): the Lua engine and the swarm's loop alone — callbacks a
#     second, the process's CPU, its busiest thread, CPU per callback;
#  2. relay bots against the relay server (rooms of 4, an event every 100 ms to all; the server
#     unpinned, on the same cores): CPU per client-second, the busiest thread, delivery, the verdict.
# Every figure is the steady state: the bots join in the first second (`--connect-rate`), and the CPU is
# the mean of the 1-second intervals from the third second to the last but one (bench/steady.py), so
# the joins, the bots' making and their leaving are not in it. "bots per core": the bots one core would
# carry at this cost; a process of T threads carries T × that. A bigger machine shows the whole curve
# (goal there: T threads carry ≥ 0.75 × T × one thread's bots). "threads ÷ apart" (on each "T apart" row):
# the T-thread process's cost over the T processes' — above 1, the threads themselves cost; at or below
# it, what T threads add over one is the split (a loop with 1/T of the bots wakes nearly as often).
# Prints Markdown tables for docs/BENCHMARKS.md.
#   bash bench/swarm-threads.sh [SECONDS] [IDLE_BOTS] [RELAY_BOTS]   (defaults 10 steady seconds, 40000, 2000)
# AGGRO_BIN=path measures that aggro build instead. SWARM_FLAGS adds flags to every swarm (such as
# SWARM_FLAGS="--read-every 0" for the swarm that reads at each readiness).
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
# Two seconds to join and settle, the steady seconds, one to leave.
duration=$((secs + 3))
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
# A row's name: "1 thread", "2 threads", "2 apart".
row() { if [[ $2 == apart ]]; then echo "$1 apart"; elif [[ $1 == 1 ]]; then echo "1 thread"; else echo "$1 threads"; fi; }
# The last column: a T-thread process's cost over T processes' of one thread with the same share of the
# bots each (its "T apart" row, run next); "-" on the rows it is not for.
apart_ratio() { [[ $2 == apart ]] && ratio "$1" "$3" || echo "-"; }

# A swarm of T threads in one process ("threads"), or T processes of one thread at once ("apart"): its
# result files are $work/<load>-<i>.json. Extra arguments go to every swarm.
swarm() {
  local load=$1 how=$2 t=$3 rate=$4
  shift 4
  rm -f "$work/$load"-*.json
  if [[ $how == threads ]]; then
    "$aggro" arena swarm "$@" --threads "$t" --connect-rate "$rate" --duration "${duration}s" --interval 1s \
      --quiet --out "$work/$load-0.json" ${SWARM_FLAGS:-} >"$work/$load-0.txt" 2>&1 || true
  else
    local i pids=()
    for ((i = 0; i < t; i++)); do
      "$aggro" arena swarm "$@" --worker "$((i + 1))/$t" --threads 1 --connect-rate "$((rate / t))" --duration "${duration}s" \
        --interval 1s --quiet --out "$work/$load-$i.json" ${SWARM_FLAGS:-} >"$work/$load-$i.txt" 2>&1 &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || true; done
  fi
}

echo "machine: $cores cores; $(date -u +%F); commit $(git rev-parse --short HEAD); ${secs} steady seconds a run${SWARM_FLAGS:+; swarm flags: $SWARM_FLAGS}"
echo
echo "**1. $idle_bots scripted bots, a callback every 100 ms, no server**"
echo
echo "| run | callbacks/s | process CPU % | busiest thread % | µs CPU per callback | ÷ one thread | threads ÷ apart | bots per core | script errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
one=""
for t in "${points[@]}"; do
  for how in threads apart; do
    [[ $how == apart && $t == 1 ]] && continue
    swarm idle "$how" "$t" 1000000 --script "$work/idle.lua" --server ws://127.0.0.1:9 --ccu "$idle_bots"
    read -r cpu busiest _ errors < <(python3 bench/steady.py 2 "$work"/idle-*.json)
    per_s=$(python3 -c "import json,sys; rs=[json.load(open(f))['extra'] for f in sys.argv[1:]]; print(round(sum(dict(r['script']['counts']).get('tick', 0) / r['arena_swarm']['totals']['end_s'] for r in rs)))" "$work"/idle-*.json)
    us=$(python3 -c "print(f'{$cpu * 1e4 / max($per_s, 1):.2f}')")
    [[ -z "$one" ]] && one=$us
    [[ $how == threads ]] && mine=$us
    echo "| $(row "$t" "$how") | $per_s | $cpu | $busiest | $us | $(ratio "$us" "$one") | $(apart_ratio "$mine" "$how" "$us") | $(python3 -c "print(round($idle_bots * 100 / max($cpu, 1)))") | $errors |"
  done
done

echo
echo "**2. $relay_bots relay bots against the relay server (rooms of 4, 200 B every 100 ms to all)**"
echo
echo "| run | swarm CPU % | busiest thread % | µs CPU per client-second | ÷ one thread | threads ÷ apart | bots per core | events received | missing | delay p99 ms | verdict |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
one=""
for t in "${points[@]}"; do
  for how in threads apart; do
    [[ $how == apart && $t == 1 ]] && continue
    port=$(python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    metrics=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    "$aggro" arena serve --mode relay --listen "127.0.0.1:$port" --metrics "127.0.0.1:$metrics" --duration "$((duration + 5))s" \
      --quiet --out "$work/server.json" >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    swarm relay "$how" "$t" "$relay_bots" --mode relay --server "127.0.0.1:$port" --server-metrics "127.0.0.1:$metrics" \
      --ccu "$relay_bots" --room-size 4 --send-every 100ms --msg-bytes 200
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    read -r cpu busiest bots failures < <(python3 bench/steady.py 2 "$work"/relay-*.json)
    "$aggro" merge --out "$work/merged.json" "$work"/relay-*.json >/dev/null
    # Events received and their delay p99 from the processes' histograms merged.
    read -r received p99 < <(python3 -c "import json; d=[o for o in json.load(open('$work/merged.json'))['totals'] if o['name'] == 'relay_delay'][0]; print(d['ok'], f\"{d['latency']['p99_ns'] / 1e6:.2f}\")")
    verdict=$(grep -ho 'verdict: [A-Za-z]*' "$work"/relay-*.txt | cut -d' ' -f2 | sort -u | paste -sd/)
    us=$(python3 -c "print(f'{$cpu * 1e4 / $relay_bots:.1f}')")
    [[ "$bots" == "$relay_bots" ]] || verdict="$verdict (only $bots of $relay_bots in play)"
    [[ -z "$one" ]] && one=$us
    [[ $how == threads ]] && mine=$us
    echo "| $(row "$t" "$how") | $cpu | $busiest | $us | $(ratio "$us" "$one") | $(apart_ratio "$mine" "$how" "$us") | $(python3 -c "print(round(1e6/$us))") | $received | $failures | $p99 | $verdict |"
  done
done
