"""Python client of the tuned daemon: tune CUDA kernels, fetch and run them on torch tensors.

    import torch, tuned
    c = tuned.matmul(a, b)                  # a (MxK), b (KxN): float32, contiguous, on a GPU
    best = tuned.Client().best(1024, 1024, 1024)   # tuned.v1.BestKernel

    # Your own kernel (a spec file, examples/kernels/), tuned and run:
    client = tuned.Client()
    client.register_family("examples/kernels/matmul/spec.toml")
    client.sweep(1024, 1024, 1024, family="matmul_tiled")
    k = tuned.Kernel(client.best(1024, 1024, 1024, family="matmul_tiled"))
    k.launch(a, b, c)                       # the buffer arguments, in order

Every failure of the daemon or the driver raises tuned.TunedError (.code is a
grpc.StatusCode, .message the text); wrong tensors raise TypeError/ValueError.
"""

import threading

from .client import (Client, TunedError, default_address, default_socket_path, family_name,
                     problem, read_token_file, spec_json)
from .kernel import Kernel
from .v1 import tuner_pb2 as pb

__all__ = ["Client", "TunedError", "Kernel", "matmul", "default_address", "default_socket_path",
           "family_name", "problem", "read_token_file", "spec_json", "pb"]

_lock = threading.Lock()
_clients = {}  # GPU index -> Client of its local daemon (or $TUNED_SERVER)
_kernels = {}  # (M, N, K, GPU index) -> Kernel


def matmul(a, b, *, tune_if_missing=False, client=None):
    """a(MxK) @ b(KxN) with the tuned SGEMM kernel; returns a new (MxN) tensor.

    a, b: contiguous float32 torch tensors on the same GPU. The kernel comes
    from the daemon owning that GPU (default_address(gpu), or `client`): the
    shape's own, else the nearest tuned shape's (tune_if_missing also queues
    a sweep for the shape), and is cached per (shape, GPU) in this process.
    TunedError NOT_FOUND if nothing near is tuned; TypeError/ValueError for
    wrong tensors (checked before the daemon is asked).
    """
    import torch

    from .kernel import _check_tensors

    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be a matrix, it has {t.dim()} dimensions")
    _check_tensors(torch, [(a, "a", a.shape), (b, "b", b.shape)], a.device)  # dtype, layout, device
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.device.type != "cuda":
        raise ValueError(f"the tensors must be on a CUDA device, not {a.device}")
    (m, k), n, gpu = a.shape, b.shape[1], a.device.index
    if client is None:
        with _lock:
            client = _clients.get(gpu) or _clients.setdefault(gpu, Client(default_address(gpu)))
    key = (m, n, k, gpu, client.address)
    with _lock:
        kernel = _kernels.get(key)
    if kernel is None:
        kernel = Kernel(client.best(m, n, k, tune_if_missing=tune_if_missing), device=a.device)
        with _lock:
            kernel = _kernels.setdefault(key, kernel)
    return kernel.sgemm(a, b)
