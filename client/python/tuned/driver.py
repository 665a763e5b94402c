"""The CUDA driver through ctypes on libcuda: the library, the devices'
primary contexts, and a loaded kernel's launch prepared once (Launcher).

A launch is the C launcher's (core/launch_c.c, the one the C++ client
library calls, compiled into tuned._fastcall): its plan (geometry, tensor
maps) is checked once at a kernel's first launch, and each launch passes
one parameter block per thread whose pointer slots alone change, with the
tensor maps encoded per base pointer (cached). A stand-in driver (the
tests') gives the launcher its functions as a table (launcher_table()).
"""

import ctypes
import threading

import grpc

from .client import TunedError
from .v1 import tuner_pb2 as pb

try:
    from . import _fastcall as fastcall
except ImportError:  # not built: ctypes launches
    fastcall = None

_CUDA_ERROR_OUT_OF_MEMORY = 2
_TENSOR_MAP_BYTES = 128
_MAP_CACHE_SIZE = 64  # tensor maps kept per kernel (by base pointer) before the cache starts over
# The C launcher's own statuses (tuned/launch_c.h): a malformed plan, a missing driver function.
_LAUNCH_BAD_PLAN, _LAUNCH_NO_DRIVER = -1, -2

_lock = threading.Lock()
_libcuda = None
_primary = {}  # device ordinal -> its primary context (retained once per process)


def libcuda():
    """libcuda, initialised; TunedError FAILED_PRECONDITION without a driver."""
    global _libcuda
    with _lock:
        if _libcuda is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"no CUDA driver (libcuda.so.1): {e}") from None
            check(lib, lib.cuInit(0), "cuInit")
            _libcuda = lib
        return _libcuda


def check(lib, result, what):
    """Raises TunedError for a CUresult other than CUDA_SUCCESS, named by cuGetErrorName."""
    if result == 0:
        return
    name = ctypes.c_char_p()
    known = lib.cuGetErrorName(result, ctypes.byref(name)) == 0 and name.value
    text = name.value.decode() if known else f"CUresult {result}"
    code = (grpc.StatusCode.RESOURCE_EXHAUSTED if result == _CUDA_ERROR_OUT_OF_MEMORY
            else grpc.StatusCode.INTERNAL)
    raise TunedError(code, f"{what}: {text}")


def primary_context(lib, device):
    """The primary context of device `device` (a c_void_p), retained once per process."""
    with _lock:
        if device not in _primary:
            dev, ctx = ctypes.c_int(), ctypes.c_void_p()
            check(lib, lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
            check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                  "cuDevicePrimaryCtxRetain")
            _primary[device] = ctx
        return _primary[device]


class Context:
    """Makes the primary context of `device` current for a block (push/pop),
    so that loads work from any thread."""

    def __init__(self, lib, device):
        self.lib = lib
        self.ctx = primary_context(lib, device)

    def __enter__(self):
        check(self.lib, self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        popped = ctypes.c_void_p()
        check(self.lib, self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped)), "cuCtxPopCurrent")


