"""What the Kernel tests share: a BestKernel as the daemon sends it (and a
16-bit one, best16), the `sgemm` Kernel built from one, CPU stand-ins for
CUDA tensors, the autouse fixture that fails a test whose checks let the
CUDA driver run, and the stand-in driver (`driver`) with an sgemm launch
through it. Test modules import the fixtures by name (pytest finds them
there)."""

import pytest

import tuned
import tuned.driver
from tuned import pb

torch = pytest.importorskip("torch", reason="torch is not installed")
import cuda_fake  # noqa: E402 (needs torch)

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


# ---- launches, through a stand-in driver (cuda_fake.FakeDriver) ----

@pytest.fixture
def driver(monkeypatch):
    return cuda_fake.install(monkeypatch, cuda_fake.FakeDriver())


class Pointer:
    """What a launch reads of a tensor: its address (and its size, for a memset)."""

    def __init__(self, address, numel=0):
        self.address, self.size = address, numel

    def data_ptr(self):
        return self.address

    def numel(self):
        return self.size


def launch_sgemm(kernel, a=0x1000, alpha=0.5, beta=2.0):
    kernel._sgemm_launch(Pointer(a), Pointer(0x2000), Pointer(0x3000, 64 * 32), alpha, beta)


def with_a_map(k=16, **fields):
    """An sgemm Kernel (64x32xk) whose geometry has A's tensor map (as
    tuner.proto's TensorMap comments: base parameter 4, dims K, M, stride
    4 K bytes, passed as parameter 8)."""
    m = dict(pointer_arg=4, dims=[k, 64], strides_bytes=[4 * k], box=[32, 64], swizzle_bytes=128,
             param=8)
    m.update(fields)
    best = best_kernel(shape=(64, 32, k))
    best.geometry.tensor_maps.add(**m)
    return tuned.Kernel(best, device="cuda:0")


# ---- 16-bit kernels (sgemm problems of dtype bf16 and f16) ----

# A dtype's torch dtype of A and B, and (OUT_DTYPE) of C where it is another.
TORCH_DTYPE = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
               "bf16_f32": torch.bfloat16, "f16_f32": torch.float16}
OUT_DTYPE = {"bf16_f32": torch.float32, "f16_f32": torch.float32}


def args16(dtype):
    """best.arguments of a 16-bit sgemm kernel, as the daemon's (gemm16.cc):
    C a float pointer for bf16_f32 and f16_f32."""
    t = {"bf16": "__nv_bfloat16", "f16": "__half"}[dtype.removesuffix("_f32")]
    c = "float" if dtype in OUT_DTYPE else t
    return ["int M", "int N", "int K", "float alpha", f"const {t}* A", f"const {t}* B",
            "float beta", f"{c}* C"]


def best16(dtype, shape=(33, 17, 9), layout="nn", **fields):
    """A 16-bit sgemm BestKernel in `layout` whose image the Emulator runs in that dtype."""
    b = best_kernel(shape=shape, **fields)
    b.problem.dtype = pb.DType.Value("DTYPE_" + dtype.upper())
    b.problem.layout = pb.Layout.Value("LAYOUT_" + layout.upper())
    del b.arguments[:]
    b.arguments.extend(args16(dtype))
    b.measurement.config.name = f"gemm_{dtype}_simt_64x64_{layout}"
    b.measurement.config.params["KIND"] = 5
    if layout != "nn":
        b.measurement.config.params["LAYOUT"] = b.problem.layout
    b.cubin = cuda_fake.image(layout, dtype)
    return b
