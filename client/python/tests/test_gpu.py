"""On a GPU, against a real daemon that has tuned $TUNED_GPU_SHAPE (M,N,K;
default 1024,1024,1024) and found at the default address (TUNED_SERVER, else
the local socket of GPU 0): tuned.matmul and tuned.Kernel against
torch.matmul in pure fp32 (TF32 off), and their times side by side;
tuned.matmul and tuned.linear in each math mode the daemon has tuned
($TUNED_GPU_TF32_SHAPE, default 2048^3, for tf32) and in each operand layout
(transposed views, read without a copy; a layout the daemon lacks is swept
first with a small budget, $TUNED_GPU_LAYOUT_BUDGET configs, default 24),
under a CUDA graph capture and in a torch.compile(fullgraph=True) model
(torch >= 2.4); the 16-bit problems (a small odd bf16 shape and an f16
one, layout "nt", swept here with $TUNED_GPU_16BIT_BUDGET configs, default
24) run by tuned.Kernel, tuned.matmul and tuned.linear on bfloat16 and
float16 tensors, and their fp32-output forms (bf16_f32, f16_f32: the same
two shapes) by tuned.Kernel and tuned.matmul(out_dtype=torch.float32) into
float32 results.
bench/python_gpu.sh runs it; skipped without torch or a GPU."""

import os
import statistics

import grpc
import pytest

import tuned

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no GPU (torch.cuda.is_available() is False)", allow_module_level=True)
import tuned.blas  # noqa: E402
import tuned.ops  # noqa: E402 (imports torch)

SHAPE = tuple(int(d) for d in os.environ.get("TUNED_GPU_SHAPE", "1024,1024,1024").split(","))
MAX_ERROR = 1e-5  # relative Frobenius error against fp32 torch.matmul


@pytest.fixture(autouse=True)
def pure_fp32():
    """torch.matmul without TF32, as the reference (restored after the test)."""
    with tuned.kernel._no_tf32(torch):
        yield


@pytest.fixture(scope="module")
def client():
    with tuned.Client() as c:
        try:
            c.best(*SHAPE, basic=True)
        except tuned.TunedError as e:
            pytest.fail(f"the daemon at {c.address} has not tuned {SHAPE}: {e} "
                        "(tunectl sweep M N K --wait first)")
        yield c


def rel_error(c, ref):
    return ((c.double() - ref.double()).norm() / ref.double().norm()).item()


def random_pair(m, n, k, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g)
    b = torch.randn(k, n, device="cuda", generator=g)
    return a, b


@pytest.mark.parametrize("shape", [SHAPE, (1000, 1000, 1000), (1031, 999, 1024), (512, 1024, 2048)])
def test_matmul_matches_torch(client, shape):
    """The tuned shape and nearby untuned ones (the nearest tuned kernel, with
    the daemon's geometry for the asked shape: partial tiles at the edges)."""
    m, n, k = shape
    a, b = random_pair(m, n, k, seed=m + n + k)
    c = tuned.matmul(a, b)
    ref = torch.matmul(a, b)
    assert c.shape == (m, n) and c.dtype == torch.float32 and c.device == a.device
    err = rel_error(c, ref)
    best = client.best(m, n, k, basic=True)
    print(f"\n{m}x{n}x{k}: relative error {err:.2e}, kernel {best.measurement.config.name} "
          f"({pb_match(best)}{', cuBLAS' if best.use_baseline else ''})")
    assert err < MAX_ERROR
    assert rel_error(tuned.matmul(a, b), ref) < MAX_ERROR  # again, with the cached kernel


def pb_match(best):
    return tuned.pb.Match.Name(best.match).removeprefix("MATCH_").lower()


def test_kernel_alpha_beta_and_out(client):
    m, n, k = SHAPE
    kernel = tuned.Kernel(client.best(m, n, k))
    a, b = random_pair(m, n, k, seed=1)
    c0 = torch.randn(m, n, device="cuda")
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=2.0) is out
    assert rel_error(out, 0.5 * torch.matmul(a, b) + 2.0 * c0) < MAX_ERROR
    out.fill_(float("nan"))  # beta == 0 never reads C (split-K kernels zero it first)
    kernel.sgemm(a, b, out=out, alpha=2.0)
    assert rel_error(out, 2.0 * torch.matmul(a, b)) < MAX_ERROR


