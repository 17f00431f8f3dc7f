#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine, in two stages:
#   fast      format, module layering, lint (clippy, rustdoc), the build on the declared rust-version and
#             every crate's own tests — minutes, no servers;
#   services  throwaway PostgreSQL, Redis, moto (DynamoDB API) and the reference Colyseus room on
#             free loopback ports, then every integration test (crates/*/tests), then stops them.
#   bash scripts/test.sh [fast|services]      (no argument: both, fast first — the README's command)
# Installs what it needs first (scripts/install-deps.sh, idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
stage="${1:-all}"
case "$stage" in
  fast | services | all) ;;
  *) echo "usage: bash scripts/test.sh [fast|services]" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh
# Reuse compiled crates across runs and clones (CI clones afresh every time).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
# A suite builds each clone once: incremental state would only grow the shared cache (~2 GB a clone).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export PATH="$HOME/.cargo/bin:$PATH"
# Both stages build with the Cassandra target (left out of a default build), so they share one build.
features=(--features aggro/cassandra)

fast() {
  echo "== fast stage: format, lint, unit tests"
  # Formatting is checked like the build (rustfmt.toml sets the project's width).
  command -v rustfmt >/dev/null || rustup component add rustfmt
  cargo fmt --all --check
  # Modules import one way: no circle of files in any crate but the ones scripts/module-circles.py allows.
  python3 scripts/module-circles.py
  # docs/ARCHITECTURE.md's crate graph is the one Cargo.toml declares.
  python3 scripts/crate-graph.py
  # Every crate root's doc names each module it declares (the map a newcomer reads first).
  python3 scripts/layout-docs.py
  # docs/BENCHMARKS.md stays a map (CONTRIBUTING): one current table per area, under 300 lines.
  [ "$(wc -l <docs/BENCHMARKS.md)" -lt 300 ] || { echo "test.sh: docs/BENCHMARKS.md is 300 lines or more: move the superseded figures to docs/history/" >&2; return 1; }
  # Every dependency is under an open-source licence (the project's rule).
  python3 scripts/licences.py | tail -1
  # Every target builds with no clippy warning, and the docs with no rustdoc warning (broken links,
  # stray HTML).
  command -v cargo-clippy >/dev/null || rustup component add clippy
  cargo clippy --workspace --all-targets --locked --quiet "${features[@]}" -- -D warnings
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet "${features[@]}"
  # The lean build (no engine, no Lua, no store drivers) compiles too: its fallbacks (`not(feature = …)`)
  # are code a user builds.
  cargo check -p aggro --no-default-features --locked --quiet "${features[@]}"
  # So does each feature alone, with no warning: a `cfg(feature = …)` that leans on another shows here.
  local f
  for f in $(python3 -c 'import json, sys; m = json.load(sys.stdin); print(*[k for p in m["packages"] if p["name"] == "aggro" for k in p["features"] if k != "default"])' \
    < <(cargo metadata --no-deps --format-version 1 --locked)); do
    check_clean "feature $f alone" -p aggro --no-default-features --features "aggro/$f"
  done
  # The fuzz targets' own workspaces compile (they run by hand on nightly; see their Cargo.toml).
  check_clean "crates/stackdb/fuzz" --manifest-path crates/stackdb/fuzz/Cargo.toml
  check_clean "crates/aggro-arena/fuzz" --manifest-path crates/aggro-arena/fuzz/Cargo.toml
  # The declared rust-version (Cargo.toml) builds the whole workspace: the oldest toolchain a user may
  # use. It is the toolchain this suite builds with (CONTRIBUTING), so that build is its check; on a
  # machine whose stable has moved on, the declared one checks the workspace apart (a second compile).
  local msrv
  msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
  if [[ "$(rustc --version)" != "rustc $msrv."* ]]; then
    rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
    CARGO_TARGET_DIR="$CARGO_TARGET_DIR/msrv" cargo "+$msrv" check --workspace --locked --quiet "${features[@]}"
  fi
  cargo test --workspace --locked --lib --bins "${features[@]}"
  cargo test --workspace --locked --doc "${features[@]}"
}

# `cargo check ARGS`, failing on an error or a warning (cargo replays a cached crate's warnings), named
# by its first argument.
check_clean() {
  local name=$1 out
  shift
  if ! out=$(cargo check --locked --message-format short "$@" 2>&1) || grep -q "warning" <<<"$out"; then
    echo "test.sh: $name does not compile cleanly:" >&2
    echo "$out" >&2
    return 1
  fi
}

# Runs a command under a time limit; past it, says so and fails.
bounded() {
  local limit=$1
  shift
  timeout --kill-after=30s "$limit" "$@" || {
    local rc=$?
    [[ $rc -eq 124 || $rc -eq 137 ]] && echo "test.sh: '$*' ran past $limit: a test hangs (the last test names above)" >&2
    return "$rc"
  }
}

services() {
  echo "== services stage: integration tests against real servers"
  local dir
  dir=$(mktemp -d /tmp/aggro-services.XXXXXX)
  # shellcheck disable=SC2064
  trap "bash scripts/services.sh stop '$dir'; rm -rf '$dir'" EXIT
  bash scripts/services.sh start "$dir" >/dev/null
  set -a
  # shellcheck disable=SC1091
  source "$dir/env"
  set +a
  # Tests that need a server fail, rather than skip, when it is missing.
  export AGGRO_REQUIRE_SERVICES=1
  # The tests that need a server are #[ignore]d (so a plain `cargo test` lists them as not run): run them too.
  # The Cassandra tests run after the rest, alone: three busy JVMs on two cores would starve the
  # timing-sensitive tests beside them (the Colyseus verdict rightly blames the machine then).
  # The sweeps that feed the planner need every point's players served, and their verdicts rightly
  # blame a machine whose cores another test took (a 40-CCU Colyseus point failed so in CI): they run
  # after the rest, one at a time.
  # Each under a time limit (building the test binaries included): a test that hangs fails the suite,
  # named by the harness's last lines, instead of holding CI until its own limit.
  bounded 40m cargo test --workspace --locked "${features[@]}" --test '*' -- --include-ignored --skip cassandra:: --skip feeds_the_planner
  bounded 20m cargo test --workspace --locked "${features[@]}" --test '*' -- --include-ignored feeds_the_planner --test-threads 1
  bounded 30m cargo test --workspace --locked "${features[@]}" --test '*' -- --include-ignored cassandra::
}

# Each stage says how long it took (the suite's budget on a fresh 2-core machine is 20 minutes).
timed() {
  local began=$SECONDS
  "$@"
  echo "== $1 stage: $((SECONDS - began)) s"
}

case "$stage" in
  fast) timed fast ;;
  services) timed services ;;
  all)
    timed fast
    timed services
    ;;
esac
