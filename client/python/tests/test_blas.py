"""tuned.blas (cuBLAS's SGEMM called directly for served cuBLAS) and the C
module tuned._fastcall, without a GPU: the row-major to column-major mapping
of each layout against a column-major SGEMM on flat memory, and the C
module's refusals. test_gpu.py runs both on a GPU."""

import os

import pytest

from tuned import blas, driver, kernel


class Buffer:
    """A stand-in tensor: flat float memory at a fake device address."""

    memory = {}

    def __init__(self, values):
        self.values = list(values)
        self.address = 4096 * (len(Buffer.memory) + 1)
        Buffer.memory[self.address] = self

    def data_ptr(self):
        return self.address

    def new_empty(self, rows, cols):
        return Buffer([float("nan")] * (rows * cols))


def column_major_sgemm(opa, opb, m, n, k, a, lda, b, ldb, c, ldc):
    """cublasSgemm's C(m x n, ldc) = op(A) op(B), alpha 1, beta 0, on Buffer
    memory (cuBLAS's argument order: the first operand is A)."""
    A, B, C = Buffer.memory[a].values, Buffer.memory[b].values, Buffer.memory[c].values
    assert lda >= (m if opa == 0 else k) and ldb >= (k if opb == 0 else n) and ldc >= m

    def at(M, ld, op, i, j):  # op(M)[i][j], M column-major with leading dimension ld
        return M[i + j * ld] if op == 0 else M[j + i * ld]

    for i in range(m):
        for j in range(n):
            C[i + j * ldc] = sum(at(A, lda, opa, i, p) * at(B, ldb, opb, p, j) for p in range(k))


class FakeFastcall:
    """tuned._fastcall's plan and gemm on Buffer memory: plan keeps its
    arguments, gemm runs them as cublasSgemm would. `workspace`: the bytes the
    plan says its algorithm needs."""

    def __init__(self, workspace=-1):
        self.plans, self.calls, self.workspace = [], [], workspace

    def plan(self, handle, lt, ctx, math, opa, opb, m, n, k, lda, ldb, ldc, limit, *types):
        self.plans.append((handle, lt, ctx, math, limit) + types)
        return (opa, opb, m, n, k, lda, ldb, ldc), self.workspace

    def gemm(self, plan, a, b, c, stream, workspace):
        self.calls.append((stream, workspace))
        opa, opb, m, n, k, lda, ldb, ldc = plan
        column_major_sgemm(opa, opb, m, n, k, a, lda, b, ldb, c, ldc)


HANDLES = blas._Handles(blas=11, lt=44, ctx=22, workspace_limit=32 << 20)


def row_major(rows, cols, seed):
    return [[((r * 7 + c * 3 + seed) % 11) - 5.0 for c in range(cols)] for r in range(rows)]


def stored(matrix, op):
    """Row-major storage of `matrix` ("n") or of its transpose ("t")."""
    if op == "t":
        matrix = [list(col) for col in zip(*matrix)]
    return Buffer([v for row in matrix for v in row])


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("shape", [(3, 5, 4), (1, 6, 2), (5, 1, 3), (4, 3, 1)])
def test_gemm_maps_each_row_major_layout_to_cublas_column_major(layout, shape):
    m, n, k = shape
    opa, opb = row_major(m, k, 1), row_major(k, n, 2)  # op(A), op(B) as used
    a, b = stored(opa, layout[0]), stored(opb, layout[1])
    out = Buffer([float("nan")] * (m * n))
    fake = FakeFastcall()
    gemm = blas.Gemm(None, HANDLES, tf32=layout == "tt", layout=layout, m=m, n=n, k=k,
                     index=0, stream=lambda index: 33, fastcall=fake)
    assert gemm(a, b, out) is out
    expected = [sum(opa[i][p] * opb[p][j] for p in range(k)) for i in range(m) for j in range(n)]
    assert out.values == expected
    assert fake.plans == [(11, 44, 22, 3 if layout == "tt" else 0, 32 << 20)]  # TF32 tensor op math
    assert fake.calls == [(33, 0)]  # on the current stream; no workspace asked for


