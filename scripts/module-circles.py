#!/usr/bin/env python3
"""Lists each crate's circles of modules: files that import each other, directly or around a loop.

A module is a file under crates/*/src (`a/b.rs` and `a/b/mod.rs` are `a::b`); an edge A → B is a
`crate::B…` path (or a `super::…` path resolving to B) written in A outside its `#[cfg(test)]` part.
Prints every circle (a strongly connected set of two or more modules) and exits 1 if one is not in
ALLOWED: a circle may shrink or go, not appear or grow.
    python3 scripts/module-circles.py [CRATES_DIR]
"""
import os
import re
import sys

# Inherent: the database hands out transactions and iterators that call back into it.
ALLOWED = {"stackdb": [{"db", "txn", "iter"}]}

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def non_test(text):
    """The file up to its `#[cfg(test)]` module (tests may import anything)."""
    cut = text.find("#[cfg(test)]\nmod tests")
    return text if cut < 0 else text[:cut]


def edges(src, modules):
    out = {m: set() for m in modules}
    for m, path in modules.items():
        text = non_test(open(path, encoding="utf-8").read())
        text = re.sub(r"//[^\n]*", "", text)
        # `use crate::{a, b::c}`: each name in the braces is a path of its own.
        for base, names in re.findall(r"\b(crate|super(?:::super)*)::\{([^}]*)\}", text):
            for name in names.split(","):
                name = name.strip().split("::")[0].split(" ")[0]
                if name and name != "self":
                    text += f"\n{base}::{name}"
        for root, rest in PATH.findall(text):
            parts = rest.strip(":").split("::")
            if root == "crate":
                target = ()
            else:
                # `super` of a file module `a::b` is `a`; of a `mod.rs`, its parent.
                is_dir = os.path.basename(path) == "mod.rs"
                target = m if is_dir else m[:-1]
                target = target[:-1] if is_dir else target
            best = None
            for i in range(len(parts) + 1):
                cand = target + tuple(parts[:i])
                if cand in modules:
                    best = cand
            if best is not None and best != m and not (m[: len(best)] == best):
                out[m].add(best)
    return out


def circles(graph):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(scc)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "crates")
    failed = False
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        modules = {}
        for d, _, files in os.walk(src):
            for f in files:
                if f.endswith(".rs"):
                    p = os.path.join(d, f)
                    modules[module_of(src, p)] = p
        allowed = [set(c) for c in ALLOWED.get(crate, [])]
        for scc in circles(edges(src, modules)):
            names = {"::".join(m) or "(root)" for m in scc}
            ok = any(names <= a for a in allowed)
            failed |= not ok
            print(f"{'allowed' if ok else 'CIRCLE'}  {crate}: {', '.join(sorted(names))}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
