"""tuned.matmul and tuned.linear on bf16 and f16 operands without a GPU:
each dtype's kernel in each layout (run by cuda_fake.Emulator on CPU
tensors), the dtype checks before the daemon is asked, math modes, served
cuBLAS, and gradients; tuned.matmul's out_dtype=torch.float32 (the
bf16_f32 and f16_f32 problems)."""

import ctypes

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


DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}


def rounded(x, dtype):
    """x's GEMM result as a 16-bit kernel gives it: the exact sum, rounded once to `dtype`."""
    return x.to(dtype)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16bit_operands_run_their_dtypes_kernel_in_each_layout(cpu, dtype):
    """bfloat16 (float16) matrices ask the daemon for the bf16 (f16) problem
    in their layout, whose kernel gets their own pointers (transposed views:
    no copy) and writes a result of their dtype; each (dtype, layout) is
    asked once, and float32 operands of the same shapes are another
    problem."""
    daemon = FakeDaemon()
    t = DTYPE[dtype]
    for layout in ("nn", "nt", "tn", "tt"):
        a, b = (x.to(t) for x in operands(layout, m=7, n=5, k=9))
        want = rounded(a.double() @ b.double(), t)
        for _ in range(2):  # the first call asks the daemon, the second finds the route
            c = tuned.matmul(a, b, client=daemon)
            assert c.dtype is t and c.shape == (7, 5) and torch.equal(c, want)
            assert cuda_fake.sgemm_pointers(cpu.launches[-1]) == (a.data_ptr(), b.data_ptr(),
                                                                  c.data_ptr())
        out = torch.full((7, 5), float("nan"), dtype=t)
        assert tuned.matmul(a, b, out=out, client=daemon) is out and torch.equal(out, want)
    assert daemon.asked == [((7, 5, 9), pb.MATH_IEEE_FP32, layout, False)
                            for layout in ("nn", "nt", "tn", "tt")]
    assert daemon.dtypes == [dtype] * 4
    assert cpu.dtypes == [dtype] * 12 and cpu.layouts == [x for x in ("nn", "nt", "tn", "tt")
                                                          for _ in range(3)]
    assert all(r.dtype is t and r.tf32 is None for r in tuned.ops._routes.values())
    assert len(tuned.ops._kernels) == 4
    a, b = operands("nn", m=7, n=5, k=9)
    assert close(tuned.matmul(a, b, client=daemon), a @ b)
    assert daemon.dtypes[-1] == "f32" and cpu.dtypes[-1] == "f32" and len(tuned.ops._kernels) == 5


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16bit_linear_runs_the_nt_kernel_with_the_bias_epilogue(cpu, dtype):
    """The bias of shape (N,) is the kernel's (the "bias" epilogue): added
    to the fp32 sums, the result rounded once."""
    daemon = FakeDaemon()
    t = DTYPE[dtype]
    x, w, bias = randn(2, 3, 8).to(t), randn(5, 8, seed=1).to(t), randn(5, seed=2).to(t)
    y = tuned.linear(x, w, bias, client=daemon)
    assert y.dtype is t and y.shape == (2, 3, 5)
    assert torch.equal(y, rounded(x.double() @ w.double().t() + bias.double(), t))
    assert daemon.asked == [((6, 5, 8), pb.MATH_IEEE_FP32, "nt", False)]
    assert daemon.epilogues == ["bias"]
    assert daemon.dtypes == [dtype] and cpu.layouts == ["nt"] and cpu.dtypes == [dtype]
    assert cuda_fake.sgemm_pointers(cpu.launches[-1])[:2] == (x.data_ptr(), w.data_ptr())
    assert torch.equal(tuned.linear(x, w, bias, client=daemon), y) and len(daemon.asked) == 1


