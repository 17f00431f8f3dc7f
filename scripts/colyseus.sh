#!/usr/bin/env bash
# The reference Colyseus room (examples/colyseus).
#   colyseus.sh install     installs package-lock.json's tree (skipped when the installed lock matches)
#   colyseus.sh start PORT  runs the room on 127.0.0.1:PORT in the foreground (MAX_CLIENTS, PATCH_MS from the environment)
set -euo pipefail
dir="$(cd "$(dirname "$0")/../examples/colyseus" && pwd)"

case "${1:-}" in
  install)
    stamp="$dir/node_modules/.aggro-lock.sha256"
    want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
      exit 0
    fi
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if [ "$major" -lt 20 ]; then
      echo "colyseus.sh: Node.js 20 or newer is needed for @colyseus/core 0.18 (found $(node --version 2>/dev/null || echo none))" >&2
      exit 1
    fi
    echo "colyseus.sh: npm install in examples/colyseus (pinned by package-lock.json)" >&2
    # `npm ci` refuses this lock on npm 11 (it wants entries for the other platforms' optional msgpackr-extract
    # builds, which npm itself leaves out of the lock); `npm install --no-save` installs exactly the locked tree.
    (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" > "$stamp"
    ;;
  start)
    port="${2:?usage: colyseus.sh start PORT}"
    cd "$dir"
    PORT="$port" exec node server.mjs
    ;;
  *)
    echo "usage: colyseus.sh install | start PORT" >&2
    exit 2
    ;;
esac
