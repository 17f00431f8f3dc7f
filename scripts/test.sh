#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs what it needs,
# starts throwaway PostgreSQL, Redis and moto (DynamoDB-API) servers on free
# loopback ports, runs every test, and stops the servers again.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# Reuse compiled crates across runs and clones (CI clones afresh every time).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
export PATH="$HOME/.cargo/bin:$PATH"

services=$(mktemp -d /tmp/aggro-services.XXXXXX)
cleanup() { bash scripts/services.sh stop "$services"; rm -rf "$services"; }
trap cleanup EXIT
bash scripts/services.sh start "$services" >/dev/null
set -a
# shellcheck disable=SC1091
source "$services/env"
set +a
# Tests that need a server fail, rather than skip, when it is missing.
export AGGRO_REQUIRE_SERVICES=1

# Formatting is checked like the build (rustfmt.toml sets the project's width).
command -v rustfmt >/dev/null || rustup component add rustfmt
cargo fmt --all --check

# Every target builds with no clippy warning, and the docs with no rustdoc warning (broken links,
# stray HTML) — then the tests.
command -v cargo-clippy >/dev/null || rustup component add clippy
cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
cargo test --workspace --locked
