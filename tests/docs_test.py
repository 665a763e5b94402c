#!/usr/bin/env python3
"""ctest docs_test: the code blocks of README.md and docs/*.md, run or
checked as their info string says (docs/development.md, "Docs that run"):

  sh        run here, in a scratch copy of the tree, against a compile-only
            daemon (one is started for a block that calls tunectl without
            starting tuned); the block must exit 0, and each `# prints: TEXT`
            comment's TEXT must be in its output (a block two docs share
            runs once)
  sh gpu    needs the GPU machine; sh host: a command for a host of its own
            (root, systemd, a container engine, minutes of build); both only
            checked: `bash -n`, and each path of the tree they name exists
  python    compiled, and every use of the `tuned` package checked against
            the package as the README's install line installs it: names, and
            each call's arguments bound to the function's signature; then
            run (the venv's interpreter) on the stand-in GPU
            (client/python/tests/docs_stand_in.py: torch's "cuda" is the
            CPU, the CUDA driver cuda_fake.Emulator) against a compile-only
            daemon, and must exit 0. A block that uses torch runs where
            torch is installed (scripts/deps.sh installs Debian's
            python3-torch), and is only checked elsewhere (the test says so;
            under scripts/test.sh, TUNED_REQUIRE_TORCH=1, it fails instead)
  python gpu  needs the GPU machine (a model's GPU time, torch.compile, a
            spec kernel that passed its check): checked only, as above
  cpp       compiled and linked against the installed package
            (`cmake --install` into a temporary prefix, `find_package(tuned)`);
            a block of statements is main's body, a block of functions gets
            an empty main
  toml      parsed; `toml file=PATH`: the text of PATH, byte for byte;
            `toml same=PATH`: the same keys and values as PATH (comments aside)
  text      not run: output, signatures, a fragment of a file; a SUMMARY
            line in it must be one of a recorded run (bench/results/)

Any other info string fails the test. An indented block (no info string)
is taken as toml where it parses as TOML, as python where it parses as
Python and names tuned or torch, else as sh. A path of the
tree named in a block or an inline code span must exist. Figures read from
the binary: a `<!-- value: NAME -->` comment before a number of the prose
(NAME: compile-ahead, the size of the compile-ahead set as `tunectl device
--json` reports it).

Usage: docs_test.py SOURCE_DIR BUILD_DIR [DOC.md ...]"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

SRC, BUILD = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
DOCS = sys.argv[3:] or ["README.md"] + sorted(str(p.relative_to(SRC)) for p in (SRC / "docs").glob("*.md"))
BLOCK_TIMEOUT = 180  # seconds a shell block may take (a compile-only sweep is a few)
# The tree's top folders, less the build folders (build/, build-fuzz/: what a
# path under them names may not be built yet; scripts/test.sh builds the fuzz
# targets while this test runs), as tree_test.py leaves them out.
TOP = sorted(p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith(".")
             and not p.name.startswith("build"))
PATH_RE = re.compile(r"(?<![\w./-])(?:\./)?((?:%s)/[\w.*/+@-]*)" % "|".join(map(re.escape, TOP)))
failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")
    print(f"FAIL {where}: {message}", flush=True)


class Block:
    def __init__(self, doc, line, info, text):
        self.doc, self.line, self.text = doc, line, text
        words = info.split()
        self.lang = words[0] if words else ""
        self.attrs = dict(w.split("=", 1) if "=" in w else (w, True) for w in words[1:])

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def guess(body):
    """The info string of an indented block: toml where it parses as TOML,
    python where it parses as Python and names tuned or torch, else sh."""
    try:
        tomllib.loads(body)
        return "toml"
    except tomllib.TOMLDecodeError:
        pass
    try:
        compile(body, "block", "exec")
        if re.search(r"\b(tuned|torch)\.", body):
            return "python"
    except SyntaxError:
        pass
    return "sh"


def parse(doc):
    """The code blocks of `doc` and its prose with the blocks taken out. A
    fenced block's kind is its info string; an indented block's is guessed."""
    lines = (SRC / doc).read_text().split("\n")
    blocks, prose, i = [], [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+|~~~+)\s*(.*)$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(m.group(2)):
                j += 1
            indent = len(m.group(1))
            body = "\n".join(l[indent:] for l in lines[i + 1:j])
            blocks.append(Block(doc, i + 1, m.group(3), body + "\n"))
            prose.append("")
            i = j + 1
            continue
        if (lines[i].startswith("    ") and lines[i].strip() and (i == 0 or not lines[i - 1].strip())
                and not re.match(r"^\s*([-*+]|\d+\.)\s", lines[i])):
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            if k < 0 or not re.match(r"^\s*([-*+]|\d+\.)\s|^\s{2,}\S", lines[k]):
                # An indented block (not a list's continuation): its kind guessed.
                j = i
                while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                    j += 1
                while not lines[j - 1].strip():
                    j -= 1
                body = "\n".join(l[4:] for l in lines[i:j]) + "\n"
                blocks.append(Block(doc, i, guess(body), body))
                prose.extend([""] * (j - i))
                i = j
                continue
        prose.append(lines[i])
        i += 1
    return blocks, "\n".join(prose)


def check_paths(where, text, allow_outside):
    for m in PATH_RE.finditer(text):
        path = m.group(1).rstrip(".,;:)")
        if "<" in path or path.endswith("/.."):
            continue
        # A build output names its source: examples/sgemm_example, .cc.
        if not glob.glob(str(SRC / path) + "*"):
            fail(where, f"names {path}, which is not in the tree")
    if not allow_outside:
        for m in re.finditer(r"(?<![\w.])\.\./[\w./-]+", text):
            fail(where, f"names {m.group(0)}, a path outside the repository")


# ---- shell blocks -----------------------------------------------------------

PRELUDE = r"""set -eo pipefail
__docs_pids=()
__docs_wait() {  # a daemon started in the background: wait until it serves
  local pid=$1 i
  __docs_pids+=("$pid")
  for i in $(seq 300); do
    compgen -G "$XDG_RUNTIME_DIR/tuned/*.sock" > /dev/null && return 0
    kill -0 "$pid" 2> /dev/null || { echo "docs_test: the daemon exited" >&2; return 1; }
    sleep 0.1
  done
  echo "docs_test: the daemon did not start in 30 s" >&2; return 1
}
__docs_stop() {
  local p
  for p in "${__docs_pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  for p in "${__docs_pids[@]}"; do wait "$p" 2> /dev/null || true; done
}
trap __docs_stop EXIT
"""
STARTS_DAEMON = re.compile(r"^\s*(?:\S+/)?tuned\s[^#]*&\s*(#.*)?$")


def scratch_tree(root):
    """A tree to run blocks in: the source's folders linked, client/python
    copied (pip writes its build there), build/ the build directory."""
    repo = root / "repo"
    repo.mkdir()
    for p in SRC.iterdir():
        if p.name in ("build", "client") or p.name.startswith(".git"):
            continue
        (repo / p.name).symlink_to(p)
    (repo / "client").mkdir()
    for p in (SRC / "client").iterdir():
        if p.name == "python":
            shutil.copytree(p, repo / "client" / "python",
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        else:
            (repo / "client" / p.name).symlink_to(p)
    (repo / "build").symlink_to(BUILD)
    return repo


def run_sh(block, repo, env, n, python=None):
    """Runs a shell block; or, with `python` (an interpreter), a Python block
    after `import docs_stand_in` (client/python/tests/docs_stand_in.py), both
    against a compile-only daemon started for them."""
    lines = []
    starts = False
    for line in ([] if python else block.text.split("\n")):
        lines.append(line)
        if STARTS_DAEMON.match(line):
            lines.append("__docs_wait $!")
            starts = True
    script = PRELUDE
    if not starts and (python or re.search(r"\btunectl\b", block.text)):
        script += ('tuned --gpu 0 > "$XDG_RUNTIME_DIR/tuned.log" 2>&1 &\n__docs_wait $!\n')
    if python:
        code = Path(env["XDG_RUNTIME_DIR"]).parent / f"block{n}.py"
        code.write_text(f"import docs_stand_in  # noqa: F401\n# line {block.line + 1} of {block.doc}\n"
                        + block.text)
        lines = [f'PYTHONPATH="{SRC}/client/python/tests${{PYTHONPATH:+:$PYTHONPATH}}" "{python}" "{code}"']
    script += "\n".join(lines)
    run = Path(env["XDG_RUNTIME_DIR"]).parent / f"run{n}"
    run.mkdir()
    block_env = dict(env, XDG_RUNTIME_DIR=str(run))
    t0 = time.monotonic()
    try:
        p = subprocess.run(["bash", "-c", script], cwd=repo, env=block_env, capture_output=True,
                           text=True, timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        fail(block.where, f"did not end in {BLOCK_TIMEOUT} s:\n{e.stdout}\n{e.stderr}")
        return
    out = p.stdout + p.stderr
    print(f"  {block.where}: {'python' if python else 'sh'}, exit {p.returncode}, "
          f"{time.monotonic() - t0:.1f} s", flush=True)
    if p.returncode != 0:
        fail(block.where, f"exit {p.returncode}:\n{out[-3000:]}")
        return
    for want in re.findall(r"#\s*prints:\s*(.+?)\s*$", block.text, re.M):
        if want not in p.stdout:
            fail(block.where, f"prints no {want!r}; it printed:\n{p.stdout[-2000:]}")


def check_sh(block):
    p = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True)
    if p.returncode != 0:
        fail(block.where, f"bash -n: {p.stderr.strip()}")


# ---- Python blocks ----------------------------------------------------------

PY_CHECKER = r'''
import ast, importlib, importlib.util, inspect, json, sys
import tuned

def ast_signature(func):
    """inspect.Signature of a function definition read from source (for
    tuned's modules that need torch to import)."""
    a = func.args
    params = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + a.defaults
    for arg, d in zip(pos, defaults):
        kind = (inspect.Parameter.POSITIONAL_ONLY if arg in a.posonlyargs
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params.append(inspect.Parameter(arg.arg, kind, default=inspect.Parameter.empty if d is None else 0))
    if a.vararg:
        params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY,
                                        default=inspect.Parameter.empty if d is None else 0))
    if a.kwarg:
        params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


