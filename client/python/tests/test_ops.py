"""tuned.matmul, tuned.linear and the torch operators tuned::matmul and
tuned::linear without a GPU: layouts (read from strides, asked of the
daemon as Problem.layout, run without a copy), math modes, argument checks
(before the daemon is asked or the driver used), routes (the daemon's
kernel, run by cuda_fake.Emulator on CPU tensors in its layout, or torch in
the mode), linear's flattening and bias, gradients; the operators where
torch has torch.library.custom_op (torch >= 2.4), in
torch.compile(fullgraph=True). 16-bit operands: test_ops_16bit.py."""

import grpc
import pytest

import tuned
from tuned import pb

torch = pytest.importorskip(
    "torch", reason="torch is not installed: tuned.matmul and tuned.linear need it "
                    "(the gRPC tests in test_client.py run without it)")
import torch.nn.functional as F  # noqa: E402

import cuda_fake  # noqa: E402
import tuned.ops  # noqa: E402
from ops_fakes import (FakeDaemon, NoDaemon, close, cpu, fresh, operands, randn,  # noqa: E402,F401
                       tf32_seen)

HAS_CUSTOM_OP = hasattr(torch.library, "custom_op")
NO_OPS = (f"torch {torch.__version__} has no torch.library.custom_op (torch >= 2.4 has it): "
          "the operators tuned::matmul and tuned::linear are not registered, and tuned.matmul "
          "and tuned.linear run eagerly only (a compiled graph breaks there)")
# ---- layouts and math modes ----

@pytest.mark.parametrize("t, layout", [
    (torch.zeros(4, 3), "n"),
    (torch.zeros(3, 4).t(), "t"),            # a transposed view: strides (1, 3)
    (torch.zeros(4, 6)[:, ::2], None),       # every other column
    (torch.zeros(4, 5)[:, :3], None),        # a row pitch of 5 for 3 columns
    (torch.zeros(1, 3).expand(4, 3), None),  # a broadcast row (stride 0)
    (torch.zeros(1, 5), "n"),
    (torch.zeros(5, 1).t(), "n"),            # one row: row-major whatever its strides
    (torch.zeros(3, 1).expand(3, 1), "n"),
    (torch.zeros(5, 3)[:, :1], None),        # one column of a wider matrix: rows 3 floats apart
    (torch.zeros(3, 5).t()[:, :2], "t"),     # two columns of a transpose: strides (1, 5)
])
def test_the_layout_of_an_operand_comes_from_its_strides(t, layout):
    assert tuned.ops._layout(t) == layout


@pytest.mark.parametrize("weight, layout", [
    (torch.zeros(5, 8), "t"),                # row-major (N, K): B = weight.t() is transposed
    (torch.zeros(8, 5).t(), "n"),            # the transpose of a row-major (K, N): B row-major
    (torch.zeros(5, 16)[:, ::2], None),
    (torch.zeros(1, 8), "n"),                # N = 1: B (8, 1) is row-major either way
    (torch.zeros(5, 1), "n"),                # K = 1: B (1, 5) too
])
def test_the_layout_of_linears_b_comes_from_the_weights_strides(weight, layout):
    assert tuned.ops._weight_layout(weight) == layout


def test_math_modes_map_to_the_problems_math_and_cublas_tf32():
    assert tuned.ops._math("ieee_fp32") == (pb.MATH_IEEE_FP32, False)
    assert tuned.ops._math("fp32_accurate") == (pb.MATH_FP32_ACCURATE, False)
    assert tuned.ops._math("tf32") == (pb.MATH_TF32, True)
    assert tuned.ops._math(pb.MATH_TF32) == (pb.MATH_TF32, True)
    for bad in ("fp16", "TF32", "", None, True, 7):
        with pytest.raises(ValueError, match="unknown math mode"):
            tuned.ops._math(bad)


# ---- argument checks: before the daemon, the driver or torch runs ----

