"""Python client of the tuned daemon: tune CUDA kernels, fetch and run them on torch tensors.

    import torch, tuned
    c = tuned.matmul(a, b)                  # a (MxK), b (KxN): float32 matrices on a GPU
    c = tuned.matmul(a, b, math="tf32")     # or "fp32_accurate"; default "ieee_fp32"
    c = tuned.matmul(a, w.t())              # a transposed view: layout "nt", no copy
    c = tuned.matmul(a16, b16)              # bfloat16 or float16 matrices: that dtype's problem
    c = tuned.matmul(a16, b16, out_dtype=torch.float32)   # a float32 result: bf16_f32, f16_f32
    y = tuned.linear(x, weight, bias)       # torch.nn.functional.linear's semantics ("nt")
    with tuned.record("model.workload.json"):   # a model's GEMMs, for `tunectl workload sweep`
        model(x)
    model = tuned.optimize(model)           # its nn.Linear layers served by tuned, never an error
    best = tuned.Client().best(1024, 1024, 1024)   # tuned.v1.BestKernel
    best = tuned.Client().best(1024, 1024, 1024, dtype="bf16")   # 16-bit A, B, C; fp32 sums
    best = tuned.Client().best(1024, 1024, 1024, dtype="bf16_f32")   # 16-bit A, B; fp32 C

    # Your own kernel (a spec file, examples/kernels/), tuned and run:
    client = tuned.Client()
    client.register_family("examples/kernels/matmul/spec.toml")
    client.sweep(1024, 1024, 1024, family="matmul_tiled")
    k = tuned.Kernel(client.best(1024, 1024, 1024, family="matmul_tiled"))
    k.launch(a, b, c)                       # the buffer arguments, in order

Every failure of the daemon or the driver raises tuned.TunedError (.code is a
grpc.StatusCode, .message the text); wrong tensors raise TypeError/ValueError
(a wrong dtype: tuned.DTypeError, both a TunedError INVALID_ARGUMENT and a
TypeError).
tuned.matmul, tuned.linear and tuned.ops (the torch operators tuned::matmul,
tuned::linear for torch.compile) import torch when first used.
"""

from .client import (DTYPES, EPILOGUES, LAYOUTS, Client, DTypeError, TunedError, default_address,
                     default_socket_path, dtype_name, family_name, layout_name, problem,
                     read_token_file, spec_json)
from .kernel import Kernel
from .model import enable, optimize
from . import record as record_module
from .record import Workload, record
from .v1 import tuner_pb2 as pb

__all__ = ["Client", "TunedError", "DTypeError", "Kernel", "matmul", "linear",
           "default_address", "default_socket_path", "dtype_name", "family_name", "layout_name",
           "DTYPES", "EPILOGUES", "LAYOUTS", "problem", "read_token_file", "spec_json", "pb", "record",
           "Workload", "optimize", "enable"]

_LAZY = ("matmul", "linear")


def __getattr__(name):
    """tuned.matmul, tuned.linear (and tuned.ops): from tuned/ops.py, which
    imports torch, so that `import tuned` does not."""
    if name in _LAZY or name == "ops":
        import importlib
        ops = importlib.import_module(__name__ + ".ops")
        for lazy in _LAZY:
            globals()[lazy] = getattr(ops, lazy)
        return ops if name == "ops" else getattr(ops, name)
    raise AttributeError(f"module 'tuned' has no attribute '{name}'")
