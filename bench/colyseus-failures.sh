#!/usr/bin/env bash
# The swarm's verdict against a Colyseus server failing in known ways, each failure counted by the
# server itself beside aggro's count (examples/colyseus/server.mjs, one run each):
#  1. the "guarded" room turning away every 4th player (REFUSE_EVERY=4): the server's "turned away"
#     lines beside aggro's refused joins — verdict Service (joins), exit 3;
#  2. the "stalling" room, its event loop blocked 200 ms every second: the server's "stalled" lines
#     beside aggro's delay p99 — verdict Service (delay), its event loop named from the server's page
#     (METRICS_PORT), exit 3;
#  3. the "battle" room's server killed (SIGKILL) 3 s into a 6 s run: the clients it held at its last
#     count (STATS every 200 ms) beside aggro's disconnects — verdict Gone, exit 1.
#   bash bench/colyseus-failures.sh [CCU]      (default 40; ports 7971-7974 on 127.0.0.1)
set -euo pipefail
cd "$(dirname "$0")/.."
ccu=${1:-40}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
bash scripts/install-deps.sh >/dev/null
cargo build --release --locked -q -p aggro
aggro="$CARGO_TARGET_DIR/release/aggro"
work=$(mktemp -d /tmp/aggro-colyseus-failures.XXXXXX)
pids=()
metrics=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

serve() { # PORT ENV… — the reference room in the background, once it listens; its pid in $server
  local port=$1; shift
  (cd examples/colyseus && exec env PORT="$port" "$@" node server.mjs >"$work/server-$port.log" 2>&1) &
  server=$!
  pids+=("$server")
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the room on port $port did not listen" >&2
  exit 1
}
play() { # ROOM → a play file moving every 100 ms, observing the moves (and a token for the guarded room)
  cat >"$work/$1.toml" <<TOML
room = "$1"
options = { name = "bot-\$bot" }
token = "secret-bot-\$bot"

[[send]]
type = "move"
every = "100ms"
payload = { x = "\$x", y = "\$y", from = "\$bot", seq = "\$seq", t = "\$t" }

[observe]
type = "moved"
TOML
  echo "$work/$1.toml"
}
swarm() { # PORT ROOM SECS OUT — aggro's swarm; its exit code in $work/OUT.code
  local code=0
  "$aggro" arena swarm --mode colyseus --server "ws://127.0.0.1:$1" --ccu "$ccu" --duration "$3s" --interval 1s \
    --play "$(play "$2")" --server-pid "$server" "${metrics[@]}" -q --out "$work/$4.json" >"$work/$4.out" 2>&1 || code=$?
  echo "$code" >"$work/$4.code"
}
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['extra']['arena_swarm']; print(eval(sys.argv[2]))" "$@"; }

echo "| failure | the server counted | aggro counted | verdict | exit |"
echo "|---|---|---|---|---|"

serve 7971 REFUSE_EVERY=4 LOG_JOINS=1
swarm 7971 guarded 5 guarded
kill "$server"
turned=$(grep -c '^turned away' "$work/server-7971.log" || true)
seated=$(grep -c '^joined' "$work/server-7971.log" || true)
echo "| guarded room turns away every 4th player | $turned turned away, $seated seated | $(field "$work/guarded.json" "f\"{r['totals']['counters']['refused']} refused, {r['totals']['counters']['connects']} seated\"") | $(field "$work/guarded.json" "r['verdict']['limit'] + ': ' + r['verdict']['evidence'][:150]") | $(cat "$work/guarded.code") |"

serve 7972 METRICS_PORT=7974
metrics=(--server-metrics 127.0.0.1:7974)
swarm 7972 stalling 5 stalling
metrics=()
kill "$server"
stalls=$(grep -c '^stalled' "$work/server-7972.log" || true)
echo "| event loop stalled 200 ms every second | $stalls stalls | $(field "$work/stalling.json" "f\"delay p99 {r['totals']['delay']['p99_ns']/1e6:.0f} ms over {r['totals']['delay']['count']} moves\"") | $(field "$work/stalling.json" "r['verdict']['limit'] + ': ' + r['verdict']['evidence'][:150]") | $(cat "$work/stalling.code") |"

serve 7973 STATS=1 STATS_MS=200
swarm 7973 battle 6 killed &
swarming=$!
sleep 3
{ kill -9 "$server" && wait "$server"; } 2>/dev/null || true
wait "$swarming" || true
held=$(grep '^clients' "$work/server-7973.log" | tail -1 | awk '{print $2}')
echo "| server killed 3 s into the run | $held clients at its last count | $(field "$work/killed.json" "f\"{r['totals']['counters']['disconnects']} disconnected\"") | $(field "$work/killed.json" "r['verdict']['limit'] + ': ' + r['verdict']['evidence'][:150]") | $(cat "$work/killed.code") |"
