"""tuned.Kernel and tuned.matmul without a GPU: every tensor check fails
before any CUDA call (the driver is replaced by one that fails the test),
driver errors are named, TF32 is off around the cuBLAS path and restored."""

import ctypes
import threading

import grpc
import pytest

import tuned
import tuned.kernel
from tuned import pb

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the Kernel's tensor checks need it "
                    "(the gRPC tests in test_client.py run without it)")
import cuda_fake  # noqa: E402 (needs torch)
from kernel_fakes import (  # noqa: E402,F401
    OUT_DTYPE, SGEMM_ARGS, TORCH_DTYPE, Pointer, args16, best16, best_kernel, cuda_like, driver,
    launch_sgemm, no_cuda, sgemm, with_a_map)


def test_construction_needs_no_gpu(sgemm):
    assert sgemm.shape == (64, 32, 16) and sgemm.family == "sgemm"
    assert sgemm.device == torch.device("cuda", 0)
    assert not sgemm.uses_torch
    assert tuned.Kernel(best_kernel(use_baseline=True), device=0).uses_torch


def test_gemm_is_the_call_and_sgemm_its_alias(sgemm):
    assert tuned.Kernel.sgemm is tuned.Kernel.gemm
    with pytest.raises(TypeError, match="a must be a torch.Tensor, not list"):
        sgemm.gemm([[1.0]], cuda_like(16, 32))


