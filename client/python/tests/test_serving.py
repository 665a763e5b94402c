"""Serving at torch's dispatcher (tuned/_serving.cpp, tuned/serving.py): the
operators tuned::linear and tuned::mm, their served-kernel table, the
filler, tuned.optimize's Linear modules and tuned.enable()'s kernels of
aten::mm, addmm and linear, on CPU tensors with the stand-in daemon and
driver (the CPU stands for the GPU, cuda_fake.Emulator computes the
launches). Skipped where the C++ extension is not built (pip builds it
where torch is importable)."""

import grpc
import pytest

import tuned
import tuned.model

torch = pytest.importorskip("torch", reason="torch is not installed")

import tuned.serving as serving  # noqa: E402
from ops_fakes import FakeDaemon, close, cpu, fresh, randn  # noqa: E402,F401

tc = serving.extension()
if tc is None:
    pytest.skip("tuned._torchcall is not built here (pip builds it where torch is importable)",
                allow_module_level=True)
F = torch.nn.functional


class Untuned(FakeDaemon):
    """A daemon that answers every problem with `code`."""

    def __init__(self, code=grpc.StatusCode.NOT_FOUND):
        super().__init__()
        self.code = code

    def best(self, m, n, k, math=0, layout="nn", tune_if_missing=False, **kwargs):
        self.asked.append(((m, n, k), math, layout, tune_if_missing))
        raise tuned.TunedError(self.code, "no tuned shape is near")


class StandIn:
    """A cuda_fake driver as tc.stand_in takes it: the C launcher's table of its functions."""

    def __init__(self, lib):
        self.lib = lib

    def launcher_table(self):
        return self.lib.launcher_table()


@pytest.fixture
def served(cpu, monkeypatch):
    """The CPU served by the table with the Emulator launching; the filler
    runs only in drain(); an empty table before and after."""
    monkeypatch.setattr(serving, "BACKGROUND", False)
    monkeypatch.setattr(serving, "_client", None)
    monkeypatch.setattr(serving, "_held", {})
    tc.clear()
    tc.stand_in("cpu", StandIn(cpu))
    yield cpu
    tc.stand_in("cuda", None)
    tc.clear()


class Counters:
    """tc.stats() since it was made."""

    def __init__(self):
        self.start = tc.stats()

    def __call__(self):
        now = tc.stats()
        return {k: now[k] - self.start[k] for k in ("hits", "misses", "torch", "uncaptured_misses")}


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def queued():
    keys = []
    while (key := tc.next_miss(0.0)) is not None:
        keys.append(key)
    return keys


def test_a_miss_runs_torch_at_once_and_the_filled_entry_launches_the_kernel(served):
    daemon = FakeDaemon()
    plain, optimized = model(), tuned.optimize(model(), client=daemon)
    assert type(optimized[0]) is tuned.model.Linear
    x = randn(2, 3, 8)
    count = Counters()
    with torch.no_grad():
        assert close(optimized(x), plain(x))
    # Neither layer waited for the daemon: both ran torch's own kernel, queued.
    assert count() == {"hits": 0, "misses": 2, "torch": 2, "uncaptured_misses": 0}
    assert daemon.asked == [] and served.launches == []
    assert serving.drain() == [((6, 16, 8, "f32", "nt", "ieee_fp32", "none", -1), "kernel"),
                               ((6, 4, 16, "f32", "nt", "ieee_fp32", "none", -1), "kernel")]
    assert [(shape, layout, tune) for shape, _, layout, tune in daemon.asked] == [
        ((6, 16, 8), "nt", True), ((6, 4, 16), "nt", True)]
    with torch.no_grad():
        assert close(optimized(x), plain(x))
    assert count()["hits"] == 2 and served.layouts == ["nt", "nt"]
    assert tuned.optimize(optimized, client=daemon) is optimized
    assert type(optimized[0]) is tuned.model.Linear


