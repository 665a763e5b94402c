#!/usr/bin/env python3
"""tree_test: the tree keeps results as an index of current figures, not a notebook.

Checks, over the source tree given as the one argument (default: this file's
repository):
  1. bench/results/ holds at most 150 files and 3 MB (3 * 2**20 bytes).
  2. Every file in bench/results/ is cited by a row of bench/RESULTS.md (the
     row names the file, or a folder that holds it), and every path a row
     names exists.
  3. No other file cites a run by its path (`results/<date>_...`): code and
     docs cite a figure by its row, `bench/RESULTS.md <row>`, and every row so
     cited exists.
  4. docs/ holds pages and pictures only (.md, .svg), no run logs.
  5. README.md, what a newcomer reads first, has at most 300 lines.
  6. Each layer of docs/architecture.md includes only itself and the layers
     above it (LAYERS), and a family's worker/ folder, a plug-in of
     tuned-worker, also the worker's plug-in kit (KIT) and nothing else of
     server/worker/.
  7. The top level has the design card's folders (CARD): CMakeLists.txt,
     proto/, server/, client/, kernels_src/ (the built-in families' CUDA
     sources), db/, tests/, deploy/.
Prints each violation and exits 1 if there is any, else prints the counts and
"N passed, 0 failed".
"""
import os
import re
import subprocess
import sys

MAX_FILES = 150
MAX_BYTES = 3 * 2**20
MAX_README_LINES = 300
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".bundle", ".fleet", ".devdb"}
TEXT_EXT = {".cc", ".h", ".cu", ".cuh", ".c", ".cpp", ".py", ".sh", ".md", ".txt", ".toml",
            ".cmake", ".proto", ".yaml", ".yml", ".supp", ".in", ".json", ""}
