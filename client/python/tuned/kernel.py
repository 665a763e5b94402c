"""Running a tuned kernel on torch tensors.

The kernel is loaded with the CUDA driver API through ctypes on libcuda: no
dependency beyond torch (which the tensors need anyway) and the driver every
CUDA program already has. The launch itself goes through tuned._fastcall (C,
built at install where a C compiler and Python's headers are) where it is
built: ctypes' conversions cost ~2.5 us of a ~7 us call. torch has created
the device's primary context for its tensors; the kernel is loaded into that
context and launched on torch's current stream, so it orders with torch's
own work like any torch op.
torch is imported lazily: the gRPC client works without it.

A launch costs a few microseconds of CPU: everything that does not change from
one call to the next is prepared at the kernel's first launch (_Launcher: the
geometry, the driver's functions with their C types, one parameter block per
thread whose pointer slots alone change, the tensor maps per base pointer),
and each call checks its tensors against values computed once.
"""

import ctypes
import threading

import grpc

from .client import DTypeError, TunedError, dtype_name, family_name, layout_name
from .layout import describe as _describe_layout
from .layout import is_transposed
from .v1 import tuner_pb2 as pb

try:
    from . import _fastcall
except ImportError:  # not built: ctypes launches
    _fastcall = None

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CUDA_ERROR_OUT_OF_MEMORY = 2
_STATIC_SHARED_LIMIT = 48 * 1024
# TensorMap.dtype -> CUtensorMapDataType: FLOAT32 (7; also for an unset
# dtype), BFLOAT16 (9), FLOAT16 (6).
_CU_TENSOR_MAP_DATA_TYPE = {pb.DTYPE_UNSPECIFIED: 7, pb.DTYPE_F32: 7, pb.DTYPE_BF16: 9,
                            pb.DTYPE_F16: 6}
_CU_TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle_bytes -> CUtensorMapSwizzle
_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
_TENSOR_MAP_BYTES = 128
_MAP_CACHE_SIZE = 64  # tensor maps kept per kernel (by base pointer) before the cache starts over
_BUILTIN = ("sgemm", "transpose")
# An sgemm problem's dtype (Problem.dtype; unset: f32, as the daemon reads it)
# -> the torch dtype (by name) of A, B and C, and the C type its kernel's
# pointers take (best.arguments, e.g. "const __nv_bfloat16* A").
_SGEMM_DTYPE = {pb.DTYPE_UNSPECIFIED: ("float32", "float"), pb.DTYPE_F32: ("float32", "float"),
                pb.DTYPE_BF16: ("bfloat16", "__nv_bfloat16"), pb.DTYPE_F16: ("float16", "__half")}
_ELEMENT_DTYPE = {"float": pb.DTYPE_F32, "__nv_bfloat16": pb.DTYPE_BF16, "__half": pb.DTYPE_F16}
# A kernel spec's element types: the torch dtype (by name) of a buffer, the
# ctypes type and proto field of a scalar (tuner.proto SpecType).
_TORCH_DTYPE = {pb.SPEC_TYPE_F32: "float32", pb.SPEC_TYPE_F64: "float64",
                pb.SPEC_TYPE_F16: "float16", pb.SPEC_TYPE_BF16: "bfloat16",
                pb.SPEC_TYPE_I32: "int32", pb.SPEC_TYPE_I64: "int64", pb.SPEC_TYPE_U8: "uint8"}
_SCALAR = {pb.SPEC_TYPE_F32: (ctypes.c_float, "value"), pb.SPEC_TYPE_F64: (ctypes.c_double, "value"),
           pb.SPEC_TYPE_I32: (ctypes.c_int32, "int_value"),
           pb.SPEC_TYPE_I64: (ctypes.c_int64, "int_value")}


def _type_name(t):
    return pb.SpecType.Name(t).removeprefix("SPEC_TYPE_").lower() if t in _TORCH_DTYPE else str(t)


def pack_scalars(best):
    """The kernel spec's arguments of `best` (best.kernel_arguments, in
    order) as ctypes parameters: each scalar its value in its C type (f32
    c_float from .value, f64 c_double, i32 c_int32 from .int_value, i64
    c_int64), each buffer None (the caller's pointer goes there).
    ValueError for a scalar of another type or an i32 that does not fit."""
    params = []
    for a in best.kernel_arguments:
        if a.is_buffer:
            params.append(None)
            continue
        if a.type not in _SCALAR:
            raise ValueError(f"scalar {a.name} has type {_type_name(a.type)}; scalars are f32, "
                             "f64, i32 or i64")
        ctype, field = _SCALAR[a.type]
        value = getattr(a, field)
        if a.type == pb.SPEC_TYPE_I32 and not -2**31 <= value < 2**31:
            raise ValueError(f"scalar {a.name} (i32) = {value} does not fit 32 bits")
        params.append(ctype(value))
    return params


_lock = threading.Lock()
_libcuda = None
_primary = {}  # device ordinal -> its primary context (retained once per process)


