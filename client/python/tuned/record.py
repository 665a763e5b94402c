"""tuned.record(path): capture the GEMMs a model runs as a workload file.

    with tuned.record("llama.workload.json"):
        model(tokens)                       # any number of steps, forward and backward

writes each GEMM problem the block ran (family sgemm, its dtype, layout and
shape), how often, and its GPU time, in the format `tunectl workload sweep
FILE` and `tunectl workload report FILE` read (client/workload.h):

    {"format": "tuned-workload-1",
     "problems": [{"family": "sgemm", "dtype": "bf16", "layout": "nt", "math": "ieee_fp32",
                   "shape": [M, N, K], "calls": 1200, "gpu_ms": 345.6}, ...]}

What is captured: torch.nn.functional.linear (nn.Linear; layout "nt" for its
usual row-major weight), torch.matmul, torch.mm, Tensor.__matmul__ and
torch.addmm of two matrices (a linear of an N-D input counts its rows as
M), in float32 (math "tf32" where torch.backends.cuda.matmul.allow_tf32 is
on, else "ieee_fp32"), bfloat16 and float16, on CUDA tensors; backward's
GEMMs are torch's own and are not seen. The calls still run as they would
(the block only watches them). An existing file is replaced.

The GPU time is what the calls take when the GPU runs them back to back,
as a model captured in a CUDA graph does, not each call's time in the
watched block: there a call's first run includes cuBLAS's choice of kernel
and the kernel's module load, and a CUDA event pair around a call counts
the host's launch time wherever the GPU waits for the host (a decode step),
so the watched times came to more than the GEMMs' whole share of a graph's
step (bench/RESULTS.md models-gpt2-decode). So the block keeps the operands
of the first REPLAY_CALLS calls of each problem (the tensors themselves,
alive until the block ends) and, when it ends, replays each problem's kept
calls in their order: captured into a CUDA graph and replayed REPLAYS
times, each replay after a write of twice the L2 cache (the weights then
come from memory, as in a model whose weights are far more than the L2;
the write also keeps the GPU busy while the host launches the graph),
timed by CUDA events. The median replay over the calls it holds is a
call's time, and a problem's GPU time is that times its calls. `tunectl
workload report` divides it by the served kernel's speedup, so its saving
is the one a model run from CUDA graphs sees.

Workload (no torch needed) holds and writes what a recording saw, so a
caller may add problems of its own.
"""

import json
import os
import threading
import time

from .layout import operand_layout, weight_layout

FORMAT = "tuned-workload-1"
# The device type whose calls are recorded; the tests record CPU calls
# (timed by the clock) by setting it to "cpu".
_DEVICE_TYPE = "cuda"

_DTYPES = {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16"}


class Workload:
    """The problems seen, by (dtype, layout, math, (M, N, K), epilogue):
    calls and GPU milliseconds (all calls)."""

    def __init__(self):
        self._problems = {}
        self._lock = threading.Lock()

    def add(self, dtype, layout, math, shape, calls=1, gpu_ms=0.0, epilogue="none"):
        """Counts `calls` of the sgemm problem (dtype "f32", "bf16" or "f16";
        layout "nn", "nt", "tn" or "tt"; math "ieee_fp32", "tf32" or
        "fp32_accurate"; shape (M, N, K); epilogue "none" or "bias", tuned.EPILOGUES)
        taking `gpu_ms` ms in all."""
        key = (dtype, layout, math, tuple(int(d) for d in shape), epilogue)
        with self._lock:
            c, ms = self._problems.get(key, (0, 0.0))
            self._problems[key] = (c + calls, ms + gpu_ms)

    def problems(self):
        """The problems as the file lists them, largest GPU time first."""
        out = [{"family": "sgemm", "dtype": d, "layout": l, "math": m, "shape": list(s),
                "calls": c, "gpu_ms": ms, **({} if e == "none" else {"epilogue": e})}
               for (d, l, m, s, e), (c, ms) in self._problems.items()]
        return sorted(out, key=lambda p: -p["gpu_ms"])

    def write(self, path):
        """Writes the workload file at `path` (through a temporary file, so
        that a reader never sees half of it)."""
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "problems": self.problems()}, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)


def _gemm(a, lb, n):
    """(layout, M, N, K) of op(A) @ op(B) where A is the 2-D `a` and op(B),
    K x N, has layout `lb` (layout.py's rules, as tuned.matmul and
    tuned.linear read them), or None where an operand has neither layout."""
    la = operand_layout(a)
    if la is None or lb is None:
        return None
    m, k = a.shape
    return la + lb, m, n, k


# Operands kept a problem, and the timed replays of them (the median counts).
REPLAY_CALLS = 64
REPLAYS = 5