def test_the_key_holds_shape_dtype_layout_math_epilogue_and_device(served):
    x, w = randn(6, 8), randn(5, 8)
    op = torch.ops.tuned.linear
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        op(x, w, None, "auto")                       # torch's setting: tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        op(x, w, None, "auto")                       # ieee_fp32
        op(x, w, None, "fp32_accurate")
        op(x, randn(8, 5).t(), None, "auto")         # a transposed weight: "nn"
        op(x.t().contiguous().t(), w, None, "auto")  # a transposed x: "tt"
        op(x.bfloat16(), w.bfloat16(), randn(5).bfloat16(), "auto")  # the kernel adds the bias
        op(x, w, randn(5), "auto")                   # fp32: the bias added after
        op(x, w, None, "auto")                       # queued already: not again
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    assert queued() == [(6, 5, 8, "f32", "nt", "tf32", "none", -1),
                        (6, 5, 8, "f32", "nt", "ieee_fp32", "none", -1),
                        (6, 5, 8, "f32", "nt", "fp32_accurate", "none", -1),
                        (6, 5, 8, "f32", "nn", "ieee_fp32", "none", -1),
                        (6, 5, 8, "f32", "tt", "ieee_fp32", "none", -1),
                        (6, 5, 8, "bf16", "nt", "ieee_fp32", "bias", -1)]
    with pytest.raises(RuntimeError, match="unknown math mode 'fast'"):
        op(x, w, None, "fast")
    with pytest.raises(RuntimeError, match="takes math 'ieee_fp32'"):
        op(x.bfloat16(), w.bfloat16(), None, "tf32")


def test_a_16bit_kernel_adds_the_bias_itself(served):
    daemon = FakeDaemon()
    x, w, b = randn(6, 8).bfloat16(), randn(5, 8).bfloat16(), randn(5).bfloat16()
    torch.ops.tuned.linear(x, w, b)
    assert [outcome for _, outcome in serving.drain(daemon)] == ["kernel"]
    assert daemon.epilogues == ["bias"] and daemon.dtypes == ["bf16"]
    y = torch.ops.tuned.linear(x, w, b)
    want = F.linear(x.double(), w.double(), b.double())
    assert ((y.double() - want).norm() / want.norm()).item() < 1e-2
    assert served.dtypes == ["bf16"] and len(served.launches) == 1


class MappedDaemon(FakeDaemon):
    """FakeDaemon's kernels with a TMA tensor map over A (parameter 4: dims
    K, M, rows of 4 K bytes), passed as parameter 8, as an sm_90 kernel's."""

    def best(self, m, n, k, **kwargs):
        b = super().best(m, n, k, **kwargs)
        b.geometry.tensor_maps.add(pointer_arg=4, dims=[k, m], strides_bytes=[4 * k],
                                   box=[32, 64], swizzle_bytes=128, param=8)
        return b


def test_a_kernels_tensor_maps_are_encoded_over_each_calls_operands(served):
    served.params = 9  # the Emulator reads the map after the 8 parameters
    x, w = randn(6, 8), randn(5, 8)
    torch.ops.tuned.linear(x, w)
    assert [outcome for _, outcome in serving.drain(MappedDaemon())] == ["kernel"]
    for _ in range(2):
        assert close(torch.ops.tuned.linear(x, w), F.linear(x, w))
    # A's rows are 32 bytes and torch's CPU allocations 64-byte aligned: TMA takes x.
    assert x.data_ptr() % 16 == 0
    assert [e["base"] for e in served.encodes] == [x.data_ptr()] * 2
    for e in served.encodes:
        assert (e["dims"], e["strides"], e["box"], e["swizzle"], e["l2"]) == (
            [8, 6], [32], [32, 64], 3, 3)
    assert [launch["bytes"][8] for launch in served.launches] == [b"\xa5" * 128] * 2


def test_an_untuned_shape_runs_torch_and_is_asked_again_after_the_retry_time(served):
    daemon = Untuned()
    x, w = randn(6, 8), randn(5, 8)
    torch.ops.tuned.mm(x, w.t())
    ((key, outcome),) = serving.drain(daemon)
    assert outcome == "retry"
    count = Counters()
    assert close(torch.ops.tuned.mm(x, w.t()), x @ w.t())
    assert count()["misses"] == 0 and queued() == []  # not asked again so soon
    tc.put_torch(key, 0.0)  # as if RETRY_SECONDS had passed
    torch.ops.tuned.mm(x, w.t())
    assert count()["misses"] == 1
    assert serving.drain(daemon) == [(key, "retry")]
    assert len(daemon.asked) == 2 and served.launches == []


@pytest.mark.parametrize("code", [grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INTERNAL])
def test_another_error_of_the_daemon_never_reaches_the_call(served, code):
    x, w = randn(6, 8), randn(5, 8)
    torch.ops.tuned.linear(x, w)
    with pytest.warns(RuntimeWarning, match="torch runs it"):
        assert [outcome for _, outcome in serving.drain(Untuned(code))] == ["failed"]
    assert close(torch.ops.tuned.linear(x, w), F.linear(x, w))


