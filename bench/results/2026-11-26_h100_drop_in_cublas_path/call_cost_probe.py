import sys, time, statistics, os
sys.path[:0] = [os.environ["SITE"]]
import torch
import tuned, tuned.blas as blas
from tuned import ops
def cpu_block(fn, batch=200):
    t = time.perf_counter()
    for _ in range(batch): fn()
    r = (time.perf_counter() - t) / batch * 1e6
    torch.cuda.synchronize()
    return r
dev = torch.device("cuda", 0)
for layout in ("nn", "nt"):
    m = n = k = 512
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(m, k, device=dev)
    b = torch.randn(n, k, device=dev).t() if layout == "nt" else torch.randn(k, n, device=dev)
    g = blas.prepare(torch, 0, True, layout, m, n, k)
    key = (a.shape, b.shape, 0, 0, "tf32", "n", layout[1], None, torch.float32)
    route = ops._Route(None, True, layout, False, False, m, n, k, 0, blas=g)
    ops._routes[key] = route
    out = torch.empty(m, n, device=dev)
    stream = g.stream
    fns = {"torch.matmul": lambda: torch.matmul(a, b),
           "tuned.matmul": lambda: tuned.matmul(a, b, math="tf32"),
           "route.matmul": lambda: route.matmul(a, b, None),
           "gemm+new_empty": lambda: g(a, b, a.new_empty(m, n)),
           "gemm(out)": lambda: g(a, b, out),
           "new_empty(m,n)": lambda: a.new_empty(m, n),
           "is_compiling": lambda: ops._is_compiling(),
           "key+get": lambda: ops._routes.get((a.shape, b.shape, a.get_device(), b.get_device(), "tf32",
                                 "n" if a.is_contiguous() else ops._layout(a),
                                 "n" if b.is_contiguous() else ops._layout(b), None, a.dtype)),
           "data_ptr x3": lambda: (a.data_ptr(), b.data_ptr(), out.data_ptr()),
           "stream": lambda: stream(0),
           "grad checks": lambda: (a.requires_grad or b.requires_grad) and ops._grad_enabled(),
           }
    res = {k: [] for k in fns}
    for name, fn in fns.items():
        for _ in range(100): fn()
    torch.cuda.synchronize()
    for r in range(15):
        for name, fn in fns.items():
            res[name].append(cpu_block(fn))
    print(layout)
    for name, v in res.items():
        print(f"  {name:20s} cpu_us median {statistics.median(v):6.2f} min {min(v):6.2f}")
