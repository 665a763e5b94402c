"""tuned.optimize(model) and tuned.enable(): a PyTorch model's GEMMs served by
tuned, as the model is.

    model = tuned.optimize(model)           # every nn.Linear in it, in place
    y = model(x)
    with tuned.enable():                    # also F.linear, matmul, mm, @ and addmm calls
        y = model(x)

Each nn.Linear's forward becomes a call of tuned.linear on its weight and
bias (inside enable(), so does every torch.nn.functional.linear call, and
torch.matmul, torch.mm, @ and torch.addmm (alpha = beta = 1) of two
matrices a call of tuned.matmul) (layout "nt" for the usual row-major weight), in the math mode that
torch's own settings give: for float32, "tf32" where
torch.backends.cuda.matmul.allow_tf32 is on, else "ieee_fp32"; bfloat16
and float16 layers their 16-bit problems. A call never raises for the
daemon's sake: a shape that nothing near serves, or a daemon that does not
answer, runs torch's own F.linear, and the shape's sweep is queued
(tune_if_missing) and asked again after RETRY_SECONDS. Where autograd
records, the backward's GEMMs are served the same way (linear's in layouts
"nn" and "tn", matmul's in "nt" and "tn"). What tuned does not take runs
torch's own call too: tensors off the GPU, other dtypes, mixed dtypes, and
calls inside torch.compile's tracing (the compiled graph is torch's own). Record a model's workload first (tuned.record) and tune it
(`tunectl workload sweep`), so that its shapes are served from the start.

Where the package's C++ extension is built (tuned._torchcall, where pip
found torch), all of this is served inside torch's dispatcher instead
(tuned/serving.py): each nn.Linear becomes a tuned.model.Linear, whose
forward is one call of the operator tuned::linear (math as torch's
settings give it), and enable() registers tuned's kernels for aten::mm,
aten::addmm and aten::linear on the GPU for its scope, removed on exit. A
shape the table has no kernel for runs torch's own kernel at once and is
asked for in the background (retried after serving.RETRY_SECONDS where
nothing near is tuned); gradients go through the same table; a CUDA graph
captures the served kernels of the shapes looked up before the capture;
torch.compile traces tuned::linear (its fake kernel) and its compiled code
calls the operator; dtypes and devices tuned does not take run torch's own
kernels. Without the extension the Python path above serves.
"""

import threading
import time
import types

import grpc

from . import serving
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

    tc = serving.start(client)
    for module in model.modules():
        if not isinstance(module, torch.nn.Linear) or "forward" in module.__dict__:
            continue
        if tc is not None:
            if type(module).forward is torch.nn.Linear.forward:
                module.__class__ = _served_class(torch, type(module))
        else:
            module.forward = types.MethodType(_linear_forward, module)
            module._tuned_client = client
    return model


_served = {}  # an nn.Linear class -> its served subclass


def _served_class(torch, cls):
    """The subclass of nn.Linear class `cls` whose forward is tuned::linear:
    tuned.model.Linear for nn.Linear itself."""
    served = _served.get(cls)
    if served is not None or getattr(cls, "_tuned_served", False):
        return served or cls
    # linear_module reads the weight and bias in C (nn.Module.__getattr__'s
    # Python call, twice) and calls the operator's kernel without the
    # dispatcher where nothing but it would run: a served call then costs
    # less CPU time than F.linear's, not as much (bench/RESULTS.md
    # models-gpt2-decode, served-linear-host-cpu).
    linear_module = serving.extension().linear_module
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
    op = torch.ops.tuned.linear

    def forward(self, x):
        if compiling():  # traced: the operator, in the graph
            return op(x, self.weight, self.bias, "auto")
        return linear_module(self, x)

    name = "Linear" if cls is torch.nn.Linear else "Tuned" + cls.__name__
    served = type(name, (cls,), {"forward": forward, "_tuned_served": True,
                                 "__module__": __name__,
                                 "__doc__": f"{cls.__name__} served by tuned::linear."})
    if cls is torch.nn.Linear:
        globals()["Linear"] = served  # found by name, for pickling
    _served[cls] = served
    return served


def _linear_forward(self, x):
    return serve_linear(x, self.weight, self.bias, client=self._tuned_client)


def serve_linear(x, weight, bias=None, *, client=None):
    """torch.nn.functional.linear(x, weight, bias), run by tuned where it
    can and by torch where it cannot (see the module comment); never raises
    more than F.linear does."""
    import torch
    import torch.nn.functional as F

    from . import ops

    tensors = (x, weight) if bias is None else (x, weight, bias)
    if not _servable(torch, ops, tensors) or \
            weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        return F.linear(x, weight, bias)
    if _recording(torch, tensors):
        return _autograd(torch).linear.apply(x, weight, bias, client)
    math = _math_mode(torch, x)
    key = ("linear", x.shape, weight.shape, x.stride(), weight.stride(), x.get_device(), x.dtype,
           math, None if bias is None else bias.shape, client)
    return _serve(key, lambda: ops.linear(x, weight, bias, math=math, tune_if_missing=True,
                                          client=client),
                  lambda: F.linear(x, weight, bias))