def test_where_the_daemon_serves_cublas_torch_runs_for_good(served):
    x, w = randn(6, 8), randn(5, 8)
    torch.ops.tuned.linear(x, w)
    assert [outcome for _, outcome in serving.drain(FakeDaemon(cublas=True))] == ["torch"]
    count = Counters()
    assert close(torch.ops.tuned.linear(x, w), F.linear(x, w))
    assert count() == {"hits": 0, "misses": 0, "torch": 1, "uncaptured_misses": 0}


def test_enable_serves_aten_mm_addmm_and_linear_and_exit_restores_torchs(served):
    daemon = FakeDaemon()
    x, w, b = randn(6, 8), randn(5, 8), randn(5)
    calls = {"F.linear": lambda: F.linear(x, w, b), "torch.mm": lambda: torch.mm(x, w.t()),
             "addmm": lambda: torch.addmm(b, x, w.t()), "@": lambda: x @ w.t(),
             "nn.Linear": lambda: lin(x)}
    lin = torch.nn.Linear(8, 5)
    with torch.no_grad():
        lin.weight.copy_(w)
        lin.bias.copy_(b)
    want = {name: call() for name, call in calls.items()}
    with tuned.enable(client=daemon):
        for call in calls.values():
            call()
    # One key: every call is the GEMM (6, 5, 8) in layout "nt"; the bias added after.
    assert [key for key, _ in serving.drain()] == [(6, 5, 8, "f32", "nt", "ieee_fp32", "none", -1)]
    with torch.no_grad(), tuned.enable(client=daemon):
        for name, call in calls.items():
            assert close(call(), want[name]), name
    assert len(served.launches) == len(calls)
    with torch.no_grad():
        for name, call in calls.items():
            assert close(call(), want[name]), name
    assert len(served.launches) == len(calls)  # outside: torch's own kernels
    with tuned.enable(client=daemon):
        with tuned.enable(client=daemon):
            torch.mm(x, w.t())
        torch.mm(x, w.t())  # the outer scope's registrations still hold
    torch.mm(x, w.t())
    assert len(served.launches) == len(calls) + 2


def test_gradients_go_through_the_same_table(served):
    daemon = FakeDaemon()
    plain, optimized = model(), tuned.optimize(model(), client=daemon)
    x = randn(6, 8)

    def grads(m):
        xi = x.clone().requires_grad_()
        m(xi).square().sum().backward()
        out = [xi.grad] + [p.grad for p in m.parameters()]
        m.zero_grad()
        return out

    want = grads(plain)
    assert all(close(g, w) for g, w in zip(grads(optimized), want))
    keys = [key[:5] for key, _ in serving.drain()]
    # The forward's "nt"; dX = dY W in "nn", dW = dY^T X in "tn", for each layer.
    assert sorted(keys) == sorted([(6, 16, 8, "f32", "nt"), (6, 4, 16, "f32", "nt"),
                                   (6, 16, 4, "f32", "nn"), (4, 16, 6, "f32", "tn"),
                                   (6, 8, 16, "f32", "nn"), (16, 8, 6, "f32", "tn")])
    count = Counters()
    assert all(close(g, w) for g, w in zip(grads(optimized), want))
    assert count()["hits"] == 6 and sorted(set(served.layouts)) == ["nn", "nt", "tn"]


def test_a_served_linear_skips_the_dispatcher_only_where_nothing_else_would_run(served):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    daemon = FakeDaemon()
    plain = torch.nn.Linear(8, 16)
    optimized = tuned.optimize(torch.nn.Linear(8, 16), client=daemon)
    optimized.load_state_dict(plain.state_dict())
    x = randn(2, 3, 8)  # a contiguous 3-D input: its rows, no view made
    with torch.no_grad():
        optimized(x)
    assert [key[:5] for key, _ in serving.drain()] == [(6, 16, 8, "f32", "nt")]
    def dispatched(call):
        """Whether `call` went through the dispatcher's tuned::linear (the
        profiler records each operator the dispatcher calls)."""
        with torch.autograd.profiler.profile() as prof:
            call()
        return any(e.name == "tuned::linear" for e in prof.function_events)

    count = Counters()
    with torch.no_grad():
        assert not dispatched(lambda: close(optimized(x), plain(x)))  # straight to the kernel
        with Seen() as seen:  # a Python mode: through the dispatcher, which it sees
            assert close(optimized(x), plain(x))
    assert torch.ops.tuned.linear.default in seen.ops
    assert count()["hits"] == 2
    # Autograd records: the dispatcher's autograd kernel, the same table.
    xg = x.clone().requires_grad_()
    assert dispatched(lambda: optimized(xg).sum().backward())
    assert xg.grad is not None and count()["hits"] == 3  # the forward (dX, dW: new keys)


