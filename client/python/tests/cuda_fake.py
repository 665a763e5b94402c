"""A stand-in for libcuda (what tuned.driver calls through ctypes), for the
tests without a GPU: FakeDriver records every call that matters (loads,
context pushes, launches with their configuration and parameter bytes,
tensor map encodes, memsets, staging's allocations and 2-D copies); Emulator also runs an sgemm launch on the CPU,
reading and writing the host memory its pointers name (CPU tensors), as the
kernel would on the GPU, in the layout and dtype its image names
(image(layout, dtype))."""

import ctypes

import torch

import tuned.driver

CONTEXT = 0xC0  # the primary context the fake hands out (its device's: CONTEXT + ordinal)
FUNCTION = 0xF00  # the first module's function; the i-th module's: FUNCTION + i
MODULE = 0x1000
POOL = 0x9000  # the staging pool the fake hands out
STAGED = 0x40000000  # the first staging allocation's address; the i-th's: + i * 0x100000
LAYOUTS = ("nn", "nt", "tn", "tt")
# An image's dtype name (tuner.proto DType's) -> the torch dtypes of A and B, and of C.
DTYPES = {"f32": (torch.float32, torch.float32), "bf16": (torch.bfloat16, torch.bfloat16),
          "f16": (torch.float16, torch.float16), "bf16_f32": (torch.bfloat16, torch.float32),
          "f16_f32": (torch.float16, torch.float32)}


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h), cuLaunchKernelEx's first argument."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


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


_v, _i, _u64, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t
# TunedDriver (core/include/tuned/launch_c.h): its functions in order, with their C types.
_LAUNCHER_FUNCTIONS = [
    ("ctx_get_current", (_v,)), ("ctx_push_current", (_v,)), ("ctx_pop_current", (_v,)),
    ("ctx_get_device", (_v,)), ("launch_kernel_ex", (_v, _v, _v, _v)),
    ("memset_d32_async", (_u64, ctypes.c_uint, _sz, _v)),
    ("memset_d2d8_async", (_u64, _sz, ctypes.c_ubyte, _sz, _sz, _v)),
    ("memcpy_2d_async", (_v, _v)), ("mem_pool_create", (_v, _v)),
    ("mem_pool_set_attribute", (_v, _i, _v)), ("mem_alloc_from_pool_async", (_v, _sz, _v, _v)),
    ("mem_free_async", (_u64, _v)),
    ("tensor_map_encode_tiled", (_v, _i, ctypes.c_uint, _v, _v, _v, _v, _v, _i, _i, _i, _i)),
    ("get_error_name", (_i, _v))]


class LauncherDriver(ctypes.Structure):
    """The C launcher's table of driver functions (TunedDriver)."""
    _fields_ = [(name, ctypes.CFUNCTYPE(ctypes.c_int, *args)) for name, args in _LAUNCHER_FUNCTIONS]


_tables = []  # every table made, kept: the launcher keys its staging pools by a table's address


