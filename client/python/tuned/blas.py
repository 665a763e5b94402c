"""cuBLAS's SGEMM called directly, for tuned.matmul and tuned.linear where
the daemon serves cuBLAS.

torch.matmul reaches cuBLAS through its dispatcher (10-15 us of the CPU a
call on an H100 host, more for a transposed operand), so where the product
takes less time on the GPU than that, a stream of calls runs at the CPU's
pace, and a wrapper around torch.matmul is slower than torch.matmul by its
own cost. Here a route calls cublasSgemm itself through tuned._fastcall:
the same cuBLAS kernel, as torch chooses it (the mode's cublasMath_t as
torch sets it, cuBLAS's default workspace), with the operands read where
they are. Where tuned._fastcall is not built or cuBLAS is not found, prepare
returns None and torch runs the call.
"""

import threading

import grpc

from .client import TunedError
from .kernel import _driver, _fastcall, _primary_context, _stream_function

# cublasMath_t as torch sets it for its own handle: TF32 tensor ops where
# TF32 is allowed, else CUBLAS_DEFAULT_MATH (fp32).
_CUBLAS_DEFAULT_MATH = 0
_CUBLAS_TF32_TENSOR_OP_MATH = 3
_OP_N, _OP_T = 0, 1  # cublasOperation_t

_lock = threading.Lock()
_handles = {}  # device index -> (cuBLAS handle, its device's primary context)


def _handle(index):
    """The process's cuBLAS handle of GPU `index` and that GPU's primary
    context; None where tuned._fastcall or cuBLAS is not available.
    TunedError INTERNAL where cublasCreate fails."""
    if _fastcall is None:
        return None
    with _lock:
        if index not in _handles:
            lib = _driver()
            if not _fastcall.init()[1]:
                _handles[index] = None
            else:
                ctx = _primary_context(lib, index).value
                handle, status = _fastcall.cublas_create(ctx)
                if status != 0:
                    _raise("cublasCreate", status)
                _handles[index] = (handle, ctx)
        return _handles[index]


class Gemm:
    """C = op(A) @ op(B) for one route: m x n x k in fp32, A and B in
    `layout` ("n" row-major, "t" the transpose of a row-major matrix, as
    tuned/layout.py reads them), C a row-major (m, n) float32 tensor; on
    torch's current stream of GPU `index`."""

    __slots__ = ("handle", "ctx", "math", "opa", "opb", "m", "n", "k", "lda", "ldb", "index",
                 "stream", "call")

    def __init__(self, handle, ctx, tf32, layout, m, n, k, index, stream):
        # cuBLAS is column-major: the row-major C is C^T = op(B)^T op(A)^T,
        # each row-major operand being its own transpose there, and a
        # transposed one read as stored with OP_T (core/launch.cc's
        # RowMajorGemm).
        self.handle, self.ctx, self.index, self.stream = handle, ctx, index, stream
        self.math = _CUBLAS_TF32_TENSOR_OP_MATH if tf32 else _CUBLAS_DEFAULT_MATH
        ta, tb = layout[0] == "t", layout[1] == "t"
        self.opa, self.opb = (_OP_T if ta else _OP_N), (_OP_T if tb else _OP_N)
        self.lda, self.ldb = (m if ta else k), (k if tb else n)
        self.m, self.n, self.k = m, n, k
        self.call = _fastcall.sgemm if _fastcall is not None else None

    def __call__(self, a, b, out):
        """out = op(A) @ op(B) (a, b: the route's checked operands); returns out.
        TunedError INTERNAL where cuBLAS or the driver reports a failure."""
        r = self.call(self.handle, self.ctx, self.math, self.opb, self.opa, self.n, self.m, self.k,
                      b.data_ptr(), self.ldb, a.data_ptr(), self.lda, out.data_ptr(), self.n,
                      self.stream(self.index))
        if r is not None:
            _raise(*r)
        return out


def _raise(what, status):
    """TunedError INTERNAL naming a failed step and its status: a
    cublasStatus_t by name, a CUresult (negated by tuned._fastcall) by number."""
    name = f"CUresult {-status}" if status < 0 else _fastcall.cublas_status_name(status)
    raise TunedError(grpc.StatusCode.INTERNAL, f"{what}: {name}")


def prepare(torch, index, tf32, layout, m, n, k):
    """A Gemm for a route of float32 operands in `layout` ("nn", "nt", "tn"
    or "tt") on GPU `index`, in TF32 (`tf32`) or fp32; None where
    tuned._fastcall or cuBLAS is not available (torch runs the route's calls)."""
    if layout not in ("nn", "nt", "tn", "tt") or not (m and n and k):
        return None
    found = _handle(index)
    if found is None:
        return None
    handle, ctx = found
    return Gemm(handle, ctx, tf32, layout, m, n, k, index, _stream_function(torch))
