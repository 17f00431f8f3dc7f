# Sourced by the benches that run YCSB itself (scenario-vs-peers.sh, cassandra.sh): YCSB 0.17 and
# its drivers (install.sh), and what those benches share.
#   sets: ycsb; defines: ycsb_ac_workloads DIR RECORDS, ycsb_row OUTPUT CPU_SECONDS
source "$(dirname "${BASH_SOURCE[0]}")/install.sh"

# YCSB's workloads A (50/50 read/update) and C (read only) as property files DIR/workloada and
# DIR/workloadc, read by both tools: RECORDS records, Zipfian, all fields read, no end but the time.
ycsb_ac_workloads() {
  local w mix
  for w in a c; do
    case $w in
      a) mix="readproportion=0.5\nupdateproportion=0.5" ;;
      c) mix="readproportion=1\nupdateproportion=0" ;;
    esac
    printf "recordcount=$2\noperationcount=1000000000\nworkload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\n$mix\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n" >"$1/workload$w"
  done
}

# A table row's cells from YCSB's output: ops/s (and the failed requests), "— / p99 per operation"
# (YCSB 0.17 prints no median), CPU µs per request served.
ycsb_row() {
  python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = float(re.search(r"\[OVERALL\], Throughput\(ops/sec\), ([0-9.]+)", text).group(1))
done = sum(int(n) for op, n in re.findall(r"\[(READ|UPDATE)\], Return=OK, (\d+)", text))
failed = sum(int(n) for op, s, n in re.findall(r"\[(READ|UPDATE)\], Return=(?!OK)(\w+), (\d+)", text))
p99 = " / ".join(f"{op.lower()} {v}" for op, v in re.findall(r"\[(READ|UPDATE)\], 99thPercentileLatency\(us\), (\d+)", text))
note = f", {failed} failed" if failed else ""
print(f"{ops:.0f}{note} | — / {p99} | {float(sys.argv[2]) / max(done, 1) * 1e6:.2f}")
PY
}
