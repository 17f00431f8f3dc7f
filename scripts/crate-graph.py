#!/usr/bin/env python3
"""Checks docs/ARCHITECTURE.md's crate table against `cargo metadata`: every workspace crate has a
row, and its "depends on" column names exactly its workspace dependencies (short names: `core` is
`aggro-core`; dev-dependencies left out). Exit 1 with each difference named."""
import json
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
meta = json.loads(subprocess.run(["cargo", "metadata", "--offline", "--format-version", "1", "--no-deps"],
                                 cwd=root, check=True, capture_output=True, text=True).stdout)
names = {p["name"] for p in meta["packages"]}
actual = {p["name"]: {d["name"] for d in p["dependencies"] if d["name"] in names and d.get("kind") is None}
          for p in meta["packages"]}


def full(short):
    """A short name in the table as the crate's own name."""
    return short if short in names else f"aggro-{short}"


documented = {}
for line in (root / "docs/ARCHITECTURE.md").read_text().splitlines():
    m = re.match(r"^\| `([a-z-]+)` \|.*\| ([^|]*) \|$", line)
    if m and m.group(1) in names:
        deps = m.group(2).strip()
        documented[m.group(1)] = set() if deps in ("—", "") else {full(d.strip()) for d in deps.split(",")}

wrong = []
for crate in sorted(names):
    if crate not in documented:
        wrong.append(f"{crate}: no row in docs/ARCHITECTURE.md's crate table")
    elif documented[crate] != actual[crate]:
        missing, extra = actual[crate] - documented[crate], documented[crate] - actual[crate]
        wrong.append(f"{crate}: the table says {sorted(documented[crate])}, Cargo.toml {sorted(actual[crate])}"
                     f" (missing {sorted(missing)}, not a dependency {sorted(extra)})")
for w in wrong:
    print(f"crate-graph: {w}", file=sys.stderr)
if not wrong:
    print(f"crate graph: {len(names)} crates, docs/ARCHITECTURE.md matches cargo metadata")
sys.exit(1 if wrong else 0)
