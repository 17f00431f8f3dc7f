#!/usr/bin/env bash
# aggro's YCSB draws against YCSB's own. For each workload below, one property file is run by YCSB
# 0.17's CoreWorkload on its BasicDB with basicdb.verbose=true (every operation and key printed),
# twice, and by `aggro scenario run FILE --target null:?trace=…` (every command and its arguments
# written), one thread/loader each; bench/ycsb/compare.py then compares the operation mix, the
# share of operations on the most-drawn keys (top 1, 10, 100), the distance between the per-key
# frequencies (total variation) and the mean scan length. YCSB against itself is the yardstick:
# aggro passes where it stands from YCSB no further than 1.5 × YCSB's second run does (or 0.01).
#   bench/ycsb/distributions.sh [OPERATIONS]      (default 200000; needs no server)
set -euo pipefail
cd "$(dirname "$0")/../.."
ops=${1:-200000}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
cargo build --release --locked -q -p aggro
aggro="$CARGO_TARGET_DIR/release/aggro"
source bench/ycsb/install.sh
work=$(mktemp -d /tmp/aggro-ycsb-dist.XXXXXX)
trap 'rm -rf "$work"' EXIT

workload() { # NAME PROPERTIES…
  local name=$1; shift
  printf 'workload=site.ycsb.workloads.CoreWorkload\nrecordcount=1000\noperationcount=%s\nfieldlength=10\n' "$ops" >"$work/$name"
  printf '%s\n' "$@" >>"$work/$name"
}
workload mixed readproportion=0.5 updateproportion=0.2 insertproportion=0.1 scanproportion=0.1 readmodifywriteproportion=0.1 requestdistribution=zipfian maxscanlength=100
workload latest readproportion=0.95 insertproportion=0.05 requestdistribution=latest
workload hotspot readproportion=0.9 insertproportion=0.1 requestdistribution=hotspot hotspotdatafraction=0.1 hotspotopnfraction=0.9
workload exponential readproportion=1 requestdistribution=exponential
workload uniform readproportion=0.5 updateproportion=0.5 requestdistribution=uniform
workload ordered readproportion=1 requestdistribution=zipfian insertorder=ordered

failed=0
for name in mixed latest hotspot exponential uniform ordered; do
  for run in 1 2; do
    java -cp "$ycsb/lib/*" site.ycsb.Client -t -db site.ycsb.BasicDB -P "$work/$name" -p basicdb.verbose=true -threads 1 2>/dev/null \
      | grep -E '^(READ|UPDATE|INSERT|SCAN) ' >"$work/$name.ycsb$run"
  done
  "$aggro" scenario run "$work/$name" --target "null:?trace=$work/$name.aggro" --rate max --loaders 1 --threads 1 -q --out "$work/$name.json" >/dev/null
  python3 bench/ycsb/compare.py "$name" "$work/$name.ycsb1" "$work/$name.ycsb2" "$work/$name.aggro" || failed=1
done
exit "$failed"