def test_a_plan_that_takes_a_workspace_gets_one_per_stream():
    class Torch:  # the parts of torch _workspace uses, on Buffer memory
        class cuda:
            @staticmethod
            def is_current_stream_capturing():
                return Torch.capturing

        capturing, uint8 = False, "uint8"

        @staticmethod
        def device(kind, index):
            return (kind, index)

        @staticmethod
        def empty(size, dtype, device):
            assert (dtype, device) == ("uint8", ("cuda", 0))
            return Buffer([0.0] * (size // 4))

    blas._workspaces.clear()
    fake = FakeFastcall(workspace=4096)
    streams = iter([33, 33, 55, 77])
    gemm = blas.Gemm(Torch, HANDLES, tf32=False, layout="nn", m=2, n=2, k=2, index=0,
                     stream=lambda index: next(streams), fastcall=fake)
    a = Buffer([1.0] * 4)
    out = Buffer([0.0] * 4)
    gemm(a, a, out)
    gemm(a, a, out)
    gemm(a, a, out)
    Torch.capturing = True
    gemm(a, a, out)
    (s1, w1), (s2, w2), (s3, w3), (s4, w4) = fake.calls
    assert (s1, s2, s3, s4) == (33, 33, 55, 77)
    assert w1 == w2 != 0 and w3 not in (0, w1)  # kept per stream, one per stream
    assert w4 == 0  # none is allocated during a capture: an algorithm that takes none runs
    assert out.values == [2.0] * 4
    blas._workspaces.clear()


def test_a_failed_cublas_call_raises_naming_the_step():
    fake = FakeFastcall()
    gemm = blas.Gemm(None, HANDLES, tf32=False, layout="nn", m=2, n=2, k=2, index=0,
                     stream=lambda index: 0, fastcall=fake)
    gemm.call = lambda *args: ("cublasSgemm", -1)  # a CUresult 1, negated: a context push
    a = Buffer([0.0] * 4)
    with pytest.raises(kernel.TunedError) as e:
        gemm(a, a, a)
    assert "cublasSgemm: CUresult 1" in str(e.value)


def test_new_allocates_the_result_where_no_cpp_allocator_is_built():
    gemm = blas.Gemm(None, HANDLES, tf32=False, layout="nt", m=2, n=3, k=2, index=0,
                     stream=lambda index: 9, fastcall=FakeFastcall())
    assert gemm.alloc_call is None  # a stand-in fastcall: never tuned._torchcall
    a, b = stored([[1.0, 2.0], [3.0, 4.0]], "n"), stored([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]], "t")
    out = gemm.new(a, b)
    assert out.values == [1.0, 2.0, 4.0, 3.0, 4.0, 10.0]


def test_new_through_the_cpp_allocator_passes_the_plan_and_raises_its_failure():
    fake = FakeFastcall(workspace=0)
    gemm = blas.Gemm(None, HANDLES, tf32=False, layout="nn", m=2, n=2, k=2, index=0,
                     stream=lambda index: 7, fastcall=fake)
    seen = []
    gemm.alloc_call = lambda *args: seen.append(args) or "a new tensor"
    a, b = Buffer([1.0] * 4), Buffer([2.0] * 4)
    assert gemm.new(a, b) == "a new tensor"
    assert seen == [(gemm.plan, a, b, 7, 0)]  # the tensors themselves, the stream, no workspace
    gemm.alloc_call = lambda *args: ("cublasLtMatmul", 13)
    with pytest.raises(kernel.TunedError, match="cublasLtMatmul: "):
        gemm.new(a, b)


def test_a_failed_plan_raises_naming_the_step():
    fake = FakeFastcall()
    fake.plan = lambda *args: ("cublasLtMatmulAlgoGetHeuristic", -700)
    with pytest.raises(kernel.TunedError, match="cublasLtMatmulAlgoGetHeuristic: CUresult 700"):
        blas.Gemm(None, HANDLES, tf32=False, layout="nn", m=2, n=2, k=2, index=0,
                  stream=lambda index: 0, fastcall=fake)


def test_prepare_refuses_what_it_cannot_run():
    assert blas.prepare(None, 0, False, "nx", 2, 2, 2) is None
    assert blas.prepare(None, 0, False, "nn", 0, 2, 2) is None


fastcall = driver.fastcall


@pytest.mark.skipif(fastcall is None and not os.environ.get("TUNED_TEST_FASTCALL"),
                    reason="tuned._fastcall is not built (no C compiler or Python headers)")
def test_the_c_module_is_built_and_refuses_bad_calls():
    assert fastcall is not None, "run.sh found Python's headers, yet tuned._fastcall was not built"
    driver, cublas, cublaslt = fastcall.init()
    assert all(isinstance(found, bool) for found in (driver, cublas, cublaslt))
    with pytest.raises(TypeError, match="7 arguments"):
        fastcall.launch(1, 2, 3)
    with pytest.raises(TypeError, match="13 or 15 arguments"):
        fastcall.plan(1)
    # Operand and result types: A and B fp32, bf16 or f16, C of their type or fp32.
    for ab_type, c_type in ((7, 7), (14, 2), (0, 14)):
        with pytest.raises(ValueError, match="fp32, bf16 or f16"):
            fastcall.plan(1, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 0, ab_type, c_type)
    with pytest.raises(TypeError, match="6 arguments"):
        fastcall.gemm(1)
    with pytest.raises(ValueError):  # not a plan
        fastcall.gemm(1, 2, 3, 4, 5, 6)
    if not driver:  # no GPU driver here: refused, not crashed
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            fastcall.launch(1, 2, 3, 4, 5, 0, 0)
    else:
        with pytest.raises(ValueError, match="null"):
            fastcall.launch(0, 0, 0, 0, 0, 0, 0)
    if not (driver and cublas):
        with pytest.raises(RuntimeError, match="no cuBLAS"):
            fastcall.plan(*range(13))
    else:
        with pytest.raises(ValueError, match="null cuBLAS handle"):
            fastcall.plan(0, *range(12))
    if cublas:
        assert fastcall.cublas_status_name(7) == "CUBLAS_STATUS_INVALID_VALUE"
    with pytest.raises(TypeError):
        fastcall.launch("f", 2, 3, 4, 5, 0, 0)


@pytest.mark.parametrize("dtype,types", [("bf16", (14, 14)), ("f16", (2, 2)),
                                         ("bf16_f32", (14, 0)), ("f16_f32", (2, 0))])
def test_a_16_bit_route_plans_its_types_in_fp32_math_and_a_float32_result_where_asked(dtype, types):
    """16-bit operands plan cuBLASLt (cublasGemmEx) with their cudaDataType
    (CUDA_R_16BF 14, CUDA_R_16F 2) and C's (CUDA_R_32F 0 for bf16_f32 and
    f16_f32) in CUBLAS_DEFAULT_MATH (computed in fp32; TF32 is for fp32
    operands); fp32 keeps its 13 arguments. A new result of a float32 C is
    allocated as float32, of a 16-bit one in the operands' dtype."""
    class Torch:
        float32 = "float32"

    class Operand(Buffer):
        def new_empty(self, *shape, dtype=None):
            self.asked = (shape, dtype)
            return Buffer([0.0] * (shape[0] * shape[1]))

    fake = FakeFastcall()
    gemm = blas.Gemm(Torch, HANDLES, tf32=True, layout="nt", m=2, n=3, k=4, index=0,
                     stream=lambda index: 33, fastcall=fake, dtype=dtype)
    assert fake.plans == [(11, 44, 22, 0, 32 << 20) + types]
    a, b = Operand([1.0] * 8), Buffer([2.0] * 12)
    out = gemm.new(a, b)
    assert out.values == [8.0] * 6
    assert a.asked == ((2, 3), "float32" if types[1] == 0 else None)
    blas.Gemm(Torch, HANDLES, tf32=False, layout="nn", m=2, n=3, k=4, index=0,
              stream=lambda index: 33, fastcall=fake)
    assert fake.plans[-1] == (11, 44, 22, 0, 32 << 20)  # fp32: no types passed


def test_prepare_refuses_a_dtype_it_does_not_know():
    assert blas.prepare(None, 0, False, "nn", 2, 2, 2, dtype="f64") is None
