"""tuned.blas (cuBLAS's SGEMM called directly for served cuBLAS) and the C
module tuned._fastcall, without a GPU: the row-major to column-major mapping
of each layout against a column-major SGEMM on flat memory, and the C
module's refusals. test_gpu.py runs both on a GPU."""

import os

import pytest

from tuned import blas, kernel


class Buffer:
    """A stand-in tensor: flat float memory at a fake device address."""

    memory = {}

    def __init__(self, values):
        self.values = list(values)
        self.address = 4096 * (len(Buffer.memory) + 1)
        Buffer.memory[self.address] = self

    def data_ptr(self):
        return self.address


def column_major_sgemm(handle, ctx, math, opa, opb, m, n, k, a, lda, b, ldb, c, ldc, stream):
    """cublasSgemm's C(m x n, ldc) = op(A) op(B), alpha 1, beta 0, on Buffer
    memory (cuBLAS's argument order: the first operand is A)."""
    A, B, C = Buffer.memory[a].values, Buffer.memory[b].values, Buffer.memory[c].values
    assert lda >= (m if opa == 0 else k) and ldb >= (k if opb == 0 else n) and ldc >= m

    def at(M, ld, op, i, j):  # op(M)[i][j], M column-major with leading dimension ld
        return M[i + j * ld] if op == 0 else M[j + i * ld]

    for i in range(m):
        for j in range(n):
            C[i + j * ldc] = sum(at(A, lda, opa, i, p) * at(B, ldb, opb, p, j) for p in range(k))


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
    calls = []
    gemm = blas.Gemm(handle=11, ctx=22, tf32=layout == "tt", layout=layout, m=m, n=n, k=k,
                     index=0, stream=lambda index: 33)
    gemm.call = lambda *args: calls.append(args) or column_major_sgemm(*args)
    assert gemm(a, b, out) is out
    expected = [sum(opa[i][p] * opb[p][j] for p in range(k)) for i in range(m) for j in range(n)]
    assert out.values == expected
    (handle, ctx, math, *_rest, stream), = calls
    assert (handle, ctx, stream) == (11, 22, 33)
    assert math == (3 if layout == "tt" else 0)  # CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_DEFAULT_MATH


def test_a_failed_cublas_call_raises_naming_the_step():
    gemm = blas.Gemm(handle=1, ctx=2, tf32=False, layout="nn", m=2, n=2, k=2, index=0,
                     stream=lambda index: 0)
    gemm.call = lambda *args: ("cublasSgemm", -1)  # a CUresult 1, negated: a context push
    a = Buffer([0.0] * 4)
    with pytest.raises(kernel.TunedError) as e:
        gemm(a, a, a)
    assert "cublasSgemm: CUresult 1" in str(e.value)


def test_prepare_refuses_what_it_cannot_run():
    assert blas.prepare(None, 0, False, "nx", 2, 2, 2) is None
    assert blas.prepare(None, 0, False, "nn", 0, 2, 2) is None


fastcall = kernel._fastcall


@pytest.mark.skipif(fastcall is None and not os.environ.get("TUNED_TEST_FASTCALL"),
                    reason="tuned._fastcall is not built (no C compiler or Python headers)")
def test_the_c_module_is_built_and_refuses_bad_calls():
    assert fastcall is not None, "run.sh found Python's headers, yet tuned._fastcall was not built"
    driver, cublas = fastcall.init()
    assert isinstance(driver, bool) and isinstance(cublas, bool)
    with pytest.raises(TypeError, match="7 arguments"):
        fastcall.launch(1, 2, 3)
    with pytest.raises(TypeError, match="15 arguments"):
        fastcall.sgemm(1)
    if not driver:  # no GPU driver here: refused, not crashed
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            fastcall.launch(1, 2, 3, 4, 5, 0, 0)
    else:
        with pytest.raises(ValueError, match="null"):
            fastcall.launch(0, 0, 0, 0, 0, 0, 0)
    if not (driver and cublas):
        with pytest.raises(RuntimeError, match="no cuBLAS"):
            fastcall.sgemm(*range(15))
    if cublas:
        assert fastcall.cublas_status_name(7) == "CUBLAS_STATUS_INVALID_VALUE"
    with pytest.raises(TypeError):
        fastcall.launch("f", 2, 3, 4, 5, 0, 0)