def _driver():
    """libcuda, initialised; TunedError FAILED_PRECONDITION without a driver."""
    global _libcuda
    with _lock:
        if _libcuda is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"no CUDA driver (libcuda.so.1): {e}") from None
            _check(lib, lib.cuInit(0), "cuInit")
            _libcuda = lib
        return _libcuda


def served_layout(best):
    """The tuner.proto Layout of the kernel a BestKernel holds: its config's
    LAYOUT parameter (sgemm; absent: LAYOUT_NN, as configs stored before
    layouts), else, where the best names no config, its problem's."""
    params = best.measurement.config.params
    if not params:
        return best.problem.layout
    return params.get("LAYOUT", pb.LAYOUT_NN)


def _check(lib, result, what):
    """Raises TunedError for a CUresult other than CUDA_SUCCESS, named by cuGetErrorName."""
    if result == 0:
        return
    name = ctypes.c_char_p()
    known = lib.cuGetErrorName(result, ctypes.byref(name)) == 0 and name.value
    text = name.value.decode() if known else f"CUresult {result}"
    code = (grpc.StatusCode.RESOURCE_EXHAUSTED if result == _CUDA_ERROR_OUT_OF_MEMORY
            else grpc.StatusCode.INTERNAL)
    raise TunedError(code, f"{what}: {text}")


def _primary_context(lib, device):
    """The primary context of device `device` (a c_void_p), retained once per process."""
    with _lock:
        if device not in _primary:
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            _check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
            _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                   "cuDevicePrimaryCtxRetain")
            _primary[device] = ctx
        return _primary[device]


class _Context:
    """Makes the primary context of `device` current for a block (push/pop),
    so that loads work from any thread."""

    def __init__(self, lib, device):
        self.lib = lib
        self.ctx = _primary_context(lib, device)

    def __enter__(self):
        _check(self.lib, self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        popped = ctypes.c_void_p()
        _check(self.lib, self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped)), "cuCtxPopCurrent")


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h), cuLaunchKernelEx's first argument."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


def _function(lib, name, restype, argtypes):
    """libcuda's `name` with its C types declared (a fresh function object, so
    that `lib.name` elsewhere keeps ctypes' defaults), or None where the driver
    lacks it. A stand-in driver (a Python object, as the tests use) gives its
    method as it is."""
    if isinstance(lib, ctypes.CDLL):
        try:
            f = lib[name]
        except AttributeError:
            return None
        f.restype, f.argtypes = restype, argtypes
        return f
    return getattr(lib, name, None)