def test_kernel_runs_on_the_current_stream(client):
    m, n, k = SHAPE
    kernel = tuned.Kernel(client.best(m, n, k))
    a, b = random_pair(m, n, k, seed=2)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = kernel.sgemm(a, b)
    torch.cuda.current_stream().wait_stream(side)
    assert rel_error(c, torch.matmul(a, b)) < MAX_ERROR


def test_kernel_sgemm_launches_from_cpp_and_leaves_bad_input_to_python(client):
    """Where pip built tuned._torchcall, Kernel.sgemm of a kernel without
    tensor maps checks and launches in C++: the result matches torch with a
    new out, a given out and alpha, beta; a tensor it does not take (another
    dtype, shape or stride) goes to the Python checks and their errors."""
    assert tuned.blas._torchcall is not None, "pip did not build tuned._torchcall against torch"
    m, n, k = SHAPE
    best = client.best(m, n, k)
    best.use_baseline = False  # the kernel itself, served or not
    kernel = tuned.Kernel(best)
    a, b = random_pair(m, n, k, seed=5)
    ref = torch.matmul(a, b)
    assert rel_error(kernel.sgemm(a, b), ref) < MAX_ERROR  # the first call prepares the launch
    if best.geometry.tensor_maps:
        assert kernel._fast is None  # maps are encoded per pointer in Python
    else:
        assert kernel._fast is not None, "no C++ launch prepared for a kernel without tensor maps"
    c = kernel.sgemm(a, b)
    assert c.shape == (m, n) and c.dtype == torch.float32 and rel_error(c, ref) < MAX_ERROR
    c0 = torch.randn(m, n, device="cuda")
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=1.0) is out
    assert rel_error(out, 0.5 * ref + c0) < MAX_ERROR
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=2, beta=-1.5) is out  # ints, and beta past 0 and 1
    assert rel_error(out, 2.0 * ref - 1.5 * c0) < MAX_ERROR
    with pytest.raises(tuned.DTypeError):
        kernel.sgemm(a.double(), b)
    with pytest.raises(ValueError, match="has shape"):
        kernel.sgemm(a[:, 1:], b[1:])
    with pytest.raises(ValueError):
        kernel.sgemm(torch.randn(k, m, device="cuda").t(), b)  # transposed where "n" is asked
    with pytest.raises(ValueError, match="beta"):
        kernel.sgemm(a, b, beta=1.0)


def test_kernel_refuses_another_shape(client):
    m, n, k = SHAPE
    kernel = tuned.Kernel(client.best(m, n, k))
    a, b = random_pair(m + 1, n, k)
    with pytest.raises(ValueError, match="has shape"):
        kernel.sgemm(a, b)


def test_transpose_if_tuned(client):
    rows, cols = 1024, 768
    try:
        best = client.best(rows, cols, family="transpose")
    except tuned.TunedError as e:
        assert e.code == grpc.StatusCode.NOT_FOUND
        pytest.skip(f"transpose {rows}x{cols} is not tuned on this daemon")
    x = torch.randn(rows, cols, device="cuda")
    assert tuned.Kernel(best).transpose(x).equal(x.t())


