"""tuned.optimize(model): a model's nn.Linear layers served through
tuned.linear, on CPU tensors with the stand-in daemon and driver
(ops_fakes.py); torch's own call wherever tuned cannot serve, never an
error of the daemon's."""

import grpc
import pytest

import tuned
import tuned.model

torch = pytest.importorskip("torch", reason="torch is not installed")

from ops_fakes import FakeDaemon, close, cpu, fresh, randn  # noqa: E402,F401


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


def test_what_tuned_does_not_take_runs_torch_without_asking(cpu):
    daemon = FakeDaemon()
    served = tuned.optimize(model(), client=daemon)
    x = randn(3, 8)
    assert close(served(x), model()(x))                   # autograd records: the parameters need grads
    served64 = tuned.optimize(model().double(), client=daemon)
    with torch.no_grad():
        assert close(served64(x.double()).float(), model().double()(x.double()).float())  # float64
    assert daemon.asked == []
