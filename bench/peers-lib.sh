# Sourced by the side-by-side bench scripts (mobile-vs-pgbench.sh,
# scenario-vs-peers.sh): builds aggro in release, starts the test services on
# 127.0.0.1 (stopped on exit), and defines the measuring helpers.
#   secs (the caller's), conns, aggro, work, pg, pg_port; cpu CMD…, rss, field FILE EXPR, pg_write_txn
#   AGGRO_FEATURES: Cargo features of aggro to build beside the default ones (e.g. cassandra)
source "$(dirname "${BASH_SOURCE[0]}")/release.sh"
conns=8
work=$(mktemp -d /tmp/aggro-bench.XXXXXX)
svc=$(mktemp -d /tmp/aggro-bench-services.XXXXXX)
cleanup() { bash scripts/services.sh stop "$svc"; rm -rf "$work" "$svc"; }
trap cleanup EXIT
bash scripts/services.sh start "$svc" >/dev/null
set -a; source "$svc/env"; set +a
pg=$AGGRO_TEST_POSTGRES
pg_port=${pg##*:}; pg_port=${pg_port%%/*}

# CPU seconds (user + system) of a command; its output goes to $work/out.
cpu() { python3 bench/cpu-of.py "$@" 2>"$work/cpu" >"$work/out"; grep -o 'cpu_seconds=[0-9.]*' "$work/cpu" | cut -d= -f2; }
# Peak RSS in MiB of the last `cpu` command.
rss() { echo $(( $(grep -o 'max_rss_kib=[0-9]*' "$work/cpu" | cut -d= -f2) / 1024 )); }
# A Python expression over a result file's record `r`.
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# The seed-001 write transaction on $pg: 100,000 users populated, and the transaction as a pgbench script
# in $work/write.sql (the same statements, the same skew as aggro's `--workload write`).
pg_write_txn() {
  "$aggro" mobile populate --target "$pg" --users 100000 >/dev/null 2>&1
  cat >"$work/write.sql" <<'SQL'
\set a random(0, 50000)
\set b random(1, 50000)
\set id :a + :b
BEGIN;
UPDATE users SET gold = gold - 5 WHERE id = :id;
UPDATE user_items SET num_tickets = num_tickets + 1 WHERE id = :id;
END;
SQL
}
