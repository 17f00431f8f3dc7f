#!/usr/bin/env python3
"""Every module a crate's root declares is named in the root's own doc (its `//!` lines): the map a
newcomer reads first never leaves a module out. Run by scripts/test.sh's fast stage; prints what is
missing and exits 1."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
missing = []
for path in sorted(root.glob("crates/*/src/lib.rs")) + sorted(root.glob("crates/*/src/main.rs")):
    text = path.read_text()
    doc = "\n".join(line[3:] for line in text.splitlines() if line.startswith("//!"))
    modules = re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M)
    for m in modules:
        if not re.search(r"`" + re.escape(m) + r"(`|/|\.rs|::)", doc):
            missing.append(f"{path.relative_to(root)}: module `{m}` is not named in its doc")
for line in missing:
    print(line)
if missing:
    sys.exit(1)
print(f"module maps: every crate root's doc names its modules")