def test_a_linear_whose_weight_is_not_a_plain_parameter_is_served_with_it(served):
    from torch.nn.utils import parametrize

    class Doubled(torch.nn.Module):
        def forward(self, w):
            return 2 * w

    daemon = FakeDaemon()
    plain = torch.nn.Linear(8, 16)
    optimized = tuned.optimize(torch.nn.Linear(8, 16), client=daemon)
    optimized.load_state_dict(plain.state_dict())
    parametrize.register_parametrization(optimized, "weight", Doubled())
    x = randn(6, 8)
    with torch.no_grad():
        want = F.linear(x, 2 * plain.weight, plain.bias)
        assert close(optimized(x), want)
        serving.drain()
        count = Counters()
        assert close(optimized(x), want)
    assert count()["hits"] == 1


def test_a_capture_launches_the_kernels_looked_up_before_it_and_queues_no_miss(served):
    daemon = FakeDaemon()
    plain, optimized = model(), tuned.optimize(model(), client=daemon)
    x, other = randn(6, 8), randn(3, 8, seed=1)
    with torch.no_grad():
        optimized(x)  # looked up before the capture
        serving.drain()
        count = Counters()
        tc.stand_in_capture(True)
        try:
            assert close(optimized(x), plain(x))  # the served kernels, launched into the graph
            assert close(optimized(other), plain(other))  # a miss: torch's kernel, not queued
        finally:
            tc.stand_in_capture(False)
    assert count() == {"hits": 2, "misses": 0, "torch": 2, "uncaptured_misses": 2}
    assert queued() == [] and len(served.launches) == 2
    with torch.no_grad():  # after the capture the miss is queued as any
        optimized(other)
    assert count()["misses"] == 2


def test_the_fake_kernels_give_shapes_and_dtypes_without_data():
    x = torch.empty(2, 3, 8, device="meta", dtype=torch.bfloat16)
    w = torch.empty(16, 8, device="meta", dtype=torch.bfloat16)
    y = torch.ops.tuned.linear(x, w, None, "auto")
    assert y.shape == (2, 3, 16) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    c = torch.ops.tuned.mm(torch.empty(4, 8, device="meta"), torch.empty(8, 3, device="meta"))
    assert c.shape == (4, 3)


def test_what_tuned_does_not_take_runs_torchs_own_kernel(served):
    x, w = randn(6, 8).double(), randn(5, 8).double()
    count = Counters()
    assert close(torch.ops.tuned.linear(x, w), F.linear(x, w))          # float64
    strided = randn(6, 16)[:, ::2]                                       # neither "n" nor "t"
    assert close(torch.ops.tuned.linear(strided, w.float()), F.linear(strided, w.float()))
    assert count()["misses"] == 0 and queued() == []


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch >= 2.0")
def test_a_compiled_model_calls_the_operator(served):
    daemon = FakeDaemon()
    plain, optimized = model(), tuned.optimize(model(), client=daemon)
    compiled = torch.compile(optimized, fullgraph=True)
    x = randn(6, 8)
    with torch.no_grad():
        assert close(compiled(x), plain(x))
        serving.drain()
        count = Counters()
        assert close(compiled(x), plain(x))
    assert count()["hits"] == 2


def test_bad_input_to_the_table_is_refused_and_changes_nothing(served):
    key = (6, 5, 8, "f32", "nt", "ieee_fp32", "none", -1)
    before = tc.stats()["entries"]
    with pytest.raises(ValueError, match="not a key"):
        tc.put_torch((6, 5, 8, "f64", "nt", "ieee_fp32", "none", -1), 1.0)
    plan = tuned.driver.fastcall.launch_plan((1, 1, 1), (32, 1, 1), 0, False, 8, [])
    with pytest.raises(ValueError, match="slots are A, B, C, alpha, beta"):
        tc.put_kernel(key, 1, 1, plan, bytes(64), (4, 5, 7), False)
    with pytest.raises(ValueError, match="a slot outside the parameters"):
        tc.put_kernel(key, 1, 1, plan, bytes(64), (4, 5, 9, 3, 6), False)
    with pytest.raises(ValueError, match="not tuned._fastcall.launch_plan's"):
        tc.put_kernel(key, 1, 1, [(4, 7, [], [], [], 3, 3, False)], bytes(64), (4, 5, 7, 3, 6),
                      False)
    with pytest.raises(ValueError, match="stand_in"):
        tc.stand_in("cuda", served)
    assert tc.stats()["entries"] == before