class _Recorder:
    """The torch side of record(): a TorchFunctionMode that counts the GEMM
    calls it sees and keeps the operands of each problem's first
    REPLAY_CALLS, replayed and timed when the block ends (finish)."""

    def __init__(self, path):
        import torch
        from torch.overrides import TorchFunctionMode

        self.path = path
        self.workload = Workload()
        self.calls = {}  # key -> [calls, [(func, args, kwargs) kept]]
        F = torch.nn.functional
        recorder = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                key = recorder.key(func, args, kwargs)
                out = func(*args, **kwargs)
                if key is not None:
                    seen = recorder.calls.setdefault(key, [0, []])
                    seen[0] += 1
                    if len(seen[1]) < REPLAY_CALLS:
                        seen[1].append((func, args, kwargs))
                return out

        self._torch = torch
        self._linear = F.linear
        self._matmuls = (torch.matmul, torch.mm, torch.Tensor.__matmul__, torch.Tensor.matmul,
                         torch.Tensor.mm)
        self._addmm = (torch.addmm, torch.Tensor.addmm)
        self.mode = Mode()

    def math(self, dtype):
        if dtype != "f32":
            return "ieee_fp32"
        return "tf32" if self._torch.backends.cuda.matmul.allow_tf32 else "ieee_fp32"

    def key(self, func, args, kwargs):
        """The problem of a call (dtype, layout, math, (M, N, K), epilogue),
        or None for a call that is not a GEMM this records. A 16-bit linear
        with a bias of shape (N,) is the problem with the "bias" epilogue,
        which tuned.linear asks for."""
        bias = None
        try:
            if func is self._linear:
                x, w = args[0], args[1] if len(args) > 1 else kwargs["weight"]
                bias = args[2] if len(args) > 2 else kwargs.get("bias")
                if not (x.device.type == _DEVICE_TYPE and x.dim() >= 1 and w.dim() == 2):
                    return None
                a = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
                g = _gemm(a, weight_layout(w), w.shape[0])
            elif func in self._matmuls or func in self._addmm:
                a, b = args[1:3] if func in self._addmm else args[:2]
                if not (a.device.type == _DEVICE_TYPE and a.dim() == 2 and b.dim() == 2):
                    return None
                g = _gemm(a, operand_layout(b), b.shape[1])
            else:
                return None
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return None
        dtype = _DTYPES.get(str(a.dtype))
        if g is None or dtype is None:
            return None
        layout, m, n, k = g
        fused = dtype != "f32" and bias is not None and tuple(bias.shape) == (n,)
        return dtype, layout, self.math(dtype), (m, n, k), "bias" if fused else "none"

    def finish(self):
        for (dtype, layout, math, shape, epilogue), (calls, kept) in self.calls.items():
            ms = self.replay_ms(kept, math == "tf32") / len(kept) * calls
            self.workload.add(dtype, layout, math, shape, calls, ms, epilogue)
        self.calls.clear()
        self.workload.write(self.path)

    def replay_ms(self, kept, tf32):
        """Milliseconds of the calls `kept` ((func, args, kwargs)) run back
        to back, as the module comment says (no gradients recorded; TF32 as
        the calls' math mode had it); off CUDA, or where the capture fails,
        the median of REPLAYS runs by the clock (synchronized on CUDA)."""
        torch = self._torch
        cuda = _DEVICE_TYPE == "cuda"
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            return self._replay_ms(kept, cuda)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved

    def _replay_ms(self, kept, cuda):
        torch = self._torch

        def run():
            for func, args, kwargs in kept:
                func(*args, **kwargs)

        with torch.no_grad():
            run()  # the kernels chosen and loaded before timing and capture
            if cuda:
                try:
                    return self._graph_ms(run)
                except RuntimeError:  # not capturable: timed as it runs
                    pass
            times = []
            for _ in range(REPLAYS):
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                run()
                if cuda:
                    torch.cuda.synchronize()
                times.append((time.perf_counter() - t0) * 1e3)
            return sorted(times)[len(times) // 2]

    def _graph_ms(self, run):
        """The median ms of REPLAYS replays of `run` captured in a CUDA
        graph, each after a write of twice the L2 cache."""
        torch = self._torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        flush = torch.empty(2 * (getattr(props, "L2_cache_size", 0) or 64 << 20),
                            dtype=torch.uint8, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        pairs = []
        for _ in range(REPLAYS + 1):  # the first a warm-up
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            flush.zero_()
            start.record()
            graph.replay()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        times = sorted(s.elapsed_time(e) for s, e in pairs[1:])
        return times[len(times) // 2]


class record:  # noqa: N801 (used as tuned.record(path), a context)
    """A context that records the GEMMs run inside it into the workload file
    at `path` (written when the block ends, also after an exception).
    `.workload` is the Workload seen. Needs torch and a CUDA GPU for the
    timings."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._recorder = None

    @property
    def workload(self):
        return self._recorder.workload if self._recorder else Workload()

    def __enter__(self):
        self._recorder = _Recorder(self.path)
        self._recorder.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._recorder.mode.__exit__(*exc)
        self._recorder.finish()
        return False
