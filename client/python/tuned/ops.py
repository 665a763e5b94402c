"""tuned.matmul and tuned.linear: the tuned SGEMM as drop-ins for
torch.matmul (of two matrices) and torch.nn.functional.linear, and the torch
operators tuned::matmul and tuned::linear for compiled graphs.

What serves a call is decided once per (shapes, devices, math mode, layouts,
dtype) and kept in a dict (a _Route): the daemon's kernel, loaded and
prepared, or cuBLAS in the mode (called directly, tuned/blas.py, where
tuned._fastcall is built; else through torch). A call looks its route up without a lock and
checks only what the key does not hold (dtypes, out), so it costs about what
torch.matmul costs; the first call of a key asks the daemon (the one owning
the tensors' GPU), which is why a CUDA graph capture must be preceded by a
warm-up call of each shape.

Layouts, in row-major terms (tuned/layout.py): an operand is "n" (row-major:
contiguous), "t" (the transpose of a row-major matrix, as weight.t() is:
strides (1, rows)), or neither (copied with .contiguous() where a kernel
takes it, then "n"). The pair, e.g. "nt" for x @ W.t(), is part of the key
and of the problem the daemon is asked (Problem.layout): each layout has
its own kernel, which reads the operands where they are (only the pointers
are passed); where the daemon serves cuBLAS, cuBLAS (or torch) runs on the operands as
they are.

Dtypes: float32 operands are the f32 problem in the math mode asked;
bfloat16 and float16 operands (both of one dtype) the bf16 and f16 problems
(16-bit A, B and C, fp32 accumulation), in math "ieee_fp32" only, their
result of their dtype; tuned.matmul's out_dtype=torch.float32 makes theirs
the bf16_f32 and f16_f32 problems (16-bit A and B, fp32 accumulation and C).

Activations: tuned.linear(..., activation=) of 16-bit operands with a bias
of shape (N,) asks for the problem with that epilogue (Problem.epilogue:
the kernel adds the bias and applies the activation before its store);
everywhere else, and where the daemon serves cuBLAS, torch applies it after.

Importing this module imports torch; `tuned.matmul` does that on first use.
"""

import threading
import warnings
from typing import Optional

import grpc
import torch
import torch.nn.functional as F

from . import blas as _blas
from .client import Client, DTypeError, TunedError, default_address, layout_value, problem
from .kernel import (ACTIVATION_EPILOGUES, Kernel, _gemm_f32_out, _run_in_mode,
                     activation_function, served_layout)
from .layout import operand_layout as _layout
from .layout import weight_layout as _weight_layout
from .problem_key import key_text
from .v1 import tuner_pb2 as pb

# math mode name -> (tuner.proto Math, whether its cuBLAS baseline is TF32)
_MATH = {"ieee_fp32": (pb.MATH_IEEE_FP32, False),
         "fp32_accurate": (pb.MATH_FP32_ACCURATE, False),
         "tf32": (pb.MATH_TF32, True)}
_MATH_BY_VALUE = {v[0]: (name, v) for name, v in _MATH.items()}

_F32 = torch.float32
# The operands' torch dtype -> the problem's dtype (Problem.dtype's name);
# with a float32 result for 16-bit operands, that name and "_f32".
_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
_DTYPE_NAMES = "float32, bfloat16 or float16"
_grad_enabled = torch.is_grad_enabled
# The device type the tensors must be on; the tests run every path on the CPU
# with a stand-in driver by setting it to "cpu".
_DEVICE_TYPE = "cuda"

_lock = threading.Lock()  # taken to add a route or a client, never to look one up
_clients = {}  # GPU index -> Client of its local daemon (or $TUNED_SERVER)
# key (see matmul, linear) -> _Route. A key holds the operands' shapes and
# strides, which fix their layouts: a look-up reads them as they are, with
# no layout test per call.
_routes = {}
_kernels = {}  # (problem key's text, (m, n, k), GPU index, client) -> loaded Kernel
# linear's activation -> (torch's function, the epilogue a 16-bit problem
# fuses with a bias of shape (N,): tuner.proto Epilogue's name).
_ACTIVATIONS = {a: (activation_function(torch, a), e) for a, e in ACTIVATION_EPILOGUES.items()}