def _stream_function(torch):
    """f(device index) -> the raw CUstream handle (an int) of torch's current
    stream on that device: torch._C._cuda_getCurrentRawStream (what torch's own
    generated code calls, ~0.1 us), else the public torch.cuda.current_stream
    (a Stream object made per call, a few us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class _Slots:
    """One thread's parameter block for a _Launcher: a ctypes value per kernel
    parameter (prebuilt: the shape's integers, alpha, beta, a spec's scalars),
    the array of their addresses that the driver reads, with the tensor maps'
    slots after them, and the launch configuration. A call sets the pointer
    values (and alpha, beta) and launches: the driver copies the parameters at
    the launch, so the block is reused at once."""

    def __init__(self, launcher):
        self.values = [ctype(value) for ctype, value in launcher.template]
        count = len(self.values) + len(launcher.maps)
        self.array = (ctypes.c_void_p * count)(*[ctypes.addressof(v) for v in self.values])
        self.array_address = ctypes.addressof(self.array)
        self.config = _LaunchConfig(*launcher.grid, *launcher.block, launcher.smem, None, None, 0)
        self.config_address = ctypes.addressof(self.config)
        self.current = ctypes.c_void_p()
        self.current_address = ctypes.addressof(self.current)
        # The ctypes values a caller sets by name, in the launcher's `fast` order.
        self.fast = tuple(self.values[i] for i in launcher.fast)
        self.maps = None  # the encoded maps the array points at, kept alive while it does


class _Launcher:
    """A loaded kernel's launch, prepared once: its geometry, the driver's
    functions, the parameters' C types and initial values (`template`, a
    (ctype, value) pair per parameter), the tensor maps (encoded per base
    pointer, cached) and a _Slots per thread.

    Each launch: the tensor maps for the pointers (cached), torch's current
    raw stream of the device, the current context checked with
    cuCtxGetCurrent (pushed and popped only when another one is current: a
    thread where torch has not made the device's context current), then
    cuLaunchKernelEx with a prepared CUlaunchConfig (4 arguments to convert;
    cuLaunchKernel's 11 cost twice as much through ctypes), or cuLaunchKernel
    where the driver predates it (CUDA < 12)."""

    def __init__(self, lib, torch, best, device_index, function, ctx, template, fast=()):
        g = best.geometry
        self.lib = lib
        self.index = device_index
        self.grid = [*g.grid, 1, 1][:3]
        self.block = [*g.block, 1, 1][:3]
        self.smem = g.dynamic_shared_bytes
        self.template = template
        self.fast = tuple(fast)
        self.fn = function.value
        self.ctx = ctx.value
        self.maps = list(g.tensor_maps)
        for i, m in enumerate(self.maps):
            swizzle = _CU_TENSOR_MAP_SWIZZLE.get(m.swizzle_bytes)
            rank = len(m.dims)
            if (m.param != len(template) + i or m.pointer_arg >= len(template)
                    or template[m.pointer_arg][0] is not ctypes.c_void_p
                    or len(m.strides_bytes) != rank - 1 or len(m.box) != rank or swizzle is None
                    or m.dtype not in _CU_TENSOR_MAP_DATA_TYPE):
                raise TunedError(grpc.StatusCode.INTERNAL,
                                 f"malformed tensor map {' '.join(str(m).split())}")
        # Each map's CUtensorMapDataType, from its TensorMap.dtype.
        self.map_types = tuple(_CU_TENSOR_MAP_DATA_TYPE[m.dtype] for m in self.maps)
        self.map_pointers = tuple(m.pointer_arg for m in self.maps)
        self.map_cache = {}  # base pointers -> (buffers, their addresses)
        v, u = ctypes.c_void_p, ctypes.c_uint
        self.launch_ex = _function(lib, "cuLaunchKernelEx", ctypes.c_int, [v, v, v, v])
        self.launch = _function(lib, "cuLaunchKernel", ctypes.c_int, [v] + [u] * 7 + [v, v, v])
        self.get_current = _function(lib, "cuCtxGetCurrent", ctypes.c_int, [v])
        self.push = _function(lib, "cuCtxPushCurrent_v2", ctypes.c_int, [v])
        self.pop = _function(lib, "cuCtxPopCurrent_v2", ctypes.c_int, [v])
        self.memset32 = _function(lib, "cuMemsetD32Async", ctypes.c_int,
                                  [v, u, ctypes.c_size_t, v])
        self.stream = _stream_function(torch)
        self.local = threading.local()
        # The launch in C (tuned._fastcall) with a real driver (the tests'
        # stand-in drivers are Python objects: ctypes' path).
        self.c_launch = None
        if _fastcall is not None and isinstance(lib, ctypes.CDLL) and _fastcall.init()[0]:
            self.c_launch = _fastcall.launch

    def slots(self):
        """This thread's _Slots."""
        try:
            return self.local.slots
        except AttributeError:
            s = self.local.slots = _Slots(self)
            return s

    def _encode(self, key):
        """The tensor maps over base pointers `key` (one per map, as
        core/launch.cc's EncodeTensorMap): where the base is 16-byte aligned and
        every stride a multiple of 16 bytes, cuTensorMapEncodeTiled encodes it
        (element strides 1, interleave none, the swizzle of
        m.swizzle_bytes, L2 promotion 256 B, out-of-range reads zero) into a
        64-byte aligned map, of the element type of m.dtype (FLOAT32 for f32
        or unset, BFLOAT16 for bf16, FLOAT16 for f16); elsewhere the bytes
        stay zero, and the kernel, testing the same, uses no TMA. Cached by
        the pointers."""
        buffers, addresses = [], []
        for m, base, data_type in zip(self.maps, key, self.map_types):
            buf = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + 64)  # zeroed
            address = ctypes.addressof(buf) + (-ctypes.addressof(buf) % 64)
            if base % 16 == 0 and all(s % 16 == 0 for s in m.strides_bytes):
                rank, u64, u32 = len(m.dims), ctypes.c_uint64, ctypes.c_uint32
                _check(self.lib, self.lib.cuTensorMapEncodeTiled(
                    ctypes.c_void_p(address), data_type, u32(rank),
                    ctypes.c_void_p(base), (u64 * rank)(*m.dims),
                    (u64 * (rank - 1))(*m.strides_bytes), (u32 * rank)(*m.box),
                    (u32 * rank)(*[1] * rank), 0, _CU_TENSOR_MAP_SWIZZLE[m.swizzle_bytes],
                    _CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0), "cuTensorMapEncodeTiled")
            buffers.append(buf)
            addresses.append(address)
        if len(self.map_cache) >= _MAP_CACHE_SIZE:
            self.map_cache.clear()  # a slot still pointing at a map holds it (_Slots.maps)
        entry = self.map_cache[key] = (buffers, addresses)
        return entry

    def run(self, s, zero=None, stream=None):
        """Launches with `s`'s parameters (the caller has set its pointers) on
        `stream` (a CUstream handle; None: torch's current stream of the
        device); `zero`: (pointer, count) of floats set to zero first, on the
        same stream (the prescaling of a kernel that adds into C, beta == 0)."""
        if self.maps:
            key = tuple(s.values[p].value or 0 for p in self.map_pointers)
            entry = self.map_cache.get(key) or self._encode(key)
            first = len(s.values)
            for i, address in enumerate(entry[1]):
                s.array[first + i] = address
            s.maps = entry
        if stream is None:
            stream = self.stream(self.index)
        if self.c_launch is not None:
            r = self.c_launch(self.fn, self.ctx, s.config_address, s.array_address, stream,
                              *(zero or (0, 0)))
            if r is not None:
                _check(self.lib, r[1], r[0])
            return
        pushed = False
        if self.get_current(s.current_address) != 0 or s.current.value != self.ctx:
            _check(self.lib, self.push(self.ctx), "cuCtxPushCurrent")
            pushed = True
        try:
            if zero is not None:
                _check(self.lib, self.memset32(zero[0], 0, zero[1], stream),
                       "cuMemsetD32Async (prescale C)")
            if self.launch_ex is not None:
                s.config.hStream = stream
                result = self.launch_ex(s.config_address, self.fn, s.array_address, None)
            else:
                result = self.launch(self.fn, *self.grid, *self.block, self.smem, stream,
                                     s.array_address, None)
        finally:
            if pushed:
                self.pop(s.current_address)
        if result != 0:
            _check(self.lib, result, "cuLaunchKernel")


def _torch():
    try:
        import torch
    except ImportError as e:
        raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                         f"running a kernel needs torch: {e}") from None
    return torch


