# Sourced by the bench scripts: from the repository's root, installs what the project needs and builds
# aggro in release (AGGRO_FEATURES: Cargo features beside the default ones); `$aggro` is the binary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/install-deps.sh
cargo build --release --locked -p aggro ${AGGRO_FEATURES:+--features "$AGGRO_FEATURES"} >/dev/null 2>&1
aggro="$CARGO_TARGET_DIR/release/aggro"
