"""Running a tuned kernel on torch tensors: tuned.Kernel.

The kernel is loaded with the CUDA driver API (tuned/driver.py: ctypes on
libcuda) and launched by the C launcher (core/launch_c.c, compiled into
tuned._fastcall): no dependency beyond torch (which the tensors need anyway)
and the driver every CUDA program already has. torch has created the device's
primary context for its tensors; the kernel is loaded into that context and
launched on torch's current stream, so it orders with torch's own work like
any torch op. torch is imported lazily: the gRPC client works without it.

A call costs a few microseconds of CPU: the launch is prepared at the
kernel's first call (driver.Launcher), and each call checks its tensors
against values computed once, in C++ where tuned._torchcall is built.
"""

import ctypes
import threading

import grpc

from . import driver
from .client import DTYPES, DTypeError, TunedError, dtype_name, family_name, layout_name
from .layout import describe as _describe_layout
from .layout import is_transposed
from .v1 import tuner_pb2 as pb

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_STATIC_SHARED_LIMIT = 48 * 1024
_BUILTIN = ("sgemm", "transpose")
# An element type: its torch dtype (by name) and the C type of a kernel's
# pointer to it (best.arguments, e.g. "const __nv_bfloat16* A").
_FLOAT, _BFLOAT16, _HALF = (("float32", "float"), ("bfloat16", "__nv_bfloat16"),
                             ("float16", "__half"))
# An sgemm problem's dtype (Problem.dtype; unset: f32, as the daemon reads it)
# -> the element type of A and B, and that of C.
_SGEMM_DTYPE = {pb.DTYPE_UNSPECIFIED: (_FLOAT, _FLOAT), pb.DTYPE_F32: (_FLOAT, _FLOAT),
                pb.DTYPE_BF16: (_BFLOAT16, _BFLOAT16), pb.DTYPE_F16: (_HALF, _HALF),
                pb.DTYPE_BF16_F32: (_BFLOAT16, _FLOAT), pb.DTYPE_F16_F32: (_HALF, _FLOAT)}
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


def served_layout(best):
    """The tuner.proto Layout of the kernel a BestKernel holds: its config's
    LAYOUT parameter (sgemm; absent: LAYOUT_NN, as configs stored before
    layouts), else, where the best names no config, its problem's."""
    params = best.measurement.config.params
    if not params:
        return best.problem.layout
    return params.get("LAYOUT", pb.LAYOUT_NN)


def _torch():
    try:
        import torch
    except ImportError as e:
        raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                         f"running a kernel needs torch: {e}") from None
    return torch


# tuned.linear's activations and the epilogue (tuner.proto Epilogue's name)
# that fuses each with a bias.
ACTIVATION_EPILOGUES = {None: "bias", "relu": "bias_relu", "gelu": "bias_gelu_erf",
                        "gelu_tanh": "bias_gelu_tanh"}


# The activation of each such epilogue.
EPILOGUE_ACTIVATIONS = {e: a for a, e in ACTIVATION_EPILOGUES.items()}


def activation_function(torch, activation):
    """torch's function of an activation of ACTIVATION_EPILOGUES (None for None)."""
    F = torch.nn.functional
    return {None: None, "relu": F.relu, "gelu": F.gelu,
            "gelu_tanh": lambda y: F.gelu(y, approximate="tanh")}[activation]


def _check_tensors(torch, tensors, device, dtype=None):
    """TypeError/ValueError unless each (tensor, name, shape[, layout[,
    its dtype]]) is a torch tensor of its dtype (default `dtype`, a
    torch.dtype; None: float32) and that shape, contiguous (layout "n", the
    default) or the transpose of a row-major matrix (layout "t"), then
    unless each is on `device`: the form of every tensor is checked before
    any device. Another dtype is a DTypeError (TunedError INVALID_ARGUMENT
    and TypeError) naming both."""
    dtype = dtype or torch.float32
    for t, name, shape, *rest in tensors:
        want = rest[1] if len(rest) > 1 else dtype
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
        if t.dtype != want:
            raise DTypeError(f"{name} must be {str(want).removeprefix('torch.')}, not {t.dtype}")
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
        op = rest[0] if rest else "n"
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