@pytest.mark.parametrize("call, args, kwargs, text", [
    ("matmul", (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, 2)), {},
     "b must be bfloat16 as a is, not torch.float32"),
    ("matmul", (torch.zeros(4, 8), torch.zeros(8, 2, dtype=torch.float16)), {},
     "b must be float32 as a is, not torch.float16"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.float16), torch.zeros(8, 2, dtype=torch.bfloat16)),
     {}, "b must be float16 as a is, not torch.bfloat16"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.float64), torch.zeros(8, 2)), {},
     "a must be float32, bfloat16 or float16, not torch.float64"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, 2, dtype=torch.bfloat16)),
     dict(math="tf32"),
     "math 'tf32' is for float32 operands; torch.bfloat16 takes math 'ieee_fp32' only"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.float16), torch.zeros(8, 2, dtype=torch.float16)),
     dict(math=pb.MATH_FP32_ACCURATE),
     "math 'fp32_accurate' is for float32 operands; torch.float16 takes math 'ieee_fp32' only"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, 2, dtype=torch.bfloat16)),
     dict(out=torch.zeros(4, 2)), "out must be bfloat16 as the operands are, not torch.float32; "
                                  "out_dtype=torch.float32 asks for a float32 result"),
    ("linear", (torch.zeros(3, 8, dtype=torch.bfloat16), torch.zeros(4, 8, dtype=torch.bfloat16),
                torch.zeros(4)), {}, "bias must be bfloat16 as x is, not torch.float32"),
    ("linear", (torch.zeros(3, 8, dtype=torch.float16), torch.zeros(4, 8)), {},
     "weight must be float16 as x is, not torch.float32"),
    ("linear", (torch.zeros(3, 8, dtype=torch.float16), torch.zeros(4, 8, dtype=torch.float16)),
     dict(math="fp32_accurate"), "math 'fp32_accurate' is for float32 operands"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, 2, dtype=torch.bfloat16)),
     dict(out_dtype=torch.float32, out=torch.zeros(4, 2, dtype=torch.bfloat16)),
     "out must be float32 as out_dtype is, not torch.bfloat16"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.bfloat16), torch.zeros(8, 2, dtype=torch.bfloat16)),
     dict(out_dtype=torch.float16),
     "out_dtype must be None, the operands' dtype or torch.float32, not torch.float16 "
     "(torch.bfloat16 operands)"),
    ("matmul", (torch.zeros(4, 8), torch.zeros(8, 2)), dict(out_dtype=torch.bfloat16),
     "out_dtype must be None, the operands' dtype or torch.float32, not torch.bfloat16 "
     "(torch.float32 operands)"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.float16), torch.zeros(8, 2, dtype=torch.float16)),
     dict(out_dtype="float32"), "out_dtype must be None, the operands' dtype or torch.float32, "
                                "not 'float32'"),
    ("matmul", (torch.zeros(4, 8, dtype=torch.float16), torch.zeros(8, 2, dtype=torch.float16)),
     dict(out_dtype=torch.float32, math="tf32"),
     "math 'tf32' is for float32 operands; torch.float16 takes math 'ieee_fp32' only"),
])
def test_dtypes_are_checked_before_asking_the_daemon(cpu, call, args, kwargs, text):
    """Operands of two dtypes (as torch refuses them), another dtype, an out
    of another dtype, or a 16-bit dtype in a math mode other than
    ieee_fp32: tuned.DTypeError, a TunedError INVALID_ARGUMENT and a
    TypeError, before the daemon is asked or anything runs."""
    with pytest.raises(tuned.DTypeError) as e:
        getattr(tuned, call)(*args, client=NoDaemon(), **kwargs)
    assert isinstance(e.value, TypeError) and e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message.startswith(text), e.value.message
    assert cpu.launches == []


