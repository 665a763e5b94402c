#!/usr/bin/env python3
"""What a call costs: tuned.Kernel.sgemm(out=...), tuned.matmul and
torch.matmul from Python, and (with --cpp, bench/call_bench.cc)
TunedKernel::Sgemm against a bare cudaLaunchKernel from C++.

On the GPU machine, against a daemon that has tuned the shapes in the mode
(bench/python_call.sh starts one and tunes them):

    python3 bench/python_call.py [--shapes 64,64,64 4096,1,4096 3000,2000,1500]
        [--math ieee_fp32] [--cpp .bundle/bin/call_bench]

Per shape (M,N,K) and way: the CPU microseconds a call spends, over --calls
calls in batches of --batch (a torch.cuda.synchronize() after each batch,
outside the timing, so that the launch queue never fills and the GPU's time
does not leak into the CPU's), the ways interleaved batch by batch in a
rotating order, the median batch reported; and the GPU microseconds a call for a stream of --stream
back-to-back calls (CUDA events). Kernel.sgemm runs the daemon's kernel
itself even where the daemon serves cuBLAS (its launch is what is measured;
`served` says what tuned.matmul runs); torch.matmul runs in the mode (TF32
on for tf32 only, set once for the whole run). tuned.linear and
torch.nn.functional.linear are timed too (a row-major weight: layout "nt",
the daemon's "nt" kernel where it has one). The last line:

    SUMMARY python_call kernel_us=<Kernel.sgemm, max over shapes> matmul_us=<tuned.matmul>
        torch_us=<torch.matmul> cpp_us=<TunedKernel::Sgemm - bare launch> shapes=<n>

--fake-driver: no GPU: a stub libcuda (compiled here with cc, every call a
no-op returning success) and CPU tensors, to estimate the Python side of
Kernel.sgemm and tuned.matmul (the driver's own launch time excluded).
"""

import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

import tuned
import tuned.driver
import tuned.ops

STUB = r"""
#include <stdint.h>
#include <stddef.h>
typedef int R;
static const char kName[] = "CUDA_ERROR_STUB";
R cuInit(unsigned f) { return 0; }
R cuDeviceGet(int* d, int o) { *d = o; return 0; }
R cuDevicePrimaryCtxRetain(void** c, int d) { *c = (void*)(uintptr_t)(0xC0 + d); return 0; }
R cuCtxGetCurrent(void** c) { *c = (void*)(uintptr_t)0xC0; return 0; }
R cuCtxPushCurrent_v2(void* c) { return 0; }
R cuCtxPopCurrent_v2(void** c) { return 0; }
R cuCtxGetDevice(int* d) { *d = 0; return 0; }
R cuDeviceGetAttribute(int* v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
R cuModuleLoadData(void** m, const void* i) { *m = (void*)0x1000; return 0; }
R cuModuleGetFunction(void** f, void* m, const char* n) { *f = (void*)0xF00; return 0; }
R cuModuleUnload(void* m) { return 0; }
R cuFuncSetAttribute(void* f, int a, int v) { return 0; }
R cuLaunchKernelEx(const void* c, void* f, void** p, void** e) { return p ? 0 : 1; }
R cuLaunchKernel(void* f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                 unsigned s, void* st, void** p, void** x) { return p ? 0 : 1; }
R cuMemsetD32Async(uintptr_t p, unsigned v, size_t n, void* s) { return 0; }
R cuGetErrorName(R r, const char** n) { *n = kName; return 0; }
"""

SGEMM_ARGS = ["int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
              "float beta", "float* C"]


def parse_shape(text):
    dims = tuple(int(d) for d in text.split(","))
    if len(dims) != 3:
        raise argparse.ArgumentTypeError(f"a shape is M,N,K, not {text}")
    return dims


