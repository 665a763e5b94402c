"""cuBLAS's GEMM called directly, for tuned.matmul and tuned.linear where
the daemon serves cuBLAS: fp32 (SGEMM, in the mode's math) and bf16 or f16
operands with a result of their type or fp32 (computed in fp32, as
torch.matmul's cublasGemmEx).

torch.matmul reaches cuBLAS through its dispatcher (its CPU time a call is
bench/RESULTS.md python-call's torch_us; more for a transposed operand), so
where the product takes less time on the GPU than that, a stream of calls
runs at the CPU's pace, and a wrapper around torch.matmul is slower than
torch.matmul by its own cost. Here a route calls cuBLAS itself through
tuned._fastcall, with the operands read where they are. The GEMM is planned
once per route: cuBLASLt's descriptors and its heuristic's first algorithm
within cuBLAS's default workspace, the one cublasSgemm's own heuristic picks
from, so that a call is one cublasLtMatmul with no heuristic look-up and no
handle state to set. Each stream has a workspace of its own. While a stream
is captured into a CUDA graph, an algorithm that takes no workspace runs
instead (the graph would keep the stream's workspace, which calls outside it
go on using). Where cuBLASLt offers no algorithm or a pointer is not
256-byte aligned, the call is cublasSgemm in the mode's cublasMath_t as
torch sets it (cublasGemmEx for 16-bit operands). A new result is allocated
in C++ by tuned._torchcall where pip built it against torch, else from
Python. Where tuned._fastcall is not built or cuBLAS is not found, prepare
returns None and torch runs the call.
"""

import threading

import grpc

from .client import TunedError
from .driver import fastcall as _fastcall
from .driver import libcuda as _driver
from .driver import primary_context as _primary_context
from .driver import stream_function as _stream_function

try:  # built at install where torch was importable (setup.py)
    from . import _torchcall
except ImportError:
    _torchcall = None

# cublasMath_t as torch sets it for its own handle: TF32 tensor ops where
# TF32 is allowed, else CUBLAS_DEFAULT_MATH (fp32).
_CUBLAS_DEFAULT_MATH = 0
_CUBLAS_TF32_TENSOR_OP_MATH = 3
_OP_N, _OP_T = 0, 1  # cublasOperation_t
# A problem's dtype (Problem.dtype's name) -> the cudaDataType of A and B, of C
# (library_types.h: CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14).
_CUDA_TYPES = {"f32": (0, 0), "bf16": (14, 14), "f16": (2, 2), "bf16_f32": (14, 0),
               "f16_f32": (2, 0)}

_lock = threading.Lock()
_handles = {}  # device index -> _Handles, or None
_workspaces = {}  # (device index, CUstream) -> (address, bytes, the uint8 tensor holding them)


class _Handles:
    """GPU `index`'s cuBLAS and cuBLASLt handles (lt 0 where cuBLASLt is not
    found), its primary context, and the workspace limit for cuBLASLt's
    heuristic: cuBLAS's default workspace, 32 MiB on compute capability 9.0
    and later and 4 MiB before (cuBLAS API reference, cublasSetWorkspace), so
    that the heuristic chooses within what cublasSgemm chooses within."""

    __slots__ = ("blas", "lt", "ctx", "workspace_limit")

    def __init__(self, blas, lt, ctx, workspace_limit):
        self.blas, self.lt, self.ctx, self.workspace_limit = blas, lt, ctx, workspace_limit


def _handle(torch, index):
    """The process's _Handles of GPU `index`; None where tuned._fastcall or
    cuBLAS is not available. TunedError INTERNAL where cublasCreate or
    cublasLtCreate fails."""
    if _fastcall is None:
        return None
    with _lock:
        if index not in _handles:
            lib = _driver()
            _, cublas, cublaslt = _fastcall.init()
            if not cublas:
                _handles[index] = None
            else:
                ctx = _primary_context(lib, index).value
                handle, status = _fastcall.cublas_create(ctx)
                if status != 0:
                    _raise("cublasCreate", status)
                lt = 0
                if cublaslt:
                    lt, status = _fastcall.cublaslt_create(ctx)
                    if status != 0:
                        _raise("cublasLtCreate", status)
                major = torch.cuda.get_device_capability(index)[0]
                _handles[index] = _Handles(handle, lt, ctx, (32 if major >= 9 else 4) << 20)
        return _handles[index]


def _workspace(torch, index, stream, size):
    """The device address of a workspace of at least `size` bytes for
    `stream` of GPU `index`: one per stream, so that calls on two streams
    never share one, allocated on that stream and kept; 0 while the stream is
    being captured and has none (tuned._fastcall.gemm then runs an algorithm
    that takes none)."""
    held = _workspaces.get((index, stream))
    if held is not None and held[1] >= size:
        return held[0]
    if torch.cuda.is_current_stream_capturing():
        return 0
    with _lock:
        tensor = torch.empty(size, dtype=torch.uint8, device=torch.device("cuda", index))
        # A smaller one it replaces is freed to torch's allocator, which
        # reuses it in this stream's order only.
        _workspaces[(index, stream)] = (tensor.data_ptr(), size, tensor)
        return tensor.data_ptr()