def test_16bit_operands_take_math_ieee_fp32_by_name_or_value(cpu):
    daemon = FakeDaemon()
    a, b = randn(4, 8).bfloat16(), randn(8, 2, seed=1).bfloat16()
    c = tuned.matmul(a, b, math=pb.MATH_IEEE_FP32, client=daemon)
    assert torch.equal(tuned.matmul(a, b, math="ieee_fp32", client=daemon), c)
    assert daemon.dtypes == ["bf16"]  # one problem, asked once
    assert len(tuned.ops._routes) == 2 and len(tuned.ops._kernels) == 1  # a key per math as given


def test_16bit_operands_where_cublas_is_served_run_torch_on_them_as_they_are(cpu, monkeypatch,
                                                                              tf32_seen):
    """The daemon serves cuBLAS for the bf16 problem: torch.matmul and
    F.linear on the very bfloat16 tensors (transposed views, no copy), with
    torch's TF32 setting neither changed nor read (it does not touch 16-bit
    GEMMs)."""
    def no_tf32(*args):
        raise AssertionError("TF32's setting was read or changed for a 16-bit GEMM")
    monkeypatch.setattr(tuned.kernel, "_tf32_reader", no_tf32)
    monkeypatch.setattr(tuned.kernel, "_tf32_now", None)
    monkeypatch.setattr(tuned.kernel, "_tf32", no_tf32)
    seen = []
    real = torch.matmul

    def recording(x, y, **kwargs):
        seen.append((x, y))
        return real(x, y, **kwargs)
    monkeypatch.setattr(torch, "matmul", recording)
    torch.backends.cuda.matmul.allow_tf32 = True  # as a user may have it: left so
    daemon = FakeDaemon(cublas=True)
    a, b = (x.bfloat16() for x in operands("tn"))
    c = tuned.matmul(a, b, client=daemon)
    assert c.dtype is torch.bfloat16 and torch.equal(c, real(a, b))
    assert seen == [(a, b)] and seen[0][0] is a and seen[0][1] is b
    x, w = randn(2, 3, 8).bfloat16(), randn(5, 8, seed=1).bfloat16()
    y = tuned.linear(x, w, client=daemon)
    assert y.dtype is torch.bfloat16 and torch.equal(y, F.linear(x, w))
    assert daemon.dtypes == ["bf16", "bf16"] and cpu.launches == []
    assert tf32_seen == [True] * 4  # tuned's torch.matmul, the check's, tuned's F.linear, the check's
    assert torch.backends.cuda.matmul.allow_tf32 is True


def test_gradients_flow_through_16bit_matmul(cpu):
    """The backward's GEMMs are 16-bit tuned.matmul calls too (grad @ b.t():
    "nt", a.t() @ grad: "tn"), their gradients of the operands' dtype."""
    daemon = FakeDaemon()
    a = randn(6, 8).bfloat16().requires_grad_()
    b = randn(8, 5, seed=1).bfloat16().requires_grad_()
    c = tuned.matmul(a, b, client=daemon)
    assert c.dtype is torch.bfloat16
    grad = randn(6, 5, seed=2).bfloat16()
    c.backward(grad)
    assert a.grad.dtype is torch.bfloat16 and b.grad.dtype is torch.bfloat16
    assert torch.equal(a.grad, rounded(grad.double() @ b.detach().double().t(), torch.bfloat16))
    assert torch.equal(b.grad, rounded(a.detach().double().t() @ grad.double(), torch.bfloat16))
    assert [asked[2] for asked in daemon.asked] == ["nn", "nt", "tn"]
    assert daemon.dtypes == ["bf16"] * 3


# ---- out_dtype=torch.float32: the bf16_f32 and f16_f32 problems ----

