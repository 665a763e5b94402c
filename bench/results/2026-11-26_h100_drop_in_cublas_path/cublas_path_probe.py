import sys, time, statistics, os
sys.path[:0] = [os.environ["SITE"]]
import torch
import tuned, tuned.blas as blas
from tuned import ops
from torch.profiler import profile, ProfilerActivity
print("init", tuned.kernel._fastcall.init())
def cpu_block(fn, batch=200):
    t = time.perf_counter()
    for _ in range(batch): fn()
    r = (time.perf_counter() - t) / batch * 1e6
    torch.cuda.synchronize()
    return r
def gpu_block(fn, reps=200):
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(reps): fn()
    e.record(); e.synchronize()
    return s.elapsed_time(e) / reps * 1e3
def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20): fn()
        torch.cuda.synchronize()
    names = {}
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            names.setdefault(e.name[:60], []).append(getattr(e, "device_time", None) or e.cuda_time)
    return {k: round(statistics.median(v), 2) for k, v in names.items()}
dev = torch.device("cuda", 0)
for (m, n, k) in [(16, 4096, 4096), (128, 4096, 4096), (4096, 4096, 64), (8192, 128, 8192)]:
  for tf32 in (True, False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    math = "tf32" if tf32 else "fp32_accurate"
    for layout in ("nn", "nt", "tn", "tt"):
        a = torch.randn(k, m, device=dev).t() if layout[0] == "t" else torch.randn(m, k, device=dev)
        b = torch.randn(n, k, device=dev).t() if layout[1] == "t" else torch.randn(k, n, device=dev)
        g = blas.prepare(torch, 0, tf32, layout, m, n, k)
        key = (a.shape, b.shape, 0, 0, math, layout[0], layout[1], None, torch.float32)
        ops._routes[key] = ops._Route(None, tf32, layout, False, False, m, n, k, 0, blas=g)
        fns = {"torch": lambda: torch.matmul(a, b), "tuned": lambda: tuned.matmul(a, b, math=math)}
        for fn in fns.values():
            for _ in range(50): fn()
        cpu = {k: [] for k in fns}; gpu = {k: [] for k in fns}
        for r in range(7):
            for name, fn in fns.items():
                cpu[name].append(cpu_block(fn)); gpu[name].append(gpu_block(fn))
        c = {k: statistics.median(v) for k, v in cpu.items()}; gg = {k: statistics.median(v) for k, v in gpu.items()}
        print(f"{m}x{n}x{k} {layout} {math:13s} cpu torch {c['torch']:.2f} tuned {c['tuned']:.2f} | stream torch {gg['torch']:.2f} tuned {gg['tuned']:.2f} ratio {gg['torch']/gg['tuned']:.3f}", flush=True)
        kt, ku = kernels(fns["torch"]), kernels(fns["tuned"])
        if kt.keys() != ku.keys():
            print("   kernels differ: torch", kt, "tuned", ku, flush=True)
        else:
            print("   same kernel", kt, ku, flush=True)
