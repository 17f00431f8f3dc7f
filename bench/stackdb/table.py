"""Turns stackdb-bench JSON lines into the markdown table of docs/BENCHMARKS.md."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
k = lambda v: f"{v / 1000:,.0f}"
mb = lambda v: f"{v / 2**20:,.1f}"
print("| engine | records | sync | insert k/s | mixed k/s | recent read k/s | missing read k/s | own RAM MiB | disk MiB | space × | reopen ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['engine']} | {r['records']:,} | {'durable' if r['durable'] else 'no-sync'} | {k(r['insert_per_s'])} | {k(r['mixed_per_s'])} | "
          f"{k(r['recent_read_per_s'])} | {k(r['missing_read_per_s'])} | {mb(r['anon_ram_bytes'])} | {mb(r['disk_bytes'])} | {r.get('space_amplification', '')} | {r['reopen_ms']} |")
