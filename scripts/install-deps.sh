#!/usr/bin/env bash
# Installs what aggro's build and tests need on a Debian machine, idempotently:
# a Rust toolchain, PostgreSQL, Redis, Python's venv (for moto, the DynamoDB-API
# test server), pgbench/redis-benchmark for the benchmarks, and Chromium for the
# report tests (the JDK and Maven the YCSB peer needs are installed by its bench
# script). Safe to run again.
set -euo pipefail

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

[ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] || need_apt+=(postgresql postgresql-contrib)
have redis-server || need_apt+=(redis-server)
have redis-benchmark || need_apt+=(redis-tools)
have cc || need_apt+=(build-essential)
have pkg-config || need_apt+=(pkg-config)
have openssl || need_apt+=(openssl)   # the TLS test signs a certificate with a CA of its own
have python3 || need_apt+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
have runuser || need_apt+=(util-linux)
have chromium || need_apt+=(chromium)   # the HTML report and live view tests open pages headless
have node || need_apt+=(nodejs)         # the reference Colyseus room (examples/colyseus)
have npm || need_apt+=(npm)
have java || need_apt+=(default-jre-headless)   # the test Cassandra cluster (scripts/cassandra.sh)
have mvn || need_apt+=(maven)                  # …its jars, from Maven Central

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need_apt[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Debian's postgresql package starts a cluster on 5432; the tests never use it
# (they start their own on a free port), so leave it as the package set it up.

if ! have cargo; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "install-deps: cargo is in ~/.cargo/bin; add it to PATH" >&2
  else
    echo "install-deps: installing Rust (rustup, from Debian's package)" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq rustup >/dev/null 2>&1 || true
    rustup default stable
  fi
fi

# The reference Colyseus room's packages, exactly as package-lock.json pins them
# (from the npm registry; again only when the lock file changed).
bash "$(dirname "$0")/colyseus.sh" install
# The reference servers for scripted bots (examples/bots: Socket.IO and plain WebSocket games).
bash "$(dirname "$0")/npm-example.sh" install bots
