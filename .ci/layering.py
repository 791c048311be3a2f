#!/usr/bin/env python3
"""Layering report for src/ (issue 11 item 4), read-only.

1. Every `crate::http` reference in db/, domain/ and in resource rule files
   (files of auth/, household/, medicine/, care/, sync/ that hold no routes
   and are not model.rs shapes; those two kinds are listed apart, uncounted).
2. Every reference from db/ or domain/ to a resource module.
3. Import circles between source files: each group of files that reach one
   another through `use crate::...`, `super::...` or inline `crate::` paths
   (strongly connected components of the file graph), with one edge list
   per group so the reason is visible.

Exit status 1 when anything is listed, so it can gate CI once clean.
Usage: .ci/layering.py [--quiet]
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
RESOURCE_AREAS = ("auth", "identity", "household", "medicine", "care", "sync", "portable", "reminders")
LOW_LAYERS = ("db", "domain")


def module_files():
    """Map module path tuple -> file path (relative to src/)."""
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            files[tuple(parts)] = rel
    return files


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def use_paths(text):
    """Every path a file names through `crate::` or `super::`, with use
    groups expanded (`use a::{b, c::{d}}` -> a::b, a::c::d)."""
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)::[^;]*);", text, flags=re.S):
        paths.extend(expand(re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", m.group(1)))))
    body = re.sub(r"\buse\s+[^;]*;", "", text, flags=re.S)
    for m in re.finditer(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", body):
        paths.append(m.group(1))
    return paths


def expand(path):
    i = path.find("{")
    if i < 0:
        return [path]
    prefix, inner = path[:i], path[i + 1 : path.rfind("}")]
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:j])
            start = j + 1
    parts.append(inner[start:])
    out = []
    for p in parts:
        if p:
            out.extend(expand(prefix + p))
    return out


def resolve(path, own, files):
    """The file a path lands in: the longest module prefix that is a file."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    else:
        base = list(own)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    full = base + [s for s in segs if s != "self"]
    for n in range(len(full), 0, -1):
        if tuple(full[:n]) in files:
            return tuple(full[:n])
    return None


def main():
    quiet = "--quiet" in sys.argv
    files = module_files()
    graph = {m: set() for m in files}
    findings, mixed, shapes = [], [], []
    for mod, rel in files.items():
        text = strip_comments(open(os.path.join(ROOT, rel), encoding="utf-8").read())
        # Tests may reach anywhere; only the code itself is layered.
        text = re.split(r"#\[cfg\(test\)\]", text)[0]
        for path in use_paths(text):
            target = resolve(path, mod, files)
            if target and target != mod and not mod[: len(target)] == target:
                graph[mod].add(target)
        top = mod[0] if mod else ""
        # Route files and request extractors are the HTTP adapter of an area.
        adapter = (
            rel.endswith("routes.rs")
            or re.search(r"\bfn routes\(", text)
            or re.search(r"\bimpl(<[^>]*>)? FromRequest(Parts)?<", text)
        )
        shape = rel.endswith("model.rs")
        for target in graph[mod]:
            named = f"{rel}: uses crate::{'::'.join(target)}"
            if target[:1] == ("http",) and top in LOW_LAYERS:
                findings.append(named)
            elif target[:1] == ("http",) and top in RESOURCE_AREAS:
                if adapter:
                    mixed.append(named)
                elif shape:
                    shapes.append(named)
                else:
                    findings.append(named)
            if top in LOW_LAYERS and target[:1] and target[0] in RESOURCE_AREAS:
                findings.append(f"{rel}: uses resource module crate::{'::'.join(target)}")

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
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
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)

    print(f"== crate::http or resource uses in db/, domain/ and rule files: {len(findings)}")
    for f in sorted(findings):
        print("  " + f)
    if not quiet:
        print(f"-- (not counted) shape files using the HTTP contract (schemas, PUT bodies): {len(shapes)}")
        for f in sorted(shapes):
            print("  " + f)
        print(f"-- (not counted) files that hold routes, some with rules beside them: {len(mixed)}")
        for f in sorted(mixed):
            print("  " + f)
    print(f"== import circles (groups of files that import one another): {len(sccs)}")
    for comp in sorted(sccs, key=len):
        members = set(comp)
        print(f"  -- {len(comp)} files: " + ", ".join(files[m] for m in comp))
        if not quiet:
            for m in comp:
                for t in sorted(graph[m] & members):
                    print(f"       {files[m]} -> {files[t]}")
    return 1 if findings or sccs else 0


if __name__ == "__main__":
    sys.exit(main())