@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_float32_out_dtype_runs_the_fp32_output_problems_kernel_in_each_layout(cpu, dtype):
    """16-bit operands with out_dtype=torch.float32 ask the daemon for the
    bf16_f32 (f16_f32) problem in their layout, whose kernel gets their own
    pointers and writes a float32 result, the exact products' sum rounded
    once to fp32 (more than 16 bits hold); each layout is asked once, and
    out_dtype None (or the operands' dtype) is the 16-bit result's problem,
    another kernel."""
    daemon = FakeDaemon()
    t = DTYPE[dtype]
    for layout in ("nn", "nt", "tn", "tt"):
        a, b = (x.to(t) for x in operands(layout, m=7, n=5, k=9))
        want = (a.double() @ b.double()).float()
        assert not torch.equal(want, want.to(t).float())
        for _ in range(2):  # the first call asks the daemon, the second finds the route
            c = tuned.matmul(a, b, out_dtype=torch.float32, client=daemon)
            assert c.dtype is torch.float32 and c.shape == (7, 5) and torch.equal(c, want)
            assert cuda_fake.sgemm_pointers(cpu.launches[-1]) == (a.data_ptr(), b.data_ptr(),
                                                                  c.data_ptr())
        out = torch.full((7, 5), float("nan"))
        assert tuned.matmul(a, b, out=out, out_dtype=torch.float32, client=daemon) is out
        assert torch.equal(out, want)
    assert daemon.dtypes == [dtype + "_f32"] * 4
    assert [asked[2] for asked in daemon.asked] == ["nn", "nt", "tn", "tt"]
    assert cpu.dtypes == [dtype + "_f32"] * 12
    assert all(r.dtype is t and r.out_dtype is torch.float32 and r.tf32 is None
               for r in tuned.ops._routes.values())
    assert len(tuned.ops._kernels) == 4
    c16 = tuned.matmul(a, b, client=daemon)
    assert c16.dtype is t and torch.equal(c16, rounded(a.double() @ b.double(), t))
    assert torch.equal(tuned.matmul(a, b, out_dtype=t, client=daemon), c16)  # the same kernel
    assert daemon.dtypes[4:] == [dtype] and len(tuned.ops._kernels) == 5


def test_a_float32_out_dtype_of_float32_operands_is_the_f32_problem(cpu):
    daemon = FakeDaemon()
    a, b = operands("nn", m=7, n=5, k=9)
    c = tuned.matmul(a, b, out_dtype=torch.float32, client=daemon)
    assert c.dtype is torch.float32 and close(c, a @ b)
    assert daemon.dtypes == ["f32"] and cpu.dtypes == ["f32"]


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_a_float32_out_dtype_where_cublas_is_served_runs_its_gemm_with_an_fp32_c(cpu, monkeypatch,
                                                                                tf32_seen, dtype):
    """The daemon serves cuBLAS for the bf16_f32 (f16_f32) problem: cuBLAS's
    GEMM with an fp32 C (tuned.kernel._gemm_f32_out; on the CPU torch.matmul
    of the operands widened to float32, TF32 on for the call as exact and
    torch's setting restored), a float32 result, a given out written."""
    seen = []
    real = torch.matmul

    def recording(x, y, **kwargs):
        seen.append((x.dtype, y.dtype))
        return real(x, y, **kwargs)
    monkeypatch.setattr(torch, "matmul", recording)
    daemon = FakeDaemon(cublas=True)
    t = DTYPE[dtype]
    eps = 2.0 ** (-7 if dtype == "bf16" else -10)  # (1 + eps)^2 needs more bits than 16
    a, b = torch.full((3, 8), 1 + eps, dtype=t), torch.full((5, 8), 1 + eps, dtype=t).t()
    c = tuned.matmul(a, b, out_dtype=torch.float32, client=daemon)
    assert c.dtype is torch.float32 and torch.equal(c, torch.full((3, 5), 8 * (1 + eps) ** 2))
    out = torch.zeros(3, 5)
    assert tuned.matmul(a, b, out=out, out_dtype=torch.float32, client=daemon) is out
    assert torch.equal(out, c)
    assert seen == [(torch.float32, torch.float32)] * 2 and cpu.launches == []
    assert daemon.dtypes == [dtype + "_f32"] and daemon.asked[0][2] == "nt"
    assert tf32_seen == [True, True] and torch.backends.cuda.matmul.allow_tf32 is False
    (route,) = tuned.ops._routes.values()
    assert route.kernel is None and route.out_dtype is torch.float32


