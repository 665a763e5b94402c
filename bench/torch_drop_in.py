#!/usr/bin/env python3
"""tuned.matmul / tuned.linear as drop-ins for torch.matmul: every shape of
the public suite, in every operand layout and math mode, tuned by the daemon
and then timed against torch in the same mode.

On the GPU machine, against a running daemon (bench/torch_drop_in.sh starts
one, installs the package and runs this):

    python3 bench/torch_drop_in.py --shapes .bundle/shapes.txt
        [--layouts nn,nt,tn,tt] [--modes ieee_fp32,fp32_accurate,tf32]
        [--reps 200] [--rounds 5] [--no-tune | --retune] [--budget 64]

For each (shape M N K, layout, mode):
  1. tune: a sweep of the problem (Client.sweep in that layout and mode),
     waited for (at most --sweep-timeout seconds, then cancelled); problems
     the daemon has tuned already (best's match exact) are not swept again
     unless --retune; --no-tune sweeps nothing and uses what the daemon has.
  2. inputs: random normal float32 (never zeros) in the layout: an operand
     "t" is the .t() of a contiguous tensor (A stored K x M, B stored N x K),
     so that tuned sees a transposed view and reads it without a copy.
  3. check: the relative Frobenius error of tuned's and torch's results
     against the fp64 product; tuned's must be within 3x torch's (+1e-7)
     (the daemon verifies 2x on its own inputs), else the line says WRONG.
  4. time: tuned.matmul(a, b, math=mode) (tuned.linear(a, w, math=mode) for
     "nt", w the (N, K) row-major weight) and torch.matmul(a, b) with
     torch.backends.cuda.matmul.allow_tf32 = (mode == "tf32") (fp32_accurate
     against torch fp32, TF32 off), each as a stream of --reps calls on one
     CUDA stream between two CUDA events, the two alternating block by block
     for --rounds rounds (tuned first in even rounds, torch first in odd
     ones); the median block over --reps is the time of a call.
One line per problem: both times, ratio = torch_ms / tuned_ms (above 1:
tuned is faster), the errors and what the daemon serves. The last line:

    SUMMARY torch_drop_in shapes=12 layouts=4 modes=3 slower_than_torch=<pairs under 0.97x>
        geomean_ieee=<x> geomean_fp32_accurate=<x> geomean_tf32=<x>

(a mode with no measured pair: nan). Exit 1 if a pair was not measured
(nothing tuned near it, a failure) or WRONG, after the SUMMARY.

--dry-run: no GPU and no daemon: the whole flow on the CPU on shapes scaled
down (each dimension to at most --dry-max), with tuned's call replaced by
torch's own in the layout, timed with time.perf_counter: checks the
plumbing, the layouts' operands, the lines and the SUMMARY's form.
"""

import argparse
import math
import re
import statistics
import sys
import time

MODES = ("ieee_fp32", "fp32_accurate", "tf32")
LAYOUTS = ("nn", "nt", "tn", "tt")
SLOW = 0.97  # a ratio under this counts as slower than torch


def read_shapes(path):
    """The (M, N, K) of each line of `path` ("M N K"; blank lines and lines
    from "#" on are skipped). ValueError naming the line for another form."""
    shapes = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            try:
                dims = tuple(int(p) for p in parts)
            except ValueError:
                dims = ()
            if len(dims) != 3 or min(dims) < 1:
                raise ValueError(f"{path}:{number}: a shape is 'M N K' (positive integers), "
                                 f"not {text!r}")
            shapes.append(dims)
    if not shapes:
        raise ValueError(f"{path}: no shapes")
    return shapes


def parse_list(text, known, what):
    """A comma-separated subset of `known`, in the order given; "all": all."""
    if text == "all":
        return list(known)
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in known]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad) or repr(text)} "
                                         f"(known: {', '.join(known)})")
    return items


def make_operands(torch, m, n, k, layout, device, generator):
    """(a, b, w): op(A) a (M, K) and op(B) b (K, N) in `layout`, random
    normal float32; an operand "t" is the .t() of a contiguous tensor
    (A stored K x M, B stored N x K); w: the (N, K) row-major weight whose
    .t() is b for "nt" (tuned.linear's operand), else None."""
    def randn(*shape):
        return torch.randn(*shape, device=device, generator=generator)
    a = randn(k, m).t() if layout[0] == "t" else randn(m, k)
    w = randn(n, k) if layout[1] == "t" else None
    b = w.t() if w is not None else randn(k, n)
    return a, b, (w if layout == "nt" else None)


def rel_error(c, ref):
    """Relative Frobenius error of `c` against the fp64 `ref`."""
    return ((c.double() - ref).norm() / ref.norm()).item()