blocks = json.load(open(sys.argv[1]))
errors = []

def source_def(module, name):
    """A top-level def or class of a tuned module that needs torch."""
    path = importlib.util.find_spec(module).origin
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
    return None

def resolve(chain):
    """The object a chain of names from tuned denotes: tuned.Client.sweep."""
    obj = tuned
    for i, name in enumerate(chain):
        try:
            obj = getattr(obj, name)
        except ImportError:  # tuned.matmul, tuned.linear: tuned.ops needs torch
            node = source_def("tuned.ops", name) if i == 0 else None
            if node is None:
                raise AttributeError(".".join(["tuned"] + chain[:i + 1]))
            return node
    return obj

def signature(obj):
    if isinstance(obj, ast.FunctionDef):
        return ast_signature(obj)
    if inspect.isclass(obj):
        return inspect.signature(obj.__init__).replace(
            parameters=list(inspect.signature(obj.__init__).parameters.values())[1:])
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None

for where, code in blocks:
    tree = ast.parse(code)
    types = {}  # a name assigned tuned.X(...): its class, as a chain

    def chain_of(node):
        """The chain from tuned that `node` names: tuned.Client() -> [Client]
        (a call of a class is its instance), c.best -> [Client, best]."""
        if isinstance(node, ast.Name):
            return [] if node.id == "tuned" else types.get(node.id)
        if isinstance(node, ast.Attribute):
            base = chain_of(node.value)
            return None if base is None else base + [node.attr]
        if isinstance(node, ast.Call):
            base = chain_of(node.func)
            if base is None:
                return None
            try:
                return base if inspect.isclass(resolve(base)) else None
            except AttributeError:
                return None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            c = chain_of(node.value)
            if c is not None and isinstance(node.value, ast.Call):
                types[node.targets[0].id] = c
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            c = chain_of(node)
            if c:
                try:
                    resolve(c)
                except AttributeError:
                    errors.append(f"{where}+{node.lineno - 1}: no tuned.{'.'.join(c)}")
        if isinstance(node, ast.Call):
            c = chain_of(node.func)
            if not c:
                continue
            try:
                obj = resolve(c)
            except AttributeError:
                continue  # reported above
            sig = signature(obj)
            if sig is None or any(isinstance(a, ast.Starred) for a in node.args) or \
                    any(k.arg is None for k in node.keywords):
                continue
            self_arg = [None] if len(c) > 1 and inspect.isclass(resolve(c[:-1])) \
                and not isinstance(inspect.getattr_static(resolve(c[:-1]), c[-1]), (staticmethod, classmethod)) else []
            try:
                sig.bind(*self_arg, *([0] * len(node.args)), **{k.arg: 0 for k in node.keywords})
            except TypeError as e:
                errors.append(f"{where}+{node.lineno - 1}: tuned.{'.'.join(c)}{sig}: {e}")