def test_sgemm_rejects_wrong_types_and_dtypes(sgemm):
    with pytest.raises(TypeError, match="a must be a torch.Tensor, not list"):
        sgemm.sgemm([[1.0]], cuda_like(16, 32))
    with pytest.raises(TypeError, match="a must be float32, not torch.float64"):
        sgemm.sgemm(torch.zeros(64, 16, dtype=torch.float64), cuda_like(16, 32))
    with pytest.raises(TypeError, match="b must be float32, not torch.float16"):
        sgemm.sgemm(cuda_like(64, 16), torch.zeros(16, 32, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be float32"):
        sgemm.sgemm(cuda_like(64, 16), cuda_like(16, 32), out=torch.zeros(64, 32, dtype=torch.int32))


def test_sgemm_rejects_wrong_shapes(sgemm):
    with pytest.raises(ValueError, match=r"a has shape \(16, 64\), expected \(64, 16\)"):
        sgemm.sgemm(cuda_like(16, 64), cuda_like(16, 32))
    with pytest.raises(ValueError, match=r"b has shape \(16, 33\), expected \(16, 32\)"):
        sgemm.sgemm(cuda_like(64, 16), cuda_like(16, 33))
    with pytest.raises(ValueError, match=r"a has shape \(64, 16, 1\)"):
        sgemm.sgemm(cuda_like(64, 16, 1), cuda_like(16, 32))
    with pytest.raises(ValueError, match=r"out has shape \(32, 64\), expected \(64, 32\)"):
        sgemm.sgemm(cuda_like(64, 16), cuda_like(16, 32), out=cuda_like(32, 64))


def test_sgemm_rejects_non_contiguous_layouts(sgemm):
    transposed = cuda_like(16, 64).t()  # (64, 16), column-major
    with pytest.raises(ValueError, match="a must be contiguous"):
        sgemm.sgemm(transposed, cuda_like(16, 32))
    strided = cuda_like(16, 64)[:, ::2]  # (16, 32) with a stride of 2
    with pytest.raises(ValueError, match="b must be contiguous"):
        sgemm.sgemm(cuda_like(64, 16), strided)


def test_sgemm_rejects_the_wrong_device(sgemm):
    with pytest.raises(ValueError, match="a is on cpu, the kernel on cuda:0"):
        sgemm.sgemm(cuda_like(64, 16), cuda_like(16, 32))


def test_sgemm_beta_needs_out(sgemm):
    with pytest.raises(ValueError, match="beta != 0 needs out"):
        sgemm.sgemm(cuda_like(64, 16), cuda_like(16, 32), beta=1.0)


def test_family_mismatch():
    t = tuned.Kernel(best_kernel("transpose", (64, 32)), device="cuda:0")
    with pytest.raises(ValueError, match="this is a transpose kernel, not sgemm"):
        t.sgemm(cuda_like(64, 16), cuda_like(16, 32))
    with pytest.raises(ValueError, match=r"x has shape \(32, 64\), expected \(64, 32\)"):
        t.transpose(cuda_like(32, 64))
    with pytest.raises(ValueError, match="x must be contiguous"):
        t.transpose(cuda_like(32, 64).t())
    with pytest.raises(ValueError, match=r"out has shape \(64, 32\), expected \(32, 64\)"):
        t.transpose(cuda_like(64, 32), out=cuda_like(64, 32))
    with pytest.raises(ValueError, match="this is a sgemm kernel, not transpose"):
        tuned.Kernel(best_kernel(), device="cuda:0").transpose(cuda_like(64, 32))


def test_unusable_descriptions_are_refused():
    with pytest.raises(ValueError, match="neither a cubin nor PTX"):
        tuned.Kernel(best_kernel(cubin=b"", ptx=""), device="cuda:0")
    no_geometry = best_kernel()
    no_geometry.ClearField("geometry")
    with pytest.raises(ValueError, match="no launch geometry"):
        tuned.Kernel(no_geometry, device="cuda:0")
    with pytest.raises(ValueError, match="CUDA device"):
        tuned.Kernel(best_kernel(), device="cpu")
    with pytest.raises(ValueError, match="no launcher for the fault_test family"):
        tuned.Kernel(best_kernel("fault_test", (64,)), device="cuda:0")


def test_driver_errors_are_named():
    class FakeLib:
        def cuGetErrorName(self, result, name):
            name._obj.value = {700: b"CUDA_ERROR_ILLEGAL_ADDRESS", 2: b"CUDA_ERROR_OUT_OF_MEMORY"}[result]
            return 0

    tuned.driver.check(FakeLib(), 0, "cuInit")  # CUDA_SUCCESS
    with pytest.raises(tuned.TunedError) as e:
        tuned.driver.check(FakeLib(), 700, "cuLaunchKernel")
    assert e.value.code == grpc.StatusCode.INTERNAL
    assert e.value.message == "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS"
    with pytest.raises(tuned.TunedError) as e:
        tuned.driver.check(FakeLib(), 2, "cuModuleLoadData")
    assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_tf32_is_off_within_the_cublas_call_and_restored():
    m = torch.backends.cuda.matmul
    saved = m.allow_tf32
    try:
        m.allow_tf32 = True
        with tuned.kernel._no_tf32(torch):
            assert m.allow_tf32 is False
        assert m.allow_tf32 is True
    finally:
        m.allow_tf32 = saved


@pytest.fixture
def tf32_seen(monkeypatch):
    """torch.matmul recording whether TF32 was on when it ran (torch's setting
    as its cuBLAS reads it); the setting starts off and is restored after."""
    seen = []
    real = torch.matmul

    def recording(*args, **kwargs):
        seen.append(torch.backends.cuda.matmul.allow_tf32)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "matmul", recording)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield seen
    torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.parametrize("initially", [False, True])
def test_a_best_with_no_kernel_runs_torch_in_its_math_mode(monkeypatch, tf32_seen, initially):
    """No config passed verification (tuner.proto, "No kernel"): no cubin,
    PTX or geometry; the Kernel runs torch.matmul, TF32 only for math tf32,
    whatever torch's setting, which it leaves as it found it."""
    torch.backends.cuda.matmul.allow_tf32 = initially
    for math in ("tf32", "fp32_accurate", "ieee_fp32"):
        best = pb.BestKernel(problem=tuned.problem(3, 4, 1, math=math), match=pb.MATCH_EXACT,
                             use_baseline=True, baseline_name="cuBLAS", baseline_ms=0.004,
                             serving_reason="cuBLAS: no kernel passed verification")
        kernel = cuda_fake.on_cpu(tuned.Kernel(best, device=0))
        assert kernel.uses_torch
        out = kernel.sgemm(torch.full((3, 1), 2.0), torch.full((1, 4), 3.0), out=torch.zeros(3, 4))
        assert torch.equal(out, torch.full((3, 4), 6.0))
        assert torch.backends.cuda.matmul.allow_tf32 is initially
        # alpha and beta: addmm_, in the mode too
        c = torch.ones(3, 4)
        kernel.sgemm(torch.full((3, 1), 2.0), torch.full((1, 4), 3.0), out=c, alpha=0.5, beta=2.0)
        assert torch.equal(c, torch.full((3, 4), 5.0))
    assert tf32_seen == [True, False, False]
    # A transpose always needs its kernel.
    with pytest.raises(ValueError, match="neither a cubin nor PTX"):
        tuned.Kernel(pb.BestKernel(problem=tuned.problem(4, 4, family="transpose"),
                                   use_baseline=True), device=0)


def test_the_tf32_reader_follows_torchs_setting():
    read = tuned.kernel._tf32_reader(torch)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for on in (True, False):
            torch.backends.cuda.matmul.allow_tf32 = on
            assert read() is on
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


# ---- launches, through a stand-in driver (cuda_fake.FakeDriver) ----

def test_the_kernel_arguments_follow_the_daemons_order(sgemm, driver):
    """The parameters are built by name and C type from best.arguments;
    without tensor maps those 8 are all a launch passes, with the geometry
    and torch's current stream, in the device's primary context."""
    launch_sgemm(sgemm)
    (launch,) = driver.launches
    raw = launch["bytes"]
    assert launch["dims"] == [1, 2, 1, 256, 1, 1, 0] and launch["stream"] == 0
    assert [ctypes.c_int.from_buffer_copy(raw[i][:4]).value for i in (0, 1, 2)] == [64, 32, 16]
    assert [ctypes.c_float.from_buffer_copy(raw[i][:4]).value for i in (3, 6)] == [0.5, 2.0]
    assert [ctypes.c_void_p.from_buffer_copy(raw[i]).value for i in (4, 5, 7)] == [
        0x1000, 0x2000, 0x3000]
    assert driver.encodes == [] and driver.memsets == []
    assert [c[0] for c in driver.calls] == ["push", "load", "pop", "launch"]  # no push: current


def test_launches_reuse_the_prepared_parameters(sgemm, driver):
    """The second launch changes only the pointers and scalars it is given:
    the same parameter block, nothing loaded again."""
    launch_sgemm(sgemm)
    launch_sgemm(sgemm, a=0x1100, alpha=1.0, beta=0.0)
    first, second = driver.launches
    assert first["params"] == second["params"]  # the same slots
    assert ctypes.c_void_p.from_buffer_copy(second["bytes"][4]).value == 0x1100
    assert [ctypes.c_float.from_buffer_copy(second["bytes"][i][:4]).value for i in (3, 6)] == [
        1.0, 0.0]
    assert [c[0] for c in driver.calls].count("load") == 1


def test_each_thread_has_its_own_parameters(sgemm, driver):
    launch_sgemm(sgemm)
    thread = threading.Thread(target=launch_sgemm, args=(sgemm, 0x1200))
    thread.start()
    thread.join()
    first, second = driver.launches
    assert first["params"] != second["params"]
    assert ctypes.c_void_p.from_buffer_copy(second["bytes"][4]).value == 0x1200
    assert ctypes.c_void_p.from_buffer_copy(first["bytes"][4]).value == 0x1000


def test_another_current_context_is_pushed_for_the_launch(sgemm, driver):
    """A thread whose current context is not the device's (none, or
    another device's): the launch pushes the device's and pops it after."""
    sgemm.load()
    for current in (0, 0xD0):
        driver.current, driver.calls = current, []
        launch_sgemm(sgemm)
        assert driver.calls == [("push", cuda_fake.CONTEXT), ("launch",), ("pop", cuda_fake.CONTEXT)]
        assert driver.current == current


def test_a_failed_launch_is_named(sgemm, driver):
    driver.launch_result = 1
    with pytest.raises(tuned.TunedError, match="cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE"):
        launch_sgemm(sgemm)


def test_large_dynamic_shared_memory_is_opted_in_once(monkeypatch):
    driver = cuda_fake.install(monkeypatch, cuda_fake.FakeDriver())
    best = best_kernel()
    best.geometry.dynamic_shared_bytes = 100 * 1024
    kernel = tuned.Kernel(best, device="cuda:0")
    launch_sgemm(kernel)
    launch_sgemm(kernel)
    assert [c for c in driver.calls if c[0] == "attribute"] == [("attribute", 8, 100 * 1024)]
    assert [launch["dims"][6] for launch in driver.launches] == [100 * 1024] * 2


@pytest.mark.parametrize("beta, memset", [(0.0, True), (1.0, False)])
def test_a_kernel_adding_into_c_has_it_prescaled(monkeypatch, beta, memset):
    """prescale_output (split-K, stream-K): C = 0 by a memset on the launch's
    stream before it when beta == 0; nothing when beta == 1."""
    driver = cuda_fake.install(monkeypatch, cuda_fake.FakeDriver())
    best = best_kernel()
    best.geometry.prescale_output = True
    launch_sgemm(tuned.Kernel(best, device="cuda:0"), beta=beta)
    assert driver.memsets == ([(0x3000, 0, 64 * 32, 0)] if memset else [])
    assert [c[0] for c in driver.calls][-2:] == (["memset", "launch"] if memset else ["pop", "launch"])


def test_sgemm_computes_on_cpu_tensors_through_the_emulator(monkeypatch):
    """The whole of Kernel.sgemm, checks and fast path, with the kernel
    emulated on the CPU (cuda_fake.Emulator): alpha, beta, out=None, and a
    prescaled kernel's beta == 0 clearing a NaN-filled C."""
    cuda_fake.install(monkeypatch, cuda_fake.Emulator())
    kernel = cuda_fake.on_cpu(tuned.Kernel(best_kernel(), device="cuda:0"))
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 16, generator=g), torch.randn(16, 32, generator=g)
    c0 = torch.randn(64, 32, generator=g)
    assert torch.allclose(kernel.sgemm(a, b), a @ b, atol=1e-5)
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=2.0) is out
    assert torch.allclose(out, 0.5 * (a @ b) + 2.0 * c0, atol=1e-5)
    best = best_kernel()
    best.geometry.prescale_output = True
    prescaled = cuda_fake.on_cpu(tuned.Kernel(best, device="cuda:0"))
    out.fill_(float("nan"))
    prescaled.sgemm(a, b, out=out)
    assert torch.allclose(out, a @ b, atol=1e-5)


