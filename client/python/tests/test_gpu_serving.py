"""Serving at torch's dispatcher on a GPU (tuned/_serving.cpp,
tuned/serving.py), against a real daemon that has tuned $TUNED_GPU_SHAPE
(M,N,K, default 1024,1024,1024; f32, layout "nn", ieee_fp32) at the
default address, as test_gpu.py: the operator tuned::mm's table (a miss
runs torch's kernel and is filled, then the tuned kernel serves), tuned.enable()'s kernels
for aten::mm and aten::linear and their removal on exit, a CUDA graph
capture replaying the served kernel (a miss during the capture is not
queued and breaks nothing), gradients through the operators, and
torch.compile calling the operator. Skipped without torch or a GPU."""

import os

import pytest

import tuned

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no GPU (torch.cuda.is_available() is False)", allow_module_level=True)
import tuned.serving as serving  # noqa: E402

SHAPE = tuple(int(d) for d in os.environ.get("TUNED_GPU_SHAPE", "1024,1024,1024").split(","))
tc = serving.extension()


def rel_error(c, ref):
    return ((c.double() - ref.double()).norm() / ref.double().norm()).item()


def pair(seed, m=SHAPE[0], n=SHAPE[1], k=SHAPE[2]):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(m, k, device="cuda", generator=g),
            torch.randn(k, n, device="cuda", generator=g))


def hits():
    return tc.stats()["hits"]


@pytest.fixture(scope="module")
def served():
    """SHAPE's entry filled in this thread (no filler thread): the outcome."""
    assert tc is not None, "pip did not build tuned._torchcall with serving against torch"
    saved = serving.BACKGROUND
    serving.BACKGROUND = False
    tc.clear()
    with tuned.Client() as client, tuned.kernel._no_tf32(torch):
        a, b = pair(0)
        misses = tc.stats()["misses"]
        c = torch.ops.tuned.mm(a, b, "ieee_fp32")  # the miss: torch's own kernel
        assert tc.stats()["misses"] == misses + 1
        assert rel_error(c, a.double() @ b.double()) < 1e-5
        outcome = dict(serving.drain(client))
        key = (*SHAPE, "f32", "nn", "ieee_fp32", "none", 0)
        assert key in outcome
        if outcome[key] != "kernel":
            pytest.skip(f"the daemon serves {outcome[key]} for {SHAPE}, not a kernel")
        yield client
    tc.clear()
    serving.BACKGROUND = saved


def test_the_operator_launches_the_kernel_of_its_table(served):
    a, b = pair(1)
    before = hits()
    c = torch.ops.tuned.mm(a, b, "ieee_fp32")
    torch.cuda.synchronize()
    assert hits() == before + 1
    assert rel_error(c, a.double() @ b.double()) < 1e-5


def test_enable_serves_aten_mm_and_linear_and_exit_restores_torchs(served):
    a, b = pair(2)
    with tuned.kernel._no_tf32(torch):
        before = hits()
        with tuned.enable(client=served):
            c = torch.mm(a, b)
            y = torch.nn.functional.linear(a, b.t())  # weight.t() row-major: "nn"
        assert hits() == before + 2
        torch.mm(a, b)
        assert hits() == before + 2
    ref = a.double() @ b.double()
    assert rel_error(c, ref) < 1e-5 and rel_error(y, ref) < 1e-5


def test_a_cuda_graph_replays_the_served_kernel(served):
    a, b = pair(3)
    odd = torch.randn(33, 17, device="cuda"), torch.randn(17, 9, device="cuda")
    with tuned.kernel._no_tf32(torch), tuned.enable(client=served):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.mm(a, b)  # looked up before the capture
        torch.cuda.current_stream().wait_stream(side)
        before, stats = hits(), tc.stats()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            c = torch.mm(a, b)
            d = torch.mm(*odd)  # never seen: torch's kernel, not queued
        assert hits() == before + 1
        assert tc.stats()["uncaptured_misses"] == stats["uncaptured_misses"] + 1
        assert tc.stats()["misses"] == stats["misses"]
    a2, b2 = pair(4)
    a.copy_(a2)
    b.copy_(b2)
    graph.replay()
    torch.cuda.synchronize()
    assert rel_error(c, a2.double() @ b2.double()) < 1e-5
    assert rel_error(d, odd[0].double() @ odd[1].double()) < 1e-5


def test_gradients_go_through_the_operator(served):
    a, b = pair(5)
    a.requires_grad_()
    b.requires_grad_()
    with tuned.kernel._no_tf32(torch):
        torch.ops.tuned.mm(a, b, "ieee_fp32").sum().backward()
        ones = torch.ones(SHAPE[0], SHAPE[1], device="cuda", dtype=torch.float64)
        assert rel_error(a.grad, ones @ b.detach().double().t()) < 1e-5
        assert rel_error(b.grad, a.detach().double().t() @ ones) < 1e-5


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch >= 2.0")
def test_a_compiled_function_calls_the_operator(served):
    import torch._dynamo

    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: torch.relu(torch.ops.tuned.mm(a, b, "ieee_fp32")),
                             fullgraph=True)
    a, b = pair(6)
    with tuned.kernel._no_tf32(torch):
        compiled(a, b)
        before = hits()
        c = compiled(a, b)
    assert hits() == before + 1
    assert rel_error(c, torch.relu(a.double() @ b.double())) < 1e-5


def test_an_optimized_linear_matches_torch(served):
    m, n, k = SHAPE
    layer = torch.nn.Linear(k, n, device="cuda")
    want_layer = torch.nn.Linear(k, n, device="cuda")
    want_layer.load_state_dict(layer.state_dict())
    tuned.optimize(layer, client=served)
    x = pair(7)[0]
    with torch.no_grad(), tuned.kernel._no_tf32(torch):
        for _ in range(2):
            y = layer(x)
            serving.drain(served)
        want = want_layer(x)
    assert type(layer) is tuned.model.Linear
    assert rel_error(y, want) < 1e-5