def _check_tensors(torch, tensors, device, dtype=None):
    """TypeError/ValueError unless each (tensor, name, shape[, layout]) is a
    torch tensor of `dtype` (a torch.dtype; None: float32) and that shape,
    contiguous (layout "n", the default) or the transpose of a row-major
    matrix (layout "t"), then unless each is on `device`: the form of every
    tensor is checked before any device. Another dtype is a DTypeError
    (TunedError INVALID_ARGUMENT and TypeError) naming both."""
    dtype = dtype or torch.float32
    for t, name, shape, *layout in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
        if t.dtype != dtype:
            raise DTypeError(f"{name} must be {str(dtype).removeprefix('torch.')}, not {t.dtype}")
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
        op = layout[0] if layout else "n"
        if op == "n" and not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major); call .contiguous()")
        if op == "t" and not is_transposed(t):
            raise ValueError(f"{_describe_layout(op, name, shape)}, as this kernel's layout reads it")
    for t, name, *_ in tensors:
        if t.device != device:
            raise ValueError(f"{name} is on {t.device}, the kernel on {device}")


class _tf32:
    """torch.matmul with TF32 on (`allow`) or off (pure fp32) for a block,
    restoring the setting."""

    def __init__(self, torch, allow=False):
        self.m = torch.backends.cuda.matmul
        self.allow = allow

    def __enter__(self):
        try:
            self.saved = ("allow_tf32", self.m.allow_tf32)
        except RuntimeError:  # torch >= 2.9 set through its new API only: restore that
            self.saved = ("fp32_precision", self.m.fp32_precision)
        self.m.allow_tf32 = self.allow

    def __exit__(self, *exc):
        setattr(self.m, *self.saved)


def _no_tf32(torch):
    """torch.matmul in pure fp32 for a block (TF32 off), restoring the setting."""
    return _tf32(torch, allow=False)


def _tf32_reader(torch):
    """f() -> whether torch's cuBLAS matmuls use TF32 now (True or False;
    None where it cannot tell). Through torch's C getters (a Python property
    costs several times more): torch >= 2.9's precision of ("cuda",
    "matmul"), its "none" inherited from ("cuda", "all"), then ("generic",
    "all"), as at::Context::float32Precision resolves it, TF32 only where that
    says "tf32" (as torch's cuBLAS calls test it); before 2.9, allow_tf32."""
    C = torch._C
    get = getattr(C, "_get_fp32_precision_getter", None) or getattr(C, "_get_fp32_precision", None)
    if get is not None:
        chain = []
        for backend, op in (("cuda", "matmul"), ("cuda", "all"), ("generic", "all")):
            try:
                get(backend, op)
            except Exception:  # not a pair this torch knows
                continue
            chain.append((backend, op))
        if not chain or chain[0] != ("cuda", "matmul"):
            return lambda: None

        def read():
            for backend, op in chain:
                v = get(backend, op)
                if v != "none":
                    return v == "tf32"
            return False
        return read
    get = getattr(C, "_get_cublas_allow_tf32", None)
    return get if get is not None else (lambda: None)


_tf32_now = None  # _tf32_reader(torch), made at the first use


def _run_in_mode(torch, tf32, fn, *args, **kwargs):
    """fn(*args, **kwargs) (a torch matmul) with TF32 on (`tf32`) or off: where
    torch's setting already is that, a call of one C getter; otherwise the
    setting is changed for the call and restored (_tf32). `tf32` None (a
    16-bit GEMM, which TF32 does not touch): fn as torch's settings are."""
    if tf32 is None:
        return fn(*args, **kwargs)
    global _tf32_now
    now = _tf32_now
    if now is None:
        now = _tf32_now = _tf32_reader(torch)
    if now() is tf32:
        return fn(*args, **kwargs)
    with _tf32(torch, allow=tf32):
        return fn(*args, **kwargs)


