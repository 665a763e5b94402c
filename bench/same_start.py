#!/usr/bin/env python3
"""The same-start speed check: two suite logs of one machine start, the tree
before a change and after it, compared shape by shape.

  python3 bench/same_start.py NAME COLUMN BEFORE.log AFTER.log

COLUMN is the 0-based field of a shape's line that holds the ratio against
cuBLAS ("1.12x"): 4 in tunebench's side-by-side table (bench/suite.sh), 5 in
gemm16bench's (bench/gemm16.sh). Prints a line per shape (both ratios, the
change in %, whether the same config won) and ends with
  SUMMARY same_start NAME max_change=<|after/before - 1|, largest> geomean_before= geomean_after= shapes=
Exits 1 where the logs do not hold the same shapes.
"""
import math
import re
import sys


def ratios(path, column):
    """{shape: (ratio, config)} of a suite log's table lines."""
    rows = {}
    with open(path) as f:
        for line in f:
            if re.match(r"^\d+x\d+x\d+ ", line):
                fields = line.split()
                rows[fields[0]] = (float(fields[column].rstrip("x")), fields[1])
    return rows


def main():
    name, column, before_log, after_log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    before, after = ratios(before_log, column), ratios(after_log, column)
    if not before or set(before) != set(after):
        sys.exit(f"same_start: the logs hold different shapes: {sorted(before)} / {sorted(after)}")
    print(f"{'shape':20s} {'before':>7s} {'after':>7s} {'change':>7s}  same config")
    changes = []
    for shape, (b, b_config) in before.items():
        a, a_config = after[shape]
        changes.append(a / b - 1)
        same = "yes" if a_config == b_config else f"no: {b_config} / {a_config}"
        print(f"{shape:20s} {b:6.2f}x {a:6.2f}x {100 * changes[-1]:+6.1f}%  {same}")
    geomean = lambda rows: math.exp(sum(math.log(r) for r, _ in rows.values()) / len(rows))
    print(f"SUMMARY same_start {name} max_change={max(abs(c) for c in changes):.3f} "
          f"geomean_before={geomean(before):.3f} geomean_after={geomean(after):.3f} shapes={len(before)}")


if __name__ == "__main__":
    main()
