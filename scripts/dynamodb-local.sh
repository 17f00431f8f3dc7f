#!/usr/bin/env bash
# Fetches DynamoDB Local (com.amazonaws:DynamoDBLocal, with its sqlite4java
# native library) from Maven Central into a cache directory, once.
#   scripts/dynamodb-local.sh fetch   # download if missing, print the directory
#   scripts/dynamodb-local.sh path    # print the directory if already fetched, else fail
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache="${AGGRO_CACHE:-$HOME/.cache/aggro}/dynamodb-local-2.5.2"
case "${1:-fetch}" in
  path)
    [ -f "$cache/.complete" ] || exit 1
    echo "$cache"
    ;;
  fetch)
    if [ ! -f "$cache/.complete" ]; then
      command -v mvn >/dev/null || { echo "dynamodb-local: maven is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
      mkdir -p "$cache"
      mvn -q -B -f "$here/dynamodb-local/pom.xml" dependency:copy-dependencies -DoutputDirectory="$cache" >&2
      touch "$cache/.complete"
    fi
    echo "$cache"
    ;;
  *) echo "usage: dynamodb-local.sh fetch|path" >&2; exit 2 ;;
esac
