#!/usr/bin/env bash
# The full SIGKILL test of stackdb: a writer process killed at 500 random
# moments (CI runs 30); after each, every acknowledged commit must be there
# and no batch partial. Usage: scripts/stackdb-kill.sh [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
STACKDB_KILLS="${1:-500}" cargo test --release -p stackdb --test kill -- --nocapture acknowledged_commits_survive
