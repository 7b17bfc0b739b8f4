#!/usr/bin/env python3
"""Checks that src/'s folders depend on each other in one direction only.

Every `#include "..."` in src/ names a file; its folder is the dependency. The folder
graph must have no cycle, and each folder may use only the folders listed below (what
DESIGN.md section 2 says: core <- codecs/io/autoaug/shared <- ops <- pipeline, with
shared (CPU/GPU maths, depending on nothing) also under codecs; the CUDA
backend sees only the shared maths and its own headers; operators reach the GPU through
its API headers and src/ops/op_gpu.h, never the pipeline's internals).

usage: scripts/check_layers.py [ROOT]   (exit 1 with the offending includes listed)
"""
import os
import re
import sys

ALLOWED = {
    "core": set(),
    "shared": set(),
    # shared is a leaf (maths only); the CPU PNG decoder takes its pixel values from it, so
    # that the GPU PNG decoder's cannot drift from them (png_common.h's stk_png_store)
    "codecs": {"core", "shared"},
    "io": {"core"},
    "autoaug": {"core"},
    "cuda": {"shared"},
    "ops": {"core", "codecs", "io", "autoaug", "shared", "cuda"},
    "pipeline": {"core", "codecs", "io", "autoaug", "shared", "cuda", "ops"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def dependencies(src):
    """{folder: {dependency folder: [(file, include), ...]}} over src/."""
    deps = {}
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                if inc.startswith("stoker/"):
                    continue  # the public header
                target = os.path.normpath(os.path.join(path, inc))
                dep = os.path.relpath(target, src).split(os.sep)[0]
                if dep != folder:
                    deps.setdefault(folder, {}).setdefault(dep, []).append((f"{folder}/{name}", inc))
    return deps


def cycles(deps):
    """Folders on a cycle of the dependency graph (depth-first search)."""
    state, found = {}, set()

    def visit(node, stack):
        state[node] = 1
        for nxt in deps.get(node, {}):
            if state.get(nxt) == 1:
                found.update(stack[stack.index(nxt):] if nxt in stack else [nxt, node])
            elif not state.get(nxt):
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in deps:
        if not state.get(node):
            visit(node, [node])
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    deps = dependencies(os.path.join(root, "src"))
    problems = []
    for folder, uses in deps.items():
        allowed = ALLOWED.get(folder)
        if allowed is None:
            problems.append(f"src/{folder}/ is not in check_layers.py's table: say what it may use")
            continue
        for dep, where in uses.items():
            if dep not in allowed:
                problems += [f"{f}: includes \"{inc}\" (src/{folder}/ may not use src/{dep}/)" for f, inc in where]
    loop = cycles(deps)
    if loop:
        problems.append("folders on an include cycle: " + ", ".join(sorted(loop)))
    for p in problems:
        print("check_layers:", p)
    if not problems:
        print("check_layers: " + "; ".join(f"{k} <- {', '.join(sorted(v))}" for k, v in sorted(deps.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
