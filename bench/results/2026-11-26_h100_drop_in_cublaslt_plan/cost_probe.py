"""Where a served-cuBLAS call's CPU time goes, in one process on the GPU:
torch.matmul against tuned.matmul and tuned.linear (a route to cuBLAS as the
daemon serves it, put in place here so that no daemon is asked) and their
steps, in TF32 at 512^3 and 1024^3. CPU us a call: the median of 15
interleaved blocks of 200 calls; the stream's GPU us a call likewise.
Usage: SITE=<the pip-installed package's folder> python3 cost_probe.py"""
import os
import statistics
import sys
import time

sys.path[:0] = [os.environ["SITE"]]
import torch  # noqa: E402

import tuned  # noqa: E402
import tuned.blas as blas  # noqa: E402
from tuned import ops  # noqa: E402
from tuned.kernel import _fastcall  # noqa: E402

dev = torch.device("cuda", 0)
torch.backends.cuda.matmul.allow_tf32 = True


def cpu_block(fn, reps=200):
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    r = (time.perf_counter() - t) / reps * 1e6
    torch.cuda.synchronize()
    return r


def gpu_block(fn, reps=200):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps * 1e3


for (m, n, k), layout in [((512, 512, 512), "nn"), ((512, 512, 512), "nt"),
                          ((512, 512, 512), "tt"), ((1024, 1024, 1024), "nn")]:
    a = torch.randn(k, m, device=dev).t() if layout[0] == "t" else torch.randn(m, k, device=dev)
    w = torch.randn(n, k, device=dev)
    b = w.t() if layout[1] == "t" else torch.randn(k, n, device=dev)
    g = blas.prepare(torch, 0, True, layout, m, n, k)
    h = blas._handles[0]
    g_sgemm = blas.Gemm(torch, blas._Handles(h.blas, 0, h.ctx, h.workspace_limit), True, layout,
                        m, n, k, 0, g.stream)  # lt 0: cublasSgemm each call
    route = ops._Route(None, True, layout, False, False, m, n, k, 0, blas=g)
    # The routes' keys as tuned/ops.py makes them.
    ops._routes[(a.shape, b.shape, 0, 0, "tf32", a.stride(), b.stride(), None, torch.float32)] = route
    if layout[1] == "t":  # tuned.linear(a, w): weight (n, k) row-major
        ops._routes[(a.shape, w.shape, 0, 0, "tf32", a.stride(), w.stride(), None, None,
                     torch.float32)] = route
    out = torch.empty(m, n, device=dev)
    s = g.stream(0)
    plan, bp, ap, cp = g.plan, b.data_ptr(), a.data_ptr(), out.data_ptr()
    fns = {"torch.matmul": lambda: torch.matmul(a, b),
           "tuned.matmul": lambda: tuned.matmul(a, b, math="tf32"),
           "route.matmul": lambda: route.matmul(a, b, None),
           "gemm.new (C++ alloc)": lambda: g.new(a, b),
           "gemm+new_empty": lambda: g(a, b, a.new_empty(m, n)),
           "gemm(out)": lambda: g(a, b, out),
           "C gemm, cuBLASLt": lambda: _fastcall.gemm(plan, bp, ap, cp, s, 0),
           "C gemm, cublasSgemm": lambda: _fastcall.gemm(g_sgemm.plan, bp, ap, cp, s, 0),
           "new_empty(m,n)": lambda: a.new_empty(m, n),
           "stream": lambda: g.stream(0)}
    if layout[1] == "t":
        fns["tuned.linear"] = lambda: tuned.linear(a, w, math="tf32")
        fns["F.linear"] = lambda: torch.nn.functional.linear(a, w)
    res = {name: [] for name in fns}
    for fn in fns.values():
        for _ in range(100):
            fn()
    torch.cuda.synchronize()
    for r in range(15):
        for name, fn in fns.items():
            res[name].append(cpu_block(fn))
    stream = {name: statistics.median([gpu_block(fns[name]) for _ in range(15)])
              for name in ("torch.matmul", "tuned.matmul")}
    print(f"{m}x{n}x{k} {layout} tf32 (_torchcall {blas._torchcall is not None}; cuBLASLt "
          f"workspace {g.workspace}; stream us a call: torch {stream['torch.matmul']:.2f}, "
          f"tuned {stream['tuned.matmul']:.2f})")
    for name, v in res.items():
        print(f"  {name:22s} cpu_us median {statistics.median(v):6.2f} min {min(v):6.2f}", flush=True)