def _activation(activation):
    """torch's function of linear's `activation` (None for None); ValueError for another."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r} (known: None, "
                         f"{', '.join(repr(a) for a in _ACTIVATIONS if a)})")
    return _ACTIVATIONS[activation][0]


def _math(math):
    """(Math enum value, tf32) of a mode's name (or enum value); ValueError for another."""
    if isinstance(math, str):
        mode = _MATH.get(math)
        if mode is not None:
            return mode
    elif isinstance(math, int) and not isinstance(math, bool) and math in _MATH_BY_VALUE:
        return _MATH_BY_VALUE[math][1]
    raise ValueError(f"unknown math mode {math!r} (known: {', '.join(_MATH)})")


def _x_layout(x):
    """linear's op(A) layout key for x: "n" if contiguous, a 2-D x's
    _layout otherwise (a transposed view: "t"), None (copied) for the rest."""
    if x.is_contiguous():
        return "n"
    return _layout(x) if x.dim() == 2 else None


def _client(index):
    client = _clients.get(index)
    if client is None:
        with _lock:
            client = _clients.get(index) or _clients.setdefault(index, Client(default_address(index)))
    return client


def _new_kernel(best, device):
    return Kernel(best, device=device)


def _capturing():
    try:
        return torch.cuda.is_current_stream_capturing()
    except Exception:  # no CUDA in this torch
        return False


class _Route:
    """How one key runs: `kernel` (a loaded tuned.Kernel for (m, n, k)) with
    its operands copied first where `copy_a`/`copy_b`, or, where kernel is
    None, cuBLAS in the math mode (`tf32`: cuBLAS TF32, else pure fp32; None
    for 16-bit operands: torch as its settings are): `blas` (a tuned.blas.Gemm
    calling cuBLAS itself, in fp32 for 16-bit operands) where it is
    available and the operands are in `layout` as they are, else torch (for 16-bit operands and a float32
    result, cuBLAS's GEMM with an fp32 C, tuned.kernel._gemm_f32_out).
    `out_shape`: the shape of the result (linear's keeps x's leading
    dimensions); `dtype`: the operands' torch dtype, `out_dtype` the
    result's (None: dtype). `act`: linear's activation applied by torch
    after the GEMM, or None; `fused`: the kernel applies the bias and the
    activation itself (its problem's epilogue)."""

    __slots__ = ("kernel", "tf32", "layout", "copy_a", "copy_b", "m", "n", "k", "size",
                 "out_shape", "index", "fused_bias", "dtype", "out_dtype", "blas", "act", "fused")

    def __init__(self, kernel, tf32, layout, copy_a, copy_b, m, n, k, index, out_shape=None,
                 bias_shape=None, dtype=_F32, blas=None, out_dtype=None, act=None, fused=False):
        self.kernel, self.tf32, self.layout, self.dtype = kernel, tf32, layout, dtype
        self.fused = fused and kernel is not None
        self.act = None if self.fused else act
        self.out_dtype = out_dtype or dtype
        self.blas = blas
        # torch.nn.functional.linear adds a bias of shape (N,) itself; another
        # shape that broadcasts is added after the GEMM.
        self.fused_bias = bias_shape is None or tuple(bias_shape) == (n,)
        self.copy_a, self.copy_b = copy_a, copy_b
        # The result is made by new_empty(m, n): ints cost torch less CPU than a Size.
        self.m, self.n, self.k, self.index = m, n, k, index
        self.size = torch.Size((m, n))
        same = out_shape is None or tuple(out_shape) == (m, n)
        self.out_shape = self.size if same else torch.Size(out_shape)

    def fits(self, out):
        """Whether `out` is a row-major (m, n) tensor of the route's out_dtype on the device."""
        return (out.dtype is self.out_dtype and out.shape == self.size
                and out.get_device() == self.index and out.is_contiguous())

    def matmul(self, a, b, out):
        kernel = self.kernel
        if kernel is None:
            blas = self.blas
            if blas is not None:
                return blas.new(a, b) if out is None else blas(a, b, out)
            if self.out_dtype is not self.dtype:  # 16-bit operands, a float32 result
                if out is None:
                    out = a.new_empty(self.m, self.n, dtype=self.out_dtype)
                return _gemm_f32_out(torch, a, b, out)
            if out is None:
                return _run_in_mode(torch, self.tf32, torch.matmul, a, b)
            return _run_in_mode(torch, self.tf32, torch.matmul, a, b, out=out)
        if self.copy_a:
            a = a.contiguous()
        if self.copy_b:
            b = b.contiguous()
        if out is None:
            out = a.new_empty(self.m, self.n, dtype=self.out_dtype)
        kernel._sgemm_launch(a, b, out, 1.0, 0.0)
        return out

    def linear(self, x, weight, bias):
        y = self._linear(x, weight, bias)
        return y if self.act is None else self.act(y)

    def _linear(self, x, weight, bias):
        kernel = self.kernel
        if kernel is None:
            blas = self.blas
            if blas is not None and bias is None:
                out = blas.new(x, weight)
                return out if self.out_shape is self.size else out.view(self.out_shape)
            if self.fused_bias:
                return _run_in_mode(torch, self.tf32, F.linear, x, weight, bias)
            return _run_in_mode(torch, self.tf32, F.linear, x, weight).add_(bias)
        # The kernel's op(B) is weight.t(), (K, N): row-major where weight is
        # itself the transpose of a row-major (K, N) matrix ("n"), transposed
        # where weight is row-major ("t": layout "nt", as stored). A 2-D x
        # that is a transposed view is op(A) = A^T ("t"). Only the pointers
        # are passed.
        a = x.contiguous() if self.copy_a else x
        b = weight.contiguous() if self.copy_b else weight
        out = a.new_empty(self.m, self.n)
        if self.fused:  # the kernel adds the bias and applies the activation
            kernel._sgemm_launch(a, b, out, 1.0, 0.0, bias)
            return out if self.out_shape is self.size else out.view(self.out_shape)
        kernel._sgemm_launch(a, b, out, 1.0, 0.0)
        y = out if self.out_shape is self.size else out.view(self.out_shape)
        if bias is not None:
            y.add_(bias)
        return y


