#!/usr/bin/env bash
# The stackdb benchmark (issue 3): every engine at every size, durable and
# no-sync, one process each; JSON lines to bench/stackdb/results/DATE.jsonl
# and a table on stdout.
#   bench/stackdb/run.sh [SIZES] [OPS] [ENGINES]
#   e.g. bench/stackdb/run.sh 1000000,5000000 200000 stackdb,lmdb,sqlite,rocksdb,redb,kissdb
# Scratch databases go to $BENCH_DIR (default ~/.cache/aggro/bench; not /tmp,
# which may be RAM).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sizes="${1:-1000000,5000000}"
ops="${2:-200000}"
engines="${3:-stackdb,lmdb,sqlite,rocksdb,redb,kissdb}"
scratch="${BENCH_DIR:-$HOME/.cache/aggro/bench}"
mkdir -p "$scratch" "$here/results"

# Debian's libraries, not copies compiled from source.
need=()
for p in liblmdb-dev librocksdb-dev libsqlite3-dev libclang-dev pkg-config; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y -q "${need[@]}"
fi
# lmdb-rkv-sys asks pkg-config for "liblmdb"; Debian names it "lmdb".
mkdir -p "$here/target/pkgconfig"
ln -sf "$(pkg-config --variable=pcfiledir lmdb)/lmdb.pc" "$here/target/pkgconfig/liblmdb.pc"
export PKG_CONFIG_PATH="$here/target/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
libdir="$(pkg-config --variable=libdir rocksdb)"
export ROCKSDB_LIB_DIR="$libdir" SQLITE3_LIB_DIR="$libdir"
(cd "$here" && cargo build --release --quiet)
bin="${CARGO_TARGET_DIR:-$here/target}/release/stackdb-bench"

out="$here/results/$(date -u +%Y-%m-%dT%H%M%SZ).jsonl"
for n in ${sizes//,/ }; do
  for e in ${engines//,/ }; do
    for mode in --no-sync --durable; do
      [ "$e" = kissdb ] && [ "$mode" = --durable ] && continue
      "$bin" --engine "$e" --records "$n" --ops "$ops" "$mode" --dir "$scratch" | tee -a "$out"
    done
  done
done
python3 "$here/table.py" "$out"
