#!/usr/bin/env python3
"""Runs a command and prints its CPU seconds (user+system, children included)
and its peak resident memory on stderr as `cpu_seconds=N max_rss_kib=M`,
passing its output through."""
import resource
import subprocess
import sys

rc = subprocess.run(sys.argv[1:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"cpu_seconds={r.ru_utime + r.ru_stime:.3f} max_rss_kib={r.ru_maxrss}", file=sys.stderr)
sys.exit(rc)