_mm_out_dtype = None  # whether torch.mm takes out_dtype (torch >= 2.8), found at the first use


def _takes_out_dtype(torch):
    """Whether torch.mm has its out_dtype overload (aten::mm.dtype)."""
    try:
        return "dtype" in torch.ops.aten.mm.overloads()
    except Exception:  # a torch without the overload packet's list
        return False


def _gemm_f32_out(torch, a, b, out, alpha=1.0, beta=0.0):
    """out = alpha * a @ b + beta * out for bfloat16 or float16 matrices a
    (MxK) and b (KxN) of one dtype and a float32 out (MxN), as cuBLAS's
    cublasGemmEx with an fp32 C computes it: the products exact, summed in
    fp32, C never rounded to 16 bits; returns out. On CUDA tensors with
    alpha 1 and beta 0, torch.mm's out_dtype where torch has it (>= 2.8: that
    very cuBLAS call); otherwise torch.matmul (addmm_ with alpha, beta) of a
    and b widened to float32, with TF32 on for the call (exact all the same:
    every bfloat16 and float16 value is a TF32 value)."""
    global _mm_out_dtype
    if alpha == 1 and beta == 0 and a.is_cuda:
        if _mm_out_dtype is None:
            _mm_out_dtype = _takes_out_dtype(torch)
        if _mm_out_dtype:
            return torch.mm(a, b, out_dtype=torch.float32, out=out)
    a, b = a.float(), b.float()
    if alpha == 1 and beta == 0:
        return _run_in_mode(torch, True, torch.matmul, a, b, out=out)
    return _run_in_mode(torch, True, out.addmm_, a, b, beta=beta, alpha=alpha)


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

    An sgemm kernel's tensors are of its problem's dtype (best.problem.dtype):
    A and B of `dtype`, C of `out_dtype`: torch.float32 all three for f32;
    torch.bfloat16 for bf16 and torch.float16 for f16, 16-bit A, B and C
    with fp32 alpha, beta and accumulation, C rounded once; for bf16_f32
    and f16_f32, A and B torch.bfloat16 or torch.float16 and C
    torch.float32, never rounded to 16 bits. Where cuBLAS serves a 16-bit
    problem, torch.matmul runs on the 16-bit tensors (cuBLAS, fp32
    accumulation), as torch's settings are; for an fp32 C, cuBLAS's GEMM
    with an fp32 C (_gemm_f32_out).

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
        # The element types (torch.dtypes) of A and B (`dtype`) and of C
        # (`out_dtype`) of sgemm, of in and out of transpose, and the C types
        # of the kernel's pointers to them; None for a kernel spec's (its
        # buffers' types are its own).
        self.dtype = self.out_dtype = self._ctype = self._out_ctype = None
        if self.family == "sgemm":
            if best.problem.dtype not in _SGEMM_DTYPE:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"an sgemm kernel of {dtype_name(best.problem.dtype)}: this "
                                 f"client runs {', '.join(DTYPES[:-1])} and {DTYPES[-1]} (it is "
                                 "older than the daemon)")
            (name, self._ctype), (out_name, self._out_ctype) = _SGEMM_DTYPE[best.problem.dtype]
            self.dtype, self.out_dtype = getattr(torch, name), getattr(torch, out_name)
        elif not self.is_spec:
            self.dtype = self.out_dtype = torch.float32
            self._ctype = self._out_ctype = "float"
        half = self.dtype is not None and self.dtype is not torch.float32  # 16-bit A and B
        # The mode of the cuBLAS it may call: TF32 for math tf32, else off;
        # None for a 16-bit GEMM (torch.matmul as torch's settings are).
        self.tf32 = None if half else best.problem.math == pb.MATH_TF32
        self.layout = layout_name(best.problem.layout)
        # The problem's epilogue (tuned.EPILOGUES): "none", or what sgemm(...,
        # bias=) applies after the product.
        self.epilogue = pb.Epilogue.Name(best.problem.epilogue).removeprefix("EPILOGUE_").lower()
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
        lib = driver.libcuda()
        with driver.Context(lib, self.device.index):
            major, minor = ctypes.c_int(), ctypes.c_int()
            dev = ctypes.c_int()
            driver.check(lib, lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
            for attr, out in ((_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major),
                              (_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor)):
                driver.check(lib, lib.cuDeviceGetAttribute(ctypes.byref(out), attr, dev),
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
            driver.check(lib, lib.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData")
            self._module = module
            driver.check(lib, lib.cuModuleGetFunction(ctypes.byref(function), module,
                                                      self.best.entry.encode()),
                         "cuModuleGetFunction")
            smem = self.best.geometry.dynamic_shared_bytes
            if smem > _STATIC_SHARED_LIMIT:
                driver.check(lib, lib.cuFuncSetAttribute(
                    function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                    "cuFuncSetAttribute")
            self._function = function

    def _template(self):
        """The parameters' (ctype, initial value) pairs and, for a built-in
        family, the indices of the ones a call sets (sgemm: A, B, C, alpha,
        beta; transpose: in, out), from best.arguments (the kernel's C
        declarations in order; a pointer to float, __nv_bfloat16 or __half
        must be to the problem's element type of it: C's for C, A's and B's
        for the others) and the shape; for a kernel spec, its packed scalars
        and buffer slots."""
        if self.is_spec:
            template = [(ctypes.c_void_p, None) if p is None else (type(p), p.value)
                        for p in self._scalars]
            return template, [i for i, p in enumerate(self._scalars) if p is None]
        names = (("M", "N", "K") if self.family == "sgemm" else ("rows", "cols"))
        known = dict(zip(names, self.shape))
        known.update(alpha=1.0, beta=0.0)
        fast = ("A", "B", "C", "alpha", "beta") if self.family == "sgemm" else ("in", "out")
        if self.family == "sgemm" and any(d.endswith("* bias") for d in self.best.arguments):
            fast += ("bias",)  # an epilogue's kernel: the bias after C
        template, index = [], {}
        for decl in self.best.arguments:
            ctype, _, name = decl.rpartition(" ")
            if "*" in ctype:
                element = ctype.replace("const ", "").rstrip("*").strip()
                want = self._out_ctype if name == "C" else self._ctype
                if element in _ELEMENT_DTYPE and element != want:
                    # e.g. an f32 kernel served for a bf16 problem, or a bf16
                    # one (C of bf16) for a bf16_f32 problem
                    of = dtype_name(self.best.problem)
                    if self._out_ctype != self._ctype:
                        of += f" ({name} of {dtype_name(_ELEMENT_DTYPE[want])})"
                    raise TunedError(grpc.StatusCode.INTERNAL,
                                     f"the kernel's argument '{decl}' is of "
                                     f"{dtype_name(_ELEMENT_DTYPE[element])} data, its problem of "
                                     f"{of}")
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
        """Loads the module (if not yet) and prepares its launches (driver.Launcher),
        once whichever threads launch first."""
        with self._prepare_lock:
            if self._launcher is None:
                if self._function is None:
                    self._load()
                template, fast = self._template()
                lib = driver.libcuda()
                launcher = driver.Launcher(lib, self._torch, self.best, self._index,
                                           self._function,
                                           driver.primary_context(lib, self.device.index),
                                           template, fast)
                self._launcher = launcher
                self._fast = self._sgemm_spec(launcher)  # after: sgemm reads _launcher then
            return self._launcher

    def _sgemm_spec(self, launcher):
        """The launch prepared for tuned._torchcall.sgemm (the checks, the
        parameters and the launch in C++, about half the CPU time of a launch
        from Python: bench/RESULTS.md python-call), or None: without
        _torchcall, with a stand-in driver, for another family than sgemm, or
        for a kernel with tensor maps (encoded per pointer, here)."""
        if (launcher.c_launch is None or launcher.maps or self.family != "sgemm" or self.is_spec
                or self._sizes is None or self.layout not in ("nn", "nt", "tn", "tt")
                or len(launcher.fast) != 5):  # an epilogue's bias: launched from Python
            return None
        try:  # here, not with the module: its torch libraries need torch imported first
            from . import _torchcall
        except ImportError:  # built at install only where torch was importable (setup.py)
            return None
        self._fast_sgemm = _torchcall.sgemm
        m, n, k = self.shape
        params = b"".join(bytes(ctype(value)).ljust(8, b"\0")
                          for ctype, value in launcher.template)
        return _torchcall.sgemm_spec(launcher.fn, launcher.ctx,
                                     (*launcher.grid, *launcher.block, launcher.smem), params,
                                     launcher.fast, self._prescale, self.dtype, self.out_dtype,
                                     self._index, m, n, k, *self._strides)

    def load(self):
        """Loads the module and prepares the launches now rather than at the
        first launch (e.g. before a CUDA graph capture); returns self."""
        if self._launcher is None and not self.uses_torch:
            self._prepare()
        return self

    def _sgemm_launch(self, a, b, out, alpha, beta, bias=None):
        """The kernel on checked tensors (of the kernel's dtypes and shape, in
        its layout, on its device): out = alpha * a @ b + beta * out; for a
        kernel with an epilogue, `bias` (N elements of out's dtype) is
        added and the activation applied (the problem's epilogue)."""
        launcher = self._launcher or self._prepare()
        s = launcher.slots()
        pa, pb_, pc, al, be = s.fast[:5]
        if len(s.fast) > 5:
            s.fast[5].value = bias.data_ptr()
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
        are (cuBLAS, fp32 accumulation); for one with an fp32 C (bf16_f32,
        f16_f32), _gemm_f32_out."""
        torch = self._torch
        if self.out_dtype is not self.dtype:
            return _gemm_f32_out(torch, a, b, out, alpha, beta)
        if alpha == 1 and beta == 0:
            return _run_in_mode(torch, self.tf32, torch.matmul, a, b, out=out)
        return _run_in_mode(torch, self.tf32, out.addmm_, a, b, beta=beta, alpha=alpha)

    def gemm(self, a, b, out=None, alpha=1.0, beta=0.0, bias=None):
        """out(MxN) = alpha * a(MxK) @ b(KxN) + beta * out; returns out.
        For a problem with an epilogue (`epilogue` other than "none"), `bias`
        (N elements of out's dtype, contiguous) is added to each row and the
        activation applied, as the problem says; bias is for such a problem
        only (ValueError otherwise, and where it is missing).
        CUDA tensors on the kernel's device, a and b of the kernel's `dtype`
        and out of its `out_dtype` (torch.float32 both for f32; for a bf16
        or f16 problem torch.bfloat16 or torch.float16 both; for bf16_f32 or
        f16_f32, a and b torch.bfloat16 or torch.float16 and out
        torch.float32; alpha and beta are fp32 all the same), of the
        kernel's shape: out row-major (contiguous), a and b in the kernel's
        layout (`layout`: "n" row-major, "t" the transpose of a row-major
        matrix, e.g. b = w.t() of a contiguous (N, K) w for "nt"); out=None
        allocates it, of `out_dtype` (beta must then be 0). Runs on torch's
        current stream. tuned.DTypeError (a TunedError INVALID_ARGUMENT and a
        TypeError) for a tensor of another dtype, naming both; TypeError for
        a non-tensor, ValueError for a wrong shape, layout or device."""
        if bias is not None or self.epilogue != "none":
            return self._fused_sgemm(a, b, out, alpha, beta, bias)
        fast = self._fast
        if fast is not None:  # checked and launched in C++; NotImplemented: checked below
            r = self._fast_sgemm(fast, a, b, out, alpha, beta, self._launcher.stream(self._index))
            if r.__class__ is tuple:
                driver.check(self._launcher.lib, r[1], r[0])
            if r is not NotImplemented:
                return r
        sizes = self._sizes
        if sizes is not None:
            # The checks below, compared with values computed once; any
            # failure (or a non-tensor) takes the path that names it.
            dt, odt, index = self.dtype, self.out_dtype, self._index
            sa, sb = self._strides
            try:
                ok = (a.dtype is dt and b.dtype is dt and a.shape == sizes[0]
                      and b.shape == sizes[1] and a.get_device() == index
                      and b.get_device() == index
                      and (a.is_contiguous() if sa is None else a.stride() == sa)
                      and (b.is_contiguous() if sb is None else b.stride() == sb)
                      and (beta == 0 if out is None else
                           out.dtype is odt and out.shape == sizes[2]
                           and out.get_device() == index and out.is_contiguous()))
            except AttributeError:
                ok = False
            if ok:
                if out is None:
                    out = a.new_empty(*sizes[2], dtype=odt)  # ints: less CPU than a Size
                if self.uses_torch:
                    return self._sgemm_torch(a, b, out, alpha, beta)
                self._sgemm_launch(a, b, out, alpha, beta)
                return out
        return self._sgemm_checked(a, b, out, alpha, beta)

    sgemm = gemm  # the name of the family's first, fp32-only, days

    def _fused_sgemm(self, a, b, out, alpha, beta, bias):
        """sgemm of a problem with an epilogue: the checks, then the kernel
        with the bias after C, or torch where cuBLAS serves."""
        torch = self._torch
        if self.epilogue == "none":
            raise ValueError("bias is for a kernel whose problem has an epilogue; this one has "
                             "none (ask for epilogue='bias')")
        if bias is None:
            raise ValueError(f"this kernel's problem has the epilogue '{self.epilogue}': pass "
                             "its bias")
        n = self.shape[1]
        _check_tensors(torch, [(bias, "bias", (n,), "n", self.out_dtype)], self.device, self.dtype)
        if not self.uses_torch:
            return self._sgemm_checked(a, b, out, alpha, beta, bias)
        out = self._sgemm_checked(a, b, out, alpha, beta)
        out.add_(bias)
        act = activation_function(torch, EPILOGUE_ACTIVATIONS[self.epilogue])
        return out if act is None else out.copy_(act(out))

    def _sgemm_checked(self, a, b, out, alpha, beta, bias=None):
        torch = self._torch
        if self.family != "sgemm":
            raise ValueError(f"this is a {self.family} kernel, not sgemm")
        if out is None and beta != 0:
            raise ValueError("beta != 0 needs out (C is read)")
        m, n, k = self.shape
        outs = [] if out is None else [(out, "out", (m, n), "n", self.out_dtype)]
        _check_tensors(torch, [(a, "a", (m, k), self.layout[0]), (b, "b", (k, n), self.layout[1])]
                       + outs, self.device, self.dtype)
        if out is None:
            out = torch.empty((m, n), dtype=self.out_dtype, device=self.device)
        if self.uses_torch:  # the mode's baseline: cuBLAS TF32 for math tf32, else fp32
            return self._sgemm_torch(a, b, out, alpha, beta)
        self._sgemm_launch(a, b, out, alpha, beta, bias)
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
        if module is not None and driver._libcuda is not None:
            try:
                with driver.Context(driver._libcuda, self.device.index):
                    driver._libcuda.cuModuleUnload(module)
            except Exception:  # the driver may be shutting down with the interpreter
                pass