def cpu_times(ways, calls, batch, sync):
    """{name: CPU us a call}: `calls` calls of each way in batches, `sync()`
    after each batch (untimed), the ways' order rotated per batch; the median
    batch, so that a batch the machine preempted does not count."""
    names = list(ways)
    for fn in ways.values():  # warm-up
        for _ in range(20):
            fn()
    sync()
    ns = {name: [] for name in names}
    for i in range(calls // batch):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            fn = ways[name]
            start = time.perf_counter_ns()
            for _ in range(batch):
                fn()
            ns[name].append(time.perf_counter_ns() - start)
            sync()
    return {name: sorted(t)[len(t) // 2] / batch / 1e3 for name, t in ns.items()}


def gpu_times(ways, calls):
    """{name: GPU us a call} of `calls` back-to-back calls, by CUDA events."""
    out = {}
    for name, fn in ways.items():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        out[name] = start.elapsed_time(end) * 1e3 / calls
    return out


def run_gpu(args):
    math = args.math
    torch.backends.cuda.matmul.allow_tf32 = math == "tf32"  # torch.matmul in the mode
    client = tuned.Client()
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}; math {math}; "
          f"{args.calls} calls in batches of {args.batch}, a stream of {args.stream}", flush=True)
    worst = {"kernel": 0.0, "matmul": 0.0, "torch": 0.0}
    measured = 0
    for m, n, k in args.shapes:
        try:
            best = client.best(m, n, k, math=math)
        except tuned.TunedError as e:
            print(f"shape {m}x{n}x{k}: {e} (tunectl sweep {m} {n} {k} --wait first)", flush=True)
            continue
        measured += 1
        served = "cublas" if best.use_baseline else "kernel"
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a = torch.randn(m, k, device="cuda", generator=g)
        b = torch.randn(k, n, device="cuda", generator=g)
        w = torch.randn(n, k, device="cuda", generator=g)  # linear's weight, row-major
        out, out_torch = torch.empty(m, n, device="cuda"), torch.empty(m, n, device="cuda")
        ways = {}
        if best.cubin or best.ptx:
            best.use_baseline = False  # the kernel itself
            kernel = tuned.Kernel(best)
            ways["Kernel.sgemm(out)"] = lambda: kernel.sgemm(a, b, out=out)
        ways["tuned.matmul"] = lambda: tuned.matmul(a, b, math=math)
        ways["torch.matmul"] = lambda: torch.matmul(a, b)
        ways["torch.matmul(out)"] = lambda: torch.matmul(a, b, out=out_torch)
        try:  # layout "nt": its own problem, timed where the daemon has it
            client.best(m, n, k, math=math, layout="nt", basic=True)
            ways["tuned.linear"] = lambda: tuned.linear(a, w, math=math)
        except tuned.TunedError as e:
            print(f"shape {m}x{n}x{k}: tuned.linear (nt) not timed: {e}", flush=True)
        ways["F.linear"] = lambda: torch.nn.functional.linear(a, w)
        for fn in ways.values():
            fn()  # the first call of a key asks the daemon
        torch.cuda.synchronize()
        ref = a.double() @ b.double()

        def rel(c):
            return ((c.double() - ref).norm() / ref.norm()).item()
        errors = {"tuned.matmul": rel(tuned.matmul(a, b, math=math)), "torch.matmul": rel(a @ b)}
        cpu = cpu_times(ways, args.calls, args.batch, torch.cuda.synchronize)
        gpu = gpu_times(ways, args.stream)
        print(f"shape {m}x{n}x{k}: served {served} ({best.measurement.config.name or 'cuBLAS'}); "
              f"error vs fp64 tuned.matmul {errors['tuned.matmul']:.2e} "
              f"torch.matmul {errors['torch.matmul']:.2e}")
        for name in ways:
            print(f"  {name:20s} cpu_us={cpu[name]:8.2f} gpu_us={gpu[name]:9.2f}")
        worst["kernel"] = max(worst["kernel"], cpu.get("Kernel.sgemm(out)", 0.0))
        worst["matmul"] = max(worst["matmul"], cpu["tuned.matmul"])
        worst["torch"] = max(worst["torch"], cpu["torch.matmul"])
        sys.stdout.flush()
    cpp = float("nan")
    if args.cpp:
        cmd = [args.cpp, "--math", math, "--calls", str(args.calls), "--batch", str(args.batch),
               "--stream", str(args.stream)]
        for shape in args.shapes:
            cmd += ["--shape", *map(str, shape)]
        print("$ " + " ".join(cmd), flush=True)
        result = subprocess.run(cmd, capture_output=True, text=True)
        print(result.stdout + result.stderr, end="", flush=True)
        overheads = [float(o) - float(b_) for o, b_ in re.findall(
            r"sgemm_cpu_us=([\d.]+) bare_cpu_us=([\d.]+)", result.stdout)]
        if overheads:
            cpp = max(overheads)
    print(f"SUMMARY python_call kernel_us={worst['kernel']:.2f} matmul_us={worst['matmul']:.2f} "
          f"torch_us={worst['torch']:.2f} cpp_us={cpp:.2f} shapes={measured}")


def run_fake(args):
    """The Python side alone, on the CPU, with a stub driver."""
    work = tempfile.mkdtemp()
    src, lib = os.path.join(work, "stub.c"), os.path.join(work, "libcuda_stub.so")
    with open(src, "w") as f:
        f.write(STUB)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
    stub = ctypes.CDLL(lib)
    tuned.driver.libcuda = lambda: stub
    tuned.driver.stream_function = lambda torch: (lambda index: 0)
    tuned.ops._DEVICE_TYPE = "cpu"

    def on_cpu(best, device):
        k = tuned.Kernel(best, device="cuda:0")
        k.device = torch.device("cpu")
        return k
    tuned.ops._new_kernel = on_cpu

    class Daemon:
        address = "stub"

        def best(self, m, n, k, math=0, layout="nn", tune_if_missing=False):
            b = tuned.pb.BestKernel(problem=tuned.problem(m, n, k, math=math, layout=layout),
                                    cubin=b"\x7fELF",
                                    entry="k", arguments=SGEMM_ARGS,
                                    device=tuned.pb.Device(cc_major=9, cc_minor=0))
            b.geometry.grid.extend([1, 1, 1])
            b.geometry.block.extend([256, 1, 1])
            return b
    daemon = Daemon()
    tuned.ops._clients[-1] = daemon
    print(f"# CPU estimate, stub driver (no-op launches), torch {torch.__version__}, "
          f"{args.calls} calls")
    for m, n, k in args.shapes:
        kernel = on_cpu(daemon.best(m, n, k), None)
        a, b, out = torch.zeros(m, k), torch.zeros(k, n), torch.zeros(m, n)
        w = torch.zeros(n, k).t().contiguous().t()  # (n, k) whose transpose is row-major: "nn"
        ways = {"Kernel.sgemm(out)": lambda: kernel.sgemm(a, b, out=out),
                "tuned.matmul": lambda: tuned.matmul(a, b, math=args.math),
                "tuned.matmul(out)": lambda: tuned.matmul(a, b, math=args.math, out=out),
                "tuned.linear (nn)": lambda: tuned.linear(a, w, math=args.math),
                # a torch op's own dispatch on tensors this small, for scale
                "torch.add(out)": lambda: torch.add(out, out, out=out)}
        cpu = cpu_times(ways, args.calls, args.batch, lambda: None)
        print(f"shape {m}x{n}x{k} (the median batch):")
        for name, us in cpu.items():
            print(f"  {name:20s} cpu_us={us:8.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", type=parse_shape,
                   default=[(64, 64, 64), (4096, 1, 4096), (3000, 2000, 1500)])
    p.add_argument("--math", default="ieee_fp32", choices=sorted(tuned.ops._MATH))
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--stream", type=int, default=200)
    p.add_argument("--cpp", help="bench/call_bench (build/bin/call_bench) for the C++ numbers")
    p.add_argument("--fake-driver", action="store_true",
                   help="no GPU: a stub libcuda and CPU tensors (the Python side only)")
    args = p.parse_args()
    if args.fake_driver:
        args.shapes = [s if s[1] * s[2] * s[0] <= 1 << 24 else (64, 64, 64) for s in args.shapes]
        run_fake(args)
    else:
        run_gpu(args)


if __name__ == "__main__":
    main()
