"""tuned.optimize(model): a model's nn.Linear layers served through
tuned.linear, on CPU tensors with the stand-in daemon and driver
(ops_fakes.py); torch's own call wherever tuned cannot serve, never an
error of the daemon's. This is the Python path, which serves where the C++
extension is not built (test_serving.py has the dispatcher's)."""

import grpc
import pytest

import tuned
import tuned.model

torch = pytest.importorskip("torch", reason="torch is not installed")

from ops_fakes import FakeDaemon, close, cpu, fresh, randn  # noqa: E402,F401
from tuned import pb  # noqa: E402


class Untuned(FakeDaemon):
    """A daemon where nothing near is tuned (or, with `code`, that fails so)."""

    def __init__(self, code=grpc.StatusCode.NOT_FOUND):
        super().__init__()
        self.code = code

    def best(self, m, n, k, math=0, layout="nn", tune_if_missing=False, dtype="f32"):
        self.asked.append(((m, n, k), math, layout, tune_if_missing))
        raise tuned.TunedError(self.code, "no tuned shape is near")


@pytest.fixture(autouse=True)
def no_untuned(monkeypatch):
    monkeypatch.setattr(tuned.model, "_untuned", {})
    monkeypatch.setattr(tuned.model.serving, "extension", lambda: None)  # the Python path


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_a_models_linear_layers_are_served_in_layout_nt(cpu):
    daemon = FakeDaemon()
    plain, served = model(), tuned.optimize(model(), client=daemon)
    x = randn(2, 3, 8)
    with torch.no_grad():
        assert close(served(x), plain(x))
        served(x)
    # Each layer once (its route is kept), M = 2 * 3 rows, asked to tune if missing.
    assert [(shape, layout, tune) for shape, _, layout, tune in daemon.asked] == [
        ((6, 16, 8), "nt", True), ((6, 4, 16), "nt", True)]
    assert tuned.optimize(served, client=daemon) is served  # again: nothing more


def test_an_untuned_shape_runs_torch_and_is_asked_again_later(cpu, monkeypatch):
    daemon = Untuned()
    plain, served = model(), tuned.optimize(model(), client=daemon)
    x = randn(5, 8)
    with torch.no_grad():
        assert close(served(x), plain(x))
        assert len(daemon.asked) == 2  # each layer's NOT_FOUND, and its sweep queued
        assert close(served(x), plain(x))
        assert len(daemon.asked) == 2  # not asked again so soon
        monkeypatch.setattr(tuned.model, "RETRY_SECONDS", 0.0)
        for key in tuned.model._untuned:
            tuned.model._untuned[key] = 0.0  # as if RETRY_SECONDS had passed
        served(x)
        served(x)
    assert len(daemon.asked) == 2 + 2 + 2  # past the retry time: each call asks


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
def test_a_daemon_that_does_not_answer_is_survived(cpu, code):
    served = tuned.optimize(model(), client=Untuned(code))
    with torch.no_grad():
        assert close(served(randn(3, 8)), model()(randn(3, 8)))


def test_other_errors_of_the_daemon_raise(cpu):
    served = tuned.optimize(model(), client=Untuned(grpc.StatusCode.PERMISSION_DENIED))
    with torch.no_grad(), pytest.raises(tuned.TunedError):
        served(randn(3, 8))


def test_the_backwards_gemms_are_served_too(cpu):
    daemon = FakeDaemon()
    plain, served = model(), tuned.optimize(model(), client=daemon)
    x = randn(6, 8)
    for m in (plain, served):
        m(x).square().sum().backward()
    for p, q in zip(plain.parameters(), served.parameters()):
        assert close(q.grad, p.grad)
    # Forward in "nt"; the first layer's dW in "tn" (x needs no grad: no dX),
    # the second's dX in "nn" and dW in "tn".
    assert sorted((shape, layout) for shape, _, layout, _ in daemon.asked) == sorted([
        ((6, 16, 8), "nt"), ((6, 4, 16), "nt"), ((4, 16, 6), "tn"), ((6, 16, 4), "nn"),
        ((16, 8, 6), "tn")])
    a, b = randn(3, 8, seed=3).requires_grad_(), randn(8, 5, seed=4).requires_grad_()
    with tuned.enable(client=daemon):
        (a @ b).sum().backward()
    assert close(a.grad, torch.ones(3, 5) @ b.detach().t())
    assert close(b.grad, a.detach().t() @ torch.ones(3, 5))


def test_what_tuned_does_not_take_runs_torch_without_asking(cpu):
    daemon = FakeDaemon()
    x = randn(3, 8)
    served64 = tuned.optimize(model().double(), client=daemon)
    with torch.no_grad():
        assert close(served64(x.double()).float(), model().double()(x.double()).float())  # float64
    assert daemon.asked == []


def test_inside_enable_functional_gemms_are_served_and_outside_they_are_not(cpu):
    daemon = FakeDaemon()
    x, w, bias = randn(4, 8), randn(16, 8, seed=1), randn(16, seed=2)
    a, b, c = randn(4, 8, seed=3), randn(8, 5, seed=4), randn(4, 5, seed=5)
    with torch.no_grad():
        want = (torch.nn.functional.linear(x, w, bias), torch.matmul(a, b), a @ b, torch.mm(a, b),
                torch.addmm(c, a, b))
        with tuned.enable(client=daemon):
            got = (torch.nn.functional.linear(x, w, bias), torch.matmul(a, b), a @ b, torch.mm(a, b),
                   torch.addmm(c, a, b))
            torch.addmm(c, a, b, beta=0.5)            # not alpha = beta = 1: torch's own
            torch.matmul(randn(2, 4, 8), b)           # not two matrices: torch's own
        torch.matmul(a, b)                             # outside: torch's own
    assert all(close(g, w_) for g, w_ in zip(got, want))
    assert [(shape, layout) for shape, _, layout, _ in daemon.asked] == [
        ((4, 16, 8), "nt"), ((4, 5, 8), "nn")]  # each shape's route asked once, then kept


def test_enable_survives_an_untuned_shape(cpu):
    daemon = Untuned()
    a, b = randn(3, 8), randn(8, 2, seed=1)
    with torch.no_grad(), tuned.enable(client=daemon):
        assert close(a @ b, torch.matmul(a.clone(), b.clone()))
        assert close(a @ b, a.clone().matmul(b.clone()))
    assert len(daemon.asked) == 1


def test_a_models_first_run_against_the_real_daemon_never_raises_and_queues_its_sweeps(cpu, client):
    """The real daemon (compile-only: nothing it measures is timed, so nothing
    is served): the model runs as torch's, and each layer's problem is
    queued for a sweep, asked with tune_if_missing."""
    plain, served = model(), tuned.optimize(model(), client=client)
    x = randn(7, 8)
    before = {j.id for j in client.jobs()}
    with torch.no_grad():
        assert close(served(x), plain(x))
    queued = [j for j in client.jobs() if j.id not in before]
    assert sorted((tuple(j.problem.shape), j.problem.layout) for j in queued) == [
        ((7, 4, 16), pb.LAYOUT_NT), ((7, 16, 8), pb.LAYOUT_NT)]
    for j in queued:
        client.cancel(j.id)
