#!/usr/bin/env python3
"""Lists each crate's circles of modules: files that import each other, directly or around a loop.

A module is a file under crates/*/src (`a/b.rs` and `a/b/mod.rs` are `a::b`); an edge A → B is a
`crate::B…` path (or a `super::…` path resolving to B, a child's own parent included) written in A
outside its `#[cfg(test)]` part, or A naming its own child B by a relative path (`b::run`). A name
the crate's root re-exports (`pub use plan::Placement`) is its module's; `pub use` lines are no edges.
Prints every circle (a strongly connected set of two or more modules) and exits 1 if one is neither
in ALLOWED nor within one module's directory (that module and modules under it, the crate's root
excepted: a parent whose children use its types is one unit; a root whose types every module imports
is a knot of the whole crate): a circle may shrink or go, not appear or grow. The binary (STRICT) has
none at all: a command's directory dispatches to its children, which share what they share through a
sibling module (`mobile/target.rs`), never through their parent.
    python3 scripts/module-circles.py [CRATES_DIR]
"""
import os
import re
import sys

# Inherent: the database hands out transactions and iterators that call back into it.
ALLOWED = {"stackdb": [{"db", "txn", "iter"}]}
# Crates with no circle, not even a parent and its children.
STRICT = {"aggro"}

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


def reexports(text, m, modules):
    """What `pub use child::{A, B}` lines in module `m` re-export: name → the child module it comes from."""
    found = {}
    for child, braced, single in re.findall(r"^\s*pub use (?:self::)?(\w+)::(?:\{([^}]*)\}|(\w+))", text, re.M):
        if m + (child,) in modules:
            for name in (braced or single).split(","):
                name = name.strip().split(" as ")[-1].strip()
                if name:
                    found[name] = m + (child,)
    return found


def edges(src, modules):
    out = {m: set() for m in modules}
    texts = {m: re.sub(r"//[^\n]*", "", non_test(open(path, encoding="utf-8").read())) for m, path in modules.items()}
    # A name the root re-exports (`pub use plan::Placement`) is its module's: `crate::Placement` is an
    # edge to `plan`, and the re-export itself is no edge of the root's.
    reexported = reexports(texts.get((), ""), (), modules)
    for m, path in modules.items():
        text = texts[m]
        for name, home in reexported.items():
            text = re.sub(r"\bcrate::" + name + r"\b", "crate::" + "::".join(home) + "::" + name, text)
        text = re.sub(r"^\s*pub use [^;]*;", "", text, flags=re.M)
        # `use crate::{a, b::c}`: each name in the braces is a path of its own.
        for base, names in re.findall(r"\b(crate|super(?:::super)*)::\{([^}]*)\}", text):
            for name in names.split(","):
                name = name.strip().split("::")[0].split(" ")[0]
                if name and name != "self":
                    text += f"\n{base}::{name}"
        # A module's own children, named by a relative path (`play::run`, `use args::X`): a parent that
        # uses its child, and a child that uses its parent (`super::`), are a circle like any other.
        for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M):
            if m + (child,) in modules and re.search(r"(?<![\w:])(?:self::)?" + child + r"::", text):
                out[m].add(m + (child,))
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
            if best is not None and best != m:
                out[m].add(best)
    return out


def one_directory(scc):
    """Whether a circle lies within one module's directory: that module (not the crate's root) and
    modules under it — a parent's types its children use, and its children it calls, are one unit."""
    prefix = os.path.commonprefix([list(m) for m in scc])
    return len(prefix) > 0 and tuple(prefix) in scc


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
            ok = any(names <= a for a in allowed) or (crate not in STRICT and one_directory(scc))
            failed |= not ok
            print(f"{'allowed' if ok else 'CIRCLE'}  {crate}: {', '.join(sorted(names))}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