def launcher_table(fake):
    """The address of a TunedDriver whose functions call `fake`'s methods
    with the arguments ctypes would pass them (byref for an output, ctypes
    values where the fake reads .value, plain ints elsewhere; a null stream
    as 0). get_error_name is left null: errors are named in Python."""
    u64s = lambda address, n: (ctypes.c_uint64 * n).from_address(address)  # noqa: E731
    u32s = lambda address, n: (ctypes.c_uint32 * n).from_address(address)  # noqa: E731
    calls = {
        "ctx_get_current": lambda out: fake.cuCtxGetCurrent(out),
        "ctx_push_current": lambda ctx: fake.cuCtxPushCurrent_v2(ctx or 0),
        "ctx_pop_current": lambda out: fake.cuCtxPopCurrent_v2(out),
        "ctx_get_device": lambda dev: fake.cuCtxGetDevice(
            ctypes.byref(ctypes.c_int.from_address(dev))),
        "launch_kernel_ex": lambda config, fn, params, extra: fake.cuLaunchKernelEx(
            config, fn, params, extra),
        "memset_d32_async": lambda p, value, count, stream: fake.cuMemsetD32Async(
            p, value, count, stream or 0),
        "memset_d2d8_async": lambda p, pitch, value, width, height, stream: fake.cuMemsetD2D8Async(
            ctypes.c_uint64(p), ctypes.c_size_t(pitch), ctypes.c_ubyte(value),
            ctypes.c_size_t(width), ctypes.c_size_t(height), stream or 0),
        "memcpy_2d_async": lambda desc, stream: fake.cuMemcpy2DAsync_v2(
            ctypes.byref(Memcpy2D.from_address(desc)), stream or 0),
        "mem_pool_create": lambda pool, props: fake.cuMemPoolCreate(
            ctypes.byref(ctypes.c_void_p.from_address(pool)),
            ctypes.byref(MemPoolProps.from_address(props))),
        "mem_pool_set_attribute": lambda pool, attr, value: fake.cuMemPoolSetAttribute(
            pool, attr, ctypes.byref(ctypes.c_uint64.from_address(value))),
        "mem_alloc_from_pool_async": lambda out, size, pool, stream: fake.cuMemAllocFromPoolAsync(
            ctypes.byref(ctypes.c_uint64.from_address(out)), ctypes.c_size_t(size), pool,
            stream or 0),
        "mem_free_async": lambda p, stream: fake.cuMemFreeAsync(p, stream or 0),
        "tensor_map_encode_tiled": lambda out, dtype, rank, base, dims, strides, box, elem, il, sw,
        l2, oob: fake.cuTensorMapEncodeTiled(
            ctypes.c_void_p(out), dtype, ctypes.c_uint32(rank), ctypes.c_void_p(base),
            u64s(dims, rank), u64s(strides, rank - 1), u32s(box, rank), u32s(elem, rank), il, sw,
            l2, oob),
    }
    table = LauncherDriver()
    for name, call in calls.items():
        setattr(table, name, dict(LauncherDriver._fields_)[name](call))
    _tables.append(table)
    return ctypes.addressof(table)


def image(layout="nn", dtype="f32", epilogue="none"):
    """A cubin for the fakes: the ELF magic, then the layout (tuner.proto
    Layout's name) the Emulator computes in, then, for a 16-bit kernel,
    ":" and its dtype's name ("bf16", "f16", "bf16_f32", "f16_f32"), then
    for a kernel with an epilogue "+" and its name ("bias", "bias_relu",
    "bias_gelu_tanh", "bias_gelu_erf"): a 9th parameter, the bias."""
    return (b"\x7fELF" + layout.encode() + (b"" if dtype == "f32" else b":" + dtype.encode())
            + (b"" if epilogue == "none" else b"+" + epilogue.encode()))


# An image's epilogue -> what it applies to C + bias, as the kernel's half16::Fuse.
EPILOGUES = {"bias": lambda y: y,
             "bias_relu": torch.relu,
             "bias_gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
             "bias_gelu_erf": torch.nn.functional.gelu}


def _value(x):
    """A pointer argument as an int: ctypes passes c_void_p objects and byref()s on."""
    if isinstance(x, int) or x is None:
        return x or 0
    if hasattr(x, "value"):
        return x.value or 0
    return ctypes.addressof(x._obj)


