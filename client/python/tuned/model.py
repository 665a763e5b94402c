"""tuned.optimize(model): a PyTorch model's linear layers served by tuned, as
the model is.

    model = tuned.optimize(model)           # every nn.Linear in it, in place
    y = model(x)

Each nn.Linear's forward becomes a call of tuned.linear on its weight and
bias (layout "nt" for the usual row-major weight), in the math mode that
torch's own settings give: for float32, "tf32" where
torch.backends.cuda.matmul.allow_tf32 is on, else "ieee_fp32"; bfloat16
and float16 layers their 16-bit problems. A call never raises for the
daemon's sake: a shape that nothing near serves, or a daemon that does not
answer, runs torch's own F.linear, and the shape's sweep is queued
(tune_if_missing) and asked again after RETRY_SECONDS. What tuned.linear
does not take runs torch's own call too: tensors off the GPU, other dtypes,
mixed dtypes, a layer whose input or weights need gradients while autograd
records, and calls inside torch.compile's tracing (the compiled graph is
torch's own). Record a model's workload first (tuned.record) and tune it
(`tunectl workload sweep`), so that its shapes are served from the start.
"""

import threading
import time
import types

import grpc

from .client import TunedError

RETRY_SECONDS = 30.0
# A failure of the daemon that a call survives: nothing near is tuned, or it
# is not there, or slow.
_SURVIVED = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE,
             grpc.StatusCode.DEADLINE_EXCEEDED)

_lock = threading.Lock()
_untuned = {}  # a call's key -> time.monotonic() after which the daemon is asked again


def optimize(model, *, client=None):
    """Serves `model`'s nn.Linear layers (the model itself if it is one)
    through tuned.linear as the module comment says; returns `model`,
    changed in place. `client`: the tuned.Client to ask (default: the daemon
    of the tensors' GPU). Optimizing a model twice changes nothing more."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and "forward" not in module.__dict__:
            module.forward = types.MethodType(_linear_forward, module)
            module._tuned_client = client
    return model


def _linear_forward(self, x):
    return serve_linear(x, self.weight, self.bias, client=self._tuned_client)


def serve_linear(x, weight, bias=None, *, client=None):
    """torch.nn.functional.linear(x, weight, bias), run by tuned where it
    can and by torch where it cannot (see the module comment); never raises
    more than F.linear does."""
    import torch
    import torch.nn.functional as F

    from . import ops

    if not _servable(torch, ops, x, weight, bias):
        return F.linear(x, weight, bias)
    math = "tf32" if x.dtype is torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee_fp32"
    key = (x.shape, weight.shape, x.stride(), weight.stride(), x.get_device(), x.dtype, math,
           None if bias is None else bias.shape, client)
    retry = _untuned.get(key)
    if retry is not None:
        if time.monotonic() < retry:
            return F.linear(x, weight, bias)
        with _lock:
            _untuned.pop(key, None)
    try:
        return ops.linear(x, weight, bias, math=math, tune_if_missing=True, client=client)
    except TunedError as e:
        if e.code not in _SURVIVED:
            raise
        with _lock:
            _untuned[key] = time.monotonic() + RETRY_SECONDS
        return F.linear(x, weight, bias)


def _servable(torch, ops, x, weight, bias):
    """Whether tuned.linear takes the call as it is: tensors on the GPU (the
    tests' device type), one dtype of float32, bfloat16 and float16, a
    weight matrix of x's features, and no gradient to record or graph to
    trace."""
    tensors = (x, weight) if bias is None else (x, weight, bias)
    if not all(isinstance(t, torch.Tensor) and t.device.type == ops._DEVICE_TYPE for t in tensors):
        return False
    if x.dtype not in ops._DTYPES or any(t.dtype is not x.dtype for t in tensors):
        return False
    if weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return False
    return not ops._is_compiling()