def _new_route(m, n, k, device, math, layout, copy_a, copy_b, tune_if_missing, client,
               out_shape=None, bias_shape=None, dtype=_F32, out_dtype=None, activation=None):
    mode, tf32 = _math(math)
    name = _DTYPES[dtype]
    if name != "f32":
        tf32 = None  # a 16-bit GEMM: torch.matmul as its settings are
        if out_dtype is _F32:
            name += "_f32"
    index = device.index if device.type == "cuda" else -1
    # A 16-bit linear with a bias of shape (N,) asks for the problem with
    # the epilogue; the others apply the activation after.
    act, epilogue = _ACTIVATIONS[activation]
    if name == "f32" or bias_shape is None or tuple(bias_shape) != (n,):
        epilogue = "none"
    shaped = dict(out_shape=out_shape, bias_shape=bias_shape, dtype=dtype, out_dtype=out_dtype,
                  act=act)
    if not (m and n and k):  # an empty GEMM: torch's
        return _Route(None, tf32, layout, False, False, m, n, k, index, **shaped)
    if _capturing():
        raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                         f"{m}x{n}x{k} ({name}, {math}, {layout}) is asked for the first time "
                         "during a CUDA graph capture: call it once before capturing, so that the "
                         "daemon is asked and the kernel loaded outside the capture")
    kernel_key = (key_text(problem(m, n, k, math=mode, layout=layout, dtype=name, epilogue=epilogue)),
                  (m, n, k), index, client)
    kernel = _kernels.get(kernel_key)
    if kernel is None:
        # dtype= is passed for a 16-bit problem only: f32 is Client.best's
        # default, so a stand-in client of f32 only needs no such argument;
        # epilogue= likewise where there is one.
        dtype_arg = {} if name == "f32" else {"dtype": name}
        if epilogue != "none":
            dtype_arg["epilogue"] = epilogue
        best = (client or _client(index)).best(m, n, k, math=mode, layout=layout,
                                               tune_if_missing=tune_if_missing, **dtype_arg)
        if not best.use_baseline and served_layout(best) != layout_value(layout):
            # A daemon older than layouts answers with its "nn" kernel: torch
            # in the mode computes the asked layout correctly.
            warnings.warn(f"tuned: the daemon at {(client or _client(index)).address} served a "
                          f"kernel of another layout for {m}x{n}x{k} ({name}, {math}, {layout}): it "
                          "does not tune layouts; torch runs this call", RuntimeWarning,
                          stacklevel=3)
            return _Route(None, tf32, layout, False, False, m, n, k, index, **shaped)
        if (epilogue != "none" and not best.use_baseline
                and not any(a.endswith("* bias") for a in best.arguments)):
            # A daemon older than epilogues answers with its plain kernel:
            # torch adds the bias and applies the activation.
            warnings.warn(f"tuned: the daemon at {(client or _client(index)).address} served a "
                          f"kernel without the bias for {m}x{n}x{k} ({name}, {layout}, "
                          f"{epilogue}): it does not tune epilogues; torch runs this call",
                          RuntimeWarning, stacklevel=3)
            return _Route(None, tf32, layout, False, False, m, n, k, index, **shaped)
        kernel = _new_kernel(best, device)
        if not kernel.uses_torch:
            kernel.load()
        with _lock:
            kernel = _kernels.setdefault(kernel_key, kernel)
    if kernel.uses_torch:  # the daemon serves cuBLAS: cuBLAS in the mode (16 bits: in fp32)
        blas = None
        if not (copy_a or copy_b) and device.type == "cuda":
            blas = _blas.prepare(torch, index, bool(tf32), layout, m, n, k, dtype=name)
        return _Route(None, tf32, layout, False, False, m, n, k, index, blas=blas, **shaped)
    return _Route(kernel, tf32, layout, copy_a, copy_b, m, n, k, index,
                  fused=epilogue != "none", **shaped)


