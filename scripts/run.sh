#!/usr/bin/env bash
# Builds aggro (release) and runs the main job, `aggro run`, which needs no
# server. Extra arguments go to `aggro run` (see `aggro run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1 || ! command -v cc >/dev/null 2>&1; then
  bash scripts/install-deps.sh
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
cargo build --release --locked -p aggro
exec "$CARGO_TARGET_DIR/release/aggro" run "$@"
