"""The CUDA driver through ctypes on libcuda: the library, the devices'
primary contexts, and a loaded kernel's launch prepared once (Launcher).

Everything that does not change from one call to the next is prepared at
a kernel's first launch: the geometry, the driver's functions with their C
types, one parameter block per thread whose pointer slots alone change,
the tensor maps per base pointer. The launch itself goes through
tuned._fastcall (C, built at install where a C compiler and Python's headers
are) where it is built: through ctypes, converting the arguments took about
a third of a launch's CPU time.
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
# TensorMap.dtype -> CUtensorMapDataType: FLOAT32 (7; also for an unset
# dtype), BFLOAT16 (9), FLOAT16 (6).
_CU_TENSOR_MAP_DATA_TYPE = {pb.DTYPE_UNSPECIFIED: 7, pb.DTYPE_F32: 7, pb.DTYPE_BF16: 9,
                            pb.DTYPE_F16: 6}
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # swizzle_bytes -> CUtensorMapSwizzle
# TensorMap.l2_promotion_bytes -> CUtensorMapL2promotion (0: 256 bytes)
L2_PROMOTION = {0: 3, 64: 1, 128: 2, 256: 3}
_TENSOR_MAP_BYTES = 128
_MAP_CACHE_SIZE = 64  # tensor maps kept per kernel (by base pointer) before the cache starts over
_CU_MEMORYTYPE_DEVICE = 2
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4

_lock = threading.Lock()
_libcuda = None
_primary = {}  # device ordinal -> its primary context (retained once per process)
_pools = {}  # device ordinal -> its staging pool (a CUmemoryPool handle, kept for the process)


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


class MemPoolProps(ctypes.Structure):
    """CUmemPoolProps (cuda.h), cuMemPoolCreate's description of a pool."""
    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int),
                ("locationType", ctypes.c_int), ("locationId", ctypes.c_int),
                ("win32SecurityAttributes", ctypes.c_void_p), ("maxSize", ctypes.c_size_t),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 54)]


class Memcpy2D(ctypes.Structure):
    """CUDA_MEMCPY2D (cuda.h), cuMemcpy2DAsync's description of a copy."""
    _fields_ = [("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
                ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
                ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
                ("srcPitch", ctypes.c_size_t), ("dstXInBytes", ctypes.c_size_t),
                ("dstY", ctypes.c_size_t), ("dstMemoryType", ctypes.c_int),
                ("dstHost", ctypes.c_void_p), ("dstDevice", ctypes.c_uint64),
                ("dstArray", ctypes.c_void_p), ("dstPitch", ctypes.c_size_t),
                ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t)]


def staging_pool(lib, device):
    """The staging pool of device `device` (a CUmemoryPool handle, an int),
    as core/launch.cc's: created once per process (the device's primary
    context current), its memory kept between launches (release threshold
    unbounded), so that a staged launch allocates in stream order without a
    cuMemAlloc."""
    with _lock:
        if device not in _pools:
            props = MemPoolProps(allocType=_CU_MEM_ALLOCATION_TYPE_PINNED,
                                 locationType=_CU_MEM_LOCATION_TYPE_DEVICE, locationId=device)
            pool = ctypes.c_void_p()
            check(lib, lib.cuMemPoolCreate(ctypes.byref(pool), ctypes.byref(props)),
                  "cuMemPoolCreate")
            keep = ctypes.c_uint64(2**64 - 1)
            check(lib, lib.cuMemPoolSetAttribute(pool, _CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                                 ctypes.byref(keep)), "cuMemPoolSetAttribute")
            _pools[device] = pool.value
        return _pools[device]


def stage_operand(lib, m, base, pool, stream):
    """Copies the rank-2 operand of tensor map `m` at device address `base`
    (m.dims[1] rows of m.dims[0] elements, pitch m.strides_bytes[0]) into a
    workspace from `pool` with rows padded to a multiple of 16 bytes, on
    `stream` (cuMemAllocFromPoolAsync, cuMemcpy2DAsync; the rows' padding
    zeroed, cuMemsetD2D8Async), as core/launch.cc's StageOperand; the
    caller frees it with cuMemFreeAsync on `stream`.
    Returns (the copy's address, its pitch in bytes); TunedError
    (RESOURCE_EXHAUSTED out of memory, else INTERNAL) for a failed call,
    with nothing left allocated."""
    row = m.dims[0] * (2 if m.dtype in (pb.DTYPE_BF16, pb.DTYPE_F16) else 4)
    pitch = (row + 15) // 16 * 16
    copy = ctypes.c_uint64()
    check(lib, lib.cuMemAllocFromPoolAsync(ctypes.byref(copy), ctypes.c_size_t(pitch * m.dims[1]),
                                           ctypes.c_void_p(pool), ctypes.c_void_p(stream)),
          "cuMemAllocFromPoolAsync (staging)")
    desc = Memcpy2D(srcMemoryType=_CU_MEMORYTYPE_DEVICE, srcDevice=base,
                    srcPitch=m.strides_bytes[0], dstMemoryType=_CU_MEMORYTYPE_DEVICE,
                    dstDevice=copy.value, dstPitch=pitch, WidthInBytes=row, Height=m.dims[1])
    what = "cuMemcpy2DAsync"
    result = lib.cuMemcpy2DAsync_v2(ctypes.byref(desc), ctypes.c_void_p(stream))
    if result == 0 and pitch > row:
        result, what = lib.cuMemsetD2D8Async(
            ctypes.c_uint64(copy.value + row), ctypes.c_size_t(pitch), ctypes.c_ubyte(0),
            ctypes.c_size_t(pitch - row), ctypes.c_size_t(m.dims[1]),
            ctypes.c_void_p(stream)), "cuMemsetD2D8Async"
    if result != 0:
        lib.cuMemFreeAsync(copy, ctypes.c_void_p(stream))  # the copy's error is the one raised
        check(lib, result, what + " (staging)")
    return copy.value, pitch