class FakeDriver:
    """libcuda for tuned.driver. `params`: how many parameters a launch
    reads (the kernel's: 8 for sgemm, then one per tensor map: whose bytes,
    128, are read from the 9th on). `current`: the context cuCtxGetCurrent
    reports (the device's primary context by default; 0: none)."""

    def __init__(self, params=8, maps_from=8):
        self.params, self.maps_from = params, maps_from
        self.launches, self.encodes, self.memsets, self.calls = [], [], [], []
        self.allocs, self.copies, self.pad_zeros = [], [], []
        self.encode_result = self.launch_result = 0
        self.current = CONTEXT
        self.stack = []
        self.images = []  # each module's image, in load order

    def launcher_table(self):
        """The C launcher's driver table over this fake (launcher_table), made once."""
        if not hasattr(self, "_table"):
            self._table = launcher_table(self)
        return self._table

    # ---- device, context, module ----
    def cuInit(self, flags):
        return 0

    def cuDeviceGet(self, dev, ordinal):
        dev._obj.value = ordinal if isinstance(ordinal, int) else 0
        return 0

    def cuDevicePrimaryCtxRetain(self, ctx, dev):
        ctx._obj.value = CONTEXT + dev.value
        return 0

    def cuCtxGetCurrent(self, out):
        ctypes.c_void_p.from_address(out).value = self.current or None
        return 0

    def cuCtxPushCurrent_v2(self, ctx):
        self.calls.append(("push", _value(ctx)))
        self.stack.append(self.current)
        self.current = _value(ctx)
        return 0

    def cuCtxPopCurrent_v2(self, out):
        self.calls.append(("pop", self.current))
        self.current = self.stack.pop()
        return 0

    def cuCtxGetDevice(self, dev):
        dev._obj.value = 0
        return 0

    def cuDeviceGetAttribute(self, out, attr, dev):
        out._obj.value = {75: 9, 76: 0}[attr]  # an sm_90
        return 0

    def cuModuleLoadData(self, module, image):
        self.calls.append(("load", bytes(image)[:4]))
        module._obj.value = MODULE + len(self.images)
        self.images.append(ctypes.string_at(ctypes.addressof(image)))
        return 0

    def cuModuleGetFunction(self, function, module, name):
        function._obj.value = FUNCTION + (_value(module) - MODULE)
        return 0

    def cuFuncSetAttribute(self, function, attr, value):
        self.calls.append(("attribute", attr, value))
        return 0

    def cuModuleUnload(self, module):
        return 0

    # ---- launches ----
    def _record(self, dims, stream, params, function=FUNCTION):
        fused = 1 if b"+" in self._image_of(function) else 0  # the bias after C
        count, maps_from = self.params + fused, self.maps_from + fused
        raw = [ctypes.string_at(ctypes.c_void_p.from_address(params + 8 * i).value,
                                8 if i < maps_from else 128) for i in range(count)]
        pointers = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(count)]
        self.calls.append(("launch",))
        self.launches.append({"dims": dims, "stream": stream or 0, "params": pointers,
                              "bytes": raw, "function": function})
        return self.launch_result

    def _image_of(self, function):
        """The image of the module `function` came from (the first where none was loaded)."""
        i = function - FUNCTION
        assert 0 <= i < max(1, len(self.images)), f"function {function:#x} was not handed out"
        return self.images[i] if self.images else b""

    def cuLaunchKernelEx(self, config, function, params, extra):
        assert extra is None
        self._image_of(function)
        c = LaunchConfig.from_address(config)
        assert c.attrs is None and c.numAttrs == 0
        dims = [c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ,
                c.sharedMemBytes]
        return self._record(dims, c.hStream, params, function)

    def cuMemsetD32Async(self, pointer, value, count, stream):
        self.calls.append(("memset",))
        self.memsets.append((pointer, value, count, stream))
        return 0

    # ---- staging (TensorMap.stage): a pool, its allocations, 2-D copies ----
    def cuMemPoolCreate(self, pool, props):
        p = MemPoolProps.from_address(ctypes.addressof(props._obj))
        self.calls.append(("pool", p.allocType, p.locationType, p.locationId))
        pool._obj.value = POOL
        return 0

    def cuMemPoolSetAttribute(self, pool, attr, value):
        self.calls.append(("pool attribute", _value(pool), attr,
                           ctypes.c_uint64.from_address(ctypes.addressof(value._obj)).value))
        return 0

    def cuMemAllocFromPoolAsync(self, out, size, pool, stream):
        out._obj.value = STAGED + 0x100000 * len(self.allocs)
        self.allocs.append((out._obj.value, size.value, _value(pool), _value(stream)))
        self.calls.append(("alloc", out._obj.value))
        return 0

    def cuMemcpy2DAsync_v2(self, desc, stream):
        d = Memcpy2D.from_address(ctypes.addressof(desc._obj))
        self.copies.append({"src": d.srcDevice, "src_pitch": d.srcPitch, "dst": d.dstDevice,
                            "dst_pitch": d.dstPitch, "width": d.WidthInBytes, "height": d.Height,
                            "types": (d.srcMemoryType, d.dstMemoryType),
                            "stream": _value(stream)})
        self.calls.append(("copy 2d",))
        return 0

    def cuMemsetD2D8Async(self, pointer, pitch, value, width, height, stream):
        self.pad_zeros.append((_value(pointer), pitch.value, value.value, width.value,
                               height.value, _value(stream)))
        self.calls.append(("memset 2d",))
        return 0

    def cuMemFreeAsync(self, pointer, stream):
        self.calls.append(("free", _value(pointer), _value(stream)))
        return 0

    def cuTensorMapEncodeTiled(self, out, dtype, rank, base, dims, strides, box, elem_strides,
                               interleave, swizzle, l2, oob):
        self.encodes.append({"out": out.value, "dtype": dtype, "rank": rank.value,
                             "base": base.value, "dims": list(dims), "strides": list(strides),
                             "box": list(box), "elem_strides": list(elem_strides),
                             "interleave": interleave, "swizzle": swizzle, "l2": l2, "oob": oob})
        ctypes.memset(out.value, 0xA5, 128)
        return self.encode_result

    def cuGetErrorName(self, result, name):
        name._obj.value = {1: b"CUDA_ERROR_INVALID_VALUE", 700: b"CUDA_ERROR_ILLEGAL_ADDRESS",
                           2: b"CUDA_ERROR_OUT_OF_MEMORY"}[result]
        return 0


