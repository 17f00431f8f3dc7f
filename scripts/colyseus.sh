#!/usr/bin/env bash
# The reference Colyseus room (examples/colyseus).
#   colyseus.sh install     installs package-lock.json's tree (skipped when the installed lock matches)
#   colyseus.sh start PORT  runs the room on 127.0.0.1:PORT in the foreground (MAX_CLIENTS, PATCH_MS from the environment)
set -euo pipefail
dir="$(cd "$(dirname "$0")/../examples/colyseus" && pwd)"

case "${1:-}" in
  install)
    exec bash "$(dirname "$0")/npm-example.sh" install colyseus
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
