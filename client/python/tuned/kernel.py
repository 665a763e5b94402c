"""Running a tuned kernel on torch tensors.

The kernel is loaded with the CUDA driver API through ctypes on libcuda: no
dependency beyond torch (which the tensors need anyway) and the driver every
CUDA program already has. torch has created the device's primary context for
its tensors; the kernel is loaded into that context and launched on torch's
current stream, so it orders with torch's own work like any torch op.
torch is imported lazily: the gRPC client works without it.
"""

import ctypes
import threading

import grpc

from .client import TunedError, family_name
from .v1 import tuner_pb2 as pb

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CUDA_ERROR_OUT_OF_MEMORY = 2
_STATIC_SHARED_LIMIT = 48 * 1024
_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7
_CU_TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle_bytes -> CUtensorMapSwizzle
_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
_TENSOR_MAP_BYTES = 128
_BUILTIN = ("sgemm", "transpose")
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


def _tensor_map(lib, m, params, index):
    """The 128 bytes of a const __grid_constant__ CUtensorMap parameter for
    tuned.v1.TensorMap `m` (tuner.proto), as core/launch.cc makes them: where
    the base (the value of kernel parameter m.pointer_arg) is 16-byte aligned
    and every stride a multiple of 16 bytes, cuTensorMapEncodeTiled encodes it
    (fp32, element strides 1, interleave none, the swizzle of m.swizzle_bytes,
    L2 promotion 256 B, out-of-range reads zero) into a 64-byte aligned map;
    elsewhere the bytes stay zero, and the kernel, testing the same, uses no TMA.
    It is the index-th map: kernel parameter len(params) + index (m.param)."""
    rank, swizzle = len(m.dims), _CU_TENSOR_MAP_SWIZZLE.get(m.swizzle_bytes)
    if (m.param != len(params) + index or m.pointer_arg >= len(params)
            or not isinstance(params[m.pointer_arg], ctypes.c_void_p)
            or len(m.strides_bytes) != rank - 1 or len(m.box) != rank or swizzle is None):
        raise TunedError(grpc.StatusCode.INTERNAL,
                         f"malformed tensor map {' '.join(str(m).split())}")
    buf = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + 64)  # zeroed
    out = (ctypes.c_char * _TENSOR_MAP_BYTES).from_buffer(  # 64-byte aligned; keeps buf alive
        buf, -ctypes.addressof(buf) % 64)
    base = params[m.pointer_arg].value or 0
    if base % 16 == 0 and all(s % 16 == 0 for s in m.strides_bytes):
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        _check(lib, lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(ctypes.addressof(out)), _CU_TENSOR_MAP_DATA_TYPE_FLOAT32, u32(rank),
            ctypes.c_void_p(base), (u64 * rank)(*m.dims), (u64 * (rank - 1))(*m.strides_bytes),
            (u32 * rank)(*m.box), (u32 * rank)(*[1] * rank), 0, swizzle,
            _CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0), "cuTensorMapEncodeTiled")
    return out


class _Context:
    """Makes the primary context of `device` current for a block (push/pop),
    so that loads and launches work from any thread."""

    def __init__(self, lib, device):
        self.lib = lib
        with _lock:
            if device not in _primary:
                dev, ctx = ctypes.c_int(), ctypes.c_void_p()
                _check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
                _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                       "cuDevicePrimaryCtxRetain")
                _primary[device] = ctx
        self.ctx = _primary[device]

    def __enter__(self):
        _check(self.lib, self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        popped = ctypes.c_void_p()
        _check(self.lib, self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped)), "cuCtxPopCurrent")


def _torch():
    try:
        import torch
    except ImportError as e:
        raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                         f"running a kernel needs torch: {e}") from None
    return torch


def _check_tensors(torch, tensors, device):
    """TypeError/ValueError unless each (tensor, name, shape) is a contiguous
    float32 torch tensor of that shape, then unless each is on `device`: the
    form of every tensor is checked before any device."""
    for t, name, shape in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
        if t.dtype != torch.float32:
            raise TypeError(f"{name} must be float32, not {t.dtype}")
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major); call .contiguous()")
    for t, name, _ in tensors:
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