def _route(key, *args, **kwargs):
    route = _routes.get(key)
    if route is None:
        route = _new_route(*args, **kwargs)
        with _lock:
            route = _routes.setdefault(key, route)
    return route


def _check_tensor(t, name):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise DTypeError(f"{name} must be {_DTYPE_NAMES}, not {t.dtype}")


def _check_dtype(tensors, math):
    """The one dtype of (tensor, name) pairs (each of _DTYPES, checked):
    DTypeError where they differ, as torch refuses mixed operands, or where
    a 16-bit dtype comes with a math mode other than "ieee_fp32" (the
    16-bit problems accumulate in fp32 only). `math`: a known mode."""
    first, name = tensors[0]
    dtype = first.dtype
    for t, other in tensors[1:]:
        if t.dtype != dtype:
            raise DTypeError(f"{other} must be {str(dtype).removeprefix('torch.')} as {name} "
                             f"is, not {t.dtype}")
    if dtype is not _F32:
        mode = _math(math)[0]
        if mode != pb.MATH_IEEE_FP32:
            raise DTypeError(f"math '{_MATH_BY_VALUE[mode][0]}' is for float32 operands; {dtype} "
                             "takes math 'ieee_fp32' only (16-bit inputs, fp32 accumulation)")
    return dtype


def _check_device(tensors):
    """The device of (tensor, name) pairs: ValueError unless all are on one CUDA device."""
    first, name = tensors[0]
    if first.device.type != _DEVICE_TYPE:
        raise ValueError(f"the tensors must be on a CUDA device, not {first.device}")
    for t, other in tensors[1:]:
        if t.device != first.device:
            raise ValueError(f"{other} is on {t.device}, {name} on {first.device}")
    return first.device


def _check_out_dtype(out_dtype, dtype):
    """The result's dtype of operands of `dtype` given matmul's out_dtype:
    dtype for None and dtype itself, float32 for float32 with 16-bit
    operands; DTypeError for another."""
    if out_dtype is None or out_dtype is dtype:
        return dtype
    if out_dtype is _F32:
        return _F32
    raise DTypeError(f"out_dtype must be None, the operands' dtype or torch.float32, not "
                     f"{out_dtype!r} ({dtype} operands)")