def within(err, torch_err):
    """Whether tuned's error is within 3x torch's in the mode (+1e-7 for
    products torch gets exactly)."""
    return err <= 3 * torch_err + 1e-7


def interleaved(ways, reps, rounds, time_block):
    """{name: median ms a call}: `rounds` rounds of one block of `reps` calls
    per way, the ways' order rotated each round; time_block(fn, reps) -> ms
    of a block."""
    names = list(ways)
    blocks = {name: [] for name in names}
    for r in range(rounds):
        for j in range(len(names)):
            name = names[(r + j) % len(names)]
            blocks[name].append(time_block(ways[name], reps) / reps)
    return {name: statistics.median(t) for name, t in blocks.items()}


def cuda_block_timer(torch):
    """time_block for CUDA: the block between two events on the current stream, in ms."""
    def time_block(fn, reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    return time_block


def cpu_block_timer(fn, reps):
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) * 1e3


def geomean(values):
    values = [v for v in values if v > 0 and math.isfinite(v)]
    if not values:
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(rows, shapes, layouts, modes):
    """The SUMMARY line of rows ({"mode", "ratio", ...}, one per measured pair)."""
    slower = sum(1 for r in rows if r["ratio"] < SLOW)
    g = {mode: geomean([r["ratio"] for r in rows if r["mode"] == mode]) for mode in MODES}
    return (f"SUMMARY torch_drop_in shapes={shapes} layouts={layouts} modes={modes} "
            f"slower_than_torch={slower} geomean_ieee={g['ieee_fp32']:.3f} "
            f"geomean_fp32_accurate={g['fp32_accurate']:.3f} geomean_tf32={g['tf32']:.3f}")


LINE = re.compile(r"^(\d+)x(\d+)x(\d+) (nn|nt|tn|tt) +(\w+) +tuned [\d.]+ ms +torch [\d.]+ ms +"
                  r"ratio ([\d.]+)x")


def combine(paths):
    """The SUMMARY line of the problems' lines (line()) in the logs at
    `paths`: a suite run in parts (e.g. --layouts nn,nt and tn,tt, each on
    one GPU in one call), each problem once (the last line wins)."""
    rows = {}
    for path in paths:
        with open(path) as f:
            for text in f:
                if (hit := LINE.match(text)):
                    m, n, k, layout, mode, ratio = hit.groups()
                    rows[(m, n, k, layout, mode)] = {"mode": mode, "ratio": float(ratio)}
    keys = rows.keys()
    return summary(list(rows.values()), len({k[:3] for k in keys}), len({k[3] for k in keys}),
                   len({k[4] for k in keys}))


def line(m, n, k, layout, mode, row):
    """One problem's line."""
    flag = "" if row["ok"] else "  WRONG"
    return (f"{m}x{n}x{k} {layout} {mode:13s} tuned {row['tuned_ms']:.4f} ms  torch "
            f"{row['torch_ms']:.4f} ms  ratio {row['ratio']:.3f}x  err {row['err']:.2e} "
            f"(torch {row['torch_err']:.2e})  served {row['served']}{flag}")


# ---- tuning through the daemon ----

def served_text(tuned, best):
    match = tuned.pb.Match.Name(best.match).removeprefix("MATCH_").lower()
    what = "cuBLAS" if best.use_baseline else (best.measurement.config.name or "a kernel")
    return f"{what} ({match})"


# Sweeps queued ahead of the one awaited: under the daemon's default quota
# of 16 queued or running jobs per client (tuned.toml [quota]).
QUEUE_AHEAD = 12


def submit(tuned, client, m, n, k, layout, mode, args):
    """Queues the problem's sweep unless the daemon has it tuned (or
    --no-tune): returns (job, start time) or None, with the reason printed
    where the daemon refused it. The daemon runs the queued sweeps in order,
    compiling a later one's kernels while it measures an earlier one's."""
    where = f"{m}x{n}x{k} {layout} {mode}"
    try:
        best = client.best(m, n, k, math=mode, layout=layout, basic=True)
    except tuned.TunedError as e:
        if e.code.name != "NOT_FOUND":
            print(f"tune {where}: {e}", flush=True)
            return None
        best = None
    exact = best is not None and best.match == tuned.pb.MATCH_EXACT
    if args.no_tune or not (args.retune or not exact):
        return None
    try:
        job = client.sweep(m, n, k, math=mode, layout=layout, wait=False,
                           strategy=args.strategy, budget=args.budget)
    except tuned.TunedError as e:
        print(f"tune {where}: {e}", flush=True)
        return None
    return job, time.monotonic()


