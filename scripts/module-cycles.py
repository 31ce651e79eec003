#!/usr/bin/env python3
"""Import cycles between the modules of each crate of the workspace.

Reads every crate's src/ as text: a module is a file (`a/b.rs` or `a/b/mod.rs` is `a::b`),
and module A depends on module B when A names `crate::B...` or `super::...` resolving to B,
or a module it brought in with `use` (`use crate::a::{self, b}` then `a::f()`), in `use` lines
or paths in code. `#[cfg(test)]` modules are left out: tests may reach anywhere. A parent's
`mod x;` is not an edge. Prints each crate's cycles (strongly connected components of more than
one module) and exits 1 if there is any.

    scripts/module-cycles.py                 # every crate, top-level modules and below
    scripts/module-cycles.py omptarget-core  # one crate
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def crates(names):
    for entry in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, entry, "src")
        if os.path.isfile(os.path.join(ROOT, entry, "Cargo.toml")) and os.path.isdir(src):
            if not names or entry in names:
                yield entry, src


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]) or (rel and rel[0] == "bin"):
        return ()
    return tuple(rel)


TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip_tests(text):
    """Drops inline `#[cfg(test)] mod x { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in TEST_MOD.finditer(text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1
    out.append(text[i:])
    return "".join(out)


def test_files(src):
    """Files that are test modules: declared `#[cfg(test)] mod x;` in their parent."""
    skip = set()
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            text = open(path, encoding="utf-8").read()
            for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
                base = dirpath if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(dirpath, f[:-3])
                skip.add(os.path.join(base, m.group(1) + ".rs"))
                skip.add(os.path.join(base, m.group(1), "mod.rs"))
    return skip


PATH = re.compile(r"\b(crate|super)((?:::(?:\{[^;]*?\}|\w+))+)")


def references(module, text, modules):
    """The modules `text` (in `module`) names through crate:: or super:: paths."""
    found = set()
    for m in PATH.finditer(text):
        base = () if m.group(1) == "crate" else module[:-1]
        rest = m.group(2)
        # super::super::x
        parts = [p for p in re.findall(r"\{[^;]*\}|\w+", rest)]
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        targets = [base + tuple(p for p in parts if not p.startswith("{"))]
        for brace in [p for p in parts if p.startswith("{")]:
            prefix = base + tuple(p for p in parts[: parts.index(brace)])
            for item in re.findall(r"(\w+(?:::\w+)*)", brace):
                targets.append(prefix + tuple(item.split("::")))
        for t in targets:
            # the longest prefix that is a module
            for n in range(len(t), 0, -1):
                if t[:n] in modules:
                    found.add(t[:n])
                    break
    return found


USE = re.compile(r"\buse\s+(crate|super|self)((?:::\w+)*)(?:::\{([^;]*)\})?\s*;")


def aliased_references(module, text, modules):
    """The modules `text` names through a module brought in by `use` (`use crate::a::{self,
    b};` then `a::f()` or `b::g()`)."""

    def longest(t):
        for n in range(len(t), 0, -1):
            if t[:n] in modules:
                return t[:n]
        return None

    aliases = {}
    for u in USE.finditer(text):
        base = () if u.group(1) == "crate" else (module[:-1] if u.group(1) == "super" else module)
        parts = [x for x in u.group(2).split("::") if x]
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        prefix = base + tuple(parts)
        if u.group(3) is None:
            if prefix in modules:
                aliases[prefix[-1]] = prefix
            continue
        for name, alias in re.findall(r"(\w+(?:::\w+)*)(?:\s+as\s+(\w+))?", u.group(3)):
            full = prefix if name == "self" else prefix + tuple(name.split("::"))
            if full in modules and full:
                aliases[alias or full[-1]] = full
    found = set()
    for alias, full in aliases.items():
        for m in re.finditer(r"(?<![\w:])" + alias + r"((?:::\w+)+)", text):
            target = longest(full + tuple(m.group(1).split("::")[1:]))
            if target:
                found.add(target)
    return found


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    total = 0
    for name, src in crates(args):
        skip = test_files(src)
        files = {}
        for dirpath, _, fs in os.walk(src):
            for f in fs:
                path = os.path.join(dirpath, f)
                if f.endswith(".rs") and path not in skip:
                    files[module_of(src, path)] = path
        modules = set(files)
        graph = {}
        for module, path in files.items():
            if not module:
                continue
            text = strip_tests(open(path, encoding="utf-8").read())
            deps = set()
            named = references(module, text, modules) | aliased_references(module, text, modules)
            for target in named:
                # A module's own descendants are below it.
                if target and target != module and target[: len(module)] != module:
                    deps.add(target)
            graph[module] = deps
        cycles = [sorted("::".join(m) for m in c) for c in sccs(graph) if len(c) > 1]
        for c in sorted(cycles):
            print(f"{name}: cycle of {len(c)} modules: {', '.join(c)}")
        total += len(cycles)
        if not cycles:
            print(f"{name}: no cycles ({len(modules)} modules)")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
