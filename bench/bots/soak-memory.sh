#!/usr/bin/env bash
# aggro's own memory over a soak: BOTS scripted bots (default 200) of examples/bots/websocket-bot.lua
# against the reference WebSocket server for SECONDS (default 120) at 250 ms intervals (4 a second: a
# long run's worth of intervals quickly), watching the server (--server-pid). Prints the run's soak
# lines: the line through aggro's own RSS must be flat (no "a leak"), as must the server's.
#   bash bench/bots/soak-memory.sh [BOTS] [SECONDS]
set -euo pipefail
bots=${1:-200}
secs=${2:-120}
source "$(dirname "$0")/../release.sh"
bash scripts/npm-example.sh install bots >/dev/null
work=$(mktemp -d /tmp/aggro-soak.XXXXXX)
port=$(python3 scripts/free-port.py)
PORT=$port node examples/bots/websocket-server.mjs >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
until (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; do sleep 0.1; done
"$aggro" arena swarm --script examples/bots/websocket-bot.lua --server "ws://127.0.0.1:$port" --ccu "$bots" \
  --duration "${secs}s" --interval 250ms --server-pid "$server" --leak-window 60s -q --out "$work/r.json" |
  grep -E "^(verdict|server |aggro's own)"
python3 - "$work/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rss = [i["cpu"]["generator_rss_bytes"] / 1e6 for i in r["intervals"]]
print(f"aggro's RSS over {len(rss)} intervals: first {rss[0]:.1f} MB, highest {max(rss):.1f} MB, last {rss[-1]:.1f} MB")
PY