def sgemm_pointers(launch):
    """(A, B, C): the pointer values an sgemm launch passed (its parameters 4, 5, 7)."""
    return tuple(ctypes.c_void_p.from_buffer_copy(launch["bytes"][i]).value for i in (4, 5, 7))


def host_floats(pointer, count, dtype=torch.float32):
    """`count` elements of `dtype` (float32 by default) at host address
    `pointer`, as a tensor sharing the memory."""
    size = torch.empty((), dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_char * (count * size)).from_address(pointer), dtype=dtype)


class Emulator(FakeDriver):
    """A FakeDriver whose sgemm launches compute, on the CPU, what the kernel
    computes: C(MxN) = alpha op(A) op(B) + beta C, C row-major, at the host
    addresses the parameters hold (CPU tensors' data_ptr()), the
    parameters in the sgemm kernel's order (M, N, K, alpha, A, B, beta, C),
    in the layout of the launched module's image (image(): "nn" unless it
    names another; op(A) = A^T reads A as a row-major KxM, op(B) = B^T B as
    a row-major NxK) and of its dtype (A, B and C float32 unless it names
    "bf16" or "f16": then 16-bit, the products summed in fp64 and C
    rounded once, as a 16-bit kernel's fp32 sums but closer; "bf16_f32" or
    "f16_f32": A and B 16-bit, the same sums, C float32); memsets write
    zeros there. `layouts` records each launch's layout, `dtypes` its
    dtype's name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.layouts, self.dtypes = [], []

    def _record(self, dims, stream, params, function=FUNCTION):
        result = super()._record(dims, stream, params, function)
        raw = self.launches[-1]["bytes"]
        m, n, k = (ctypes.c_int.from_buffer_copy(raw[i][:4]).value for i in range(3))
        alpha, beta = (ctypes.c_float.from_buffer_copy(raw[i][:4]).value for i in (3, 6))
        a, b, c = (ctypes.c_void_p.from_buffer_copy(raw[i]).value for i in (4, 5, 7))
        name, _, epilogue = self._image_of(function)[4:].decode(errors="replace").partition("+")
        layout = name[:2] if name[:2] in LAYOUTS else "nn"
        dtype = name[3:] if name[2:3] == ":" and name[3:] in DTYPES else "f32"
        self.layouts.append(layout)
        self.dtypes.append(dtype)
        t, tc = DTYPES[dtype]
        A = (host_floats(a, m * k, t).view(k, m).t() if layout[0] == "t"
             else host_floats(a, m * k, t).view(m, k))
        B = (host_floats(b, k * n, t).view(n, k).t() if layout[1] == "t"
             else host_floats(b, k * n, t).view(k, n))
        C = host_floats(c, m * n, tc).view(m, n)
        if dtype == "f32":
            C.copy_(alpha * (A.double() @ B.double()).float() + (beta * C if beta else 0))
        elif epilogue:
            bias = host_floats(ctypes.c_void_p.from_buffer_copy(raw[8]).value, n, tc)
            y = alpha * (A.double() @ B.double()) + (beta * C.double() if beta else 0)
            C.copy_(EPILOGUES[epilogue](y + bias.double()))
        else:
            C.copy_(alpha * (A.double() @ B.double()) + (beta * C.double() if beta else 0))
        return result

    def cuMemsetD32Async(self, pointer, value, count, stream):
        host_floats(pointer, count).zero_()
        return super().cuMemsetD32Async(pointer, value, count, stream)


def install(monkeypatch, lib):
    """`lib` in place of libcuda for tuned.driver, with torch's current raw
    stream 0 and no context retained yet (the launcher's staging pools are
    per driver table: none for a new fake)."""
    monkeypatch.setattr(tuned.driver, "libcuda", lambda: lib)
    monkeypatch.setattr(tuned.driver, "_primary", {})
    monkeypatch.setattr(tuned.driver, "stream_function", lambda torch: (lambda index: 0))
    return lib


def on_cpu(kernel):
    """The kernel as if its device were the CPU, so that CPU tensors pass the
    device checks and reach the (fake) driver."""
    kernel.device = torch.device("cpu")
    return kernel
