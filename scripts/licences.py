#!/usr/bin/env python3
"""Every crate the workspace depends on (all features, every target) is under an open-source licence:
its SPDX expression in Cargo.toml is read ("A OR B" needs one of them allowed, "A AND B" both; "A/B" is
the old way of writing OR), and a crate whose licence is not open source, or that names none, fails the
check, named with its licence. The project's rule: every dependency under an open-source licence.

    python3 scripts/licences.py          (from the repository's root; prints a count per licence)
"""
import json
import re
import subprocess
import sys

# Open-source licences (OSI-approved, or a permissive data/Unicode licence of the same kind).
ALLOWED = {
    "MIT", "MIT-0", "Apache-2.0", "Apache-2.0 WITH LLVM-exception", "BSD-2-Clause", "BSD-3-Clause", "ISC",
    "Zlib", "Unicode-3.0", "Unicode-DFS-2016", "Unlicense", "0BSD", "BSL-1.0", "CC0-1.0", "MPL-2.0",
    "CDLA-Permissive-2.0", "LGPL-2.1-or-later",
}


def tokens(expr):
    return re.findall(r"\(|\)|[^\s()]+(?:\s+WITH\s+[^\s()]+)?", expr.replace("/", " OR "))


def allowed(expr):
    """Evaluates an SPDX expression: OR binds looser than AND; parentheses group."""
    toks = tokens(expr)
    pos = 0

    def primary():
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok == "(":
            value = disjunction()
            pos += 1  # ")"
            return value
        return tok in ALLOWED

    def joined(word, operand, combine):
        """Operands joined by `word` (AND, OR), left to right."""
        nonlocal pos
        value = operand()
        while pos < len(toks) and toks[pos] == word:
            pos += 1
            right = operand()
            value = combine(value, right)
        return value

    def conjunction():
        return joined("AND", primary, lambda a, b: a and b)

    def disjunction():
        return joined("OR", conjunction, lambda a, b: a or b)

    return disjunction()


def main():
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
                         check=True, capture_output=True, text=True).stdout
    packages = json.loads(out)["packages"]
    counts, refused = {}, []
    for p in packages:
        licence = p.get("license")
        counts[licence or "(none)"] = counts.get(licence or "(none)", 0) + 1
        if not licence or not allowed(licence):
            refused.append(f"{p['name']} {p['version']}: {licence or 'no licence named'}")
    for licence, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{n:5}  {licence}")
    if refused:
        print("not open source, or unknown:\n  " + "\n  ".join(refused), file=sys.stderr)
        sys.exit(1)
    print(f"licences: all {len(packages)} crates under open-source licences")


if __name__ == "__main__":
    assert allowed("MIT OR Apache-2.0") and allowed("(MIT OR Apache-2.0) AND Unicode-3.0") and allowed("MIT/Apache-2.0")
    assert not allowed("MIT AND SSPL-1.0") and not allowed("BUSL-1.1") and allowed("BUSL-1.1 OR MIT")
    assert allowed("Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT")
    main()