def tune(tuned, client, m, n, k, layout, mode, args, queued=None):
    """Waits for the problem's queued sweep (`queued`, from submit), if any;
    returns the BestKernel served after (basic view), or None with the
    reason printed."""
    where = f"{m}x{n}x{k} {layout} {mode}"
    if queued is not None:
        job, start = queued
        try:
            job = wait_job(tuned, client, job, args.sweep_timeout)
            state = tuned.pb.JobState.Name(job.state).removeprefix("JOB_").lower()
            print(f"tune {where}: job {job.id} {state} in {time.monotonic() - start:.1f} s "
                  f"since queued, {job.done}/{job.total} done, {job.failed} failed"
                  + (f" ({job.error})" if getattr(job, "error", "") else ""), flush=True)
        except tuned.TunedError as e:
            print(f"tune {where}: {e}", flush=True)
    try:
        best = client.best(m, n, k, math=mode, layout=layout, basic=True)
    except tuned.TunedError as e:
        print(f"tune {where}: nothing served: {e}"
              + ("" if queued is not None else " (run without --no-tune)"), flush=True)
        return None
    return best


def wait_job(tuned, client, job, timeout):
    """Polls the job until it ends; cancels it after `timeout` seconds."""
    ended = (tuned.pb.JOB_DONE, tuned.pb.JOB_FAILED, tuned.pb.JOB_CANCELLED)
    deadline = time.monotonic() + timeout
    while job.state not in ended:
        if time.monotonic() > deadline:
            print(f"  job {job.id}: over {timeout:.0f} s, cancelled (the best so far serves)",
                  flush=True)
            client.cancel(job.id)
            deadline = float("inf")
        time.sleep(0.5)
        job = client.job(job.id)
    return job


# ---- measuring ----

def measure(torch, calls, a, b, mode, reps, rounds, time_block, sync):
    """One problem: errors and interleaved times of calls["tuned"] and
    calls["torch"] (each returning the (M, N) product of a and b)."""
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    for fn in calls.values():  # the first call of a key asks the daemon and loads the kernel
        for _ in range(3):
            fn()
    sync()
    ref = a.double() @ b.double()
    err = rel_error(calls["tuned"](), ref)
    torch_err = rel_error(calls["torch"](), ref)
    del ref
    ms = interleaved(calls, reps, rounds, time_block)
    sync()
    return {"tuned_ms": ms["tuned"], "torch_ms": ms["torch"],
            "ratio": ms["torch"] / ms["tuned"] if ms["tuned"] > 0 else float("nan"),
            "err": err, "torch_err": torch_err, "ok": within(err, torch_err)}