print("\n".join(errors))
sys.exit(1 if errors else 0)
'''


def check_python(blocks, python, env):
    for b in blocks:
        try:
            compile(b.text, b.where, "exec")
        except SyntaxError as e:
            fail(b.where, f"not Python: {e}")
    if not blocks:
        return
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "blocks.json").write_text(json.dumps([(b.where, b.text) for b in blocks]))
        (Path(d) / "check.py").write_text(PY_CHECKER)
        p = subprocess.run([python, str(Path(d) / "check.py"), str(Path(d) / "blocks.json")], capture_output=True, text=True, env=env)
        for line in (p.stdout + p.stderr).strip().split("\n"):
            if line:
                fail("python", line)
        print(f"  {len(blocks)} Python blocks checked with {python}", flush=True)


def run_python(blocks, repo, env, python):
    """Runs each Python block but the GPU ones on the stand-in GPU
    (docs_stand_in.py) against a compile-only daemon; where torch is not
    installed, those that use it are only checked, and the test says so
    (a failure where TUNED_REQUIRE_TORCH=1: the test command installed it)."""
    has_torch = subprocess.run([python, "-c", "import torch"], env=env, capture_output=True).returncode == 0
    if not has_torch and os.environ.get("TUNED_REQUIRE_TORCH") == "1":
        fail("python", f"{python} cannot import torch, which scripts/deps.sh installs (python3-torch): "
             "the blocks that use torch would only be checked")
    for n, b in enumerate(blocks):
        if "gpu" in b.attrs:
            continue
        if not has_torch and re.search(r"\btorch\b", b.text):
            print(f"  {b.where}: python, not run: torch is not installed (only checked)", flush=True)
            continue
        env["XDG_STATE_HOME"] = str(Path(env["XDG_RUNTIME_DIR"]).parent / "state" / f"python{n}")
        run_sh(b, repo, env, f"python{n}", python=python)


# ---- C++ blocks -------------------------------------------------------------

def check_cpp(blocks, root, env):
    if not blocks:
        return
    prefix, proj = root / "prefix", root / "cpp"
    p = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("cpp", f"cmake --install: {p.stderr[-2000:]}")
        return
    proj.mkdir()
    cmake = ["cmake_minimum_required(VERSION 3.25)", "project(docs_snippets CXX)",
             "set(CMAKE_CXX_STANDARD 20)", "find_package(tuned REQUIRED)"]
    for i, b in enumerate(blocks):
        text = b.text
        if re.search(r"^\}", text, re.M) and not re.search(r"\bmain\s*\(", text):
            # Definitions: a function of the block, compiled with an empty main.
            text = (f"#include <tuned/client.h>\n#include <tuned/kernel.h>\n#line {b.line + 1} \"{b.doc}\"\n"
                    f"{text}\nint main() {{ return 0; }}\n")
        elif not re.search(r"\bmain\s*\(", text):
            includes = "".join(l + "\n" for l in text.split("\n") if l.startswith("#include"))
            body = "".join(l + "\n" for l in text.split("\n") if not l.startswith("#include"))
            text = (f"#include <tuned/client.h>\n#include <tuned/kernel.h>\n{includes}"
                    f"int main() {{\n#line {b.line + 1} \"{b.doc}\"\n{body}  return 0;\n}}\n")
        (proj / f"block{i}.cc").write_text(text)
        cmake += [f"add_executable(block{i} block{i}.cc)", f"target_link_libraries(block{i} PRIVATE tuned::client)"]
    (proj / "CMakeLists.txt").write_text("\n".join(cmake) + "\n")
    compiler = env.get("DOCS_TEST_CXX", "")
    p = subprocess.run(["cmake", "-S", str(proj), "-B", str(proj / "b"), f"-DCMAKE_PREFIX_PATH={prefix}",
                        "-DCMAKE_BUILD_TYPE=Release"] + ([f"-DCMAKE_CXX_COMPILER={compiler}"] if compiler else []),
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        fail("cpp", f"configuring against the installed package:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return
    for i, b in enumerate(blocks):
        p = subprocess.run(["cmake", "--build", str(proj / "b"), "--target", f"block{i}"],
                           capture_output=True, text=True, env=env)
        print(f"  {b.where}: cpp, exit {p.returncode}", flush=True)
        if p.returncode != 0:
            fail(b.where, f"does not build against the installed package:\n{(p.stdout + p.stderr)[-3000:]}")


# ---- figures read from the binary --------------------------------------------

def values(env, repo):
    """NAME -> the figure the binary gives."""
    out = {}
    run = Path(env["XDG_RUNTIME_DIR"]).parent / "values"
    run.mkdir()
    e = dict(env, XDG_RUNTIME_DIR=str(run))
    # The compile-ahead set's size is known when the daemon starts: its
    # compiling is not waited for (the daemon stops at once).
    script = PRELUDE + ('tuned --gpu 0 --compile-ahead --db "$XDG_RUNTIME_DIR/v.db" > "$XDG_RUNTIME_DIR/log" 2>&1 &\n'
                        '__docs_wait $!\nfor i in $(seq 100); do\n'
                        '  t=$(tunectl device --json | python3 -c "import json,sys; print(json.load(sys.stdin).get(\'compile_ahead_total\', 0))")\n'
                        '  [ "$t" != 0 ] && break; sleep 0.2; done\necho "$t"\n')
    p = subprocess.run(["bash", "-c", script], cwd=repo, env=e, capture_output=True, text=True, timeout=120)
    if p.returncode == 0 and p.stdout.strip().isdigit() and p.stdout.strip() != "0":
        out["compile-ahead"] = int(p.stdout.strip())
    else:
        fail("values", f"tunectl device gave no compile-ahead total: {p.stdout}{p.stderr}")
    return out


def check_values(doc, prose, known):
    for m in re.finditer(r"<!--\s*value:\s*([\w-]+)\s*-->\s*([\d,]+)", prose):
        name, shown = m.group(1), int(m.group(2).replace(",", ""))
        if name not in known:
            fail(doc, f"value {name}: no such figure (docs_test.py values())")
        elif shown != known[name]:
            fail(doc, f"value {name} is {known[name]:,}; the doc says {m.group(2)}")


def main():
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="docs_test."))
    try:
        repo = scratch_tree(root)
        home = root / "home"
        home.mkdir()
        # A user's environment, but the priority of the daemons' compiles
        # (scripts/test.sh: normal, so that the tests beside do not starve them).
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TUNED_") or k == "TUNED_WORK_PRIORITY"}
        env.update(HOME=str(home), XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(root / "state"),
                   # A Debian user's PATH (no pyenv or other python3 before Debian's).
                   PATH=f"{repo}/build/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   PIP_DISABLE_PIP_VERSION_CHECK="1",
                   PIP_NO_INDEX="1", PIP_ROOT_USER_ACTION="ignore",
                   # The daemon of the blocks: compile-only, with the stand-in worker
                   # (tests/fake_worker.cc: every kernel compiled at once, none right,
                   # the baseline timed), so that a sweep ends in a second and `best`
                   # serves the baseline as on a GPU where no kernel beats it.
                   TUNED_COMPILE_ONLY="true", TUNED_WORKER=str(BUILD / "tests" / "fake_worker"),
                   TUNED_LOG_LEVEL="warn")
        (root / "run").mkdir()
        known = values(env, repo)
        python_blocks, cpp_blocks, counts, ran = [], [], {}, set()
        recorded = "".join(p.read_text(errors="replace") for p in (SRC / "bench" / "results").rglob("*")
                           if p.is_file() and p.suffix in ("", ".txt", ".log", ".md"))
        for doc in DOCS:
            blocks, prose = parse(doc)
            check_paths(doc, "\n".join(re.findall(r"`([^`\n]+)`", prose)), doc == "docs/development.md")
            check_values(doc, prose, known)
            for n, b in enumerate(blocks):
                kind = b.lang + "".join(f" {k}" for k in b.attrs)
                counts[kind] = counts.get(kind, 0) + 1
                if b.lang in ("sh", "python", "cpp"):
                    check_paths(b.where, b.text, doc == "docs/development.md")
                if b.lang == "sh":
                    check_sh(b)
                    if not (b.attrs.keys() & {"gpu", "host"}) and b.text not in ran:
                        ran.add(b.text)  # a block of two docs runs once
                        env["XDG_STATE_HOME"] = str(root / "state" / doc.replace("/", "_"))
                        run_sh(b, repo, env, f"{doc.replace('/', '_')}{n}")
                elif b.lang == "python":
                    python_blocks.append(b)
                elif b.lang == "cpp":
                    cpp_blocks.append(b)
                elif b.lang == "toml":
                    try:
                        tomllib.loads(b.text)
                    except tomllib.TOMLDecodeError as e:
                        fail(b.where, f"not TOML: {e}")
                        continue
                    if "file" in b.attrs and (SRC / b.attrs["file"]).read_text() != b.text:
                        fail(b.where, f"is not the text of {b.attrs['file']}")
                    if "same" in b.attrs and tomllib.loads((SRC / b.attrs["same"]).read_text()) != \
                            tomllib.loads(b.text):
                        fail(b.where, f"does not hold what {b.attrs['same']} holds (comments aside)")
                elif b.lang == "text":
                    for line in re.findall(r"^SUMMARY .*$", b.text, re.M):
                        if line not in recorded:
                            fail(b.where, f"{line!r} is in no recorded run (bench/results/)")
                else:
                    fail(b.where, f"info string {b.lang!r}: one of sh, python, cpp, toml, text")
        # Python: the interpreter of the venv that the README's install line made.
        venvs = sorted(home.glob(".venv/*/bin/python")) + sorted(home.glob("*/bin/python"))
        if python_blocks and not venvs:
            fail("python", "no venv with tuned under $HOME: the README's install line did not run")
        elif python_blocks:
            check_python(python_blocks, str(venvs[0]), env)
            run_python(python_blocks, repo, env, str(venvs[0]))
        check_cpp(cpp_blocks, root, env)
        print(f"docs_test: blocks {json.dumps(counts, sort_keys=True)}; "
              f"{time.monotonic() - t0:.0f} s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(f"docs_test: {len(failures)} failures", file=sys.stderr)
        sys.exit(1)
    print("docs_test: every block ran or checked")


if __name__ == "__main__":
    main()
