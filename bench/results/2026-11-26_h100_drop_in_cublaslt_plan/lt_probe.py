"""tuned.blas's planned cuBLASLt GEMM against torch.matmul in the same mode,
on the GPU: the kernels each runs (torch.profiler), the CPU per call, the GPU
per call of a stream of calls, and the relative Frobenius error against an
fp64 reference. Shapes: the public suite (argv[1]) and a few odd ones; each
in 4 layouts, in fp32 and TF32.
Usage: SITE=<the pip-installed package's folder> python3 lt_probe.py SHAPES_FILE"""
import os
import statistics
import sys
import time

sys.path[:0] = [os.environ["SITE"]]
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tuned.blas as blas  # noqa: E402
from tuned.kernel import _fastcall, _tf32  # noqa: E402

print("tuned", blas.__file__, "| torch", torch.__version__, "| init", _fastcall.init(), flush=True)
dev = torch.device("cuda", 0)
shapes = [tuple(map(int, line.split())) for line in open(sys.argv[1])
          if line.strip() and not line.startswith("#")]
shapes += [(37, 129, 7), (1000, 257, 999), (3000, 2000, 1500), (64, 1, 4096)]


def operands(m, n, k, layout):
    a = torch.randn(k, m, device=dev).t() if layout[0] == "t" else torch.randn(m, k, device=dev)
    b = torch.randn(n, k, device=dev).t() if layout[1] == "t" else torch.randn(k, n, device=dev)
    return a, b


def cpu_us(fn, reps):
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    r = (time.perf_counter() - t) / reps * 1e6
    torch.cuda.synchronize()
    return r


def stream_us(fn, reps):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps * 1e3


def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    return sorted({e.name[:70] for e in p.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA})


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


slower, differ, cases = [], 0, 0
for m, n, k in shapes:
    for tf32 in (False, True):
        mode = "tf32" if tf32 else "fp32"
        for layout in ("nn", "nt", "tn", "tt"):
            a, b = operands(m, n, k, layout)
            gemm = blas.prepare(torch, 0, tf32, layout, m, n, k)

            def ours():
                return gemm(a, b, a.new_empty(m, n))

            def theirs():
                with _tf32(torch, allow=tf32):
                    return torch.matmul(a, b)

            torch.backends.cuda.matmul.allow_tf32 = tf32
            ref = a.double() @ b.double()
            err, torch_err = rel(ours(), ref), rel(theirs(), ref)
            t0 = time.perf_counter()
            ours()
            torch.cuda.synchronize()
            reps = max(5, min(200, int(0.02 / max(time.perf_counter() - t0, 1e-6))))
            for _ in range(min(reps, 20)):
                ours(), theirs()
            cpu = {"torch": [], "tuned": []}
            gpu = {"torch": [], "tuned": []}
            for _ in range(7):
                for name, fn in (("torch", theirs), ("tuned", ours)):
                    cpu[name].append(cpu_us(fn, reps))
                    gpu[name].append(stream_us(fn, reps))
            c = {k_: statistics.median(v) for k_, v in cpu.items()}
            g = {k_: statistics.median(v) for k_, v in gpu.items()}
            ratio = g["torch"] / g["tuned"]
            kt, ku = kernels(theirs), kernels(ours)
            same = kt == ku
            differ += not same
            cases += 1
            if ratio < 0.97:
                slower.append(f"{m}x{n}x{k} {layout} {mode} {ratio:.3f}")
            print(f"{m}x{n}x{k} {layout} {mode:4s} lt_workspace={gemm.workspace} reps={reps} "
                  f"cpu_us torch {c['torch']:.2f} tuned {c['tuned']:.2f} | stream_us torch "
                  f"{g['torch']:.2f} tuned {g['tuned']:.2f} ratio {ratio:.3f} | err {err:.2e} "
                  f"(torch {torch_err:.2e}) | {'same kernels' if same else 'KERNELS DIFFER'}",
                  flush=True)
            if not same:
                print("   torch:", kt, "\n   tuned:", ku, flush=True)
            assert err <= 2 * torch_err + 1e-6, (m, n, k, layout, mode, err, torch_err)
print(f"SUMMARY lt_probe cases={cases} kernels_differ={differ} stream_slower_than_torch={len(slower)} "
      + " ".join(slower))