@pytest.mark.parametrize("arguments, text", [
    (SGEMM_ARGS[:3] + ["float gamma"] + SGEMM_ARGS[4:], "unknown kernel argument 'float gamma'"),
    (SGEMM_ARGS[:7] + ["double* C"], None),  # any pointer type is a pointer
    (SGEMM_ARGS[:7] + ["half C"], "unsupported argument type 'half C'"),
    (SGEMM_ARGS[:7], "lack C"),
])
def test_the_kernels_declared_arguments_are_checked(driver, arguments, text):
    best = best_kernel()
    del best.arguments[:]
    best.arguments.extend(arguments)
    kernel = tuned.Kernel(best, device="cuda:0")
    if text is None:
        launch_sgemm(kernel)
        return
    with pytest.raises(tuned.TunedError, match=text):
        launch_sgemm(kernel)
    assert driver.launches == []


@pytest.mark.parametrize("dtype", ["f32", "bf16", "bf16_f32"])
def test_sgemm_call_overhead_on_the_cpu(monkeypatch, dtype):
    """Kernel.sgemm(out=...)'s own CPU time with a stand-in driver whose
    launch does nothing (bench/python_call.py measures the real one), for an
    f32, a bf16 and a bf16_f32 kernel alike: printed, with a loose bound
    that a slow path taken by mistake breaks."""
    import time

    class Quiet(cuda_fake.FakeDriver):
        def cuLaunchKernelEx(self, config, function, params, extra):
            return 0

    cuda_fake.install(monkeypatch, Quiet())
    best = best_kernel() if dtype == "f32" else best16(dtype, shape=(64, 32, 16))
    kernel = cuda_fake.on_cpu(tuned.Kernel(best, device="cuda:0"))
    t, tc = TORCH_DTYPE[dtype], OUT_DTYPE.get(dtype, TORCH_DTYPE[dtype])
    a, b = torch.zeros(64, 16, dtype=t), torch.zeros(16, 32, dtype=t)
    out = torch.zeros(64, 32, dtype=tc)
    for _ in range(200):
        kernel.sgemm(a, b, out=out)
    calls = 2000
    start = time.perf_counter_ns()
    for _ in range(calls):
        kernel.sgemm(a, b, out=out)
    us = (time.perf_counter_ns() - start) / calls / 1e3
    print(f"\nKernel.sgemm(out=...) ({dtype}) with a Python stand-in driver: {us:.2f} us a call")
    assert us < 100