def _check_out(out, size, device, dtype, given=False):
    """TypeError/ValueError unless `out` is a row-major tensor of `size` and
    `dtype` on `device`: DTypeError for another dtype, naming it as the
    operands' or (`given`) matmul's out_dtype."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, not {type(out).__name__}")
    if out.dtype != dtype:
        hint = ("; out_dtype=torch.float32 asks for a float32 result"
                if not given and out.dtype is _F32 else "")
        raise DTypeError(f"out must be {str(dtype).removeprefix('torch.')} as "
                         f"{'out_dtype is' if given else 'the operands are'}, not {out.dtype}"
                         + hint)
    if tuple(out.shape) != tuple(size):
        raise ValueError(f"out has shape {tuple(out.shape)}, expected {tuple(size)}")
    if not out.is_contiguous():
        raise ValueError("out must be contiguous (row-major)")
    if out.device != device:
        raise ValueError(f"out is on {out.device}, the operands on {device}")


def matmul(a, b, *, math="ieee_fp32", out=None, out_dtype=None, tune_if_missing=False,
           client=None):
    """a(MxK) @ b(KxN) with the tuned SGEMM; returns a new (MxN) tensor, or `out`.

    a, b: torch matrices of one dtype on one GPU, each row-major ("n") or
    the transpose of a row-major matrix ("t": a.t() of a contiguous (K, M),
    b = w.t() of a contiguous (N, K)), read where they are: the pair is the
    problem's layout ("nn", "nt", "tn", "tt"); any other strides are copied
    (.contiguous(), "n") where a kernel takes the operand. Their dtype is the
    problem's: float32 "f32"; bfloat16 "bf16" and float16 "f16" (16-bit
    inputs and result, fp32 accumulation, math "ieee_fp32" only). out_dtype:
    the result's dtype, None (the default) or the operands' dtype, or
    torch.float32 with bfloat16 or float16 operands: the problem
    "bf16_f32" or "f16_f32" (16-bit inputs, fp32 accumulation and result,
    never rounded to 16 bits). math (f32): "ieee_fp32" (fp32 kernels; cuBLAS
    with TF32 off), "fp32_accurate" (also 3xTF32 tensor-core kernels; cuBLAS
    fp32) or "tf32" (TF32 tensor cores; cuBLAS TF32). out: a row-major (MxN)
    tensor of the result's dtype on that GPU to write into.

    The kernel comes from the daemon owning that GPU (default_address(gpu),
    or `client`): the shape's own, else the nearest tuned shape's
    (tune_if_missing also queues a sweep for the shape), asked at the first
    call of each (shapes, GPU, math, layouts, dtype) in this process and kept
    (each layout and dtype is its own problem: tune it in that layout and
    dtype); where the daemon serves cuBLAS, cuBLAS runs in the math mode
    (called as torch calls it; torch.matmul itself where tuned._fastcall is
    not built, and for 16-bit operands)
    (16-bit: as torch's settings are; with a float32 result, cuBLAS's GEMM
    with an fp32 C) on the operands as they are. TunedError
    NOT_FOUND if nothing near is tuned in the mode, layout and dtype;
    TypeError/ValueError for wrong tensors or math, checked before the daemon
    is asked: tuned.DTypeError (a TunedError INVALID_ARGUMENT and a TypeError)
    for another dtype than float32, bfloat16 and float16, operands of two
    dtypes, an out of another dtype than the result's, another out_dtype, or a
    16-bit dtype with math other than "ieee_fp32". Gradients flow where a or b
    requires them (of the operands' dtype: a float32 result's gradient is
    rounded to it first). Inside torch.compile the call is the operator
    torch.ops.tuned.matmul (tune_if_missing and client do not apply there).
    """
    if _OPS and _is_compiling():
        return _matmul_in_graph(a, b, math, out, out_dtype)
    route = None
    try:
        dtype = a.dtype  # a route's key holds it: only a checked dtype has one
        if (dtype is b.dtype
                and not ((a.requires_grad or b.requires_grad) and _grad_enabled())):
            route = _routes.get((a.shape, b.shape, a.get_device(), b.get_device(), math,
                                 a.stride(), b.stride(), client, out_dtype, dtype))
            if route is not None and out is not None and not route.fits(out):
                route = None
    except (AttributeError, TypeError, ValueError):  # not tensors or matrices: named below
        route = None
    if route is not None:
        return route.matmul(a, b, out)
    return _matmul_checked(a, b, math, out, tune_if_missing, client, True, out_dtype)


def _matmul_checked(a, b, math, out, tune_if_missing, client, autograd, out_dtype=None):
    _check_tensor(a, "a")
    _check_tensor(b, "b")
    for name, t in (("a", a), ("b", b)):
        if t.dim() != 2:
            raise ValueError(f"{name} must be a matrix, it has {t.dim()} dimensions")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    _math(math)
    dtype = _check_dtype([(a, "a"), (b, "b")], math)
    result = _check_out_dtype(out_dtype, dtype)
    device = _check_device([(a, "a"), (b, "b")])
    (m, k), n = a.shape, b.shape[1]
    if out is not None:
        _check_out(out, (m, n), device, result, given=out_dtype is not None)
    if autograd and (a.requires_grad or b.requires_grad) and _grad_enabled():
        if out is not None:
            raise ValueError("out= does not take part in autograd: a or b requires grad")
        return _MatmulFunction.apply(a, b, math, tune_if_missing, client, out_dtype)
    la, lb = _layout(a), _layout(b)
    layout = (la or "n") + (lb or "n")
    index = a.get_device()
    route = _route((a.shape, b.shape, index, index, math, a.stride(), b.stride(), client,
                    out_dtype, dtype),
                   m, n, k, device, math, layout, la is None, lb is None, tune_if_missing, client,
                   dtype=dtype, out_dtype=result)
    return route.matmul(a, b, out)


def linear(x, weight, bias=None, *, activation=None, math="ieee_fp32", tune_if_missing=False,
           client=None):
    """torch.nn.functional.linear with the tuned SGEMM: x(..., K) @ weight(N, K)^T
    + bias, then `activation`; returns a new (..., N) tensor.

    activation: None, "relu", "gelu" (torch's F.gelu, the erf form) or
    "gelu_tanh" (F.gelu(approximate="tanh")). With 16-bit operands and a
    bias of shape (N,), the daemon is asked for the problem with that
    epilogue ("bias", "bias_relu", "bias_gelu_erf", "bias_gelu_tanh"), whose
    kernel applies the bias and the activation before its store; otherwise
    (and where the daemon serves cuBLAS, and for gradients and
    torch.compile) torch applies the activation after. ValueError for
    another activation.

    x's leading dimensions are flattened to M (the GEMM is M x N x K); the
    bias (of x's dtype, broadcast to (..., N), e.g. of shape (N,)) is added
    after the GEMM. x, weight and bias are of one dtype: float32, or
    bfloat16 or float16 (that dtype's problem, math "ieee_fp32" only; the
    result of that dtype), as tuned.matmul. weight.t() is the GEMM's op(B): a row-major weight (an
    nn.Linear's) is read as stored, op(B) = B^T (layout "nt", the daemon's
    kernel for "nt"); a weight that is itself the transpose of a row-major
    (K, N) matrix is "nn"; a 2-D x that is the transpose of a row-major
    matrix is op(A) = A^T ("tn", "tt"); nothing is copied but operands of
    other strides. Where the daemon serves cuBLAS, cuBLAS runs in the
    math mode, as tuned.matmul's (torch.nn.functional.linear, which fuses
    it, where a bias is given). math,
    tune_if_missing, client, errors, gradients and torch.compile: as
    tuned.matmul (torch.ops.tuned.linear).
    """
    if activation is not None:
        act = _activation(activation)
        if (_OPS and _is_compiling()) or _needs_grad(x, weight, bias):
            # torch's activation after: traced, or differentiated, as torch's
            return act(linear(x, weight, bias, math=math, tune_if_missing=tune_if_missing,
                              client=client))
    elif _OPS and _is_compiling():
        return torch.ops.tuned.linear(x, weight, bias, math)
    route = None
    try:
        dtype = x.dtype  # a route's key holds it: only a checked dtype has one
        if dtype is weight.dtype and not _needs_grad(x, weight, bias):
            if bias is None:
                bias_key = None
            elif bias.dtype is dtype:
                bias_key = (bias.shape, bias.get_device())
            else:
                bias_key = False  # no route has it: the checks name the dtype
            route = _routes.get((x.shape, weight.shape, x.get_device(), weight.get_device(),
                                 math, x.stride(), weight.stride(), client, bias_key, dtype,
                                 activation))
    except (AttributeError, TypeError, ValueError):
        route = None
    if route is not None:
        return route.linear(x, weight, bias)
    return _linear_checked(x, weight, bias, math, tune_if_missing, client, True, activation)


def _needs_grad(x, weight, bias):
    """Whether autograd records a linear of these operands."""
    try:
        return ((x.requires_grad or weight.requires_grad
                 or (bias is not None and bias.requires_grad)) and _grad_enabled())
    except AttributeError:  # not tensors: the checks name them
        return False


def _linear_checked(x, weight, bias, math, tune_if_missing, client, autograd, activation=None):
    _check_tensor(x, "x")
    _check_tensor(weight, "weight")
    if bias is not None:
        _check_tensor(bias, "bias")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension (its last is K)")
    if weight.dim() != 2:
        raise ValueError(f"weight must be a matrix (N, K), it has {weight.dim()} dimensions")
    n, k = weight.shape
    if x.shape[-1] != k:
        raise ValueError(f"x has {x.shape[-1]} features (its last dimension), weight "
                         f"{tuple(weight.shape)} takes {k}")
    out_shape = (*x.shape[:-1], n)
    if bias is not None:
        try:
            fits = torch.broadcast_shapes(bias.shape, out_shape) == torch.Size(out_shape)
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"bias of shape {tuple(bias.shape)} does not broadcast to the "
                             f"output's {out_shape}")
    _math(math)
    named = [(x, "x"), (weight, "weight")] + ([] if bias is None else [(bias, "bias")])
    dtype = _check_dtype(named, math)
    device = _check_device(named)
    if autograd and any(t.requires_grad for t, _ in named) and _grad_enabled():
        return _LinearFunction.apply(x, weight, bias, math, tune_if_missing, client)
    m = x.numel() // k if k else 0
    la = _x_layout(x)
    lb = _weight_layout(weight)
    layout = (la or "n") + (lb or "t")
    bias_key = None if bias is None else (bias.shape, bias.get_device())
    index = x.get_device()
    key = (x.shape, weight.shape, index, index, math, x.stride(), weight.stride(), client, bias_key,
           dtype, activation)
    route = _route(key, m, n, k, device, math, layout, la is None, lb is None,
                   tune_if_missing, client, out_shape, None if bias is None else bias.shape,
                   dtype=dtype, activation=activation)
    return route.linear(x, weight, bias)


class _MatmulFunction(torch.autograd.Function):
    """tuned.matmul where a or b requires grad: the backward's GEMMs are
    tuned.matmul too, in their own layouts (grad @ b.t(): "nt" for a
    row-major b; a.t() @ grad: "tn"), in the operands' dtype (a float32
    result's gradient of 16-bit operands rounded to theirs)."""

    @staticmethod
    def forward(ctx, a, b, math, tune_if_missing, client, out_dtype):
        ctx.save_for_backward(a, b)
        ctx.math, ctx.client = math, client
        return _matmul_checked(a, b, math, None, tune_if_missing, client, False, out_dtype)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.to(a.dtype)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = matmul(grad, b.t(), math=ctx.math, client=ctx.client)
        if ctx.needs_input_grad[1]:
            gb = matmul(a.t(), grad, math=ctx.math, client=ctx.client)
        return ga, gb, None, None, None, None