class Kernel:
    """A tuned kernel (a tuned.v1.BestKernel from Client.best) for one shape,
    run on torch tensors.

    Launches use the geometry the daemon computed for best.problem.shape, so
    a Kernel runs that shape only (ValueError for another: ask the daemon for
    that shape, as tuned.matmul does). The module is loaded at the first
    launch, into the current context as torch sees it: the primary context
    of `device` (default: torch's current CUDA device), which the CUDA
    runtime, and so torch, uses and has already created for the tensors. A
    launch makes it current only where another context is (it is pushed for
    the launch), so the kernel reaches torch's memory and streams from any
    thread. The image is the cubin when this GPU has the architecture the
    daemon compiled for, else the PTX (JIT-compiled by the driver). Where the
    daemon serves cuBLAS (best.use_baseline: it found cuBLAS faster, or no
    config passed verification and best holds no kernel), sgemm calls
    torch.matmul instead, in the problem's math mode: TF32 for math "tf32",
    else TF32 off. Driver failures raise TunedError (INTERNAL, or
    FAILED_PRECONDITION without a driver or a loadable image).

    An sgemm kernel reads its operands in its problem's layout
    (best.problem.layout, `layout`: "nn", "nt", "tn", "tt"): sgemm(a, b)
    takes op(A) as a (MxK) and op(B) as b (KxN), each row-major for "n" or,
    for "t", the transpose of a row-major matrix (w.t() of a contiguous
    (N, K) w for op(B) = B^T); only the pointers are passed, nothing is
    copied. A served kernel made for another layout than the problem's (a
    daemon older than layouts answering with its "nn" kernel) is refused:
    TunedError FAILED_PRECONDITION.

    An sgemm kernel's tensors are of its problem's dtype (best.problem.dtype,
    `dtype`: torch.float32 for f32; torch.bfloat16 for bf16 and
    torch.float16 for f16, 16-bit A, B and C with fp32 alpha, beta and
    accumulation, C rounded once); where cuBLAS serves a 16-bit problem,
    torch.matmul runs on the 16-bit tensors (cuBLAS, fp32 accumulation), as
    torch's settings are.

    A kernel spec's kernel (a registered family: best.kernel_arguments is
    set) runs with launch(*tensors) (or calling the Kernel): the buffers in
    the order of its buffer arguments, its scalars as the daemon evaluated
    them for the shape.
    """

    def __init__(self, best, device=None):
        torch = _torch()
        self.best = best
        self.family = family_name(best.problem)
        self.shape = tuple(best.problem.shape)
        self.is_spec = self.family not in _BUILTIN
        if self.is_spec and not best.kernel_arguments:
            raise ValueError(f"no launcher for the {self.family} family: its BestKernel has no "
                             "kernel_arguments (not a kernel spec's, or from a daemon older than "
                             "kernel specs)")
        self._scalars = pack_scalars(best) if self.is_spec else None
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = torch.device(device)
        if self.device.type != "cuda" or self.device.index is None:
            raise ValueError(f"device must be a CUDA device with an index, e.g. cuda:0, not {device}")
        self.uses_torch = self.family == "sgemm" and best.use_baseline
        # The element type of A, B and C (sgemm) or in and out (transpose): a
        # torch.dtype; None for a kernel spec's (its buffers' types are its own).
        self.dtype, self._ctype = None, None
        if self.family == "sgemm":
            if best.problem.dtype not in _SGEMM_DTYPE:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"an sgemm kernel of {dtype_name(best.problem.dtype)}: this "
                                 "client runs f32, bf16 and f16 (it is older than the daemon)")
            name, self._ctype = _SGEMM_DTYPE[best.problem.dtype]
            self.dtype = getattr(torch, name)
        elif not self.is_spec:
            self.dtype, self._ctype = torch.float32, "float"
        half = self.dtype is not None and self.dtype is not torch.float32
        # The mode of the cuBLAS it may call: TF32 for math tf32, else off;
        # None for a 16-bit GEMM (torch.matmul as torch's settings are).
        self.tf32 = None if half else best.problem.math == pb.MATH_TF32
        self.layout = layout_name(best.problem.layout)
        if self.family == "sgemm" and not self.uses_torch:
            served = served_layout(best)
            if served != best.problem.layout:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"the daemon served {best.measurement.config.name or 'a kernel'} "
                                 f"(layout {layout_name(served)}) for a problem in layout "
                                 f"{self.layout}: it does not tune layouts (older than them)")
        if not self.uses_torch:
            if not best.cubin and not best.ptx:
                raise ValueError("the BestKernel holds neither a cubin nor PTX (asked with basic=True?)")
            g = best.geometry
            ranks = (1, 2, 3) if self.is_spec else (3,)  # a spec's y, z default to 1
            if len(g.grid) not in ranks or len(g.block) not in ranks:
                raise ValueError("the BestKernel has no launch geometry (3 grid and 3 block dimensions)")
        self._prescale = best.geometry.prescale_output
        if self._prescale and half:
            raise TunedError(grpc.StatusCode.INTERNAL,
                             f"a {dtype_name(best.problem)} kernel asks for C to be prescaled, "
                             "which no 16-bit kernel does")
        self._torch = torch
        self._function = None
        self._module = None
        self._launcher = None
        self._fast = None  # tuned._torchcall.sgemm's spec, made with the launcher
        self._prepare_lock = threading.Lock()
        self._sizes = None
        self._strides = (None, None)  # op(A)'s, op(B)'s where transposed ("t"), else None
        if self.family == "sgemm" and len(self.shape) == 3:
            m, n, k = self.shape
            self._sizes = (torch.Size((m, k)), torch.Size((k, n)), torch.Size((m, n)))
            if self.layout in ("nn", "nt", "tn", "tt"):
                self._strides = ((1, m) if self.layout[0] == "t" else None,
                                 (1, k) if self.layout[1] == "t" else None)

    @property
    def device(self):
        """The torch.device the kernel runs on."""
        return self._device

    @device.setter
    def device(self, device):
        self._device = device
        self._index = device.index if device.type == "cuda" else -1  # as Tensor.get_device()

    def _load(self):
        lib = _driver()
        with _Context(lib, self.device.index):
            major, minor = ctypes.c_int(), ctypes.c_int()
            dev = ctypes.c_int()
            _check(lib, lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
            for attr, out in ((_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major),
                              (_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor)):
                _check(lib, lib.cuDeviceGetAttribute(ctypes.byref(out), attr, dev),
                       "cuDeviceGetAttribute")
            d = self.best.device
            same_arch = (d.cc_major, d.cc_minor) == (major.value, minor.value)
            image = self.best.cubin if same_arch and self.best.cubin else self.best.ptx.encode()
            if not image:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"the cubin is for sm_{d.cc_major}{d.cc_minor}, this GPU is "
                                 f"sm_{major.value}{minor.value}, and there is no PTX")
            buf = ctypes.create_string_buffer(image)  # NUL-terminated, as PTX needs
            module, function = ctypes.c_void_p(), ctypes.c_void_p()
            _check(lib, lib.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData")
            self._module = module
            _check(lib, lib.cuModuleGetFunction(ctypes.byref(function), module,
                                                self.best.entry.encode()), "cuModuleGetFunction")
            smem = self.best.geometry.dynamic_shared_bytes
            if smem > _STATIC_SHARED_LIMIT:
                _check(lib, lib.cuFuncSetAttribute(
                    function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                    "cuFuncSetAttribute")
            self._function = function

    def _template(self):
        """The parameters' (ctype, initial value) pairs and, for a built-in
        family, the indices of the ones a call sets (sgemm: A, B, C, alpha,
        beta; transpose: in, out), from best.arguments (the kernel's C
        declarations in order; a pointer to float, __nv_bfloat16 or __half
        must be to the problem's dtype) and the shape; for a kernel spec, its
        packed scalars and buffer slots."""
        if self.is_spec:
            template = [(ctypes.c_void_p, None) if p is None else (type(p), p.value)
                        for p in self._scalars]
            return template, [i for i, p in enumerate(self._scalars) if p is None]
        names = (("M", "N", "K") if self.family == "sgemm" else ("rows", "cols"))
        known = dict(zip(names, self.shape))
        known.update(alpha=1.0, beta=0.0)
        fast = ("A", "B", "C", "alpha", "beta") if self.family == "sgemm" else ("in", "out")
        template, index = [], {}
        for decl in self.best.arguments:
            ctype, _, name = decl.rpartition(" ")
            if "*" in ctype:
                element = ctype.replace("const ", "").rstrip("*").strip()
                if element in _ELEMENT_DTYPE and element != self._ctype:
                    # e.g. an f32 kernel served for a bf16 problem
                    raise TunedError(grpc.StatusCode.INTERNAL,
                                     f"the kernel's argument '{decl}' is of "
                                     f"{dtype_name(_ELEMENT_DTYPE[element])} data, its problem of "
                                     f"{dtype_name(self.best.problem)}")
                template.append((ctypes.c_void_p, None))
            elif ctype == "int" and name in known:
                template.append((ctypes.c_int, known[name]))
            elif ctype == "float" and name in known:
                template.append((ctypes.c_float, known[name]))
            elif ctype in ("int", "float"):
                raise TunedError(grpc.StatusCode.INTERNAL, f"unknown kernel argument '{decl}'")
            else:
                raise TunedError(grpc.StatusCode.INTERNAL, f"unsupported argument type '{decl}'")
            index[name] = len(template) - 1
        missing = [n for n in fast if n not in index]
        if missing:
            raise TunedError(grpc.StatusCode.INTERNAL,
                             f"the kernel's arguments ({', '.join(self.best.arguments)}) lack "
                             f"{', '.join(missing)}")
        return template, [index[n] for n in fast]

    def _prepare(self):
        """Loads the module (if not yet) and prepares its launches (_Launcher),
        once whichever threads launch first."""
        with self._prepare_lock:
            if self._launcher is None:
                if self._function is None:
                    self._load()
                template, fast = self._template()
                lib = _driver()
                launcher = _Launcher(lib, self._torch, self.best, self._index, self._function,
                                     _primary_context(lib, self.device.index), template, fast)
                self._launcher = launcher
                self._fast = self._sgemm_spec(launcher)  # after: sgemm reads _launcher then
            return self._launcher

    def _sgemm_spec(self, launcher):
        """The launch prepared for tuned._torchcall.sgemm (the checks, the
        parameters and the launch in C++, ~5 us less a call than from Python
        on the H100 host), or None: without _torchcall, with a stand-in
        driver, for another family than sgemm, or for a kernel with tensor
        maps (encoded per pointer, here)."""
        if (launcher.c_launch is None or launcher.maps or self.family != "sgemm" or self.is_spec
                or self._sizes is None or self.layout not in ("nn", "nt", "tn", "tt")):
            return None
        try:  # here, not at the module's import: it links torch's libraries, which need torch imported
            from . import _torchcall
        except ImportError:  # built at install only where torch was importable (setup.py)
            return None
        self._fast_sgemm = _torchcall.sgemm
        m, n, k = self.shape
        params = b"".join(bytes(ctype(value)).ljust(8, b"\0") for ctype, value in launcher.template)
        return _torchcall.sgemm_spec(launcher.fn, launcher.ctx,
                                     (*launcher.grid, *launcher.block, launcher.smem), params,
                                     launcher.fast, self._prescale, self.dtype, self._index,
                                     m, n, k, *self._strides)

    def load(self):
        """Loads the module and prepares the launches now rather than at the
        first launch (e.g. before a CUDA graph capture); returns self."""
        if self._launcher is None and not self.uses_torch:
            self._prepare()
        return self

    def _sgemm_launch(self, a, b, out, alpha, beta):
        """The kernel on checked tensors (of the kernel's dtype and shape, in
        its layout, on its device): out = alpha * a @ b + beta * out."""
        launcher = self._launcher or self._prepare()
        s = launcher.slots()
        pa, pb_, pc, al, be = s.fast
        pa.value = a.data_ptr()
        pb_.value = b.data_ptr()
        c = pc.value = out.data_ptr()
        al.value = alpha
        be.value = beta
        zero = None
        if self._prescale:  # the kernel adds alpha*a@b into out = beta*out
            if beta == 0:
                zero = (c, out.numel())
            elif beta != 1:
                out.mul_(beta)
        launcher.run(s, zero)

    def _sgemm_torch(self, a, b, out, alpha, beta):
        """cuBLAS (torch) in the problem's math mode: the mode's baseline,
        cuBLAS TF32 for math tf32, else fp32; for a 16-bit problem,
        torch.matmul (or addmm_) on the 16-bit tensors as torch's settings
        are (cuBLAS, fp32 accumulation)."""
        torch = self._torch
        if alpha == 1 and beta == 0:
            return _run_in_mode(torch, self.tf32, torch.matmul, a, b, out=out)
        return _run_in_mode(torch, self.tf32, out.addmm_, a, b, beta=beta, alpha=alpha)

    def sgemm(self, a, b, out=None, alpha=1.0, beta=0.0):
        """out(MxN) = alpha * a(MxK) @ b(KxN) + beta * out; returns out.
        CUDA tensors of the kernel's dtype (`dtype`: torch.float32, or for a
        bf16 or f16 problem torch.bfloat16 or torch.float16; alpha and beta
        are fp32 all the same) on the kernel's device, of the kernel's shape:
        out row-major (contiguous), a and b in the kernel's layout (`layout`:
        "n" row-major, "t" the transpose of a row-major matrix, e.g. b =
        w.t() of a contiguous (N, K) w for "nt"); out=None allocates it, of
        the kernel's dtype (beta must then be 0). Runs on torch's current
        stream. tuned.DTypeError (a TunedError INVALID_ARGUMENT and a
        TypeError) for a tensor of another dtype, naming both; TypeError for
        a non-tensor, ValueError for a wrong shape, layout or device."""
        fast = self._fast
        if fast is not None:  # checked and launched in C++; NotImplemented: checked below
            r = self._fast_sgemm(fast, a, b, out, alpha, beta, self._launcher.stream(self._index))
            if r.__class__ is tuple:
                _check(self._launcher.lib, r[1], r[0])
            if r is not NotImplemented:
                return r
        sizes = self._sizes
        if sizes is not None:
            # The checks below, compared with values computed once; any
            # failure (or a non-tensor) takes the path that names it.
            dt, index = self.dtype, self._index
            sa, sb = self._strides
            try:
                ok = (a.dtype is dt and b.dtype is dt and a.shape == sizes[0]
                      and b.shape == sizes[1] and a.get_device() == index
                      and b.get_device() == index
                      and (a.is_contiguous() if sa is None else a.stride() == sa)
                      and (b.is_contiguous() if sb is None else b.stride() == sb)
                      and (beta == 0 if out is None else
                           out.dtype is dt and out.shape == sizes[2]
                           and out.get_device() == index and out.is_contiguous()))
            except AttributeError:
                ok = False
            if ok:
                if out is None:
                    out = a.new_empty(*sizes[2])  # ints: 2.3 us less than a Size
                if self.uses_torch:
                    return self._sgemm_torch(a, b, out, alpha, beta)
                self._sgemm_launch(a, b, out, alpha, beta)
                return out
        return self._sgemm_checked(a, b, out, alpha, beta)

    def _sgemm_checked(self, a, b, out, alpha, beta):
        torch = self._torch
        if self.family != "sgemm":
            raise ValueError(f"this is a {self.family} kernel, not sgemm")
        if out is None and beta != 0:
            raise ValueError("beta != 0 needs out (C is read)")
        m, n, k = self.shape
        outs = [] if out is None else [(out, "out", (m, n))]
        _check_tensors(torch, [(a, "a", (m, k), self.layout[0]), (b, "b", (k, n), self.layout[1])]
                       + outs, self.device, self.dtype)
        if out is None:
            out = torch.empty((m, n), dtype=self.dtype, device=self.device)
        if self.uses_torch:  # the mode's baseline: cuBLAS TF32 for math tf32, else fp32
            return self._sgemm_torch(a, b, out, alpha, beta)
        self._sgemm_launch(a, b, out, alpha, beta)
        return out

    def transpose(self, x, out=None):
        """out(COLS x ROWS) = x(ROWS x COLS)^T; returns out. Tensors and errors as sgemm."""
        torch = self._torch
        if self.family != "transpose":
            raise ValueError(f"this is a {self.family} kernel, not transpose")
        rows, cols = self.shape
        outs = [] if out is None else [(out, "out", (cols, rows))]
        _check_tensors(torch, [(x, "x", (rows, cols))] + outs, self.device)
        if out is None:
            out = torch.empty((cols, rows), dtype=torch.float32, device=self.device)
        launcher = self._launcher or self._prepare()
        s = launcher.slots()
        s.fast[0].value = x.data_ptr()
        s.fast[1].value = out.data_ptr()
        launcher.run(s)
        return out

    def launch(self, *tensors, stream=None):
        """Runs a kernel spec's kernel on `tensors`, the buffers in the order
        of its buffer arguments (best.kernel_arguments), with its scalars
        (packed with ctypes by type, pack_scalars) and geometry for
        best.problem.shape. Each tensor must be a contiguous torch tensor on
        the kernel's device, of its argument's dtype (f32 torch.float32, f64
        float64, f16 float16, bf16 bfloat16, i32 int32, i64 int64, u8 uint8),
        with at least the argument's `elements` elements; every tensor's form
        is checked before any device. `stream`: a torch.cuda.Stream, a raw
        CUstream handle (int), or None for torch's current stream of the
        device. Returns None (the outputs are written in place).
        ValueError for a built-in family's kernel, a wrong number of tensors,
        a wrong dtype, layout, size or device; TypeError for a non-tensor."""
        torch = self._torch
        if not self.is_spec:
            raise ValueError(f"this is a {self.family} kernel: launch runs a kernel spec's kernel "
                             f"(call {self.family}())")
        buffers = [a for a in self.best.kernel_arguments if a.is_buffer]
        if len(tensors) != len(buffers):
            raise ValueError(f"the kernel takes {len(buffers)} tensors "
                             f"({', '.join(a.name for a in buffers)}), got {len(tensors)}")
        for t, a in zip(tensors, buffers):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{a.name} must be a torch.Tensor, not {type(t).__name__}")
            want = getattr(torch, _TORCH_DTYPE.get(a.type, ""), None)
            if want is None:
                raise ValueError(f"{a.name} has type {_type_name(a.type)}, which has no torch dtype")
            if t.dtype != want:
                raise ValueError(f"{a.name} must be {want} ({_type_name(a.type)}), not {t.dtype}")
            if not t.is_contiguous():
                raise ValueError(f"{a.name} must be contiguous; call .contiguous()")
            if t.numel() < a.elements:
                raise ValueError(f"{a.name} has {t.numel()} elements, the kernel reads or writes "
                                 f"{a.elements}")
        for t, a in zip(tensors, buffers):
            if t.device != self.device:
                raise ValueError(f"{a.name} is on {t.device}, the kernel on {self.device}")
        launcher = self._launcher or self._prepare()
        s = launcher.slots()
        for value, t in zip(s.fast, tensors):
            value.value = t.data_ptr()
        if stream is not None and not isinstance(stream, int):
            stream = stream.cuda_stream
        launcher.run(s, stream=stream)

    __call__ = launch

    def __del__(self):
        module, self._module = getattr(self, "_module", None), None
        if module is not None and _libcuda is not None:
            try:
                with _Context(_libcuda, self.device.index):
                    _libcuda.cuModuleUnload(module)
            except Exception:  # the driver may be shutting down with the interpreter
                pass
