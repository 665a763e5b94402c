"""What the Kernel tests share: a BestKernel as the daemon sends it, the
`sgemm` Kernel built from one, CPU stand-ins for CUDA tensors, and the
autouse fixture that fails a test whose checks let the CUDA driver run.
Test modules import the fixtures by name (pytest finds them there)."""

import pytest

import tuned
import tuned.driver
from tuned import pb

torch = pytest.importorskip("torch", reason="torch is not installed")

SGEMM_ARGS = ["int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
              "float beta", "float* C"]


def best_kernel(family="sgemm", shape=(64, 32, 16), **fields):
    """A BestKernel as the daemon sends it (no daemon needed)."""
    args = SGEMM_ARGS if family == "sgemm" else ["int rows", "int cols", "const float* in",
                                                 "float* out"]
    b = pb.BestKernel(problem=tuned.problem(*shape, family=family), cubin=b"\x7fELF", ptx="//",
                      entry="_Z1kv", arguments=args,
                      geometry=pb.LaunchGeometry(grid=[1, 2, 1], block=[256, 1, 1]),
                      device=pb.Device(name="NVIDIA H100", cc_major=9, cc_minor=0),
                      match=pb.MATCH_EXACT)
    for k, v in fields.items():
        setattr(b, k, v)
    return b


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch):
    """Any driver use fails the test: the checks come first."""
    def fail():
        raise AssertionError("the CUDA driver was used before the arguments were checked")
    monkeypatch.setattr(tuned.driver, "libcuda", fail)


@pytest.fixture
def sgemm():
    return tuned.Kernel(best_kernel(), device="cuda:0")


def cuda_like(*shape):
    """A float32 CPU tensor: right in all but the device."""
    return torch.zeros(*shape, dtype=torch.float32)
