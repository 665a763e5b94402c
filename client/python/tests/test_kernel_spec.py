"""A kernel spec's kernel (tuned.v1.KernelSpec) without a GPU: Kernel.launch
packs its buffers and scalars in the spec's order, checks each tensor
before any CUDA call, and takes torch streams (a stand-in driver,
cuda_fake.FakeDriver, reads what it would launch)."""

import ctypes

import pytest

import tuned
from tuned import pb

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the Kernel's tensor checks need it "
                    "(the gRPC tests in test_client.py run without it)")
import cuda_fake  # noqa: E402 (needs torch)
from kernel_fakes import cuda_like, no_cuda, sgemm  # noqa: E402,F401


def arg(name, type, buffer=False, elements=0, value=0.0, int_value=0, role=pb.SPEC_ROLE_IN):
    return pb.KernelArgument(name=name, type=type, is_buffer=buffer, elements=elements,
                             role=role if buffer else 0, value=value, int_value=int_value)


def matmul_best(m=64, n=32, k=16, **fields):
    """A kernel spec's BestKernel as the daemon sends it for examples/kernels/matmul
    (A, B, C buffers, then i32 scalars m, n, k), geometry of TILE 16 with y, z left out."""
    b = pb.BestKernel(
        problem=tuned.problem(m, n, k, family="matmul_tiled"), cubin=b"\x7fELF", ptx="//",
        entry="matmul_tiled", match=pb.MATCH_EXACT,
        geometry=pb.LaunchGeometry(grid=[n // 16, m // 16], block=[16, 16]),
        device=pb.Device(name="NVIDIA H100", cc_major=9, cc_minor=0),
        kernel_arguments=[
            arg("A", pb.SPEC_TYPE_F32, True, m * k),
            arg("B", pb.SPEC_TYPE_F32, True, k * n),
            arg("C", pb.SPEC_TYPE_F32, True, m * n, role=pb.SPEC_ROLE_OUT),
            arg("m", pb.SPEC_TYPE_I32, int_value=m, value=m),
            arg("n", pb.SPEC_TYPE_I32, int_value=n, value=n),
            arg("k", pb.SPEC_TYPE_I32, int_value=k, value=k)])
    for key, v in fields.items():
        if key == "kernel_arguments":
            del b.kernel_arguments[:]
            b.kernel_arguments.extend(v)
        else:
            setattr(b, key, v)
    return b


@pytest.fixture
def matmul():
    return tuned.Kernel(matmul_best(), device="cuda:0")


def f32(n):
    return torch.zeros(n, dtype=torch.float32)


@pytest.fixture
def spec_driver(monkeypatch):
    """A FakeDriver reading the spec kernel's 6 parameters, 8 bytes each."""
    return cuda_fake.install(monkeypatch, cuda_fake.FakeDriver(params=6, maps_from=6))


def test_a_spec_kernel_is_constructed_without_a_gpu(matmul):
    assert matmul.is_spec and matmul.family == "matmul_tiled"
    assert matmul.shape == (64, 32, 16) and not matmul.uses_torch
    assert [type(p).__name__ if p is not None else None for p in matmul._scalars] == [
        None, None, None, "c_int", "c_int", "c_int"]
    assert [p.value for p in matmul._scalars[3:]] == [64, 32, 16]
    assert tuned.Kernel.__call__ is tuned.Kernel.launch


def test_scalars_are_packed_by_their_type():
    best = pb.BestKernel(kernel_arguments=[
        arg("x", pb.SPEC_TYPE_F16, True, 8),
        arg("alpha", pb.SPEC_TYPE_F32, value=0.1),
        arg("eps", pb.SPEC_TYPE_F64, value=0.1),
        arg("count", pb.SPEC_TYPE_I32, int_value=-7, value=-7),
        arg("stride", pb.SPEC_TYPE_I64, int_value=2**40 + 3, value=2**40)])
    x, alpha, eps, count, stride = tuned.kernel.pack_scalars(best)
    assert x is None
    assert isinstance(alpha, ctypes.c_float) and alpha.value == pytest.approx(0.1, rel=1e-7)
    assert bytes(alpha) == bytes(ctypes.c_float(0.1))  # 4 bytes, rounded to fp32
    assert isinstance(eps, ctypes.c_double) and eps.value == 0.1  # exactly the double
    assert isinstance(count, ctypes.c_int32) and count.value == -7
    assert isinstance(stride, ctypes.c_int64) and stride.value == 2**40 + 3  # int_value, not value
    assert [ctypes.sizeof(p) for p in (alpha, eps, count, stride)] == [4, 8, 4, 8]


@pytest.mark.parametrize("a, text", [
    (arg("h", pb.SPEC_TYPE_F16, value=1.0), "scalar h has type f16; scalars are f32, f64, i32 or i64"),
    (arg("b", pb.SPEC_TYPE_U8, int_value=1), "scalar b has type u8"),
    (arg("big", pb.SPEC_TYPE_I32, int_value=2**31), "scalar big \\(i32\\) = 2147483648 does not fit"),
])
def test_scalars_of_other_types_are_refused(a, text):
    with pytest.raises(ValueError, match=text):
        tuned.kernel.pack_scalars(pb.BestKernel(kernel_arguments=[a]))
    with pytest.raises(ValueError, match=text):  # at construction, before any launch
        tuned.Kernel(matmul_best(kernel_arguments=[a]), device="cuda:0")


def test_launch_passes_buffers_and_scalars_in_the_specs_order(matmul, spec_driver):
    a, b, c = f32(64 * 16), f32(16 * 32), f32(64 * 32)
    cuda_fake.on_cpu(matmul).launch(a, b, c)
    (launch,) = spec_driver.launches
    assert launch["dims"] == [2, 4, 1, 16, 16, 1, 0]  # y, z of a shorter geometry are 1
    assert launch["stream"] in (None, 0)  # torch's current stream (the fake's: 0)
    raw = launch["bytes"]
    assert len(raw) == 6
    assert [ctypes.c_void_p.from_buffer_copy(r).value for r in raw[:3]] == [
        a.data_ptr(), b.data_ptr(), c.data_ptr()]
    assert [ctypes.c_int32.from_buffer_copy(r[:4]).value for r in raw[3:]] == [64, 32, 16]
    # A larger tensor is fine (at least `elements`), and a raw stream handle is passed through.
    matmul(a, b, f32(64 * 32 + 5), stream=0x1234)
    assert spec_driver.launches[1]["stream"] == 0x1234
    assert ctypes.c_void_p.from_buffer_copy(spec_driver.launches[1]["bytes"][0]).value == a.data_ptr()


def test_launch_takes_a_torch_stream_object(matmul, spec_driver):
    class Stream:
        cuda_stream = 0xBEEF

    cuda_fake.on_cpu(matmul).launch(f32(1024), f32(512), f32(2048), stream=Stream())
    assert spec_driver.launches[0]["stream"] == 0xBEEF


@pytest.mark.parametrize("tensors, error, text", [
    ((f32(1024), f32(512)), ValueError, r"the kernel takes 3 tensors \(A, B, C\), got 2"),
    ((f32(1024), f32(512), f32(2048), f32(1)), ValueError, "takes 3 tensors .* got 4"),
    ((f32(1024), [0.0] * 512, f32(2048)), TypeError, "B must be a torch.Tensor, not list"),
    ((f32(1024), torch.zeros(512, dtype=torch.float64), f32(2048)), ValueError,
     r"B must be torch.float32 \(f32\), not torch.float64"),
    ((f32(1024), f32(512), torch.zeros(64, 64)[:, ::2]), ValueError, "C must be contiguous"),
    ((f32(1023), f32(512), f32(2048)), ValueError,
     "A has 1023 elements, the kernel reads or writes 1024"),
    ((f32(1024), f32(512), f32(2048)), ValueError, "A is on cpu, the kernel on cuda:0"),
    # The form of every tensor is checked before any device.
    ((f32(1024), f32(512), torch.zeros(2048, dtype=torch.int32)), ValueError,
     r"C must be torch.float32 \(f32\), not torch.int32"),
])
def test_launch_refuses_wrong_tensors(matmul, tensors, error, text):
    with pytest.raises(error, match=text):
        matmul.launch(*tensors)


@pytest.mark.parametrize("spec_type, dtype", [
    (pb.SPEC_TYPE_F32, torch.float32), (pb.SPEC_TYPE_F64, torch.float64),
    (pb.SPEC_TYPE_F16, torch.float16), (pb.SPEC_TYPE_BF16, torch.bfloat16),
    (pb.SPEC_TYPE_I32, torch.int32), (pb.SPEC_TYPE_I64, torch.int64),
    (pb.SPEC_TYPE_U8, torch.uint8)])
def test_each_buffer_type_takes_its_torch_dtype(spec_type, dtype):
    best = matmul_best(kernel_arguments=[arg("x", spec_type, True, 4)])
    kernel = tuned.Kernel(best, device="cuda:0")
    wrong = torch.float32 if dtype != torch.float32 else torch.float64
    with pytest.raises(ValueError, match=f"x must be {dtype}"):
        kernel.launch(torch.zeros(4, dtype=wrong))
    with pytest.raises(ValueError, match="x is on cpu"):  # the dtype passed
        kernel.launch(torch.zeros(4, dtype=dtype))


def test_launch_is_for_spec_kernels_only(sgemm):
    with pytest.raises(ValueError, match="this is a sgemm kernel: launch runs a kernel spec's kernel"):
        sgemm.launch(cuda_like(64, 16))
    with pytest.raises(ValueError, match="no launcher for the matmul_tiled family: its BestKernel "
                                         "has no kernel_arguments"):
        tuned.Kernel(matmul_best(kernel_arguments=[]), device="cuda:0")
    with pytest.raises(ValueError, match="this is a matmul_tiled kernel, not sgemm"):
        tuned.Kernel(matmul_best(), device="cuda:0").sgemm(cuda_like(64, 16), cuda_like(16, 32))


def test_a_spec_kernel_needs_an_image_and_a_geometry():
    with pytest.raises(ValueError, match="neither a cubin nor PTX"):
        tuned.Kernel(matmul_best(cubin=b"", ptx=""), device="cuda:0")
    best = matmul_best()
    best.ClearField("geometry")
    with pytest.raises(ValueError, match="no launch geometry"):
        tuned.Kernel(best, device="cuda:0")