@pytest.mark.parametrize("a, b, kwargs, error, text", [
    ([[1.0]], torch.zeros(8, 2), {}, TypeError, "a must be a torch.Tensor, not list"),
    (torch.zeros(4, 8), "b", {}, TypeError, "b must be a torch.Tensor, not str"),
    (torch.zeros(4, 8, dtype=torch.float64), torch.zeros(8, 2), {}, TypeError, "a must be float32"),
    (torch.zeros(4, 8), torch.zeros(8, 2, dtype=torch.int32), {}, TypeError, "b must be float32"),
    (torch.zeros(2, 4, 8), torch.zeros(8, 2), {}, ValueError, "a must be a matrix"),
    (torch.zeros(4, 8), torch.zeros(8), {}, ValueError, "b must be a matrix"),
    (torch.zeros(4, 8), torch.zeros(7, 2), {}, ValueError, "inner dimensions differ"),
    (torch.zeros(4, 8), torch.zeros(8, 2), dict(math="fp16"), ValueError, "unknown math mode 'fp16'"),
    (torch.zeros(4, 8), torch.zeros(8, 2), {}, ValueError, "must be on a CUDA device, not cpu"),
    (torch.zeros(4, 8), torch.zeros(2, 8).t(), {}, ValueError, "must be on a CUDA device"),
])
def test_matmul_checks_before_asking_the_daemon(a, b, kwargs, error, text):
    with pytest.raises(error, match=text):
        tuned.matmul(a, b, client=NoDaemon(), **kwargs)


@pytest.mark.parametrize("out, error, text", [
    (torch.zeros(4, 3), ValueError, r"out has shape \(4, 3\), expected \(4, 2\)"),
    (torch.zeros(4, 2, dtype=torch.float64), TypeError, "out must be float32"),
    (torch.zeros(2, 4).t(), ValueError, "out must be contiguous"),
    (torch.zeros(4, 2, device="meta"), ValueError, "out is on meta"),
    ([0.0], TypeError, "out must be a torch.Tensor"),
])
def test_matmul_checks_out(cpu, out, error, text):
    with pytest.raises(error, match=text):
        tuned.matmul(torch.zeros(4, 8), torch.zeros(8, 2), out=out, client=NoDaemon())


def test_operands_on_two_devices_are_refused(cpu):
    with pytest.raises(ValueError, match="b is on meta, a on cpu"):
        tuned.matmul(torch.zeros(4, 8), torch.zeros(8, 2, device="meta"), client=NoDaemon())


@pytest.mark.parametrize("x, weight, bias, kwargs, error, text", [
    (torch.zeros(3, 8, dtype=torch.float64), torch.zeros(4, 8), None, {}, TypeError, "x must be float32"),
    (torch.zeros(3, 8), [[0.0]], None, {}, TypeError, "weight must be a torch.Tensor"),
    (torch.zeros(3, 8), torch.zeros(4, 8), torch.zeros(4, dtype=torch.float16), {}, TypeError,
     "bias must be float32"),
    (torch.zeros(3, 8), torch.zeros(8), None, {}, ValueError, "weight must be a matrix"),
    (torch.zeros(()), torch.zeros(4, 8), None, {}, ValueError, "at least one dimension"),
    (torch.zeros(3, 7), torch.zeros(4, 8), None, {}, ValueError, r"x has 7 features .* takes 8"),
    (torch.zeros(3, 8), torch.zeros(4, 8), torch.zeros(5), {}, ValueError,
     r"bias of shape \(5,\) does not broadcast to the output's \(3, 4\)"),
    (torch.zeros(3, 8), torch.zeros(4, 8), torch.zeros(2, 3, 4), {}, ValueError,
     "does not broadcast"),  # it would grow the output
    (torch.zeros(3, 8), torch.zeros(4, 8), None, dict(math="bf16"), ValueError, "unknown math mode"),
    (torch.zeros(3, 8), torch.zeros(4, 8), torch.zeros(4), {}, ValueError,
     "must be on a CUDA device, not cpu"),
])
def test_linear_checks_before_asking_the_daemon(x, weight, bias, kwargs, error, text):
    with pytest.raises(error, match=text):
        tuned.linear(x, weight, bias, client=NoDaemon(), **kwargs)


# ---- routes ----