def serve_matmul(a, b, *, client=None):
    """torch.matmul(a, b), run by tuned where a and b are matrices it takes
    (as serve_linear) and by torch otherwise; never raises more than
    torch.matmul does."""
    import torch

    from . import ops

    if not _servable(torch, ops, (a, b)) or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return torch.matmul(a, b)
    if _recording(torch, (a, b)):
        return _autograd(torch).matmul.apply(a, b, client)
    math = _math_mode(torch, a)
    key = ("matmul", a.shape, b.shape, a.stride(), b.stride(), a.get_device(), a.dtype, math, client)
    return _serve(key, lambda: ops.matmul(a, b, math=math, tune_if_missing=True, client=client),
                  lambda: torch.matmul(a, b))


def _math_mode(torch, t):
    """The math mode torch's settings give a GEMM of `t`'s dtype."""
    tf32 = t.dtype is torch.float32 and torch.backends.cuda.matmul.allow_tf32
    return "tf32" if tf32 else "ieee_fp32"


def _serve(key, tuned_call, torch_call):
    """tuned_call(), or torch_call() where the daemon served nothing for
    `key` less than RETRY_SECONDS ago, or does not now (NOT_FOUND,
    UNAVAILABLE, DEADLINE_EXCEEDED)."""
    retry = _untuned.get(key)
    if retry is not None:
        if time.monotonic() < retry:
            return torch_call()
        with _lock:
            _untuned.pop(key, None)
    try:
        return tuned_call()
    except TunedError as e:
        if e.code not in _SURVIVED:
            raise
        with _lock:
            _untuned[key] = time.monotonic() + RETRY_SECONDS
        return torch_call()


def _servable(torch, ops, tensors):
    """Whether tuned takes `tensors` as they are: on the GPU (the tests'
    device type), of one dtype of float32, bfloat16 and float16, and no
    graph being traced."""
    if not all(isinstance(t, torch.Tensor) and t.device.type == ops._DEVICE_TYPE for t in tensors):
        return False
    if tensors[0].dtype not in ops._DTYPES or any(t.dtype is not tensors[0].dtype for t in tensors):
        return False
    return not ops._is_compiling()


def _recording(torch, tensors):
    """Whether autograd records a call on `tensors`."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


_functions = None


def _autograd(torch):
    """The autograd functions of served calls, made once (they need torch):
    the forward served as without autograd, the backward's GEMMs served the
    same way (linear: dX = dY W in layout "nn", dW = dY^T X in "tn"; matmul:
    dA = dY B^T in "nt", dB = A^T dY in "tn")."""
    global _functions
    if _functions is not None:
        return _functions

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, client):
            ctx.save_for_backward(x, weight)
            ctx.bias_shape, ctx.client = None if bias is None else bias.shape, client
            return serve_linear(x, weight, bias, client=client)

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            n, k = weight.shape
            g = grad.reshape(-1, n).contiguous().to(weight.dtype)
            needs = ctx.needs_input_grad
            gx = serve_matmul(g, weight, client=ctx.client).view(x.shape) if needs[0] else None
            gw = serve_matmul(g.t(), x.reshape(-1, k), client=ctx.client) if needs[1] else None
            gb = grad.sum_to_size(ctx.bias_shape) if ctx.bias_shape is not None and needs[2] else None
            return gx, gw, gb, None

    class Matmul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, client):
            ctx.save_for_backward(a, b)
            ctx.client = client
            return serve_matmul(a, b, client=client)

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            g = grad.contiguous().to(a.dtype)
            needs = ctx.needs_input_grad
            ga = serve_matmul(g, b.t(), client=ctx.client) if needs[0] else None
            gb = serve_matmul(a.t(), g, client=ctx.client) if needs[1] else None
            return ga, gb, None

    _functions = types.SimpleNamespace(linear=Linear, matmul=Matmul)
    return _functions


class enable:  # noqa: N801 (used as tuned.enable(), a context)
    """A context in which the GEMMs that torch code calls run through tuned
    (see the module comment): torch.nn.functional.linear (so nn.Linear),
    torch.matmul, torch.mm, Tensor.matmul, Tensor.mm and @ of two matrices,
    and torch.addmm with alpha = beta = 1. `client`: as optimize's."""

    def __init__(self, *, client=None):
        self.client = client
        self._mode = None
        self._override = None

    def __enter__(self):
        tc = serving.start(self.client)
        if tc is not None:  # tuned's kernels in the dispatcher, for this scope
            self._override = tc.override_begin()
            return self
        import torch
        import torch.nn.functional as F
        from torch.overrides import TorchFunctionMode

        client = self.client
        matmuls = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm,
                   torch.Tensor.__matmul__}
        addmms = {torch.addmm, torch.Tensor.addmm}

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func is F.linear and len(args) >= 2 and set(kwargs) <= {"bias"}:
                    bias = args[2] if len(args) > 2 else kwargs.get("bias")
                    return serve_linear(args[0], args[1], bias, client=client)
                if func in matmuls and len(args) == 2 and not kwargs:
                    return serve_matmul(args[0], args[1], client=client)
                if func in addmms and len(args) == 3 and not kwargs:
                    return serve_matmul(args[1], args[2], client=client) + args[0]
                return func(*args, **kwargs)

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        if self._override is not None:
            override, self._override = self._override, None
            serving.extension().override_end(override)
            return False
        self._mode.__exit__(*exc)
        return False
