#!/usr/bin/env python3
"""Markdown of bench/interleave.py's --json output, for bench/performance.sh: one row per
command with its median images/s and range over the rounds, and the medians (ranges) of
its same-round ratios to the columns' references.

usage: perf_table.py RATES.json [--col "HEADER=LABEL"] [--pair "HEADER=TEMPLATE"] ...
  --col:  a ratio to the command LABEL, for every row (e.g. "vs bare decode=bare")
  --pair: a ratio to the command named by TEMPLATE with {} replaced by what follows
          "stoker " in the row's label, for stoker's rows only (e.g.
          "vs DALI, same work=DALI {}": row "stoker basic" against "DALI basic")
"""
import argparse
import json
import statistics


def ratio_cell(xs, ys):
    rs = [x / y for x, y in zip(xs, ys) if x is not None and y]
    if not rs:
        return "-"
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}–{max(rs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rates")
    ap.add_argument("--col", action="append", default=[])
    ap.add_argument("--pair", action="append", default=[])
    a = ap.parse_args()
    with open(a.rates) as f:
        data = json.load(f)
    rates = {r["label"]: r["rates"] for r in data["runs"]}
    cols = [c.split("=", 1) for c in a.col]
    pairs = [p.split("=", 1) for p in a.pair]
    head = ["what", "images/s: median (range)"] + [h for h, _ in cols] + [h for h, _ in pairs] + ["command"]
    print("| " + " | ".join(head) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in cols + pairs) + (" | " if cols + pairs else "") + "--- |")
    for r in data["runs"]:
        label, xs = r["label"], r["rates"]
        ok = [x for x in xs if x is not None]
        rate = f"{statistics.median(ok):,.0f} ({min(ok):,.0f}–{max(ok):,.0f})" if ok else "failed"
        cells = [ratio_cell(xs, rates[ref]) if ref in rates and ref != label else ("1" if ref == label else "-")
                 for _, ref in cols]
        what = label[len("stoker "):] if label.startswith("stoker ") else None
        for _, tmpl in pairs:
            other = tmpl.replace("{}", what) if what is not None else None
            cells.append(ratio_cell(xs, rates[other]) if other in rates else "-")
        cmd = r["command"].replace("|", "\\|")
        print(f"| {label} | {rate} | " + " | ".join(cells) + (" | " if cells else "") + f"`{cmd}` |")


if __name__ == "__main__":
    main()