@pytest.mark.parametrize("math", ["ieee_fp32", "fp32_accurate", "tf32"])
def test_each_layout_runs_its_own_kernel_on_the_operands_as_they_are(cpu, math):
    """Transposed views pick the layout from their strides; the daemon is
    asked for that layout's kernel (once per shape, layout and mode), which
    gets the operands' own pointers: no copy."""
    daemon = FakeDaemon()
    mode = tuned.ops._math(math)[0]
    for layout in ("nn", "nt", "tn", "tt"):
        a, b = operands(layout)
        assert tuned.ops._layout(a) + tuned.ops._layout(b) == layout
        for _ in range(2):
            assert close(tuned.matmul(a, b, math=math, client=daemon), a @ b)
        # A and B as they are
        assert cuda_fake.sgemm_pointers(cpu.launches[-1])[:2] == (a.data_ptr(), b.data_ptr())
        assert cpu.layouts[-2:] == [layout, layout]
    assert daemon.asked == [((6, 5, 8), mode, layout, False) for layout in ("nn", "nt", "tn", "tt")]
    assert sorted(r.layout for r in tuned.ops._routes.values()) == ["nn", "nt", "tn", "tt"]
    assert all(r.kernel is not None and not r.copy_a and not r.copy_b
               for r in tuned.ops._routes.values())
    assert len(tuned.ops._kernels) == 4


def test_a_transposed_view_is_not_copied(cpu, monkeypatch):
    """No .contiguous() copy of a transposed operand: Tensor.contiguous is
    never asked for one that is not contiguous already."""
    daemon = FakeDaemon()
    a, b = operands("tt", m=16, n=12, k=8)
    copied = []
    real = torch.Tensor.contiguous

    def contiguous(t, *args, **kwargs):
        if not t.is_contiguous():
            copied.append(tuple(t.shape))
        return real(t, *args, **kwargs)
    monkeypatch.setattr(torch.Tensor, "contiguous", contiguous)
    for _ in range(2):
        assert close(tuned.matmul(a, b, client=daemon), a @ b)
        assert close(tuned.linear(a, randn(12, 8), client=daemon), a @ randn(12, 8).t())
    assert copied == []


@pytest.mark.parametrize("math, tf32", [("ieee_fp32", False), ("fp32_accurate", False),
                                        ("tf32", True)])
def test_a_daemon_serving_cublas_runs_torch_on_the_operands_as_they_are(cpu, monkeypatch, math,
                                                                          tf32):
    """Where cuBLAS is served for a layout, torch.matmul gets the very
    tensors passed (transposed views, no copy), in the mode."""
    seen = []
    real = torch.matmul

    def recording(x, y, **kwargs):
        seen.append((x, y, torch.backends.cuda.matmul.allow_tf32))
        return real(x, y, **kwargs)
    monkeypatch.setattr(torch, "matmul", recording)
    daemon = FakeDaemon(cublas=True)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for layout in ("nt", "tn", "tt"):
            a, b = operands(layout)
            assert close(tuned.matmul(a, b, math=math, client=daemon), real(a, b))
            x, y, tf32_on = seen[-1]
            assert x is a and y is b and tf32_on is tf32
        assert torch.backends.cuda.matmul.allow_tf32 is False  # restored
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    assert [asked[2] for asked in daemon.asked] == ["nt", "tn", "tt"]
    assert cpu.launches == []


def test_a_daemon_older_than_layouts_is_not_trusted_with_them(cpu, tf32_seen):
    """A daemon that ignores Problem.layout answers with its "nn" kernel
    (its config names no LAYOUT): torch runs the transposed call, warned
    once; "nn" still runs the kernel."""
    daemon = FakeDaemon(before_layouts=True)
    a, b = operands("nt")
    with pytest.warns(RuntimeWarning, match="does not tune layouts"):
        assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert cpu.launches == [] and tf32_seen == [False, False]
    a, b = operands("nn")
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert len(cpu.launches) == 1 and cpu.layouts == ["nn"]


def test_nn_runs_the_daemons_kernel_asked_once(cpu):
    daemon = FakeDaemon()
    a, b = randn(64, 16), randn(16, 32, seed=1)
    for _ in range(3):
        assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert daemon.asked == [((64, 32, 16), pb.MATH_IEEE_FP32, "nn", False)]
    assert len(cpu.launches) == 3
    # Each mode is its own problem, asked once; tune_if_missing is passed on.
    tuned.matmul(a, b, math="tf32", client=daemon, tune_if_missing=True)
    tuned.matmul(a, b, math="tf32", client=daemon)
    assert daemon.asked[1:] == [((64, 32, 16), pb.MATH_TF32, "nn", True)]
    # out=: written in place, through the same route.
    out = torch.full((64, 32), float("nan"))
    assert tuned.matmul(a, b, out=out, client=daemon) is out and close(out, a @ b)
    assert len(daemon.asked) == 2