def run(args):
    import torch

    dry = args.dry_run
    shapes = read_shapes(args.shapes)
    if dry:
        shapes = [tuple(min(d, args.dry_max) for d in s) for s in shapes]
        device, time_block, sync = "cpu", cpu_block_timer, (lambda: None)
        tuned = client = None
        print(f"# dry run on the CPU: shapes scaled to at most {args.dry_max}, tuned's call is "
              f"torch's own; torch {torch.__version__}", flush=True)
    else:
        import tuned as tuned_module

        tuned = tuned_module
        if not torch.cuda.is_available():
            sys.exit("no GPU (torch.cuda.is_available() is False); --dry-run runs on the CPU")
        device, time_block, sync = "cuda", cuda_block_timer(torch), torch.cuda.synchronize
        client = tuned.Client()
        d = client.device()
        print(f"# {torch.cuda.get_device_name()} (daemon: {d.name}, sm_{d.cc_major}{d.cc_minor}); "
              f"torch {torch.__version__}; tuned from {tuned.__file__}", flush=True)
    print(f"# {len(shapes)} shapes x layouts {','.join(args.layouts)} x modes "
          f"{','.join(args.modes)}; {args.rounds} rounds of {args.reps} calls each way",
          flush=True)

    problems = [(s, layout, mode) for s in shapes for layout in args.layouts for mode in args.modes]
    served = {}
    started = time.monotonic()
    # Tune everything first (no sweep beside a timing): the missing sweeps
    # queued QUEUE_AHEAD at a time (within the daemon's per-client quota of
    # queued jobs), each awaited in order.
    queued = {}
    for i, ((m, n, k), layout, mode) in enumerate(problems):
        key = (m, n, k, layout, mode)
        if dry:
            served[key] = "torch (dry run)"
            continue
        for (m2, n2, k2), l2, mode2 in problems[i:i + QUEUE_AHEAD]:
            if (m2, n2, k2, l2, mode2) not in queued and time.monotonic() - started <= args.deadline:
                queued[(m2, n2, k2, l2, mode2)] = submit(tuned, client, m2, n2, k2, l2, mode2, args)
        if time.monotonic() - started > args.deadline:
            print(f"tune {m}x{n}x{k} {layout} {mode}: past --deadline, not waited for", flush=True)
        elif (best := tune(tuned, client, m, n, k, layout, mode, args, queued.get(key))) is not None:
            served[key] = served_text(tuned, best)

    if args.tune_only:
        print(f"# tuned: {len(served)} of {len(problems)} problems served, "
              f"{sum(1 for q in queued.values() if q is not None)} swept "
              f"in {time.monotonic() - started:.0f} s", flush=True)
        return 0 if len(served) == len(problems) else 1
    rows, missing, wrong = [], 0, 0
    saved_tf32 = torch.backends.cuda.matmul.allow_tf32
    for (m, n, k), layout, mode in problems:
        key = (m, n, k, layout, mode)
        if key not in served:
            missing += 1
            print(f"{m}x{n}x{k} {layout} {mode:13s} not measured: nothing served", flush=True)
            continue
        if time.monotonic() - started > args.deadline:
            missing += 1
            print(f"{m}x{n}x{k} {layout} {mode:13s} not measured: past --deadline", flush=True)
            continue
        g = torch.Generator(device=device).manual_seed(m * 31 + n * 17 + k + LAYOUTS.index(layout))
        a, b, w = make_operands(torch, m, n, k, layout, device, g)
        if dry:
            fn = (lambda: torch.nn.functional.linear(a, w)) if w is not None else \
                (lambda: torch.matmul(a, b))
        elif w is not None:
            fn = (lambda: tuned.linear(a, w, math=mode))
        else:
            fn = (lambda: tuned.matmul(a, b, math=mode))
        try:
            row = measure(torch, {"tuned": fn, "torch": lambda: torch.matmul(a, b)}, a, b, mode,
                          args.reps, args.rounds, time_block, sync)
        except Exception as e:  # a failing call is reported, the suite goes on
            missing += 1
            print(f"{m}x{n}x{k} {layout} {mode:13s} not measured: {type(e).__name__}: {e}",
                  flush=True)
            continue
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved_tf32
        row.update(mode=mode, served=served[key])
        rows.append(row)
        wrong += not row["ok"]
        print(line(m, n, k, layout, mode, row), flush=True)
        a = b = w = fn = None  # the operands freed before the next problem's

    if missing or wrong:
        print(f"# {missing} of {len(problems)} problems not measured, {wrong} WRONG", flush=True)
    print(summary(rows, len(shapes), len(args.layouts), len(args.modes)), flush=True)
    return 1 if missing or wrong else 0


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--combine", nargs="+", metavar="LOG",
                   help="print the SUMMARY of the problems' lines in these logs (a suite run "
                        "in parts) and stop")
    p.add_argument("--shapes", help="file of 'M N K' lines (../shared/bench/shapes.txt)")
    p.add_argument("--layouts", type=lambda t: parse_list(t, LAYOUTS, "layout"),
                   default=list(LAYOUTS), help="comma-separated, of nn,nt,tn,tt (default: all)")
    p.add_argument("--modes", type=lambda t: parse_list(t, MODES, "math mode"),
                   default=list(MODES), help="comma-separated, of ieee_fp32,fp32_accurate,tf32")
    p.add_argument("--reps", type=int, default=200, help="calls in a timed block (a stream)")
    p.add_argument("--rounds", type=int, default=5, help="blocks of each way, interleaved")
    tuning = p.add_mutually_exclusive_group()
    tuning.add_argument("--no-tune", action="store_true",
                        help="sweep nothing: time what the daemon serves already")
    tuning.add_argument("--retune", action="store_true",
                        help="sweep every problem, also those tuned already")
    p.add_argument("--strategy", default="", help="the sweeps' strategy (default: the daemon's)")
    p.add_argument("--budget", default="", help="the sweeps' budget: 10s, 2m or 64 (configs)")
    p.add_argument("--sweep-timeout", type=float, default=300.0,
                   help="seconds a sweep is waited for before it is cancelled")
    p.add_argument("--deadline", type=float, default=float("inf"),
                   help="seconds after which no problem is tuned or measured (then exit 1)")
    p.add_argument("--tune-only", action="store_true",
                   help="sweep what the daemon lacks, then stop (no timing)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU, no daemon: the flow on the CPU, torch standing in for tuned")
    p.add_argument("--dry-max", type=int, default=48,
                   help="--dry-run: each dimension cut to at most this")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if args.combine:
        print(combine(args.combine))
        return 0
    if not args.shapes:
        sys.exit("--shapes FILE is required")
    if args.reps < 1 or args.rounds < 1:
        sys.exit("--reps and --rounds must be at least 1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
