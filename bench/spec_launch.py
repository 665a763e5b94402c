"""A kernel spec's served kernel run from Python on torch tensors (issue 36).

Registers examples/kernels/softmax, tunes one problem, loads the served kernel
with tuned.Kernel and launches it on torch tensors (Kernel.launch); checks it
against torch.softmax and times both with CUDA events, interleaved, L2 flushed
(a 256 MiB write) before each run, median of 50.

Usage (a daemon started with --allow-user-kernels): python3 bench/spec_launch.py [ROWS COLS]
"""
import statistics
import sys

import torch
import tuned

rows, cols = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4096, 1024)
with tuned.Client() as c:
    info = c.register_family("examples/kernels/softmax/spec.toml")
    print(f"registered {info.name} {info.spec_hash[:12]}: {info.space_size} configs")
    job = c.sweep(rows, cols, family="softmax_rows")
    best = c.best(rows, cols, family="softmax_rows")
k = tuned.Kernel(best)
torch.manual_seed(0)
x = torch.randn(rows, cols, device="cuda")
y = torch.empty_like(x)
k.launch(x, y)
torch.cuda.synchronize()
ref = torch.softmax(x.double(), dim=1)
err = ((y.double() - ref).norm() / ref.norm()).item()
scratch = torch.empty(64 << 20, device="cuda")
times = {"tuned": [], "torch": []}
runs = {"tuned": lambda: k.launch(x, y), "torch": lambda: torch.softmax(x, dim=1)}
for r in range(50):
    for name in (["tuned", "torch"] if r % 2 == 0 else ["torch", "tuned"]):
        scratch.fill_(r)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        runs[name]()
        end.record()
        end.synchronize()
        times[name].append(start.elapsed_time(end))
t, p = statistics.median(times["tuned"]), statistics.median(times["torch"])
print(f"softmax_rows {rows}x{cols}: served {best.measurement.config.name} ({best.serving_reason}); "
      f"relative error vs fp64 torch.softmax {err:.2e}; tuned.Kernel.launch {t:.4f} ms, torch.softmax {p:.4f} ms, "
      f"ratio {p / t:.3f}")
assert err < 1e-5, err