def tma_takes(base, strides_bytes):
    """Whether TMA takes a tensor map over `base` (core/launch.cc's
    TmaTakes): the base 16-byte aligned and every stride a multiple of 16."""
    return base % 16 == 0 and all(s % 16 == 0 for s in strides_bytes)


class LaunchConfig(ctypes.Structure):
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


def stream_function(torch):
    """f(device index) -> the raw CUstream handle (an int) of torch's current
    stream on that device: torch._C._cuda_getCurrentRawStream (what torch's own
    generated code calls, ~0.1 us), else the public torch.cuda.current_stream
    (a Stream object made per call, a few us)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class _Slots:
    """One thread's parameter block for a Launcher: a ctypes value per kernel
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
        self.config = LaunchConfig(*launcher.grid, *launcher.block, launcher.smem, None, None, 0)
        self.config_address = ctypes.addressof(self.config)
        self.current = ctypes.c_void_p()
        self.current_address = ctypes.addressof(self.current)
        # The ctypes values a caller sets by name, in the launcher's `fast` order.
        self.fast = tuple(self.values[i] for i in launcher.fast)
        self.maps = None  # the encoded maps the array points at, kept alive while it does


class Launcher:
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
            swizzle = SWIZZLE.get(m.swizzle_bytes)
            rank = len(m.dims)
            if (m.param != len(template) + i or m.pointer_arg >= len(template)
                    or template[m.pointer_arg][0] is not ctypes.c_void_p
                    or len(m.strides_bytes) != rank - 1 or len(m.box) != rank or swizzle is None
                    or m.dtype not in _CU_TENSOR_MAP_DATA_TYPE
                    or m.l2_promotion_bytes not in L2_PROMOTION):
                raise TunedError(grpc.StatusCode.INTERNAL,
                                 f"malformed tensor map {' '.join(str(m).split())}")
        # Each map's CUtensorMapDataType, from its TensorMap.dtype.
        self.map_types = tuple(_CU_TENSOR_MAP_DATA_TYPE[m.dtype] for m in self.maps)
        self.map_pointers = tuple(m.pointer_arg for m in self.maps)
        self.map_cache = {}  # base pointers -> (buffers, their addresses)
        self.stages = any(m.stage for m in self.maps)
        for m in self.maps:
            if m.stage and (len(m.dims) != 2 or len(m.strides_bytes) != 1):
                raise TunedError(grpc.StatusCode.INTERNAL,
                                 f"a staged tensor map has rank 2: {' '.join(str(m).split())}")
        v, u = ctypes.c_void_p, ctypes.c_uint
        self.launch_ex = _function(lib, "cuLaunchKernelEx", ctypes.c_int, [v, v, v, v])
        self.launch = _function(lib, "cuLaunchKernel", ctypes.c_int, [v] + [u] * 7 + [v, v, v])
        self.get_current = _function(lib, "cuCtxGetCurrent", ctypes.c_int, [v])
        self.push = _function(lib, "cuCtxPushCurrent_v2", ctypes.c_int, [v])
        self.pop = _function(lib, "cuCtxPopCurrent_v2", ctypes.c_int, [v])
        self.memset32 = _function(lib, "cuMemsetD32Async", ctypes.c_int,
                                  [v, u, ctypes.c_size_t, v])
        self.stream = stream_function(torch)
        self.local = threading.local()
        # The launch in C (tuned._fastcall) with a real driver (the tests'
        # stand-in drivers are Python objects: ctypes' path).
        self.c_launch = None
        if fastcall is not None and isinstance(lib, ctypes.CDLL) and fastcall.init()[0]:
            self.c_launch = fastcall.launch

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
        m.swizzle_bytes, the L2 promotion of m.l2_promotion_bytes (0: 256 B),
        out-of-range reads zero) into a
        64-byte aligned map, of the element type of m.dtype (FLOAT32 for f32
        or unset, BFLOAT16 for bf16, FLOAT16 for f16); elsewhere the bytes
        stay zero, and the kernel, testing the same, uses no TMA. Cached by
        the pointers."""
        buffers, addresses = [], []
        for m, base, data_type in zip(self.maps, key, self.map_types):
            buf, address = self._encode_map(m, base, data_type, m.strides_bytes)
            buffers.append(buf)
            addresses.append(address)
        if len(self.map_cache) >= _MAP_CACHE_SIZE:
            self.map_cache.clear()  # a slot still pointing at a map holds it (_Slots.maps)
        entry = self.map_cache[key] = (buffers, addresses)
        return entry

    def _encode_map(self, m, base, data_type, strides_bytes):
        """One map of _encode's, with the strides given (a staged copy's
        differ from the map's): (its buffer, the map's 64-byte aligned
        address in it)."""
        buf = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + 64)  # zeroed
        address = ctypes.addressof(buf) + (-ctypes.addressof(buf) % 64)
        if tma_takes(base, strides_bytes):
            rank, u64, u32 = len(m.dims), ctypes.c_uint64, ctypes.c_uint32
            check(self.lib, self.lib.cuTensorMapEncodeTiled(
                ctypes.c_void_p(address), data_type, u32(rank),
                ctypes.c_void_p(base), (u64 * rank)(*m.dims),
                (u64 * (rank - 1))(*strides_bytes), (u32 * rank)(*m.box),
                (u32 * rank)(*[1] * rank), 0, SWIZZLE[m.swizzle_bytes],
                L2_PROMOTION[m.l2_promotion_bytes], 0), "cuTensorMapEncodeTiled")
        return buf, address

    def _launch_current(self, s, zero, stream):
        """With the kernel's context current: the prescaling memset, where
        `zero` asks for one, then cuLaunchKernelEx (cuLaunchKernel where the
        driver predates it) through ctypes; TunedError for a failed call."""
        if zero is not None:
            check(self.lib, self.memset32(zero[0], 0, zero[1], stream),
                  "cuMemsetD32Async (prescale C)")
        if self.launch_ex is not None:
            s.config.hStream = stream
            result = self.launch_ex(s.config_address, self.fn, s.array_address, None)
        else:
            result = self.launch(self.fn, *self.grid, *self.block, self.smem, stream,
                                 s.array_address, None)
        check(self.lib, result, "cuLaunchKernel")

    def _run_staged(self, s, key, zero, stream):
        """run's form where an operand is staged (TensorMap.stage, as
        core/launch.cc's LoadedKernel::Launch): each such operand copied with
        rows padded to 16 bytes (stage_operand) into a workspace from the
        device's staging pool, its map encoded over the copy, the copy's
        address passed in the operand's place, the kernel launched through
        ctypes, and the workspaces freed after it in stream order
        (cuMemFreeAsync), whether or not it ran."""
        lib = self.lib
        pushed = False
        if self.get_current(s.current_address) != 0 or s.current.value != self.ctx:
            check(lib, self.push(self.ctx), "cuCtxPushCurrent")
            pushed = True
        copies, passed = [], {}  # passed: pointer parameter -> the caller's value, restored after
        try:
            pool = staging_pool(lib, self.index)
            buffers, first = [], len(s.values)
            for i, (m, base, data_type) in enumerate(zip(self.maps, key, self.map_types)):
                strides = m.strides_bytes
                if m.stage and not tma_takes(base, strides):
                    base, pitch = stage_operand(lib, m, base, pool, stream)
                    copies.append(base)
                    strides = [pitch]
                    passed.setdefault(m.pointer_arg, s.values[m.pointer_arg].value)
                    s.values[m.pointer_arg].value = base  # the copy in the operand's place
                buf, address = self._encode_map(m, base, data_type, strides)
                buffers.append(buf)
                s.array[first + i] = address
            s.maps = buffers
            self._launch_current(s, zero, stream)
        finally:
            for p, value in passed.items():
                s.values[p].value = value
            freed = [lib.cuMemFreeAsync(ctypes.c_uint64(c), ctypes.c_void_p(stream))
                     for c in copies]
            if pushed:
                self.pop(s.current_address)
        for r in freed:
            check(lib, r, "cuMemFreeAsync (staging)")

    def run(self, s, zero=None, stream=None):
        """Launches with `s`'s parameters (the caller has set its pointers) on
        `stream` (a CUstream handle; None: torch's current stream of the
        device); `zero`: (pointer, count) of floats set to zero first, on the
        same stream (the prescaling of a kernel that adds into C, beta == 0)."""
        if self.maps:
            key = tuple(s.values[p].value or 0 for p in self.map_pointers)
            if self.stages and any(m.stage and not tma_takes(b, m.strides_bytes)
                                   for m, b in zip(self.maps, key)):
                # A map over a fresh copy each launch: not cached.
                return self._run_staged(s, key, zero,
                                        self.stream(self.index) if stream is None else stream)
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
                check(self.lib, r[1], r[0])
            return
        pushed = False
        if self.get_current(s.current_address) != 0 or s.current.value != self.ctx:
            check(self.lib, self.push(self.ctx), "cuCtxPushCurrent")
            pushed = True
        try:
            self._launch_current(s, zero, stream)
        finally:
            if pushed:
                self.pop(s.current_address)
