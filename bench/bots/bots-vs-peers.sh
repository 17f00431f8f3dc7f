#!/usr/bin/env bash
# aggro's Lua bots beside Artillery 2 (its Socket.IO engine) and Locust 2 (SocketIOUser), one
# at a time, same server (examples/bots/socketio-server.mjs, pinned to CPU 0), same behaviour
# (HTTP login, join the /game namespace with the token, a move every 100 ms broadcast to a room of
# 10), each generator pinned to CPU 1. Per client count: joins (the server's count), the
# generator's CPU per client-second over a steady window (its whole process tree), and whether
# it delivered the load (the moves the server received against 10 per client-second).
# The peers are installed here, pinned, under ~/.cache/aggro/bench-peers (not by the tests).
#   bash bench/bots/bots-vs-peers.sh [SECS] [COUNTS] [TOOLS]   (default 15 s, 100,300, aggro,artillery,locust;
#   aggro-DURATION, e.g. aggro-1ms, is aggro with --poll-every DURATION; aggro-read-DURATION, e.g.
#   aggro-read-0, with --read-every DURATION)
source "$(dirname "$0")/../release.sh"
peers="$HOME/.cache/aggro/bench-peers"
mkdir -p "$peers"
if [ ! -x "$peers/node_modules/.bin/artillery" ]; then
  echo "bots-vs-peers: installing artillery 2.0.34 (npm) into $peers" >&2
  cp bench/bots/peers-package.json "$peers/package.json"
  cp bench/bots/peers-package-lock.json "$peers/package-lock.json"
  # Its Playwright engine's browser download is not needed here (and its CDN is not reachable).
  (cd "$peers" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
if [ ! -x "$peers/venv/bin/locust" ]; then
  echo "bots-vs-peers: installing locust 2.47.0 and python-socketio 5.18.1 (PyPI) into $peers/venv" >&2
  python3 -m venv "$peers/venv"
  "$peers/venv/bin/pip" install -q "locust==2.47.0" "python-socketio[client]==5.18.1" "websocket-client==1.9.2"
fi
python3 bench/bots/bots_vs_peers.py "$aggro" "$peers" "${1:-15}" "${2:-100,300}" "${3:-aggro,artillery,locust}"
