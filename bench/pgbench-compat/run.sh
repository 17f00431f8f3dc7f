#!/usr/bin/env bash
# pgbench's compatibility suite: every script here run by pgbench itself and by `aggro pgbench`
# (-c CLIENTS -t TRANSACTIONS each) on two databases initialised alike (`pgbench -i -s 1`); prints,
# per script, the transactions each processed and the tables' sums (accounts, branches, tellers,
# history rows), and exits 1 if any differ — once per query mode (-M: MODES, default all three; a
# script that cannot run in a mode must fail alike in both). The smallest form runs in CI
# (crates/aggro/tests/scenario.rs, pgbench_scripts_leave_the_tables_as_pgbench_leaves_them).
#   MODES="simple extended prepared" bench/pgbench-compat/run.sh [CLIENTS] [TRANSACTIONS]      (default 8 × 200)
# Starts PostgreSQL on loopback with the repo's scripts/services.sh; builds aggro (release).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
clients="${1:-8}"
transactions="${2:-200}"
modes="${MODES:-simple extended prepared}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/aggro/target}"
(cd "$root" && cargo build --release --locked -q -p aggro)
aggro="$CARGO_TARGET_DIR/release/aggro"
svc="$(mktemp -d)"
trap 'bash "$root/scripts/services.sh" stop "$svc" >/dev/null 2>&1 || true; rm -rf "$svc"' EXIT
bash "$root/scripts/services.sh" start "$svc" >/dev/null
set -a; source "$svc/env"; set +a
bin="$AGGRO_PG_BIN"
base="${AGGRO_TEST_POSTGRES%/*}"
sums="SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' || (SELECT count(*) FROM pgbench_history)"
failed=0
printf '%-14s %-9s %10s %10s  %-28s %-28s %s\n' script mode pgbench aggro "pgbench sums" "aggro sums" verdict
for mode in $modes; do
for script in "$here"/*.sql; do
  name="$(basename "$script" .sql | tr - _)"
  for who in pgbench aggro; do
    "$bin/psql" "$AGGRO_TEST_POSTGRES" -qc "DROP DATABASE IF EXISTS compat_${name}_$who" -qc "CREATE DATABASE compat_${name}_$who" 2>/dev/null
    "$bin/pgbench" -i -s 1 -q "$base/compat_${name}_$who" >/dev/null 2>&1
  done
  theirs="$("$bin/pgbench" -n -c "$clients" -t "$transactions" -M "$mode" -f "$script" "$base/compat_${name}_pgbench" 2>&1 | sed -n 's/.*actually processed: \([0-9]*\).*/\1/p' || true)"
  out="$svc/$name.json"
  code=0
  "$aggro" pgbench --target "$base/compat_${name}_aggro" -c "$clients" -t "$transactions" -M "$mode" -f "$script" -q --out "$out" >/dev/null 2>&1 || code=$?
  # Refused before the run (exit 2: a script this mode cannot send, which pgbench aborts): none processed.
  if [ "$code" = 2 ]; then ours=0; else
    ours="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['totals'][0]['ok'])" "$out" 2>/dev/null || echo failed)"
  fi
  a="$("$bin/psql" "$base/compat_${name}_pgbench" -Atqc "$sums")"
  b="$("$bin/psql" "$base/compat_${name}_aggro" -Atqc "$sums")"
  verdict=same
  if [ "$theirs" != "$ours" ] || [ "$a" != "$b" ]; then verdict=DIFFERENT; failed=1; fi
  printf '%-14s %-9s %10s %10s  %-28s %-28s %s\n' "$(basename "$script" .sql)" "$mode" "${theirs:-0}" "$ours" "$a" "$b" "$verdict"
done
done
exit "$failed"