# ---- layouts ----

def layout_best(layout, shape=(64, 32, 16), **fields):
    """An sgemm BestKernel for a problem in `layout`, its config's LAYOUT that
    layout's (absent for "nn", as the daemon stores it) and its image the
    Emulator's for the layout."""
    b = best_kernel(shape=shape, **fields)
    b.problem.layout = pb.Layout.Value("LAYOUT_" + layout.upper())
    b.measurement.config.params["KIND"] = 2
    if layout != "nn":
        b.measurement.config.params["LAYOUT"] = b.problem.layout
    b.measurement.config.name = "sgemm_tiled_64" + ("" if layout == "nn" else "_" + layout)
    b.cubin = cuda_fake.image(layout)
    return b


def operands(layout, m=64, n=32, k=16, seed=0):
    """op(A) (m, k), op(B) (k, n) in `layout`: "t" operands are .t() views of contiguous tensors."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(k, m, generator=g).t() if layout[0] == "t" else torch.randn(m, k, generator=g)
    b = torch.randn(n, k, generator=g).t() if layout[1] == "t" else torch.randn(k, n, generator=g)
    return a, b


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_sgemm_in_a_layout_takes_transposed_views_without_a_copy(monkeypatch, layout):
    """Kernel.sgemm of a kernel in `layout`: the operands as op(A), op(B),
    transposed ones as views; the launch gets their own pointers and the
    Emulator computes in the layout (fast path and checked path alike)."""
    driver = cuda_fake.install(monkeypatch, cuda_fake.Emulator())
    kernel = cuda_fake.on_cpu(tuned.Kernel(layout_best(layout), device="cuda:0"))
    assert kernel.layout == layout
    a, b = operands(layout)
    for _ in range(2):
        out = torch.full((64, 32), float("nan"))
        assert kernel.sgemm(a, b, out=out) is out
        assert torch.allclose(out, a @ b, atol=1e-5)
        assert cuda_fake.sgemm_pointers(driver.launches[-1]) == (a.data_ptr(), b.data_ptr(),
                                                                 out.data_ptr())
    assert driver.layouts == [layout, layout]
    assert torch.allclose(kernel.sgemm(a, b, alpha=2.0), 2 * (a @ b), atol=1e-5)


@pytest.mark.parametrize("layout, a_t, b_t, text", [
    ("nt", False, False, r"b must be the transpose of a row-major matrix \(strides \(1, 16\)"),
    ("tn", False, False, r"a must be the transpose of a row-major matrix \(strides \(1, 64\): "
                         r"the \.t\(\) of a contiguous \(16, 64\) tensor\)"),
    ("nn", False, True, "b must be contiguous"),
    ("tt", True, False, "b must be the transpose"),
])
def test_sgemm_refuses_operands_not_in_its_layout(layout, a_t, b_t, text):
    kernel = tuned.Kernel(layout_best(layout), device="cuda:0")
    a = cuda_like(16, 64).t() if a_t else cuda_like(64, 16)
    b = cuda_like(32, 16).t() if b_t else cuda_like(16, 32)
    with pytest.raises(ValueError, match=text):
        kernel.sgemm(a, b)


def test_a_kernel_of_another_layout_than_its_problems_is_refused():
    """A daemon older than layouts answers an "nt" problem with its "nn"
    kernel (the problem echoed, the config without LAYOUT)."""
    best = layout_best("nn")
    best.problem.layout = pb.LAYOUT_NT
    with pytest.raises(tuned.TunedError, match=r"sgemm_tiled_64 \(layout nn\) for a problem in "
                                               "layout nt") as e:
        tuned.Kernel(best, device="cuda:0")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    best.use_baseline = True  # cuBLAS served: runs torch in the layout, nothing to refuse
    assert tuned.Kernel(best, device="cuda:0").uses_torch
    assert tuned.kernel.served_layout(layout_best("tt")) == pb.LAYOUT_TT
    no_config = best_kernel()
    no_config.problem.layout = pb.LAYOUT_TN
    assert tuned.kernel.served_layout(no_config) == pb.LAYOUT_TN  # no config named: the problem's


# ---- 16-bit kernels (sgemm problems of dtype bf16 and f16) ----

def expect_alpha_beta(kernel, driver, a, b, out_dtype, layout, dtype, launches):
    """Kernel.sgemm through the Emulator with out= (of `out_dtype`), alpha
    0.5 and beta 2.0: the exact result rounded once to out_dtype, the
    scalars passed as fp32; `launches` launches so far, each in `layout` and
    `dtype`; beta without out refused."""
    c0 = torch.randn(33, 17, generator=torch.Generator().manual_seed(9)).to(out_dtype)
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=2.0) is out
    assert torch.equal(out, (0.5 * (a.double() @ b.double()) + 2.0 * c0.double()).to(out_dtype))
    raw = driver.launches[-1]["bytes"]
    assert [ctypes.c_float.from_buffer_copy(raw[i][:4]).value for i in (3, 6)] == [0.5, 2.0]
    assert driver.layouts == [layout] * launches and driver.dtypes == [dtype] * launches
    with pytest.raises(ValueError, match="beta != 0 needs out"):
        kernel.sgemm(a, b, beta=1.0)


def like(dtype, *shape):
    return torch.zeros(*shape, dtype=TORCH_DTYPE[dtype])


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_16bit_kernel_takes_tensors_of_its_dtype_only(dtype):
    """A bf16 (f16) kernel checks for torch.bfloat16 (float16) tensors:
    another dtype is a DTypeError (TunedError INVALID_ARGUMENT, and a
    TypeError) naming both, before any driver use (the fixture no_cuda)."""
    kernel = tuned.Kernel(best16(dtype), device="cuda:0")
    want = TORCH_DTYPE[dtype]
    other = torch.float16 if dtype == "bf16" else torch.bfloat16
    short = str(want).removeprefix("torch.")
    assert kernel.dtype is want and kernel.tf32 is None and not kernel.uses_torch
    for args, kwargs, text in [
            ((torch.zeros(33, 9), like(dtype, 9, 17)), {}, f"a must be {short}, not torch.float32"),
            ((like(dtype, 33, 9), torch.zeros(9, 17, dtype=other)), {},
             f"b must be {short}, not {other}"),
            ((like(dtype, 33, 9), like(dtype, 9, 17)), dict(out=torch.zeros(33, 17)),
             f"out must be {short}, not torch.float32")]:
        with pytest.raises(tuned.DTypeError) as e:
            kernel.sgemm(*args, **kwargs)
        assert isinstance(e.value, tuned.TunedError) and isinstance(e.value, TypeError)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.message == text
    # Of its dtype, the tensors reach the device check.
    with pytest.raises(ValueError, match="a is on cpu, the kernel on cuda:0"):
        kernel.sgemm(like(dtype, 33, 9), like(dtype, 9, 17), out=like(dtype, 33, 17))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_an_f32_kernel_refuses_16bit_tensors_as_a_dtype_error(sgemm, dtype):
    assert sgemm.dtype is torch.float32 and sgemm.tf32 is False
    t = TORCH_DTYPE[dtype]
    with pytest.raises(tuned.DTypeError) as e:
        sgemm.sgemm(torch.zeros(64, 16, dtype=t), torch.zeros(16, 32, dtype=t))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message == f"a must be float32, not {t}"


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
def test_a_16bit_kernel_computes_on_tensors_of_its_dtype(monkeypatch, dtype, layout):
    """Kernel.sgemm of a 16-bit kernel through the Emulator (16-bit A, B,
    C; C rounded once): out=None allocates out of the kernel's dtype; the
    launch gets the operands' own pointers (transposed views: no copy) and
    alpha, beta as fp32; out= with beta, fast path and checked path alike."""
    driver = cuda_fake.install(monkeypatch, cuda_fake.Emulator())
    kernel = cuda_fake.on_cpu(tuned.Kernel(best16(dtype, layout=layout), device="cuda:0"))
    t = TORCH_DTYPE[dtype]
    a, b = (x.to(t) for x in operands(layout, 33, 17, 9))
    want = (a.double() @ b.double()).to(t)
    for _ in range(2):  # the first call takes the checked path, the second the fast one
        out = kernel.sgemm(a, b)
        assert out.dtype is t and out.shape == (33, 17) and out.is_contiguous()
        assert torch.equal(out, want)
        assert cuda_fake.sgemm_pointers(driver.launches[-1]) == (a.data_ptr(), b.data_ptr(),
                                                                 out.data_ptr())
    expect_alpha_beta(kernel, driver, a, b, t, layout, dtype, launches=3)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_16bit_problem_served_by_cublas_runs_torch_on_its_tensors(monkeypatch, dtype):
    """best.use_baseline: torch.matmul (addmm_ with alpha, beta) on the 16-bit
    tensors themselves, out of their dtype, torch's TF32 setting neither
    read nor changed (TF32 does not touch 16-bit GEMMs)."""
    seen = []

    def matmul(x, y, out=None):
        seen.append(("matmul", x, y, out))
        return out.copy_((x.double() @ y.double()).to(out.dtype))

    monkeypatch.setattr(torch, "matmul", matmul)

    def no_tf32(*args):
        raise AssertionError("TF32's setting was read or changed for a 16-bit GEMM")
    monkeypatch.setattr(tuned.kernel, "_tf32_reader", no_tf32)
    monkeypatch.setattr(tuned.kernel, "_tf32_now", None)
    monkeypatch.setattr(tuned.kernel, "_tf32", no_tf32)
    best = pb.BestKernel(problem=tuned.problem(3, 4, 2, dtype=dtype, layout="nt"),
                         match=pb.MATCH_EXACT, use_baseline=True, baseline_name=f"cuBLAS {dtype}")
    kernel = cuda_fake.on_cpu(tuned.Kernel(best, device=0))
    t = TORCH_DTYPE[dtype]
    assert kernel.uses_torch and kernel.dtype is t and kernel.layout == "nt"
    a, w = torch.full((3, 2), 2.0, dtype=t), torch.full((4, 2), 3.0, dtype=t)
    out = kernel.sgemm(a, w.t())
    assert out.dtype is t and torch.equal(out, torch.full((3, 4), 12.0, dtype=t))
    (_, x, y, o), = seen
    assert x is a and y.data_ptr() == w.data_ptr() and o is out  # the operands as they are
    if dtype == "bf16":  # torch's CPU addmm_ has bfloat16 (not float16)
        c = torch.ones(3, 4, dtype=t)
        assert kernel.sgemm(a, w.t(), out=c, alpha=0.5, beta=2.0) is c
        assert torch.equal(c, torch.full((3, 4), 8.0, dtype=t))
    with pytest.raises(tuned.DTypeError, match=f"b must be {str(t)[6:]}, not torch.float32"):
        kernel.sgemm(a, torch.zeros(4, 2).t())


# ---- 16-bit A and B with an fp32 C (dtypes bf16_f32 and f16_f32) ----

@pytest.mark.parametrize("dtype", ["bf16_f32", "f16_f32"])
def test_an_fp32_output_kernel_takes_16bit_a_and_b_and_a_float32_out(dtype):
    """A bf16_f32 (f16_f32) kernel checks for torch.bfloat16 (float16) a and
    b and a torch.float32 out: an out of the inputs' 16-bit dtype, or a and
    b of float32, is a DTypeError (TunedError INVALID_ARGUMENT, and a
    TypeError) naming both dtypes, before any driver use."""
    kernel = tuned.Kernel(best16(dtype), device="cuda:0")
    t = TORCH_DTYPE[dtype]
    short = str(t).removeprefix("torch.")
    other = torch.float16 if t is torch.bfloat16 else torch.bfloat16
    assert kernel.dtype is t and kernel.out_dtype is torch.float32
    assert kernel.tf32 is None and not kernel.uses_torch
    for args, kwargs, text in [
            ((like(dtype, 33, 9), like(dtype, 9, 17)), dict(out=like(dtype, 33, 17)),
             f"out must be float32, not {t}"),
            ((torch.zeros(33, 9), torch.zeros(9, 17)), dict(out=torch.zeros(33, 17)),
             f"a must be {short}, not torch.float32"),
            ((like(dtype, 33, 9), torch.zeros(9, 17, dtype=other)), {},
             f"b must be {short}, not {other}"),
            ((like(dtype, 33, 9), torch.zeros(9, 17)), dict(out=torch.zeros(33, 17)),
             f"b must be {short}, not torch.float32")]:
        with pytest.raises(tuned.DTypeError) as e:
            kernel.sgemm(*args, **kwargs)
        assert isinstance(e.value, tuned.TunedError) and isinstance(e.value, TypeError)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.message == text
    # 16-bit a and b with a float32 out reach the device check.
    with pytest.raises(ValueError, match="a is on cpu, the kernel on cuda:0"):
        kernel.sgemm(like(dtype, 33, 9), like(dtype, 9, 17), out=torch.zeros(33, 17))


@pytest.mark.parametrize("dtype", ["bf16_f32", "f16_f32"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
def test_an_fp32_output_kernel_writes_a_float32_c_never_rounded_to_16_bits(monkeypatch, dtype,
                                                                           layout):
    """Kernel.sgemm of a bf16_f32 (f16_f32) kernel through the Emulator:
    out=None allocates a float32 out (the Python checks' path too); the
    launch gets the 16-bit operands' own pointers and the float32 out's;
    the result is the exact products' sum rounded once to fp32, which holds
    what 16 bits cannot; out= with alpha and beta adds into a float32 C."""
    driver = cuda_fake.install(monkeypatch, cuda_fake.Emulator())
    kernel = cuda_fake.on_cpu(tuned.Kernel(best16(dtype, layout=layout), device="cuda:0"))
    t = TORCH_DTYPE[dtype]
    a, b = (x.to(t) for x in operands(layout, 33, 17, 9))
    want = (a.double() @ b.double()).float()
    assert not torch.equal(want, want.to(t).float())  # fp32 holds more than the 16-bit type
    for call in (kernel.sgemm, kernel.sgemm, kernel._sgemm_checked):
        out = call(a, b, None, 1.0, 0.0)
        assert out.dtype is torch.float32 and out.shape == (33, 17) and out.is_contiguous()
        assert torch.equal(out, want)
        assert cuda_fake.sgemm_pointers(driver.launches[-1]) == (a.data_ptr(), b.data_ptr(),
                                                                 out.data_ptr())
    expect_alpha_beta(kernel, driver, a, b, torch.float32, layout, dtype, launches=4)


@pytest.mark.parametrize("dtype", ["bf16_f32", "f16_f32"])
def test_an_fp32_output_problem_served_by_cublas_writes_a_float32_c(monkeypatch, dtype):
    """best.use_baseline for bf16_f32 (f16_f32): cuBLAS's GEMM with an fp32
    C. On the CPU (no torch.mm out_dtype there): torch.matmul, and addmm_
    with alpha and beta, of the operands widened to float32, exact on
    TF32 (on for the call, torch's setting restored after) as in fp32; out
    float32, of the exact products' fp32 sum."""
    seen = []
    real = torch.matmul

    def matmul(x, y, out=None):
        seen.append((x.dtype, y.dtype, out.dtype, torch.backends.cuda.matmul.allow_tf32))
        return real(x, y, out=out)

    monkeypatch.setattr(torch, "matmul", matmul)
    monkeypatch.setattr(tuned.kernel, "_tf32_now", None)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        best = pb.BestKernel(problem=tuned.problem(3, 4, 2, dtype=dtype, layout="nt"),
                             match=pb.MATCH_EXACT, use_baseline=True,
                             baseline_name=f"cuBLAS {dtype}")
        kernel = cuda_fake.on_cpu(tuned.Kernel(best, device=0))
        t = TORCH_DTYPE[dtype]
        assert kernel.uses_torch and kernel.dtype is t and kernel.out_dtype is torch.float32
        # 1 + 2^-7 (bfloat16's, or float16's 1 + 2^-10) squared needs more bits than 16
        eps = 2.0 ** (-7 if t is torch.bfloat16 else -10)
        a = torch.full((3, 2), 1 + eps, dtype=t)
        w = torch.full((4, 2), 1 + eps, dtype=t)
        out = kernel.sgemm(a, w.t())
        assert out.dtype is torch.float32 and out.shape == (3, 4)
        assert torch.equal(out, torch.full((3, 4), 2 * (1 + eps) ** 2))
        assert seen == [(torch.float32, torch.float32, torch.float32, True)]
        assert torch.backends.cuda.matmul.allow_tf32 is False
        c = torch.ones(3, 4)
        assert kernel.sgemm(a, w.t(), out=c, alpha=0.5, beta=2.0) is c
        assert torch.equal(c, torch.full((3, 4), (1 + eps) ** 2 + 2.0))
        assert torch.backends.cuda.matmul.allow_tf32 is False
        with pytest.raises(tuned.DTypeError, match=f"out must be float32, not {t}"):
            kernel.sgemm(a, w.t(), out=torch.ones(3, 4, dtype=t))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.parametrize("problem_dtype, arguments, text", [
    ("bf16", SGEMM_ARGS, "the kernel's argument 'const float\\* A' is of f32 data, its problem "
                         "of bf16"),
    ("f32", args16("f16"), "the kernel's argument 'const __half\\* A' is of f16 data, its "
                           "problem of f32"),
    ("f16", args16("bf16"), "'const __nv_bfloat16\\* A' is of bf16 data, its problem of f16"),
    ("bf16_f32", args16("bf16"), r"the kernel's argument '__nv_bfloat16\* C' is of bf16 data, its "
                                 r"problem of bf16_f32 \(C of f32\)"),
    ("bf16", args16("bf16_f32"), r"the kernel's argument 'float\* C' is of f32 data, its problem "
                                 r"of bf16$"),
    ("f16_f32", args16("bf16_f32"), r"'const __nv_bfloat16\* A' is of bf16 data, its problem of "
                                    r"f16_f32 \(A of f16\)"),
    ("f32", args16("f16_f32"), r"'const __half\* A' is of f16 data, its problem of f32$"),
])
def test_a_kernel_of_another_dtype_than_its_problems_is_refused(driver, problem_dtype, arguments,
                                                                 text):
    """A pointer argument to float, __nv_bfloat16 or __half must be to the
    problem's type of it, C's for C and A's and B's for A and B (float C of
    bf16_f32 and f16_f32; a kernel of another dtype would read its bytes as
    another type): TunedError INTERNAL at the launch's preparation."""
    best = best_kernel()
    best.problem.dtype = pb.DType.Value("DTYPE_" + problem_dtype.upper())
    del best.arguments[:]
    best.arguments.extend(arguments)
    kernel = tuned.Kernel(best, device="cuda:0")
    with pytest.raises(tuned.TunedError, match=text) as e:
        launch_sgemm(kernel)
    assert e.value.code == grpc.StatusCode.INTERNAL
    assert driver.launches == []


def test_16bit_kernels_that_this_client_cannot_run_are_refused():
    prescaled = best16("bf16")
    prescaled.geometry.prescale_output = True
    with pytest.raises(tuned.TunedError, match="a bf16 kernel asks for C to be prescaled") as e:
        tuned.Kernel(prescaled, device="cuda:0")
    assert e.value.code == grpc.StatusCode.INTERNAL
    newer = best_kernel()
    newer.problem.dtype = 9  # a dtype of a daemon newer than this client
    with pytest.raises(tuned.TunedError, match="an sgemm kernel of dtype 9: this client runs "
                                               "f32, bf16, f16, bf16_f32 and f16_f32") as e:
        tuned.Kernel(newer, device="cuda:0")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    unset = best_kernel()
    unset.problem.dtype = pb.DTYPE_UNSPECIFIED  # as the daemon reads it: f32
    assert tuned.Kernel(unset, device="cuda:0").dtype is torch.float32
    assert tuned.Kernel(best_kernel("transpose", (64, 32)), device="cuda:0").dtype is torch.float32
