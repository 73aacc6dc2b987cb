#!/usr/bin/env python3
"""Counts the structure issue 27 measures, for a source tree (default: src/zeroloss of this checkout):
string-key lookups (x["key"], x.get("key"), x.setdefault("key"), x.pop("key")), `.doc[` outside results/,
import cycles between modules, the largest files and functions. Prints JSON; `--per-file N` lists the N files
with the most string-key lookups. Standard library only: run it on any checkout (git archive REV src | tar -x)."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    pkg = root.name
    out = {}
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    assert pkg
    return out


def imports(name: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """Modules of the package this module imports (at any depth of the file: lazy imports count too)."""
    out = set()
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")
                up = up[:len(up) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in known else base)
    return {m for m in out if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
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
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def key_lookups(tree: ast.Module) -> int:
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
                node.slice.value, str):
            n += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "setdefault", "pop") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1] / "src" / "zeroloss"))
    ap.add_argument("--per-file", type=int, default=0)
    args = ap.parse_args()
    root = Path(args.root)
    mods = modules(root)
    trees = {m: ast.parse(p.read_text()) for m, p in mods.items()}
    graph = {m: imports(m, mods[m], trees[m], set(mods)) for m in mods}
    lookups = {str(mods[m].relative_to(root)): key_lookups(t) for m, t in trees.items()}
    doc_refs = {str(p.relative_to(root)): p.read_text().count(".doc[") for p in mods.values()
                if "results" not in p.relative_to(root).parts}
    funcs = []
    for m, t in trees.items():
        for node in ast.walk(t):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                funcs.append((node.end_lineno - node.lineno + 1, f"{mods[m].relative_to(root)}:{node.name}"))
    sizes = sorted(((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in mods.values()),
                   reverse=True)
    out = {"modules": len(mods), "string_key_lookups": sum(lookups.values()),
           "doc_subscripts_outside_results": sum(doc_refs.values()),
           "import_cycles": cycles(graph),
           "largest_files": sizes[:5], "files_over_500": sum(1 for n, _ in sizes if n > 500),
           "largest_functions": sorted(funcs, reverse=True)[:5],
           "functions_over_80": sum(1 for n, _ in funcs if n > 80)}
    if args.per_file:
        out["lookups_per_file"] = sorted(lookups.items(), key=lambda kv: -kv[1])[:args.per_file]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
