#!/usr/bin/env bash
# Installs an example's npm packages exactly as its package-lock.json pins them (skipped when the
# installed lock matches): npm-example.sh install colyseus|bots
set -euo pipefail
name="${2:?usage: npm-example.sh install EXAMPLE}"
dir="$(cd "$(dirname "$0")/../examples/$name" && pwd)"
[ "${1:-}" = install ] || { echo "usage: npm-example.sh install EXAMPLE" >&2; exit 2; }
stamp="$dir/node_modules/.aggro-lock.sha256"
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "npm-example.sh: Node.js 20 or newer is needed for examples/$name (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
echo "npm-example.sh: npm install in examples/$name (pinned by package-lock.json)" >&2
# `npm ci` refuses some locks on npm 11 (it wants entries for other platforms' optional builds, which npm
# itself leaves out of the lock); `npm install --no-save` installs exactly the locked tree.
(cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" > "$stamp"