def _linear_backward(grad, x, weight, bias, math, client, needs):
    n, k = weight.shape
    g = grad.reshape(-1, n)
    gx = gw = gb = None
    if needs[0]:
        gx = matmul(g, weight, math=math, client=client).view(x.shape)
    if needs[1]:
        gw = matmul(g.t(), x.reshape(-1, k), math=math, client=client)
    if bias is not None and needs[2]:
        gb = grad.sum_to_size(bias.shape)
    return gx, gw, gb


class _LinearFunction(torch.autograd.Function):
    """tuned.linear where an operand requires grad."""

    @staticmethod
    def forward(ctx, x, weight, bias, math, tune_if_missing, client):
        ctx.save_for_backward(x, weight, bias)
        ctx.math, ctx.client = math, client
        return _linear_checked(x, weight, bias, math, tune_if_missing, client, False)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        needs = ctx.needs_input_grad[:3]
        return (*_linear_backward(grad, x, weight, bias, ctx.math, ctx.client, needs),
                None, None, None)


# ---- torch.library operators: tuned::matmul, tuned::linear ----
#
# The eager tuned.matmul and tuned.linear stay direct calls: an operator's
# dispatch costs tens of microseconds a call, several times the launch.
# Inside torch.compile (Dynamo traces the call: torch.compiler.is_compiling()
# is True) they become the operators, which a graph holds without a break
# and a CUDA graph captures: their fake implementations give the output's
# shape and dtype while tracing, and the compiled code calls the eager path
# (a cached route; the first call of a key, in the warm-up run before any
# capture, asks the daemon). Needs torch.library.custom_op (torch >= 2.4);
# with an older torch the operators are not registered (OPS_REGISTERED is
# False) and a compiled graph breaks at tuned.matmul. Where the package's C++
# extension is built, tuned::linear is its operator (tuned/_serving.cpp, the
# same schema, served from its table) and only tuned::matmul is made here.