def test_an_operand_of_other_strides_is_copied_for_the_kernel(cpu):
    daemon = FakeDaemon()
    wide = randn(64, 40)
    a = wide[:, 8:24]  # (64, 16), a row pitch of 40
    b = randn(16, 64, seed=1)[:, ::2]  # (16, 32), every other column
    assert tuned.ops._layout(a) is None and tuned.ops._layout(b) is None
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    (route,) = tuned.ops._routes.values()
    assert route.layout == "nn" and route.copy_a and route.copy_b and route.kernel is not None
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert len(daemon.asked) == 1


def test_a_daemon_serving_cublas_runs_torch_in_the_mode(cpu, tf32_seen):
    daemon = FakeDaemon(cublas=True)
    a, b = randn(64, 16), randn(16, 32, seed=1)
    for math in ("tf32", "ieee_fp32", "tf32"):
        assert close(tuned.matmul(a, b, math=math, client=daemon), a @ b)
    assert tf32_seen == [True, False, True]
    assert len(daemon.asked) == 2 and cpu.launches == []


def test_a_first_call_during_a_cuda_graph_capture_is_refused(cpu, monkeypatch):
    """The daemon is asked and the kernel loaded at a key's first call: not
    inside a capture. A key seen before is fine; a layout not seen before is
    a first call too."""
    daemon = FakeDaemon()
    a, b = randn(64, 16), randn(16, 32, seed=1)
    tuned.matmul(a, b, client=daemon)
    monkeypatch.setattr(tuned.ops, "_capturing", lambda: True)
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    for a2, b2 in ((randn(32, 16), b), (a, randn(32, 16).t())):
        with pytest.raises(tuned.TunedError, match="during a CUDA graph capture: call it once "
                                                   "before") as e:
            tuned.matmul(a2, b2, client=daemon)
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION


# ---- linear ----

