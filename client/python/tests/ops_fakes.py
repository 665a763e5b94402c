"""What the tests of tuned.matmul and tuned.linear share (test_ops.py,
test_ops_16bit.py): a stand-in daemon (FakeDaemon, NoDaemon), the fixtures
that keep tests apart (`fresh`, autouse where imported), run the whole path
on CPU tensors (`cpu`) or record TF32 (`tf32_seen`), and small helpers.
Test modules import the fixtures by name (pytest finds them there)."""

import pytest

import tuned
import tuned.driver
from tuned import pb

torch = pytest.importorskip("torch", reason="torch is not installed")

import cuda_fake  # noqa: E402
import tuned.ops  # noqa: E402

SGEMM_ARGS = ["int M", "int N", "int K", "float alpha", "const float* A", "const float* B",
              "float beta", "float* C"]


def sgemm_args(dtype="f32"):
    """best.arguments of an sgemm kernel of `dtype` ("f32", "bf16", "f16",
    "bf16_f32", "f16_f32"), as the daemon's: A's and B's pointers to the
    input type, C's to the output type."""
    t = {"f32": "float", "bf16": "__nv_bfloat16", "f16": "__half"}[dtype.removesuffix("_f32")]
    c = "float" if dtype.endswith("_f32") else t
    return [a.replace("float*", (c if a.endswith(" C") else t) + "*") for a in SGEMM_ARGS]


class NoDaemon:
    address = "unix:/nowhere"

    def best(self, *args, **kwargs):
        raise AssertionError("the daemon was asked before the arguments were checked")


class FakeDaemon:
    """Client.best as the daemon answers: a kernel for any (M, N, K) in any
    mode, layout and dtype (its config's LAYOUT parameter that layout's, as
    sgemm's; its arguments pointers to the dtype's C type; its image makes
    the Emulator compute in both), or cuBLAS where `cublas`;
    `before_layouts`: a daemon older than layouts, whose kernel is the "nn"
    one whatever the layout asked. Records what was asked: ((M, N, K),
    Math, layout, tune_if_missing) in `asked`, the dtype's name in `dtypes`,
    the epilogue's in `epilogues` (its kernel takes the bias after C)."""

    address = "unix:/fake"

    def __init__(self, cublas=False, before_layouts=False):
        self.cublas, self.before_layouts = cublas, before_layouts
        self.asked, self.dtypes, self.epilogues = [], [], []

    def best(self, m, n, k, math=0, layout="nn", tune_if_missing=False, dtype="f32",
             epilogue="none"):
        self.asked.append(((m, n, k), math, layout, tune_if_missing))
        self.dtypes.append(dtype)
        self.epilogues.append(epilogue)
        b = pb.BestKernel(problem=tuned.problem(m, n, k, math=math, layout=layout, dtype=dtype,
                                                epilogue=epilogue),
                          match=pb.MATCH_NEAREST,
                          device=pb.Device(name="NVIDIA H100", cc_major=9, cc_minor=0))
        if self.cublas:
            b.use_baseline = True
            return b
        served = "nn" if self.before_layouts else layout
        config = b.measurement.config
        config.params.update({"KIND": 2, "BM": 64})
        if served != "nn":
            config.params["LAYOUT"] = pb.Layout.Value("LAYOUT_" + served.upper())
        config.name = "sgemm_tiled_64" + ("" if served == "nn" else "_" + served)
        b.cubin, b.ptx, b.entry = cuda_fake.image(served, dtype, epilogue), "//", "_Z1kv"
        b.arguments.extend(sgemm_args(dtype))
        if epilogue != "none":
            b.arguments.append("const " + b.arguments[-1].replace("* C", "* bias"))
        b.geometry.grid.extend([1, 1, 1])
        b.geometry.block.extend([256, 1, 1])
        return b


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No route or client kept from another test; any driver use fails."""
    monkeypatch.setattr(tuned.ops, "_routes", {})
    monkeypatch.setattr(tuned.ops, "_kernels", {})
    monkeypatch.setattr(tuned.ops, "_clients", {})

    def fail():
        raise AssertionError("the CUDA driver was used")
    monkeypatch.setattr(tuned.driver, "libcuda", fail)


@pytest.fixture
def cpu(monkeypatch):
    """The whole path on CPU tensors: the CPU counts as the device, kernels
    run on cuda_fake.Emulator."""
    monkeypatch.setattr(tuned.ops, "_DEVICE_TYPE", "cpu")
    monkeypatch.setattr(tuned.ops, "_new_kernel",
                        lambda best, device: cuda_fake.on_cpu(tuned.Kernel(best, device="cuda:0")))
    return cuda_fake.install(monkeypatch, cuda_fake.Emulator())


@pytest.fixture
def tf32_seen(monkeypatch):
    """torch.matmul and F.linear recording whether TF32 was on when they ran;
    the setting starts off and is restored after."""
    seen = []
    for module, name in ((torch, "matmul"), (tuned.ops.F, "linear")):
        real = getattr(module, name)

        def recording(*args, _real=real, **kwargs):
            seen.append(torch.backends.cuda.matmul.allow_tf32)
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, recording)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield seen
    torch.backends.cuda.matmul.allow_tf32 = saved


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def close(x, y):
    return x.shape == y.shape and torch.allclose(x, y, rtol=1e-4, atol=1e-4)


def operands(layout, m=6, n=5, k=8, seed=0):
    """op(A) (m, k) and op(B) (k, n) in `layout`: a "t" operand is the .t()
    of a contiguous tensor (a transposed view), an "n" one contiguous."""
    a = randn(k, m, seed=seed).t() if layout[0] == "t" else randn(m, k, seed=seed)
    b = randn(n, k, seed=seed + 1).t() if layout[1] == "t" else randn(k, n, seed=seed + 1)
    return a, b