class Gemm:
    """C = op(A) @ op(B) for one route: m x n x k, A and B in `layout` ("n"
    row-major, "t" the transpose of a row-major matrix, as tuned/layout.py
    reads them), C a row-major (m, n) tensor; `dtype` the problem's
    (_CUDA_TYPES: "f32", or 16-bit A and B with C of their type or, for
    "bf16_f32" and "f16_f32", float32); on torch's current stream of GPU
    `index`. `fastcall`: the module that plans and runs it
    (tuned._fastcall; a stand-in in the CPU tests)."""

    __slots__ = ("plan", "workspace", "index", "stream", "call", "torch", "m", "n", "alloc_call",
                 "out_dtype")

    def __init__(self, torch, handles, tf32, layout, m, n, k, index, stream, fastcall=None,
                 dtype="f32"):
        # cuBLAS is column-major: the row-major C is C^T = op(B)^T op(A)^T,
        # each row-major operand being its own transpose there, and a
        # transposed one read as stored with OP_T (core/launch.cc's
        # RowMajorGemm).
        fastcall = fastcall or _fastcall
        self.torch, self.index, self.stream = torch, index, stream
        # 16-bit operands compute in fp32 (CUBLAS_DEFAULT_MATH lets cuBLAS use tensor cores).
        math = _CUBLAS_TF32_TENSOR_OP_MATH if tf32 and dtype == "f32" else _CUBLAS_DEFAULT_MATH
        ta, tb = layout[0] == "t", layout[1] == "t"
        opa, opb = (_OP_T if ta else _OP_N), (_OP_T if tb else _OP_N)
        lda, ldb = (m if ta else k), (k if tb else n)
        ab_type, c_type = _CUDA_TYPES[dtype]
        # fp32's plan keeps its 13 arguments (a _fastcall of before 16 bits takes them).
        types = () if dtype == "f32" else (ab_type, c_type)
        planned = fastcall.plan(handles.blas, handles.lt, handles.ctx, math, opb, opa, n, m, k,
                                ldb, lda, n, handles.workspace_limit, *types)
        if isinstance(planned[0], str):
            _raise(*planned)
        self.plan, self.workspace = planned
        self.call = fastcall.gemm
        self.m, self.n = m, n
        # A float32 result of 16-bit operands: tuned._torchcall allocates a's dtype only.
        self.out_dtype = torch.float32 if c_type != ab_type else None
        self.alloc_call = _torchcall.matmul if _torchcall is not None and fastcall is _fastcall \
            and self.out_dtype is None else None

    def _stream_and_workspace(self):
        """torch's current stream of the route's GPU, and its workspace (0
        where the plan takes none)."""
        stream = self.stream(self.index)
        if self.workspace > 0:
            return stream, _workspace(self.torch, self.index, stream, self.workspace)
        return stream, 0

    def __call__(self, a, b, out):
        """out = op(A) @ op(B) (a, b: the route's checked operands); returns out.
        TunedError INTERNAL where cuBLAS or the driver reports a failure."""
        stream, workspace = self._stream_and_workspace()
        r = self.call(self.plan, b.data_ptr(), a.data_ptr(), out.data_ptr(), stream, workspace)
        if r is not None:
            _raise(*r)
        return out

    def new(self, a, b):
        """op(A) @ op(B) into a new row-major (m, n) tensor (a's dtype, or
        float32 for "bf16_f32" and "f16_f32"; a's device), allocated in C++
        (tuned._torchcall) where it is built, else with a.new_empty. Errors as
        __call__'s."""
        alloc_call = self.alloc_call
        if alloc_call is None:
            if self.out_dtype is not None:
                return self(a, b, a.new_empty(self.m, self.n, dtype=self.out_dtype))
            return self(a, b, a.new_empty(self.m, self.n))
        stream, workspace = self._stream_and_workspace()
        r = alloc_call(self.plan, a, b, stream, workspace)
        if r.__class__ is tuple:
            _raise(*r)
        return r


def _raise(what, status):
    """TunedError INTERNAL naming a failed step and its status: a
    cublasStatus_t by name, a CUresult (negated by tuned._fastcall) by number."""
    name = f"CUresult {-status}" if status < 0 else _fastcall.cublas_status_name(status)
    raise TunedError(grpc.StatusCode.INTERNAL, f"{what}: {name}")


def prepare(torch, index, tf32, layout, m, n, k, dtype="f32"):
    """A Gemm for a route in `layout` ("nn", "nt", "tn" or "tt") on GPU
    `index`: of float32 operands in TF32 (`tf32`) or fp32, or of the 16-bit
    `dtype` ("bf16", "f16", "bf16_f32", "f16_f32": computed in fp32, `tf32`
    unused); None where tuned._fastcall or cuBLAS is not available (torch
    runs the route's calls). TunedError INTERNAL where creating a handle or
    planning fails."""
    if layout not in ("nn", "nt", "tn", "tt") or not (m and n and k) or dtype not in _CUDA_TYPES:
        return None
    handles = _handle(torch, index)
    if handles is None:
        return None
    return Gemm(torch, handles, tf32, layout, m, n, k, index, _stream_function(torch), dtype=dtype)
