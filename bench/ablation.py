#!/usr/bin/env python3
"""Ablation table from `tunectl results --top 0` dumps (bench/suite.sh DUMP_RESULTS=1).

For each shape: the best time of each design step (naive ... warp tiling with
every technique, split-K, streamed B, sliced-K, stream-K, ptxas register usage
level), as a ratio to the overall winner. Measurements of clear losers have
fewer repetitions (server/worker/measure.cc), so small differences among them
are noise; the winner and those within 5% were re-timed interleaved with
cuBLAS.
With --space FILE (`tunebench --family sgemm --list-space`: the names of
Family::Space()), two more rows split the static space from the neighbours
the jobs' refinement measured outside it (server/search/strategy.cc, kRefinePasses).
Usage: bench/ablation.py [--space FILE] RESULTS_FILE...
"""
import re
import sys

# (label, predicate over the parsed config name), in the order of the table.
STEPS = [
    ("naive", lambda c: c["kind"] == "naive"),
    ("coalesced", lambda c: c["kind"] == "coalesced"),
    ("smem tiling, 1 output/thread", lambda c: c["kind"] == "tiled" and c["tm"] * c["tn"] == 1),
    ("1-D block tiling", lambda c: c["kind"] == "tiled" and c["tn"] == 1 and c["tm"] > 1),
    ("2-D block tiling (kind 2, best)", lambda c: c["kind"] == "tiled"),
    ("warp tiling, no split/sliced/stream-K, best", lambda c: plain(c)),
    ("  ... with STAGES 2", lambda c: plain(c) and c["s"] == 2),
    ("  ... with STAGES 3-4", lambda c: plain(c) and 2 < c["s"] <= 4),
    ("  ... with STAGES 6-8", lambda c: plain(c) and c["s"] > 4),
    ("  ... with BK 8-16", lambda c: plain(c) and c["bk"] <= 16),
    ("  ... with BK 32-64", lambda c: plain(c) and c["bk"] >= 32),
    ("  ... with GROUP 1 (row-major blocks)", lambda c: plain(c) and c["g"] == 1),
    ("  ... with GROUP 8 (rasterized)", lambda c: plain(c) and c["g"] == 8),
    ("  ... with MINB 1", lambda c: plain(c) and c["b"] == 1),
    ("  ... with MINB 2", lambda c: plain(c) and c["b"] == 2),
    ("  ... with MINB 4", lambda c: plain(c) and c["b"] == 4),
    ("warp tiling + split-K, best", lambda c: c["kind"] == "warp" and c["sk"] > 1 and c["sl"] == 1),
    ("  ... B with the default L2 policy", lambda c: c["kind"] == "warp" and c["sk"] > 1 and c["sl"] == 1 and not c["sb"]),
    ("  ... B streamed (L2 evict-first)", lambda c: c["kind"] == "warp" and c["sb"]),
    ("warp tiling + sliced-K, best", lambda c: c["kind"] == "warp" and c["sk"] == 1 and c["sl"] > 1),
    ("warp tiling + sliced-K + split-K, best", lambda c: c["kind"] == "warp" and c["sk"] > 1 and c["sl"] > 1),
    ("warp tiling + stream-K, best", lambda c: c["kind"] == "warp" and c["st"]),
    ("warp tiling, ptxas register usage level 5", lambda c: c["kind"] == "warp" and c["rul"] == 5),
    ("warp tiling, ptxas register usage level 10", lambda c: c["kind"] == "warp" and c["rul"] == 10),
    ("static space (Space()), best", lambda c: SPACE and c["name"] in SPACE),
    ("refinement neighbours outside it, best", lambda c: SPACE and c["name"] not in SPACE),
    ("overall winner", lambda c: True),
]

# Names of Space() (--space); empty: the two rows above are left out.
SPACE = set()


def plain(c):
    """A warp-tiled config with neither split-K, sliced-K nor stream-K."""
    return c["kind"] == "warp" and c["sk"] == 1 and c["sl"] == 1 and not c["st"]


def parse(name):
    c = {"name": name, "kind": name.split("_")[1], "tm": 1, "tn": 1, "bk": 0, "s": 0, "sk": 1, "sl": 1, "g": 1,
         "b": 1, "sb": "_sb" in name, "st": "_st" in name, "rul": 5}
    m = re.search(r"_(\d+)x(\d+)x(\d+)_(\d+)x(\d+)", name)
    if m:
        c["bk"], c["tm"], c["tn"] = int(m.group(3)), int(m.group(4)), int(m.group(5))
    for key, pat in (("s", r"_s(\d+)"), ("sk", r"_sk(\d+)"), ("sl", r"_sl(\d+)"), ("g", r"_g(\d+)"),
                     ("b", r"_b(\d+)"), ("rul", r"_r(\d+)")):
        m = re.search(pat, name)
        if m:
            c[key] = int(m.group(1))
    return c


def main():
    args = sys.argv[1:]
    if args[:1] == ["--space"]:
        SPACE.update(line.strip() for line in open(args[1]) if line.strip())
        args = args[2:]
    for path in args:
        shape = re.search(r"results_sgemm_(\d+x\d+x\d+)", path).group(1)
        rows = []
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and f[2] == "ok" and f[1].startswith("sgemm_"):
                rows.append((f[1], float(f[3]), parse(f[1])))
        if not rows:
            continue
        best = min(ms for _, ms, _ in rows)
        print(f"\n{shape}: {len(rows)} configs OK")
        print(f"{'design':44s} {'best config':45s} {'ms':>9s} {'vs winner':>9s}")
        for label, pred in STEPS:
            sel = [(ms, n) for n, ms, c in rows if pred(c)]
            if not sel:
                continue
            ms, n = min(sel)
            print(f"{label:44s} {n:45s} {ms:9.4f} {best / ms:8.2f}x")


if __name__ == "__main__":
    main()