def test_time_kernel_and_torch_side_by_side(client):
    """CUDA events; 10 warm-ups each; the L2 flushed (a buffer of twice its
    size written) before every repetition; >= 30 interleaved pairs, in
    alternating order; medians."""
    m, n, k = SHAPE
    best = client.best(m, n, k)
    kernel = tuned.Kernel(best)
    a, b = random_pair(m, n, k, seed=3)
    out_tuned = torch.empty(m, n, device="cuda")
    out_torch = torch.empty(m, n, device="cuda")
    l2 = torch.cuda.get_device_properties(a.device).L2_cache_size
    flush = torch.empty(max(2 * l2, 1 << 20) // 4, device="cuda")
    runs = {"tuned": lambda: kernel.sgemm(a, b, out=out_tuned),
            "torch": lambda: torch.matmul(a, b, out=out_torch)}
    for fn in runs.values():
        for _ in range(10):
            fn()
    pairs = 50
    events = {name: [] for name in runs}
    for i in range(pairs):
        for name in (("tuned", "torch") if i % 2 == 0 else ("torch", "tuned")):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_()
            start.record()
            runs[name]()
            end.record()
            events[name].append((start, end))
    torch.cuda.synchronize()
    ms = {name: statistics.median(s.elapsed_time(e) for s, e in ev) for name, ev in events.items()}
    flops = 2.0 * m * n * k
    print(f"\ntiming {m}x{n}x{k} ({pairs} interleaved pairs, L2 {l2 >> 20} MiB flushed, medians):")
    for name, t in ms.items():
        print(f"  {name:6s} {t:.4f} ms  {flops / t / 1e9:8.1f} GFLOPS")
    print(f"  tuned/torch time ratio {ms['tuned'] / ms['torch']:.3f}; the daemon measured "
          f"{best.measurement.median_ms:.4f} ms for {best.measurement.config.name}, "
          f"{best.baseline_name} {best.baseline_ms:.4f} ms")
    assert rel_error(out_tuned, out_torch) < MAX_ERROR
    assert all(t > 0 for t in ms.values())
    assert ms["tuned"] < 2.0 * ms["torch"], "the tuned kernel is over twice as slow as torch.matmul"


TF32_SHAPE = tuple(int(d) for d in os.environ.get("TUNED_GPU_TF32_SHAPE", "2048,2048,2048").split(","))


def test_a_kernel_with_a_tma_tensor_map_matches_torch(client):
    """The mode tf32's kernel of TUNED_GPU_TF32_SHAPE (default 2048^3; on an
    H100 the warp-specialized TF32, sgemm_wgmma_ws) reads A through a TMA
    tensor map, which this client encodes (geometry.tensor_maps): run as
    the kernel itself even where cuBLAS is served, with A aligned (TMA) and
    one float in (no map: the kernel copies A itself), its error against
    fp64 within 2x torch's TF32 matmul's, the mode's bound."""
    m, n, k = TF32_SHAPE
    try:
        best = client.best(m, n, k, math="tf32")
    except tuned.TunedError as e:
        pytest.skip(f"{TF32_SHAPE} is not tuned in math tf32 ({e}): tunectl sweep --math tf32 first")
    if not best.geometry.tensor_maps:
        pytest.skip(f"the tf32 kernel {best.measurement.config.name} takes no tensor map")
    best.use_baseline = False  # the kernel itself, served or not
    kernel = tuned.Kernel(best)
    g = torch.Generator(device="cuda").manual_seed(5)
    buf = torch.randn(m * k + 1, device="cuda", generator=g)
    b = torch.randn(k, n, device="cuda", generator=g)
    for a in (buf[:m * k].view(m, k), buf[1:].view(m, k)):
        ref64 = a.double() @ b.double()
        with tuned.kernel._tf32(torch, allow=True):
            base = rel_error(torch.matmul(a, b), ref64)
        err = rel_error(kernel.sgemm(a, b), ref64)
        print(f"\n{best.measurement.config.name} A at {a.data_ptr() % 16} bytes past 16: "
              f"error {err:.2e}, torch TF32 {base:.2e}")
        assert 0 < err <= 2 * base


# ---- tuned.matmul and tuned.linear in each math mode, compiled, captured ----

MODES = {"ieee_fp32": SHAPE, "fp32_accurate": SHAPE, "tf32": TF32_SHAPE}


def shape_in_mode(client, math):
    """The mode's shape (MODES), skipping the test where the daemon has
    nothing tuned in the mode (no kernel near: NOT_FOUND)."""
    shape = MODES[math]
    try:
        client.best(*shape, basic=True, math=math)
    except tuned.TunedError as e:
        assert e.code == grpc.StatusCode.NOT_FOUND
        pytest.skip(f"nothing tuned in math {math} near {shape} (tunectl sweep --math {math} "
                    f"{' '.join(map(str, shape))} --wait first)")
    return shape


LAYOUT_BUDGET = os.environ.get("TUNED_GPU_LAYOUT_BUDGET", "24")


def tuned_in(client, shape, math, layout):
    """Makes sure the daemon serves the problem in `layout` (a sweep of
    LAYOUT_BUDGET configs where nothing is tuned near it); skips the test
    where it cannot (a daemon that does not tune layouts)."""
    try:
        return client.best(*shape, basic=True, math=math, layout=layout)
    except tuned.TunedError as e:
        assert e.code == grpc.StatusCode.NOT_FOUND, e
    try:
        job = client.sweep(*shape, math=math, layout=layout, budget=LAYOUT_BUDGET, progress=False)
        best = client.best(*shape, basic=True, math=math, layout=layout)
    except tuned.TunedError as e:
        pytest.skip(f"the daemon does not serve {shape} in layout {layout} ({math}): {e}")
    assert job.state == tuned.pb.JOB_DONE, job
    return best


def within_mode(math, got, a, b, bias=None):
    """(error, torch's error, bound): got's relative Frobenius error against
    fp64 and the bound of the mode: ieee_fp32 within MAX_ERROR of torch's
    pure fp32 result; fp32_accurate and tf32 at most 3x torch's own error in
    the mode (the daemon verifies 2x on its inputs; these are others)."""
    ref = a.double() @ b.double() + (0 if bias is None else bias.double())
    with tuned.kernel._tf32(torch, allow=math == "tf32"):
        base = torch.matmul(a, b) + (0 if bias is None else bias)
    if math == "ieee_fp32":
        return rel_error(got, base), 0.0, MAX_ERROR
    return rel_error(got, ref), rel_error(base, ref), 3 * rel_error(base, ref) + 1e-7


@pytest.mark.parametrize("math", list(MODES))
def test_matmul_and_linear_match_torch_in_each_math_mode(client, math):
    """tuned.matmul (the daemon's kernel, "nn"), and tuned.linear with a
    weight that is the transpose of a row-major matrix (the kernel too,
    then the bias), in each mode the daemon has tuned (a row-major weight,
    "nt": test_each_layout_runs_on_transposed_views_without_a_copy)."""
    m, n, k = shape_in_mode(client, math)
    a, b = random_pair(m, n, k, seed=11)
    bias = torch.randn(n, device="cuda")
    best = client.best(m, n, k, basic=True, math=math)
    err, base, bound = within_mode(math, tuned.matmul(a, b, math=math), a, b)
    print(f"\n{math} {m}x{n}x{k}: tuned.matmul error {err:.2e} (torch {base:.2e}, bound {bound:.2e}), "
          f"{best.measurement.config.name}{' (cuBLAS served)' if best.use_baseline else ''}")
    assert err <= bound
    out = torch.empty(m, n, device="cuda")
    assert tuned.matmul(a, b, math=math, out=out) is out
    assert within_mode(math, out, a, b)[0] <= bound
    x = a.view(2, m // 2, k) if m % 2 == 0 else a
    y = tuned.linear(x, b.t(), bias, math=math)  # weight (n, k) = b.t(): layout "nn"
    assert y.shape == (*x.shape[:-1], n)
    err, _, bound = within_mode(math, y.reshape(m, n), a, b, bias)
    assert err <= bound, f"linear (nn): {err:.2e} > {bound:.2e}"


@pytest.mark.parametrize("layout", ["nt", "tn", "tt"])
@pytest.mark.parametrize("math", list(MODES))
def test_each_layout_runs_on_transposed_views_without_a_copy(client, math, layout):
    """tuned.matmul of operands in `layout` (a "t" operand the .t() of a
    contiguous tensor), and tuned.linear with a row-major weight for "nt":
    the layout's own kernel (or cuBLAS, as served) on the operands as they
    are (the route copies nothing), within the mode's bound."""
    m, n, k = shape_in_mode(client, math)
    best = tuned_in(client, (m, n, k), math, layout)
    g = torch.Generator(device="cuda").manual_seed(21)
    a = (torch.randn(k, m, device="cuda", generator=g).t() if layout[0] == "t"
         else torch.randn(m, k, device="cuda", generator=g))
    w = torch.randn(n, k, device="cuda", generator=g) if layout[1] == "t" else None
    b = w.t() if w is not None else torch.randn(k, n, device="cuda", generator=g)
    err, base, bound = within_mode(math, tuned.matmul(a, b, math=math), a, b)
    print(f"\n{math} {m}x{n}x{k} {layout}: error {err:.2e} (torch {base:.2e}, bound {bound:.2e}), "
          f"{'cuBLAS' if best.use_baseline else best.measurement.config.name}")
    assert err <= bound
    (route,) = [r for key, r in tuned.ops._routes.items()
                if key[:2] == (a.shape, b.shape) and key[4] == math and r.layout == layout]
    assert not route.copy_a and not route.copy_b
    if layout == "nt":
        bias = torch.randn(n, device="cuda", generator=g)
        err, _, bound = within_mode(math, tuned.linear(a, w, bias, math=math), a, b, bias)
        assert err <= bound, f"linear (nt): {err:.2e} > {bound:.2e}"


@pytest.mark.parametrize("math", ["ieee_fp32", "tf32"])
def test_a_cuda_graph_capture_replays_matmul_and_linear(client, math):
    """Warm-up calls on a side stream (the daemon asked, the kernel loaded),
    then tuned.matmul and tuned.linear captured in a CUDA graph (the launch
    on the capturing stream; a tf32 kernel's TMA tensor map encoded for the
    captured pointer) and replayed on new inputs copied into the captured
    ones: equal to the same calls run eagerly on those inputs."""
    m, n, k = shape_in_mode(client, math)
    a, b = random_pair(m, n, k, seed=12)
    bias = torch.randn(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            tuned.matmul(a, b, math=math)
            tuned.linear(a, b.t(), bias, math=math)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = tuned.matmul(a, b, math=math)
        y = tuned.linear(a, b.t(), bias, math=math)
    a2, b2 = random_pair(m, n, k, seed=13)
    a.copy_(a2)
    b.copy_(b2)
    graph.replay()
    torch.cuda.synchronize()
    want_c = tuned.matmul(a2, b2, math=math)
    want_y = tuned.linear(a2, b2.t(), bias, math=math)
    assert rel_error(c, want_c) < 1e-6 and rel_error(y, want_y) < 1e-6
    err, _, bound = within_mode(math, c, a2, b2)
    assert err <= bound


def transposed_pair(m, n, k, layout, seed):
    """op(A) (m, k) and op(B) (k, n) in `layout`, an operand "t" the .t() of a contiguous one."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(k, m, device="cuda", generator=g).t() if layout[0] == "t"
         else torch.randn(m, k, device="cuda", generator=g))
    b = (torch.randn(n, k, device="cuda", generator=g).t() if layout[1] == "t"
         else torch.randn(k, n, device="cuda", generator=g))
    return a, b


def test_the_c_launcher_is_built_and_launches():
    """pip built tuned._fastcall on this machine, it finds the driver and
    cuBLAS and cuBLASLt, and a loaded kernel launches through it."""
    assert tuned.driver.fastcall is not None, "tuned._fastcall was not built by pip install"
    assert tuned.driver.fastcall.init() == (True, True, True)
    assert tuned.blas._torchcall is not None, "pip did not build tuned._torchcall against torch"


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("tf32", [False, True])
def test_cublas_called_directly_matches_torch_in_each_layout(layout, tf32):
    """tuned.blas.Gemm (served cuBLAS, called through tuned._fastcall) on odd
    shapes in each layout, on transposed views as they are: equal to torch's
    cuBLAS in the same mode, and on torch's current stream (a side stream
    here)."""
    for m, n, k in [(1, 1, 1), (37, 129, 7), (1000, 257, 999), (64, 1, 4096)]:
        a, b = transposed_pair(m, n, k, layout, seed=m + n + k)
        gemm = tuned.blas.prepare(torch, 0, tf32, layout, m, n, k)
        assert gemm is not None
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = gemm(a, b, torch.empty(m, n, device="cuda"))
            new = gemm.new(a, b)  # the result allocated in C++
        side.synchronize()
        assert (new.shape, new.dtype, new.device) == ((m, n), torch.float32, a.device)
        ref = a.double() @ b.double()
        with tuned.kernel._tf32(torch, allow=tf32):
            want = torch.matmul(a, b)
        err, torch_err = rel_error(got, ref), rel_error(want, ref)
        assert err <= 2 * torch_err + 1e-7, (m, n, k, layout, tf32, err, torch_err)
        assert rel_error(new, ref) <= 2 * torch_err + 1e-7, (m, n, k, layout, tf32)


@pytest.mark.parametrize("tf32", [False, True])
def test_cublas_planned_once_runs_cublaslt_and_falls_back_on_unaligned_operands(tf32):
    """A route's GEMM is planned with cuBLASLt (an algorithm found: workspace
    not -1); operands that are views at an offset of one float (not 256-byte
    aligned, as the plan assumes) run cublasSgemm instead, equally right."""
    m, n, k = 384, 256, 320
    gemm = tuned.blas.prepare(torch, 0, tf32, "nt", m, n, k)
    assert gemm.workspace >= 0, "cuBLASLt gave no algorithm for a 384x256x320 SGEMM"
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(m * k + 1, device="cuda", generator=g)[1:].view(m, k)
    b = torch.randn(n * k + 1, device="cuda", generator=g)[1:].view(n, k).t()
    for x, y in ((a, b), (a.clone(), b.t().clone().t())):  # unaligned, then aligned
        got = gemm(x, y, torch.empty(m, n, device="cuda"))
        with tuned.kernel._tf32(torch, allow=tf32):
            want = torch.matmul(x, y)
        ref = x.double() @ y.double()
        assert rel_error(got, ref) <= 2 * rel_error(want, ref) + 1e-7


def test_cublas_called_directly_replays_in_a_cuda_graph():
    """A Gemm captured in a CUDA graph, replayed on new inputs copied into the
    captured ones: the product of the new inputs."""
    m, n, k = 300, 200, 100
    a, b = transposed_pair(m, n, k, "nt", seed=3)
    gemm = tuned.blas.prepare(torch, 0, False, "nt", m, n, k)
    out = torch.empty(m, n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gemm(a, b, out)  # cuBLAS's first call on this stream outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemm(a, b, out)
    a2, b2 = transposed_pair(m, n, k, "nt", seed=4)
    a.copy_(a2)
    b.copy_(b2)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert rel_error(out, a2.double() @ b2.double()) < 1e-6


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                    reason=f"torch {torch.__version__} has no torch.library.custom_op (torch >= 2.4): "
                           "the operators tuned::matmul and tuned::linear are not registered")
def test_a_compiled_model_matches_eager(client):
    """torch.compile(fullgraph=True) (an error at any graph break) of a model
    calling tuned.matmul (the kernel, "nn") and tuned.linear (a row-major
    weight: the "nt" kernel) gives the eager model's result."""
    import torch._dynamo

    m, n, k = SHAPE
    tuned_in(client, (m, 64, n), "ieee_fp32", "nt")  # the nn.Linear

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator(device="cuda").manual_seed(14)
            self.proj = torch.nn.Parameter(torch.randn(k, n, device="cuda", generator=g) / k ** 0.5)
            self.out = torch.nn.Linear(n, 64, device="cuda")

        def forward(self, x):
            h = torch.relu(tuned.matmul(x, self.proj))
            return tuned.linear(h, self.out.weight, self.out.bias)

    torch._dynamo.reset()
    model = Model()
    compiled = torch.compile(model, fullgraph=True)
    for seed in (15, 16):
        x = torch.randn(m, k, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))
        with torch.no_grad():
            want = model(x)
            got = compiled(x)
        err = rel_error(got, want)
        print(f"\ncompiled vs eager: relative error {err:.2e}")
        assert err < 1e-5


