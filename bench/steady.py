#!/usr/bin/env python3
"""The steady part of swarm result files run side by side: the intervals that began at or after
WARM seconds (every bot had joined) and ended a second or more before the run's end (before the
bots leave), summed across the files interval by interval (one file per process of a run split with
--worker; one file for a process of any number of threads). Prints, space-separated: the process
CPU % (all files summed, the mean of those intervals), the busiest thread's % (the highest of any
file), the bots in play (summed; the lowest of the intervals), and the failures in the whole runs
(script errors, failed joins, events missing or lost). Exits 1 when no interval qualifies.
  python3 bench/steady.py WARM FILE [FILE ...]"""
import json
import sys

warm = float(sys.argv[1])
runs = [json.load(open(f))["extra"]["arena_swarm"] for f in sys.argv[2:]]
ends = [r["totals"]["end_s"] for r in runs]
cpu, busiest, bots = [], 0.0, None
for i in range(min(len(r["intervals"]) for r in runs)):
    ivs = [r["intervals"][i] for r in runs]
    if all(iv["start_s"] >= warm and iv["end_s"] <= end - 1 for iv, end in zip(ivs, ends)):
        cpu.append(sum(iv["cpu_pct"] for iv in ivs))
        busiest = max(busiest, *(iv["busiest_thread_pct"] for iv in ivs))
        active = sum(iv["active_bots"] for iv in ivs)
        bots = active if bots is None else min(bots, active)
if not cpu:
    sys.exit("steady.py: no interval after the joins and before the end")
c = [r["totals"]["counters"] for r in runs]
failures = sum(x["script_errors"] + x["failed_joins"] + x["reliable_missing"] + x["unreliable_lost"] for x in c)
print(f"{sum(cpu) / len(cpu):.1f} {busiest:.0f} {bots} {failures}")