def test_gradients_flow_through_a_float32_out_dtype_matmul(cpu):
    """A float32 result of bfloat16 operands: its gradient is rounded to
    bfloat16, and the backward's GEMMs are the bf16 problem's (gradients of
    the operands' dtype)."""
    daemon = FakeDaemon()
    a = randn(6, 8).bfloat16().requires_grad_()
    b = randn(8, 5, seed=1).bfloat16().requires_grad_()
    c = tuned.matmul(a, b, out_dtype=torch.float32, client=daemon)
    assert c.dtype is torch.float32
    assert torch.equal(c, (a.detach().double() @ b.detach().double()).float())
    grad = randn(6, 5, seed=2)
    c.backward(grad)
    g16 = grad.bfloat16().double()
    assert a.grad.dtype is torch.bfloat16 and b.grad.dtype is torch.bfloat16
    assert torch.equal(a.grad, rounded(g16 @ b.detach().double().t(), torch.bfloat16))
    assert torch.equal(b.grad, rounded(a.detach().double().t() @ g16, torch.bfloat16))
    assert [asked[2] for asked in daemon.asked] == ["nn", "nt", "tn"]
    assert daemon.dtypes == ["bf16_f32", "bf16", "bf16"]


@pytest.mark.parametrize("activation, epilogue, act", [
    (None, "bias", lambda y: y),
    ("relu", "bias_relu", F.relu),
    ("gelu", "bias_gelu_erf", F.gelu),
    ("gelu_tanh", "bias_gelu_tanh", lambda y: F.gelu(y, approximate="tanh")),
])
def test_16bit_linear_with_a_bias_asks_for_the_epilogue_the_kernel_applies(
        cpu, activation, epilogue, act):
    """A 16-bit linear with a bias of shape (N,) asks the daemon for the
    problem with the epilogue of its activation (Problem.epilogue), whose
    kernel gets the bias after C and returns bias and activation applied,
    rounded once; without a bias it asks for the plain problem and torch
    applies the activation after."""
    daemon = FakeDaemon()
    t = torch.bfloat16
    x, w, bias = randn(2, 3, 8).to(t), randn(5, 8, seed=1).to(t), randn(5, seed=2).to(t)
    want = act(x.double() @ w.double().t() + bias.double()).to(t)
    for _ in range(2):  # the second call finds the route
        y = tuned.linear(x, w, bias, activation=activation, client=daemon)
        assert y.dtype is t and y.shape == (2, 3, 5)
        assert torch.equal(y, want)
    assert daemon.epilogues == [epilogue]
    launch = cpu.launches[-1]
    assert len(launch["params"]) == 9
    assert ctypes.c_void_p.from_buffer_copy(launch["bytes"][8]).value == bias.data_ptr()
    if activation is not None:
        y = tuned.linear(x, w, None, activation=activation, client=daemon)
        assert torch.equal(y, act(rounded(x.double() @ w.double().t(), t)))
        assert daemon.epilogues[-1] == "none"


