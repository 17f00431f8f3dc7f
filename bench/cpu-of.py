#!/usr/bin/env python3
"""Runs a command and prints its CPU seconds (user+system, children included)
on stderr as `cpu_seconds=N`, passing its output through."""
import resource
import subprocess
import sys

rc = subprocess.run(sys.argv[1:]).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"cpu_seconds={r.ru_utime + r.ru_stime:.3f}", file=sys.stderr)
sys.exit(rc)