# ---- 16-bit GEMM: the bf16 and f16 problems ----

GEMM16_BUDGET = os.environ.get("TUNED_GPU_16BIT_BUDGET", "24")
# dtype name -> (its torch dtype, the C type of its kernel's pointers, the shape swept)
GEMM16 = {"bf16": (torch.bfloat16, "__nv_bfloat16", (333, 257, 191)),  # odd: partial tiles, no TMA
          "f16": (torch.float16, "__half", (256, 320, 192))}
GEMM16_SLACK = 1e-5  # absolute, on relative errors: fp32's reference against fp64 and the like


def within_16bit(got, ref32, torch_result, ref64):
    """(error, torch's error, bound) of a 16-bit GEMM result: got's relative
    Frobenius error against torch.matmul in fp32 of the same 16-bit inputs
    (`ref32`, TF32 off), and the bound: at most 2x torch's own 16-bit
    result's (`torch_result`) error against the fp64 reference of those
    inputs (`ref64`), as the daemon's verification (2x cuBLAS's), plus
    GEMM16_SLACK."""
    base = rel_error(torch_result, ref64)
    return rel_error(got, ref32), base, 2 * base + GEMM16_SLACK


@pytest.mark.parametrize("dtype", list(GEMM16))
def test_a_16bit_problem_swept_in_layout_nt_matches_torch(client, dtype):
    """Sweeps the dtype's problem in layout "nt" (B stored N x K, as an
    nn.Linear weight), then runs what the daemon serves for it on 16-bit
    tensors: tuned.Kernel.sgemm (out allocated and out= with alpha and
    beta), tuned.matmul(a, w.t()) (the route copying nothing) and
    tuned.linear(a, w), each of the dtype, each within 2x torch.matmul's
    own error of the same inputs (within_16bit)."""
    t, ctype, (m, n, k) = GEMM16[dtype]
    job = client.sweep(m, n, k, dtype=dtype, layout="nt", budget=GEMM16_BUDGET, progress=False)
    assert job.state == tuned.pb.JOB_DONE, job
    assert job.problem.dtype == tuned.pb.DType.Value("DTYPE_" + dtype.upper())
    best = client.best(m, n, k, dtype=dtype, layout="nt")
    assert best.match == tuned.pb.MATCH_EXACT and best.problem.layout == tuned.pb.LAYOUT_NT
    assert tuned.dtype_name(best.problem) == dtype
    served = "cuBLAS" if best.use_baseline else best.measurement.config.name
    if not best.use_baseline:
        assert list(best.arguments) == ["int M", "int N", "int K", "float alpha",
                                        f"const {ctype}* A", f"const {ctype}* B", "float beta",
                                        f"{ctype}* C"]
    g = torch.Generator(device="cuda").manual_seed(31)
    a = torch.randn(m, k, device="cuda", generator=g).to(t)
    w = torch.randn(n, k, device="cuda", generator=g).to(t)  # B stored N x K: op(B) = w.t()
    b = w.t()
    ref32 = torch.matmul(a.float(), b.float())  # TF32 off (pure_fp32)
    ref64 = a.double() @ b.double()
    torch_result = torch.matmul(a, b)

    kernel = tuned.Kernel(best)
    assert kernel.dtype is t and kernel.layout == "nt"
    c = kernel.sgemm(a, b)
    assert c.dtype is t and c.shape == (m, n) and c.device == a.device
    err, base, bound = within_16bit(c, ref32, torch_result, ref64)
    print(f"\n{dtype} {m}x{n}x{k} nt ({served}, {job.done} configs measured): Kernel.sgemm error "
          f"{err:.2e}, torch.matmul's own {base:.2e}, bound {bound:.2e}")
    assert err <= bound

    c0 = torch.randn(m, n, device="cuda", generator=g).to(t)
    out = c0.clone()
    assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=2.0) is out
    torch_ab = c0.clone().addmm_(a, b, alpha=0.5, beta=2.0)
    err, base, bound = within_16bit(out, 0.5 * ref32 + 2.0 * c0.float(), torch_ab,
                                     0.5 * ref64 + 2.0 * c0.double())
    assert err <= bound, f"alpha, beta: {err:.2e} > {bound:.2e} (torch {base:.2e})"

    got = tuned.matmul(a, b)
    assert got.dtype is t and got.shape == (m, n)
    err, base, bound = within_16bit(got, ref32, torch_result, ref64)
    print(f"  tuned.matmul error {err:.2e}")
    assert err <= bound
    (route,) = [r for key, r in tuned.ops._routes.items()
                if key[:2] == (a.shape, b.shape) and key[-1] is t]
    assert route.layout == "nt" and not route.copy_a and not route.copy_b
    assert route.dtype is t and (route.kernel is None) == best.use_baseline

    y = tuned.linear(a, w)  # a row-major weight: the same "nt" problem
    assert y.dtype is t
    err, _, bound = within_16bit(y, ref32, torch_result, ref64)
    assert err <= bound, f"linear (nt): {err:.2e} > {bound:.2e}"

    with pytest.raises(tuned.DTypeError, match=f"a must be {str(t)[6:]}, not torch.float32"):
        kernel.sgemm(a.float(), b)
    with pytest.raises(tuned.DTypeError, match="math 'tf32' is for float32 operands"):
        tuned.matmul(a, b, math="tf32")