@pytest.mark.parametrize("lead", [(), (6,), (2, 3)])
def test_linear_of_a_row_major_weight_runs_the_nt_kernel_on_the_weight_as_stored(cpu, lead):
    """An nn.Linear's weight (N, K), row-major: op(B) = weight^T, layout "nt",
    the daemon's "nt" kernel reading the weight where it is."""
    daemon = FakeDaemon()
    x, w, bias = randn(*lead, 8), randn(5, 8, seed=1), randn(5, seed=2)
    y = tuned.linear(x, w, bias, math="tf32", client=daemon)
    assert close(y, x @ w.t() + bias)
    assert y.shape == (*lead, 5)
    m = max(1, x.numel() // 8)
    assert daemon.asked == [((m, 5, 8), pb.MATH_TF32, "nt", False)]
    (route,) = tuned.ops._routes.values()
    assert route.layout == "nt" and route.kernel is not None and not route.copy_b
    assert cuda_fake.sgemm_pointers(cpu.launches[-1])[:2] == (x.data_ptr(), w.data_ptr())
    assert cpu.layouts == ["nt"]
    # A bias of another shape that broadcasts: added after the GEMM.
    if lead:
        bias2 = randn(*lead[-1:], 5, seed=3)
        assert close(tuned.linear(x, w, bias2, client=daemon), x @ w.t() + bias2)


def test_linear_where_cublas_is_served_is_f_linear_in_the_mode(cpu, tf32_seen):
    daemon = FakeDaemon(cublas=True)
    x, w, bias = randn(2, 3, 8), randn(5, 8, seed=1), randn(5, seed=2)
    assert close(tuned.linear(x, w, bias, math="tf32", client=daemon), x @ w.t() + bias)
    assert tf32_seen == [True]  # (F.linear, recorded)
    (route,) = tuned.ops._routes.values()
    assert route.layout == "nt" and route.kernel is None


@pytest.mark.parametrize("weight_layout, layout", [("t", "tt"), ("n", "tn")])
def test_linear_of_a_transposed_x_reads_it_as_op_a_transposed(cpu, weight_layout, layout):
    """A 2-D x that is the .t() of a contiguous (K, M): op(A) = A^T, no copy;
    an x of other strides (same shape) has a route of its own, copied."""
    daemon = FakeDaemon()
    x = randn(8, 6).t()  # (6, 8)
    w = randn(5, 8, seed=1) if weight_layout == "t" else randn(8, 5, seed=1).t()
    assert close(tuned.linear(x, w, client=daemon), x @ w.t())
    assert daemon.asked[-1][2] == layout and cpu.layouts[-1] == layout
    assert cuda_fake.sgemm_pointers(cpu.launches[-1])[:2] == (x.data_ptr(), w.data_ptr())
    strided = randn(6, 16)[:, ::2]  # (6, 8), neither "n" nor "t"
    assert close(tuned.linear(strided, w, client=daemon), strided @ w.t())
    assert cpu.layouts[-1] == "n" + layout[1]
    assert close(tuned.linear(x, w, client=daemon), x @ w.t())  # its own route still
    assert cpu.layouts[-1] == layout and len(tuned.ops._routes) == 2


@pytest.mark.parametrize("lead, bias_shape", [((6,), None), ((6,), (5,)), ((2, 3), (5,)),
                                              ((2, 3), (3, 5)), ((2, 3), (1, 1, 5)), ((), (5,))])
def test_linear_flattens_x_for_the_kernel_and_adds_the_bias(cpu, lead, bias_shape):
    """A weight that is the transpose of a row-major (K, N) matrix is layout
    "nn": the kernel's GEMM is (prod(lead) x N x K) over x's memory, the
    bias broadcast over its result, shaped (*lead, N)."""
    daemon = FakeDaemon()
    x, w_kn = randn(*lead, 8), randn(8, 5, seed=1)
    weight = w_kn.t()  # (5, 8)
    bias = None if bias_shape is None else randn(*bias_shape, seed=2)
    y = tuned.linear(x, weight, bias, client=daemon)
    assert close(y, x @ weight.t() + (0 if bias is None else bias))
    m = max(1, x.numel() // 8)
    assert daemon.asked == [((m, 5, 8), pb.MATH_IEEE_FP32, "nn", False)]
    (launch,) = cpu.launches
    assert [int.from_bytes(launch["bytes"][i][:4], "little") for i in range(3)] == [m, 5, 8]
    assert close(tuned.linear(x, weight, bias, client=daemon), y) and len(daemon.asked) == 1


def test_matmul_and_linear_of_one_gemm_share_the_kernel(cpu):
    daemon = FakeDaemon()
    x, w_kn = randn(6, 8), randn(8, 5, seed=1)
    assert close(tuned.matmul(x, w_kn, client=daemon), x @ w_kn)
    assert close(tuned.linear(x, w_kn.t(), randn(5), client=daemon), x @ w_kn + randn(5))
    assert len(daemon.asked) == 1 and len(tuned.ops._kernels) == 1 and len(tuned.ops._routes) == 2
    assert cpu.calls.count(("load", b"\x7fELF")) == 1


def test_linear_of_a_non_contiguous_x_copies_it_for_the_kernel(cpu):
    daemon = FakeDaemon()
    x = randn(3, 16, 2)[:, :8, 0]  # (3, 8), strided
    weight = randn(8, 5, seed=1).t()
    assert close(tuned.linear(x, weight, None, client=daemon), F.linear(x, weight))
    x3 = randn(4, 2, 8).transpose(0, 1)  # (2, 4, 8), not viewable as (8, 8)
    assert close(tuned.linear(x3, weight, None, client=daemon), F.linear(x3, weight))


# ---- gradients ----

def test_gradients_flow_through_matmul_and_linear(cpu):
    daemon = FakeDaemon()
    a = randn(6, 8).requires_grad_()
    b = randn(8, 5, seed=1).requires_grad_()
    (tuned.matmul(a, b, client=daemon) ** 2).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ((a2 @ b2) ** 2).sum().backward()
    assert close(a.grad, a2.grad) and close(b.grad, b2.grad)

    x = randn(2, 3, 8).requires_grad_()
    w = randn(5, 8, seed=1).requires_grad_()
    bias = randn(5, seed=2).requires_grad_()
    (tuned.linear(x, w, bias, client=daemon) ** 2).sum().backward()
    x2, w2, bias2 = (t.detach().clone().requires_grad_() for t in (x, w, bias))
    (F.linear(x2, w2, bias2) ** 2).sum().backward()
    assert close(x.grad, x2.grad) and close(w.grad, w2.grad) and close(bias.grad, bias2.grad)
    with pytest.raises(ValueError, match="out= does not take part in autograd"):
        tuned.matmul(a, b, out=torch.zeros(6, 5), client=daemon)
    with torch.no_grad():  # no graph: the direct path
        assert not tuned.matmul(a, b, client=daemon).requires_grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmul_call_overhead_on_the_cpu(cpu, monkeypatch, dtype):
    """tuned.matmul's own CPU time on a cached route, the launch a no-op,
    for float32 and bfloat16 operands alike: printed, with a loose bound
    that a slow path taken by mistake breaks."""
    import time

    class Quiet(cuda_fake.FakeDriver):
        def cuLaunchKernelEx(self, config, function, params, extra):
            return 0

    cuda_fake.install(monkeypatch, Quiet())
    daemon = FakeDaemon()
    a, b = torch.zeros(64, 16, dtype=dtype), torch.zeros(16, 32, dtype=dtype)
    for _ in range(200):
        tuned.matmul(a, b, client=daemon)
    calls = 2000
    start = time.perf_counter_ns()
    for _ in range(calls):
        tuned.matmul(a, b, client=daemon)
    us = (time.perf_counter_ns() - start) / calls / 1e3
    print(f"\ntuned.matmul ({dtype}) with a Python stand-in driver: {us:.2f} us a call")
    assert us < 100 and len(daemon.asked) == 1


# ---- the torch operators (torch >= 2.4) ----

def test_the_operators_are_registered_where_torch_has_custom_op():
    if not HAS_CUSTOM_OP:
        assert tuned.ops.OPS_REGISTERED is False
        pytest.skip(NO_OPS)
    assert tuned.ops.OPS_REGISTERED
    schema = str(torch.ops.tuned.matmul.default._schema)  # math's default shown by newer torch
    assert schema.startswith("tuned::matmul(Tensor a, Tensor b, str math"), schema
    assert schema.endswith("ScalarType? out_dtype=None) -> Tensor"), schema
    assert "Tensor? bias" in str(torch.ops.tuned.linear.default._schema)


needs_ops = pytest.mark.skipif(not HAS_CUSTOM_OP, reason=NO_OPS)


@needs_ops
def test_the_fake_implementations_give_shapes_and_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        c = torch.ops.tuned.matmul(torch.empty(4, 8), torch.empty(8, 2), "tf32")
        y = torch.ops.tuned.linear(torch.empty(2, 3, 8), torch.empty(5, 8), None, "ieee_fp32")
    assert c.shape == (4, 2) and c.dtype == torch.float32
    assert y.shape == (2, 3, 5)


@needs_ops
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_fake_implementations_keep_a_16bit_dtype(dtype):
    """While tracing, a 16-bit GEMM's output is of its operands' dtype; mixed
    dtypes and a 16-bit dtype in another math mode are refused as eagerly."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        c = torch.ops.tuned.matmul(torch.empty(4, 8, dtype=dtype), torch.empty(8, 2, dtype=dtype),
                                   "ieee_fp32")
        y = torch.ops.tuned.linear(torch.empty(2, 3, 8, dtype=dtype), torch.empty(5, 8, dtype=dtype),
                                   torch.empty(5, dtype=dtype), "ieee_fp32")
        assert c.shape == (4, 2) and c.dtype is dtype
        assert y.shape == (2, 3, 5) and y.dtype is dtype
        name = str(dtype).removeprefix("torch.")
        with pytest.raises((tuned.DTypeError, RuntimeError), match=f"b must be {name} as a is"):
            torch.ops.tuned.matmul(torch.empty(4, 8, dtype=dtype), torch.empty(8, 2), "ieee_fp32")
        with pytest.raises((tuned.DTypeError, RuntimeError), match="math 'tf32' is for float32"):
            torch.ops.tuned.linear(torch.empty(3, 8, dtype=dtype), torch.empty(5, 8, dtype=dtype),
                                   None, "tf32")


@needs_ops
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_matmul_operators_out_dtype_gives_a_float32_result(cpu, dtype):
    """tuned::matmul's out_dtype (None by default): torch.float32 with 16-bit
    operands gives a float32 output while tracing and eagerly (the
    fp32-output problem's kernel), another out_dtype is refused; a
    compiled tuned.matmul(out_dtype=torch.float32) keeps it, with no graph
    break."""
    import torch._dynamo
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b = torch.empty(4, 8, dtype=dtype), torch.empty(8, 2, dtype=dtype)
        c = torch.ops.tuned.matmul(a, b, "ieee_fp32", torch.float32)
        assert c.shape == (4, 2) and c.dtype is torch.float32
        assert torch.ops.tuned.matmul(a, b, "ieee_fp32").dtype is dtype
        with pytest.raises((tuned.DTypeError, RuntimeError), match="out_dtype must be None"):
            torch.ops.tuned.matmul(a, b, "ieee_fp32", torch.float64)
    torch._dynamo.reset()
    daemon = FakeDaemon()
    monkeypatch_client(daemon)
    a, w = randn(6, 8).to(dtype), randn(5, 8, seed=1).to(dtype)
    want = (a.double() @ w.double().t()).float()
    assert torch.equal(torch.ops.tuned.matmul(a, w.t(), "ieee_fp32", torch.float32), want)

    def f(a, w):
        return tuned.matmul(a, w.t(), out_dtype=torch.float32)

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(a, w)
    assert got.dtype is torch.float32 and torch.equal(got, want)
    assert set(daemon.dtypes) == {tuned.ops._DTYPES[dtype] + "_f32"}


@needs_ops
def test_the_operators_run_the_eager_path(cpu):
    daemon = FakeDaemon()
    monkeypatch_client(daemon)
    a, b = randn(64, 16), randn(16, 32, seed=1)
    assert close(torch.ops.tuned.matmul(a, b, "ieee_fp32"), a @ b)
    x, w = randn(2, 3, 16), randn(32, 16, seed=1)
    assert close(torch.ops.tuned.linear(x, w, None, "tf32"), F.linear(x, w))
    torch.library.opcheck(torch.ops.tuned.matmul.default, (a, b, "ieee_fp32"),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


@pytest.mark.parametrize("args, math, text", [
    ((torch.empty(4, 8, dtype=torch.bfloat16, device="meta"), torch.empty(8, 2, device="meta")),
     "ieee_fp32", "b must be bfloat16 as a is, not torch.float32"),
    ((torch.empty(4, 8, dtype=torch.float16, device="meta"),
      torch.empty(8, 2, dtype=torch.float16, device="meta")), "tf32",
     "math 'tf32' is for float32 operands; torch.float16 takes math 'ieee_fp32' only"),
    ((torch.empty(4, 8, dtype=torch.float64, device="meta"), torch.empty(8, 2, device="meta")),
     "ieee_fp32", "a must be float32, bfloat16 or float16, not torch.float64"),
])
def test_the_fake_implementations_check_dtypes_as_the_eager_path(args, math, text):
    """_fake_matmul and _fake_linear (the operators' implementations while
    tracing) refuse what the eager path refuses, on meta tensors."""
    with pytest.raises(tuned.DTypeError, match=text):
        tuned.ops._fake_matmul(*args, math)
    x, b = args
    with pytest.raises(tuned.DTypeError, match=text.replace("as a is", "as x is")
                       .replace("a must", "x must").replace("b must", "weight must")):
        tuned.ops._fake_linear(x, b.t(), None, math)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_fake_matmul_refuses_an_out_dtype_as_the_eager_path(dtype):
    """_fake_matmul's out_dtype other than None, the operands' dtype and
    float32: a DTypeError naming it and the operands' dtype, on meta
    tensors (the dtypes of its outputs need torch >= 2.4: see
    test_the_matmul_operators_out_dtype_gives_a_float32_result)."""
    a = torch.empty(4, 8, dtype=dtype, device="meta")
    b = torch.empty(8, 2, dtype=dtype, device="meta")
    with pytest.raises(tuned.DTypeError, match="out_dtype must be None, the operands' dtype or "
                                               r"torch.float32, not torch.float64 \(" + str(dtype)):
        tuned.ops._fake_matmul(a, b, "ieee_fp32", torch.float64)
    f32 = torch.empty(4, 8, device="meta"), torch.empty(8, 2, device="meta")
    with pytest.raises(tuned.DTypeError, match=f"not {dtype} \\(torch.float32 operands\\)"):
        tuned.ops._fake_matmul(*f32, "tf32", dtype)


@needs_ops
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_compiled_16bit_function_has_no_graph_break_and_matches_eager(cpu, dtype):
    """torch.compile(fullgraph=True) of tuned.matmul ("nt") then tuned.linear
    ("nt", with a bias) on 16-bit tensors: the operators in the graph keep
    the dtype, the daemon is asked for that dtype's problems, the result
    equals the eager one's."""
    import torch._dynamo

    torch._dynamo.reset()
    daemon = FakeDaemon()
    monkeypatch_client(daemon)
    a, w = randn(6, 8).to(dtype), randn(5, 8, seed=1).to(dtype)
    w2, bias = randn(3, 5, seed=2).to(dtype), randn(3, seed=3).to(dtype)

    def f(a, w, w2, bias):
        return tuned.linear(tuned.matmul(a, w.t()), w2, bias)

    want = f(a, w, w2, bias)
    assert want.dtype is dtype and want.shape == (6, 3)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(a, w, w2, bias)
    assert got.dtype is dtype and torch.equal(got, want)
    assert torch.ops.tuned.matmul(a, w.t(), "ieee_fp32").dtype is dtype
    assert set(daemon.dtypes) == {tuned.ops._DTYPES[dtype]}
    assert {(shape, layout) for shape, _, layout, _ in daemon.asked} == {((6, 5, 8), "nt"),
                                                                         ((6, 3, 5), "nt")}


def monkeypatch_client(daemon):
    """The operators take no client: the default one of the device (-1, the CPU here)."""
    tuned.ops._clients[-1] = daemon


class Model(torch.nn.Module):
    """A GEMM in each layout, transposed operands as views (never copied)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Parameter(randn(16, 32, seed=3))  # (K, N): x @ proj, "nn"
        self.back = torch.nn.Parameter(randn(24, 32, seed=5))  # h @ back.t(): "nt"
        self.mix = torch.nn.Parameter(randn(64, 48, seed=6))  # mix.t() @ g: "tn"
        self.lin = torch.nn.Linear(24, 8)  # weight (8, 24) row-major: "nt"

    def forward(self, x):
        h = torch.relu(tuned.matmul(x, self.proj, math="ieee_fp32"))
        g = tuned.matmul(h, self.back.t(), math="fp32_accurate")
        z = tuned.matmul(self.mix.t(), g)
        return tuned.linear(z, self.lin.weight, self.lin.bias, math="tf32")

    def reference(self, x):
        h = torch.relu(x @ self.proj)
        return F.linear(self.mix.t() @ (h @ self.back.t()), self.lin.weight, self.lin.bias)


@needs_ops
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_model_has_no_graph_break_and_matches_eager(cpu, backend):
    """torch.compile(fullgraph=True) (which fails at a graph break) of a
    model calling tuned.matmul and tuned.linear in layouts nn, nt and tn:
    the operators in the graph, run by the eager path (each layout's kernel
    on the Emulator), equal to the eager model's result."""
    import torch._dynamo

    torch._dynamo.reset()
    daemon = FakeDaemon()
    monkeypatch_client(daemon)
    model = Model()
    x = randn(64, 16, seed=4)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, fullgraph=True, backend=backend)(x)
        assert close(want, model.reference(x))
    assert close(got, want)  # (fullgraph=True raises at a graph break)
    asked = {(shape, layout) for shape, _, layout, _ in daemon.asked}
    assert {((64, 32, 16), "nn"), ((64, 24, 32), "nt"), ((48, 24, 64), "tn"),
            ((48, 8, 24), "nt")} <= asked