class Kernel:
    """A tuned kernel (a tuned.v1.BestKernel from Client.best) for one shape,
    run on torch tensors.

    Launches use the geometry the daemon computed for best.problem.shape, so
    a Kernel runs that shape only (ValueError for another: ask the daemon for
    that shape, as tuned.matmul does). The module is loaded at the first
    launch, into the current context as torch sees it: the primary context
    of `device` (default: torch's current CUDA device), which the CUDA
    runtime, and so torch, uses and has already created for the tensors. It
    is made current (pushed) for the load and each launch, so the kernel
    reaches torch's memory and streams from any thread. The image is the
    cubin when this GPU has the architecture the daemon compiled for, else
    the PTX (JIT-compiled by the driver). Where the daemon serves cuBLAS
    (best.use_baseline: it found cuBLAS faster, or no config passed
    verification and best holds no kernel), sgemm calls torch.matmul
    instead, in the problem's math mode: TF32 for math "tf32", else TF32
    off. Driver failures raise TunedError (INTERNAL, or FAILED_PRECONDITION
    without a driver or a loadable image).

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
        if not self.uses_torch:
            if not best.cubin and not best.ptx:
                raise ValueError("the BestKernel holds neither a cubin nor PTX (asked with basic=True?)")
            g = best.geometry
            ranks = (1, 2, 3) if self.is_spec else (3,)  # a spec's y, z default to 1
            if len(g.grid) not in ranks or len(g.block) not in ranks:
                raise ValueError("the BestKernel has no launch geometry (3 grid and 3 block dimensions)")
        self._function = None
        self._module = None

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

    def _launch(self, torch, values):
        """Launches with the kernel's arguments by name (best.arguments gives
        their order and C types) on torch's current stream of the device,
        followed by one CUtensorMap (128 bytes by value) per
        geometry.tensor_maps entry, in that order (_tensor_map)."""
        params = []
        for decl in self.best.arguments:
            ctype, _, name = decl.rpartition(" ")
            if name not in values:
                raise TunedError(grpc.StatusCode.INTERNAL, f"unknown kernel argument '{decl}'")
            if "*" in ctype:
                params.append(ctypes.c_void_p(values[name]))
            elif ctype == "int":
                params.append(ctypes.c_int(values[name]))
            elif ctype == "float":
                params.append(ctypes.c_float(values[name]))
            else:
                raise TunedError(grpc.StatusCode.INTERNAL, f"unsupported argument type '{decl}'")
        self._launch_params(torch.cuda.current_stream(self.device).cuda_stream, params)

    def _launch_params(self, stream, params):
        """cuLaunchKernel on `stream` (a CUstream handle) with the ctypes
        parameters `params`, in order, then the geometry's tensor maps; the
        geometry's missing y, z are 1. Loads the module first if needed."""
        if self._function is None:
            self._load()
        g = self.best.geometry
        grid = [*g.grid, 1, 1][:3]
        block = [*g.block, 1, 1][:3]
        lib = _driver()
        with _Context(lib, self.device.index):
            params = params + [_tensor_map(lib, m, params, i) for i, m in enumerate(g.tensor_maps)]
            args = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
            dims = [ctypes.c_uint(v) for v in (*grid, *block, g.dynamic_shared_bytes)]
            _check(lib, lib.cuLaunchKernel(self._function, *dims, ctypes.c_void_p(stream),
                                           args, None), "cuLaunchKernel")

    def sgemm(self, a, b, out=None, alpha=1.0, beta=0.0):
        """out(MxN) = alpha * a(MxK) @ b(KxN) + beta * out; returns out.
        Row-major contiguous float32 CUDA tensors on the kernel's device, of
        the kernel's shape; out=None allocates it (beta must then be 0).
        Runs on torch's current stream. TypeError for a wrong type or dtype,
        ValueError for a wrong shape, layout or device."""
        torch = _torch()
        if self.family != "sgemm":
            raise ValueError(f"this is a {self.family} kernel, not sgemm")
        if out is None and beta != 0:
            raise ValueError("beta != 0 needs out (C is read)")
        m, n, k = self.shape
        outs = [] if out is None else [(out, "out", (m, n))]
        _check_tensors(torch, [(a, "a", (m, k)), (b, "b", (k, n))] + outs, self.device)
        if out is None:
            out = torch.empty((m, n), dtype=torch.float32, device=self.device)
        if self.uses_torch:  # the mode's baseline: cuBLAS TF32 for math tf32, else fp32
            with _tf32(torch, allow=self.best.problem.math == pb.MATH_TF32):
                out.addmm_(a, b, beta=beta, alpha=alpha)
            return out
        if self.best.geometry.prescale_output:  # the kernel adds alpha*a@b into out = beta*out
            if beta == 0:
                out.zero_()
            elif beta != 1:
                out.mul_(beta)
        self._launch(torch, {"M": m, "N": n, "K": k, "alpha": alpha, "beta": beta,
                             "A": a.data_ptr(), "B": b.data_ptr(), "C": out.data_ptr()})
        return out

    def transpose(self, x, out=None):
        """out(COLS x ROWS) = x(ROWS x COLS)^T; returns out. Tensors and errors as sgemm."""
        torch = _torch()
        if self.family != "transpose":
            raise ValueError(f"this is a {self.family} kernel, not transpose")
        rows, cols = self.shape
        outs = [] if out is None else [(out, "out", (cols, rows))]
        _check_tensors(torch, [(x, "x", (rows, cols))] + outs, self.device)
        if out is None:
            out = torch.empty((cols, rows), dtype=torch.float32, device=self.device)
        self._launch(torch, {"rows": rows, "cols": cols, "in": x.data_ptr(), "out": out.data_ptr()})
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
        torch = _torch()
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
        pointers = iter(tensors)
        params = [ctypes.c_void_p(next(pointers).data_ptr()) if p is None else p
                  for p in self._scalars]
        if stream is None:
            stream = torch.cuda.current_stream(self.device).cuda_stream
        elif not isinstance(stream, int):
            stream = stream.cuda_stream
        self._launch_params(stream, params)

    __call__ = launch

    def __del__(self):
        module, self._module = getattr(self, "_module", None), None
        if module is not None and _libcuda is not None:
            try:
                with _Context(_libcuda, self.device.index):
                    _libcuda.cuModuleUnload(module)
            except Exception:  # the driver may be shutting down with the interpreter
                pass