# ---- 16-bit A and B with an fp32 C: the bf16_f32 and f16_f32 problems ----

# dtype name -> (its A's and B's torch dtype, their C type, the shape swept)
GEMM16_F32 = {"bf16_f32": (torch.bfloat16, "__nv_bfloat16", (333, 257, 191)),  # no TMA
              "f16_f32": (torch.float16, "__half", (256, 320, 192))}  # TMA: C's map of f32


@pytest.mark.parametrize("dtype", list(GEMM16_F32))
def test_an_fp32_output_problem_swept_in_layout_nt_matches_torchs_fp32_matmul(client, dtype):
    """Sweeps the dtype's problem in layout "nt", then runs its kernel (and
    cuBLAS's GEMM with an fp32 C, as where the daemon serves it) on 16-bit
    a and w.t() into a float32 C: tuned.Kernel.sgemm (out allocated, and
    out= with alpha and beta) and tuned.matmul(a, w.t(),
    out_dtype=torch.float32), each within 2x the error against fp64 of
    cuBLAS's fp32-output GEMM of the same inputs (within_16bit) of torch's
    fp32 matmul of the widened inputs: far closer than a C rounded to 16
    bits. A kernel with tensor maps has C's (pointer argument 7) of f32."""
    t, ctype, (m, n, k) = GEMM16_F32[dtype]
    job = client.sweep(m, n, k, dtype=dtype, layout="nt", budget=GEMM16_BUDGET, progress=False)
    assert job.state == tuned.pb.JOB_DONE, job
    assert job.problem.dtype == tuned.pb.DType.Value("DTYPE_" + dtype.upper())
    best = client.best(m, n, k, dtype=dtype, layout="nt")
    assert best.match == tuned.pb.MATCH_EXACT and tuned.dtype_name(best.problem) == dtype
    g = torch.Generator(device="cuda").manual_seed(37)
    a = torch.randn(m, k, device="cuda", generator=g).to(t)
    w = torch.randn(n, k, device="cuda", generator=g).to(t)  # B stored N x K: op(B) = w.t()
    b = w.t()
    ref32 = torch.matmul(a.float(), b.float())  # TF32 off (pure_fp32)
    ref64 = a.double() @ b.double()
    cublas = tuned.kernel._gemm_f32_out(torch, a, b, torch.empty(m, n, device="cuda"))
    assert cublas.dtype is torch.float32
    rounded = rel_error(ref32.to(t), ref32)  # what a C of 16 bits would be off by

    # The daemon's kernel (served or not), and cuBLAS's GEMM as where it is served.
    kernels = []
    if best.cubin or best.ptx:
        assert list(best.arguments) == ["int M", "int N", "int K", "float alpha",
                                        f"const {ctype}* A", f"const {ctype}* B", "float beta",
                                        "float* C"]
        maps = best.geometry.tensor_maps
        if maps:  # A's, B's, then C's: 32 floats a 128-byte box row, a row pitch of 4 N bytes
            assert [(x.pointer_arg, x.param, x.dtype) for x in maps] == [
                (4, 8, tuned.pb.DType.Value("DTYPE_" + dtype[:-4].upper())),
                (5, 9, tuned.pb.DType.Value("DTYPE_" + dtype[:-4].upper())),
                (7, 10, tuned.pb.DTYPE_F32)]
            assert list(maps[2].box)[0] == 32 and list(maps[2].strides_bytes) == [4 * n]
        own = tuned.pb.BestKernel()
        own.CopyFrom(best)
        own.use_baseline = False
        kernels.append((best.measurement.config.name, tuned.Kernel(own)))
    served = tuned.pb.BestKernel()
    served.CopyFrom(best)
    served.use_baseline = True
    kernels.append(("cuBLAS", tuned.Kernel(served)))
    for name, kernel in kernels:
        assert kernel.dtype is t and kernel.out_dtype is torch.float32 and kernel.layout == "nt"
        for _ in range(2):  # the first call prepares the launch, the second reuses it
            c = kernel.sgemm(a, b)
            assert c.dtype is torch.float32 and c.shape == (m, n) and c.device == a.device
            err, base, bound = within_16bit(c, ref32, cublas, ref64)
            assert err <= bound < rounded, f"{name}: {err:.2e} > {bound:.2e}"
        print(f"\n{dtype} {m}x{n}x{k} nt ({name}, {job.done} configs measured): Kernel.sgemm "
              f"error {err:.2e}, cuBLAS's own {base:.2e}, bound {bound:.2e}, a 16-bit C's "
              f"{rounded:.2e}")
        if not kernel.uses_torch and not best.geometry.tensor_maps and tuned.blas._torchcall:
            assert kernel._fast is not None  # checked and launched in C++ (tuned._torchcall)
        c0 = torch.randn(m, n, device="cuda", generator=g)
        out = c0.clone()
        assert kernel.sgemm(a, b, out=out, alpha=0.5, beta=2.0) is out
        err, base, bound = within_16bit(out, 0.5 * ref32 + 2.0 * c0, 0.5 * cublas + 2.0 * c0,
                                         0.5 * ref64 + 2.0 * c0.double())
        assert err <= bound, f"{name} alpha, beta: {err:.2e} > {bound:.2e} (cuBLAS {base:.2e})"
        with pytest.raises(tuned.DTypeError, match=f"out must be float32, not {t}"):
            kernel.sgemm(a, b, out=torch.empty(m, n, dtype=t, device="cuda"))

    got = tuned.matmul(a, b, out_dtype=torch.float32)
    assert got.dtype is torch.float32 and got.shape == (m, n)
    err, base, bound = within_16bit(got, ref32, cublas, ref64)
    print(f"  tuned.matmul(out_dtype=torch.float32) error {err:.2e}")
    assert err <= bound
    (route,) = [r for key, r in tuned.ops._routes.items()
                if key[:2] == (a.shape, b.shape) and key[-2:] == (torch.float32, t)]
    assert route.layout == "nt" and not route.copy_a and not route.copy_b
    assert route.dtype is t and route.out_dtype is torch.float32
    assert (route.kernel is None) == best.use_baseline
