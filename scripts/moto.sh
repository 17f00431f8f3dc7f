#!/usr/bin/env bash
# Installs moto's server (Apache-2.0, from PyPI), the open-source DynamoDB-API
# server aggro's DynamoDB target is tested against, into a virtualenv in a
# cache directory, exactly as scripts/moto/requirements.lock pins it (every
# file by its sha256). Once per lock file; safe to run again.
#   scripts/moto.sh fetch   # install if missing, print the virtualenv's python
#   scripts/moto.sh path    # print it if already installed, else fail
# The server is that python running scripts/moto/server.py -H HOST -p PORT:
# moto's own, its transactions made to back up the items they name instead of
# whole tables (see that file).
#
# moto is a functional stand-in: it implements the calls the target makes
# (TransactWriteItems with conditions, UpdateExpression, BatchWriteItem,
# consistent GetItem, Query, Scan) in memory, in one Python process. Figures
# measured on it say nothing about DynamoDB's speed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lock="$here/moto/requirements.lock"
sum=$(sha256sum "$lock" | cut -c1-12)
venv="${AGGRO_CACHE:-$HOME/.cache/aggro}/moto-$sum"
case "${1:-fetch}" in
  path)
    [ -f "$venv/.complete" ] || exit 1
    echo "$venv/bin/python"
    ;;
  fetch)
    if [ ! -f "$venv/.complete" ]; then
      command -v python3 >/dev/null || { echo "moto: python3 is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
      rm -rf "$venv"
      python3 -m venv "$venv" >&2 || { echo "moto: python3 -m venv failed (install python3-venv: scripts/install-deps.sh)" >&2; exit 1; }
      "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes -r "$lock" >&2
      touch "$venv/.complete"
    fi
    echo "$venv/bin/python"
    ;;
  *) echo "usage: moto.sh fetch|path" >&2; exit 2 ;;
esac