def test_linear_activations_outside_an_epilogue_are_torchs(cpu):
    """float32 operands, a bias of another shape, a served cuBLAS, and a
    gradient: the activation is torch's, after; an unknown one is refused."""
    x, w, bias = randn(6, 8), randn(5, 8, seed=1), randn(5, seed=2)
    daemon = FakeDaemon()
    y = tuned.linear(x, w, bias, activation="gelu", client=daemon)
    assert close(y, F.gelu(x @ w.t() + bias)) and daemon.epilogues == ["none"]
    t = torch.bfloat16
    wide = randn(6, 5, seed=3).to(t)  # broadcasts to (6, 5): added after the GEMM
    y = tuned.linear(x.to(t), w.to(t), wide, activation="relu", client=daemon)
    assert daemon.epilogues[-1] == "none"
    assert torch.allclose(y.float(), F.relu(x.to(t).float() @ w.to(t).float().t() + wide.float()),
                          atol=5e-2)
    cublas = FakeDaemon(cublas=True)
    y = tuned.linear(x.to(t), w.to(t), bias.to(t), activation="gelu_tanh", client=cublas)
    assert cublas.epilogues == ["bias_gelu_tanh"]
    assert torch.equal(y, F.gelu(F.linear(x.to(t), w.to(t), bias.to(t)), approximate="tanh"))
    xg = x.clone().requires_grad_()
    tuned.linear(xg, w, bias, activation="relu", client=daemon).sum().backward()
    assert xg.grad is not None and xg.grad.shape == x.shape
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        tuned.linear(x, w, bias, activation="swish", client=NoDaemon())


def test_a_kernel_with_an_epilogue_takes_its_bias(cpu):
    """tuned.Kernel.sgemm of a problem with an epilogue: the bias (N
    elements of out's dtype) goes to the kernel after C; it is required
    there, and refused by a kernel without one."""
    t = torch.bfloat16
    best = FakeDaemon().best(6, 5, 8, layout="nt", dtype="bf16", epilogue="bias_relu")
    kernel = cuda_fake.on_cpu(tuned.Kernel(best, device="cuda:0"))
    assert kernel.epilogue == "bias_relu"
    a, w, bias = randn(6, 8).to(t), randn(5, 8, seed=1).to(t), randn(5, seed=2).to(t)
    out = kernel.sgemm(a, w.t(), bias=bias)
    assert torch.equal(out, F.relu(a.double() @ w.double().t() + bias.double()).to(t))
    assert ctypes.c_void_p.from_buffer_copy(cpu.launches[-1]["bytes"][8]).value == bias.data_ptr()
    with pytest.raises(ValueError, match="has the epilogue 'bias_relu': pass its bias"):
        kernel.sgemm(a, w.t())
    with pytest.raises(ValueError, match="bias has shape"):
        kernel.sgemm(a, w.t(), bias=randn(6).to(t))
    plain = cuda_fake.on_cpu(tuned.Kernel(FakeDaemon().best(6, 5, 8, layout="nt", dtype="bf16"),
                                          device="cuda:0"))
    with pytest.raises(ValueError, match="bias is for a kernel whose problem has an epilogue"):
        plain.sgemm(a, w.t(), bias=bias)
    # Where cuBLAS serves, torch adds the bias and applies the activation.
    served = cuda_fake.on_cpu(tuned.Kernel(
        FakeDaemon(cublas=True).best(6, 5, 8, layout="nt", dtype="bf16", epilogue="bias_gelu_tanh"),
        device="cuda:0"))
    launches = len(cpu.launches)
    y = served.sgemm(a, w.t(), bias=bias)
    assert torch.equal(y, F.gelu(torch.matmul(a, w.t()) + bias, approximate="tanh"))
    assert len(cpu.launches) == launches


def test_a_daemon_older_than_epilogues_leaves_the_bias_to_torch(cpu):
    """A daemon that ignores Problem.epilogue serves its plain kernel (no
    bias argument): the call warns and runs torch's F.linear and activation,
    never the kernel without its bias."""
    class OldDaemon(FakeDaemon):
        def best(self, *args, epilogue="none", **kwargs):
            return super().best(*args, **kwargs)  # the plain problem's kernel
    t = torch.bfloat16
    x, w, bias = randn(6, 8).to(t), randn(5, 8, seed=1).to(t), randn(5, seed=2).to(t)
    with pytest.warns(RuntimeWarning, match="does not tune epilogues"):
        y = tuned.linear(x, w, bias, activation="relu", client=OldDaemon())
    assert torch.equal(y, F.relu(F.linear(x, w, bias)))
    assert not cpu.launches