def stream_function(torch):
    """f(device index) -> the raw CUstream handle (an int) of torch's current
    stream on that device: torch._C._cuda_getCurrentRawStream (what torch's own
    generated code calls, ~0.1 us), else the public torch.cuda.current_stream
    (a Stream object made per call, a few us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


def raise_launch(lib, result, what):
    """Raises TunedError for a failed step of the C launcher: a CUresult as
    check() names it; its own statuses INTERNAL (a malformed plan) or
    FAILED_PRECONDITION (the driver lacks a function)."""
    if result == _LAUNCH_BAD_PLAN:
        raise TunedError(grpc.StatusCode.INTERNAL, f"{what}: a malformed launch")
    if result == _LAUNCH_NO_DRIVER:
        raise TunedError(grpc.StatusCode.FAILED_PRECONDITION, f"{what}: not in the CUDA driver")
    check(lib, result, what)


class _Slots:
    """One thread's parameter block for a Launcher: a ctypes value per kernel
    parameter (prebuilt: the shape's integers, alpha, beta, a spec's scalars)
    and the array of their addresses that the launcher reads. A call sets the
    pointer values (and alpha, beta) and launches: the driver copies the
    parameters at the launch, so the block is reused at once."""

    def __init__(self, launcher):
        self.values = [ctype(value) for ctype, value in launcher.template]
        self.array = (ctypes.c_void_p * len(self.values))(
            *[ctypes.addressof(v) for v in self.values])
        self.array_address = ctypes.addressof(self.array)
        # The ctypes values a caller sets by name, in the launcher's `fast` order.
        self.fast = tuple(self.values[i] for i in launcher.fast)
        self.maps = None  # the encoded maps of the last launch, kept alive while it may run


class Launcher:
    """A loaded kernel's launch, prepared once: its plan in the C launcher
    (tuned._fastcall.launch_plan: the geometry and the tensor maps, checked
    there), the parameters' C types and initial values (`template`, a
    (ctype, value) pair per parameter), the tensor maps' encodings per base
    pointer (cached) and a _Slots per thread.

    Each launch: the tensor maps for the pointers (cached; a staged
    operand's encoded by the launcher over its copy), torch's current raw
    stream of the device, then the C launcher (tuned._fastcall.launch_planned:
    the context pushed only where another one is current, C zeroed first
    where asked, cuLaunchKernelEx). TunedError FAILED_PRECONDITION where
    tuned._fastcall is not built or finds no driver."""

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
        real = isinstance(lib, ctypes.CDLL)
        if fastcall is None or (real and not fastcall.init()[0]):
            raise TunedError(grpc.StatusCode.FAILED_PRECONDITION,
                             "tuned._fastcall, the launcher, is not built or finds no CUDA driver "
                             "(pip install needs a C compiler and Python's headers)")
        # The launcher's driver: libcuda's (0), or the stand-in's table.
        self.driver = 0 if real else lib.launcher_table()
        for m in self.maps:  # a map is over a pointer parameter (the launcher sees no types)
            if m.pointer_arg >= len(template) or template[m.pointer_arg][0] is not ctypes.c_void_p:
                raise TunedError(grpc.StatusCode.INTERNAL,
                                 f"malformed tensor map {' '.join(str(m).split())}")
        try:
            self.plan = fastcall.launch_plan(
                self.grid, self.block, self.smem, g.prescale_output, len(template),
                [(m.param, m.pointer_arg, m.dtype, list(m.dims), list(m.strides_bytes),
                  list(m.box), m.swizzle_bytes, m.l2_promotion_bytes, m.stage) for m in self.maps])
        except ValueError as e:
            raise TunedError(grpc.StatusCode.INTERNAL, str(e)) from None
        self.map_pointers = tuple(m.pointer_arg for m in self.maps)
        self.map_cache = {}  # base pointers -> (buffer, the maps' addresses' array address, array)
        self.stages = any(m.stage for m in self.maps)
        self.stream = stream_function(torch)
        self.local = threading.local()
        # tuned._torchcall's launches take the real driver only.
        self.c_launch = fastcall.launch_planned if real else None

    def slots(self):
        """This thread's _Slots."""
        try:
            return self.local.slots
        except AttributeError:
            s = self.local.slots = _Slots(self)
            return s

    def _encode(self, key):
        """The tensor maps over base pointers `key` (one per map), encoded by
        the launcher (tuned._fastcall.encode_map: 128 zero bytes where TMA
        cannot take the operand) into 64-byte aligned maps; cached by the
        pointers."""
        count = len(self.maps)
        buf = ctypes.create_string_buffer(_TENSOR_MAP_BYTES * count + 64)
        first = ctypes.addressof(buf) + (-ctypes.addressof(buf) % 64)
        addresses = (ctypes.c_void_p * count)(
            *[first + _TENSOR_MAP_BYTES * i for i in range(count)])
        for i, base in enumerate(key):
            r = fastcall.encode_map(self.plan, self.driver, i, base, addresses[i])
            if r is not None:
                raise_launch(self.lib, r[1], r[0])
        if len(self.map_cache) >= _MAP_CACHE_SIZE:
            self.map_cache.clear()  # a slot still pointing at maps holds them (_Slots.maps)
        entry = self.map_cache[key] = (buf, ctypes.addressof(addresses), addresses)
        return entry

    def run(self, s, zero=None, stream=None):
        """Launches with `s`'s parameters (the caller has set its pointers) on
        `stream` (a CUstream handle; None: torch's current stream of the
        device); `zero`: (pointer, count) of floats set to zero first, on the
        same stream (the prescaling of a kernel that adds into C, beta == 0)."""
        maps = 0
        if self.maps:
            key = tuple(s.values[p].value or 0 for p in self.map_pointers)
            # A staged operand's map is over a fresh copy each launch: the
            # launcher encodes it (nothing cached).
            if not (self.stages and any(fastcall.stages(self.plan, i, b)
                                        for i, b in enumerate(key))):
                entry = self.map_cache.get(key) or self._encode(key)
                s.maps = entry
                maps = entry[1]
        if stream is None:
            stream = self.stream(self.index)
        r = fastcall.launch_planned(self.plan, self.driver, self.fn, self.ctx, s.array_address,
                                    maps, stream, *(zero or (0, 0)))
        if r is not None:
            raise_launch(self.lib, r[1], r[0])