# The layers of docs/architecture.md: a file under the first prefix that
# matches its path may include project headers under the prefixes listed.
LAYERS = [
    ("core/", ("core/",)),
    ("families/spec/", ("core/", "families/spec/")),
    ("families/", ("core/", "families/")),
    ("db/", ("core/", "db/")),
    ("server/common/", ("core/", "server/common/")),
    ("server/search/", ("core/", "families/", "server/common/", "server/search/")),
    ("server/worker/", ("core/", "families/", "server/common/", "server/worker/")),
    ("server/", ("core/", "families/", "db/", "server/")),
    ("client/", ("core/", "families/", "client/")),
]
# The top level that the design card names: a file (no slash) or a folder (a slash).
CARD = ("CMakeLists.txt", "proto/", "server/", "client/", "kernels_src/", "db/", "tests/", "deploy/")
PLUGIN = re.compile(r"^families/[^/]+/worker/")
# What a plug-in may include of server/worker/: the problem interface, the
# buffers and checked calls, and the fp64 check of a result.
KIT = ("server/worker/problem.h", "server/worker/buffers.h", "server/worker/fp64_check.h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
INCLUDE_DIRS = ("", "core/include/", "client/include/")  # where a quoted include is found
RUN_PATH = re.compile(r"20\d\d-\d\d-\d\d_(?:h100|h200|cpu2)")
ROW_CITE = re.compile(r"bench/RESULTS\.md\s+`?([a-z0-9]+(?:-[a-z0-9]+)*)`?")


def walk(root, rel=""):
    """The paths (relative to root, '/'-separated) of the files under root/rel: git's
    tracked and untracked files where root is a work tree (ignored ones left out),
    else every file but build folders'."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard", "-z", "--", rel or "."],
                             capture_output=True, check=True).stdout
        return [p for p in out.decode().split("\0")
                if p and os.path.isfile(os.path.join(root, p))]
    except (OSError, subprocess.CalledProcessError):
        pass
    paths = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, rel)):
        top = os.path.normpath(dirpath) == os.path.normpath(root)
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not (top and d.startswith("build"))]
        paths += [os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                  for f in filenames]
    return paths


def rows_and_cited_paths(results_md):
    """The row ids of RESULTS.md's tables and the bench/-relative paths they name."""
    rows, paths = set(), set()
    for line in results_md.splitlines():
        m = re.match(r"\|\s*`([a-z0-9-]+)`\s*\|", line)
        if not m:
            continue
        rows.add(m.group(1))
        for p in re.findall(r"`(results/[^`]+)`", line):
            paths.add(p.rstrip("/") + ("/" if p.endswith("/") else ""))
    return rows, paths


def layer_errors(root):
    """Includes of project headers that climb back up the layers (LAYERS)."""
    errors = []
    for f in walk(root):
        if os.path.splitext(f)[1] not in (".cc", ".h", ".cuh", ".c", ".cpp"):
            continue
        layer = next((allowed for prefix, allowed in LAYERS if f.startswith(prefix)), None)
        if layer is None:
            continue
        if PLUGIN.match(f):
            layer += KIT
        try:
            lines = open(os.path.join(root, f), encoding="utf-8").read().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = next((d + m.group(1) for d in INCLUDE_DIRS
                           if os.path.isfile(os.path.join(root, d + m.group(1)))), None)
            if target is not None and not target.startswith(layer):
                errors.append(f"{f}:{n} includes {target}, which its layer may not include "
                              "(docs/architecture.md)")
    return errors


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.join(os.path.dirname(__file__), ".."))
    errors = []
    checks = 0

    results_md = open(os.path.join(root, "bench/RESULTS.md"), encoding="utf-8").read()
    rows, cited = rows_and_cited_paths(results_md)
    files = sorted(walk(root, "bench/results"))

    checks += 1
    size = sum(os.path.getsize(os.path.join(root, f)) for f in files)
    if len(files) > MAX_FILES or size > MAX_BYTES:
        errors.append(f"bench/results holds {len(files)} files and {size} bytes; "
                      f"the budget is {MAX_FILES} files and {MAX_BYTES} bytes")

    checks += 1
    for f in files:
        rel = f[len("bench/"):]
        if not any(rel == c or (c.endswith("/") and rel.startswith(c)) for c in cited):
            errors.append(f"{f} is cited by no row of bench/RESULTS.md")
    for c in sorted(cited):
        if not os.path.exists(os.path.join(root, "bench", c)):
            errors.append(f"bench/RESULTS.md names {c}, which does not exist")

    checks += 1
    for f in walk(root):
        if f.startswith("bench/results/") or f in ("bench/RESULTS.md", "tests/tree_test.py"):
            continue
        if os.path.splitext(f)[1] not in TEXT_EXT:
            continue
        try:
            text = open(os.path.join(root, f), encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if RUN_PATH.search(line):
                errors.append(f"{f}:{n} cites a run by its path; cite its bench/RESULTS.md row")
            for row in ROW_CITE.findall(line):
                if row not in rows:
                    errors.append(f"{f}:{n} cites bench/RESULTS.md row {row}, which does not exist")

    checks += 1
    for f in walk(root, "docs"):
        if os.path.splitext(f)[1] not in (".md", ".svg"):
            errors.append(f"{f}: docs/ holds pages and pictures only")

    checks += 1
    readme_lines = open(os.path.join(root, "README.md"), encoding="utf-8").read().count("\n")
    if readme_lines > MAX_README_LINES:
        errors.append(f"README.md has {readme_lines} lines; at most {MAX_README_LINES} "
                      "(the rest belongs in docs/)")

    checks += 1
    errors += layer_errors(root)

    checks += 1
    for entry in CARD:
        path = os.path.join(root, entry.rstrip("/"))
        if not (os.path.isdir(path) if entry.endswith("/") else os.path.isfile(path)):
            errors.append(f"the top level has no {entry} (the design card's layout)")

    for e in errors:
        print("tree_test:", e)
    print(f"tree_test: bench/results {len(files)} files, {size} bytes; {len(rows)} rows")
    print(f"{checks - bool(errors)} passed, {int(bool(errors))} failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
