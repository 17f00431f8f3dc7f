"""Compares aggro's YCSB draws (a null:?trace file) with two YCSB BasicDB verbose runs.

    compare.py NAME YCSB_RUN_1 YCSB_RUN_2 AGGRO_TRACE

Prints one Markdown table row per figure (YCSB 1, YCSB 2, aggro, verdict) and exits 1 when aggro
stands further from YCSB's first run than 1.5 x its second run does (or 0.01, whichever is larger).
"""
import collections
import sys


def ycsb(path):
    """(operation, key, scan length) per line of `READ usertable KEY [ … ]`-like output."""
    out = []
    for line in open(path):
        w = line.split()
        out.append((w[0], w[2], int(w[3]) if w[0] == "SCAN" else None))
    return out


def aggro(path):
    """The same from aggro's trace: the statement, then its arguments (tab-separated)."""
    out = []
    for line in open(path):
        statement, *args = line.rstrip("\n").split("\t")
        head = statement.split()[0]
        if head == "SELECT" and "LIMIT" in statement:
            out.append(("SCAN", args[0], int(args[1])))
        elif head == "SELECT":
            out.append(("READ", args[0], None))
        elif head == "UPDATE":
            out.append(("UPDATE", args[-1], None))
        elif head == "INSERT":
            out.append(("INSERT", args[0], None))
    return out


def figures(ops):
    n = len(ops)
    mix = collections.Counter(op for op, _, _ in ops)
    keys = collections.Counter(key for op, key, _ in ops if op != "INSERT")
    drawn = sum(keys.values())
    ranked = sorted(keys.values(), reverse=True)
    scans = [s for _, _, s in ops if s is not None]
    f = {f"share {op}": mix[op] / n for op in ("READ", "UPDATE", "INSERT", "SCAN")}
    for k in (1, 10, 100):
        f[f"top {k} keys"] = sum(ranked[:k]) / drawn
    f["mean scan length"] = sum(scans) / len(scans) if scans else 0.0
    return f, {k: v / drawn for k, v in keys.items()}


def distance(p, q):
    return sum(abs(p.get(k, 0) - q.get(k, 0)) for k in set(p) | set(q)) / 2


def main():
    name, first, second, ours = sys.argv[1:5]
    (f1, p1), (f2, p2), (fa, pa) = figures(ycsb(first)), figures(ycsb(second)), figures(aggro(ours))
    rows = [(k, f1[k], f2[k], fa[k], abs(f2[k] - f1[k]), abs(fa[k] - f1[k])) for k in f1]
    rows.append(("key distance (TV)", 0.0, distance(p1, p2), distance(p1, pa), distance(p1, p2), distance(p1, pa)))
    failed = False
    for what, a, b, c, theirs, gap in rows:
        scale = a if what == "mean scan length" and a else 1.0
        ok = gap / scale <= max(1.5 * theirs / scale, 0.01)
        failed |= not ok
        print(f"| {name} | {what} | {a:.4f} | {b:.4f} | {c:.4f} | {'within' if ok else 'OUTSIDE'} |")
    sys.exit(1 if failed else 0)


main()