def _fake_matmul(a, b, math="ieee_fp32", out_dtype=None):
    """tuned::matmul's output while tracing: (M, N) of the result's dtype
    (the operands', float32, bfloat16 or float16, or out_dtype), with the
    eager path's dtype and math checks."""
    _math(math)
    for t, name in ((a, "a"), (b, "b")):
        _check_tensor(t, name)
    result = _check_out_dtype(out_dtype, _check_dtype([(a, "a"), (b, "b")], math))
    torch._check(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0],
                 lambda: f"tuned::matmul takes (M, K) and (K, N), not {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=result)


def _fake_linear(x, weight, bias=None, math="ieee_fp32"):
    """tuned::linear's output while tracing: (..., N) of x's dtype, with the
    eager path's dtype and math checks."""
    _math(math)
    named = [(x, "x"), (weight, "weight")] + ([] if bias is None else [(bias, "bias")])
    for t, name in named:
        _check_tensor(t, name)
    _check_dtype(named, math)
    torch._check(weight.dim() == 2 and x.shape[-1] == weight.shape[1],
                 lambda: f"tuned::linear takes x (..., K) and weight (N, K), not "
                         f"{tuple(x.shape)} and {tuple(weight.shape)}")
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _register_ops():
    """Registers tuned::matmul and tuned::linear; False where torch has no
    torch.library.custom_op."""
    custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
    if custom_op is None:
        return False
    if hasattr(torch.ops, "tuned") and hasattr(torch.ops.tuned, "matmul"):
        return True  # this module imported again (importlib.reload)

    @custom_op("tuned::matmul", mutates_args=())
    def matmul_op(a: torch.Tensor, b: torch.Tensor, math: str = "ieee_fp32",
                  out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        return _matmul_checked(a, b, math, None, False, None, False, out_dtype).contiguous()

    matmul_op.register_fake(_fake_matmul)

    def matmul_setup(ctx, inputs, output):
        a, b, math = inputs[:3]
        ctx.save_for_backward(a, b)
        ctx.math = math

    def matmul_backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.to(a.dtype)  # a float32 result's, of 16-bit operands
        ga = torch.ops.tuned.matmul(grad, b.t(), ctx.math) if ctx.needs_input_grad[0] else None
        gb = torch.ops.tuned.matmul(a.t(), grad, ctx.math) if ctx.needs_input_grad[1] else None
        return ga, gb, None, None

    matmul_op.register_autograd(matmul_backward, setup_context=matmul_setup)
    if hasattr(torch.ops.tuned, "linear"):
        return True  # tuned._torchcall's, in C++ (tuned/_serving.cpp)

    @custom_op("tuned::linear", mutates_args=())
    def linear_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                  math: str = "ieee_fp32") -> torch.Tensor:
        return _linear_checked(x, weight, bias, math, False, None, False).contiguous()

    linear_op.register_fake(_fake_linear)

    def linear_setup(ctx, inputs, output):
        x, weight, bias, math = inputs
        ctx.save_for_backward(x, weight, bias)
        ctx.math = math

    def linear_backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        n, k = weight.shape
        g = grad.reshape(-1, n)
        needs = ctx.needs_input_grad
        gx = torch.ops.tuned.matmul(g, weight, ctx.math).view(x.shape) if needs[0] else None
        gw = torch.ops.tuned.matmul(g.t(), x.reshape(-1, k), ctx.math) if needs[1] else None
        gb = grad.sum_to_size(bias.shape) if bias is not None and needs[2] else None
        return gx, gw, gb, None

    linear_op.register_autograd(linear_backward, setup_context=linear_setup)
    return True


def _matmul_in_graph(a, b, math, out, out_dtype):
    c = torch.ops.tuned.matmul(a, b, math, out_dtype)
    return c if out is None else out.copy_(c)


OPS_REGISTERED = _OPS = _register_ops()
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
