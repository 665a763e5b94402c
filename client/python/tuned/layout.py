"""Operand layouts of a GEMM, read from torch strides without copying.

C(MxN) = op(A) @ op(B), C row-major; each operand is "n" (stored row-major
as it is used: contiguous) or "t" (stored row-major as its transpose: the
.t() view of a contiguous matrix, strides (1, rows)). The pair, op(A)'s
then op(B)'s, is tuner.proto's Layout: "nn", "nt" (x @ W.t(), as
torch.nn.functional.linear), "tn", "tt". A tensor of other strides is
neither, and is copied with .contiguous() (then "n") where a kernel takes it.

Nothing here imports torch: the functions read .shape, .stride() and
.is_contiguous() of whatever tensor they are given.
"""

from .client import LAYOUTS  # noqa: F401 (re-exported: "nn", "nt", "tn", "tt")


def is_transposed(t):
    """Whether a 2-D tensor (rows, cols) is the transpose of a row-major
    matrix: strides (1, rows), a dimension of size 1 taking any stride."""
    rows, cols = t.shape
    s0, s1 = t.stride()
    return (s0 == 1 or rows == 1) and (s1 == rows or cols == 1)


def operand_layout(t):
    """A matrix's layout: "n" if row-major (contiguous; preferred where both
    hold, a single row or column), "t" if the transpose of a row-major matrix
    (is_transposed), else None. `t`: a 2-D tensor (rows, cols)."""
    if t.is_contiguous():
        return "n"
    return "t" if is_transposed(t) else None


def weight_layout(w):
    """The layout of linear's op(B) = w.t() (w: (N, K)): "n" where w is the
    transpose of a row-major (K, N) matrix (B row-major; preferred where both
    hold, a single row or column), "t" where w is row-major (the usual
    nn.Linear weight: layout "nt"), else None."""
    if is_transposed(w):
        return "n"
    return "t" if w.is_contiguous() else None


def describe(op, name, shape):
    """What an operand of layout `op` ("n" or "t") and shape (rows, cols)
    must be, for error messages."""
    rows, cols = shape
    if op == "n":
        return f"{name} must be contiguous (row-major)"
    return (f"{name} must be the transpose of a row-major matrix (strides (1, {rows}): the .t() "
            f"of a contiguous ({cols}, {rows}) tensor)")
