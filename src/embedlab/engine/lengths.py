"""Row lengths and rms, exact across float64's whole range, and the bounds of that range.

A length is accumulated in float64 whatever the dtype, so float16 rows do not
overflow. A sum of squares leaves float64's range for entries near 1e-160 or
1e160 although the length itself is representable; such rows are measured
again divided by their largest entry (Blue 1978, "A portable Fortran program to
find the Euclidean norm of a vector", the scaling LAPACK's ``dnrm2`` uses), so a
tiny row is not given length 0 nor a huge finite one length inf. The table,
the search and the position measurements all take their lengths from here.

Units: lengths and rms are in the table's own units (the entries' scale).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .row_blocks import CORES, map_row_blocks

__all__ = ["vector_norms", "norms_bytes", "LENGTHS_BLOCK_BYTES", "length_range", "rms", "inverse_norms", "NORM_LOW",
           "NORM_HIGH", "SQUARES_LOW", "SQUARES_HIGH"]

# A sum of squares in this range lost nothing to overflow or underflow (as in
# ``embed._sum_of_squares``); lengths outside the square roots of it are
# measured again, scaled (``vector_norms``).
SQUARES_LOW, SQUARES_HIGH = 1e-280, 1e300
# Bytes of float64 rows a loader's block of rows is measured from at a time, while the block is in a core's cache
# (``sources.tensor_data``, ``bf16_matrix.block_lengths``; measured: 0.70 ns a value at 16 rows of 4,096, 0.88 at 64).
LENGTHS_BLOCK_BYTES = 1 << 19
NORM_LOW, NORM_HIGH = 1e-140, 1e150


def vector_norms(X: np.ndarray, *, block_bytes: int = 32 * 2**20, parallel: bool = True) -> np.ndarray:
    """Euclidean length of every row: (M, D) -> (M,), float64.

    Accumulated in float64 whatever the dtype, in blocks of float64 rows
    (at least one row; none where X is float64 already: its blocks are
    views), so float16 rows do not overflow and a huge table is never copied
    whole. The blocks run on one thread per core (``row_blocks``), each
    holding a block of ``block_bytes / CORES``, so together they hold at most
    ``block_bytes`` as one thread did. Rows whose sum of squares leaves
    float64's range (entries near 1e-160 or 1e160, and zero rows) are
    measured again scaled by their largest entry, a quarter block at a time,
    so a tiny row is not given length 0 nor a huge finite one length inf.
    Each row's length depends on that row alone: identical rows get
    bit-identical lengths, whatever the blocks and threads (``parallel=False``
    runs them on this thread, in order). Besides the result (8 M bytes), it
    holds at most ``block_bytes`` plus 2 bytes per row (``norms_bytes``).

    >>> vector_norms(np.array([[3.0, 4.0], [0.0, 0.0], [3e-300, 4e-300]])).tolist()
    [5.0, 0.0, 5e-300]
    """
    out = np.empty(len(X), dtype=np.float64)  # (M,)
    rows = max(1, block_bytes // (8 * max(X.shape[1], 1)))  # rows of one block on one thread
    threads = CORES if parallel and rows >= CORES else 1  # each thread takes a share of the budget
    step = max(1, rows // threads)
    map_row_blocks(lambda a, b: _measure(X, a, b, out), len(X), step, parallel=threads > 1)
    return out


def _measure(X: np.ndarray, a: int, b: int, out: np.ndarray) -> None:
    """``out[a:b]`` = the lengths of rows [a, b) of X: summed squares, then the rows out of range again, scaled."""
    rows = np.asarray(X[a:b], dtype=np.float64)  # (b, D)
    part = out[a:b]  # (b,) a view
    with np.errstate(over="ignore", under="ignore"):  # out-of-range sums are measured again below
        part[...] = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    found = np.flatnonzero((part < NORM_LOW) | (part > NORM_HIGH))  # zero, underflowed or overflowed rows
    quarter = max(1, (b - a) // 4)
    for s in range(0, found.size, quarter):  # a quarter block at a time: 3 copies fit in one
        odd = found[s:s + quarter]
        rows = np.asarray(X[a + odd], dtype=np.float64)  # (r, D)
        top = np.abs(rows).max(axis=1)  # (r,) 0 for a zero row, inf/nan for a row holding them
        fine = (top > 0) & np.isfinite(top)
        unit = rows[fine] / top[fine, None]  # entries in [-1, 1]: the sum of squares stays in range
        with np.errstate(over="ignore"):  # a length beyond float64's largest value is inf
            part[odd[fine]] = top[fine] * np.sqrt(np.einsum("ij,ij->i", unit, unit))


def norms_bytes(M: int, D: int, block_bytes: int) -> int:
    """Bytes ``vector_norms`` holds at a time for M rows of width D, besides its result (M,) float64.

    The larger of its two passes over blocks of b rows: a block widened to
    float64 (8 b D bytes, twice: einsum may buffer it); the odd rows of a block, a quarter block at a
    time, gathered, divided by their largest entry and copied (3 x 8 D b / 4),
    with a few (b,) arrays. An upper bound, for ``plan.fixed_bytes``.

    >>> norms_bytes(10, 4, 2**20)
    1120
    """
    rows = min(M, max(1, block_bytes // (8 * max(D, 1))))  # b: rows per block
    quarter = max(1, rows // 4)
    return max(16 * rows * D, 3 * 8 * quarter * D) + 48 * rows  # einsum may buffer a block once more


def length_range(*lengths: np.ndarray) -> tuple[float, float]:
    """The smallest nonzero and the largest of some arrays of lengths (each (M,) float64, >= 0).

    Returns ``(inf, 0.0)`` where no length is nonzero. Holds one bool per
    entry of the largest array at a time: the arrays are never concatenated.

    >>> length_range(np.array([0.0, 2.0]), np.array([0.5]))
    (0.5, 2.0)
    """
    low, high = np.inf, 0.0
    for x in lengths:
        if x.size:
            low = min(low, float(np.min(x, where=x > 0, initial=np.inf)))
            high = max(high, float(x.max()))
    return low, high


def rms(x: Any) -> np.ndarray:
    """Root mean square over the last axis: (..., D) -> (...), float64.

    Accumulated in float64, so float16 vectors do not overflow (300 ** 2 is
    above float16's largest value, 65504), and float64 vectors whose squares
    would leave float64's range are measured again divided by their largest
    entry (as ``vector_norms`` does), so
    the rms of ``[1e200, 1e200]`` is 1e200, not inf. The rms of an empty
    vector is 0.0.

    >>> float(rms(np.array([300, 300, 300, 300], dtype=np.float16)))
    300.0
    """
    a = np.asarray(x, dtype=np.float64)
    D = a.shape[-1]
    if D == 0:
        return np.zeros(a.shape[:-1])
    rows = a.reshape(-1, D)  # (M, D)
    with np.errstate(over="ignore", under="ignore"):  # such rows are measured again below
        out = np.sqrt(np.mean(rows * rows, axis=1))  # (M,)
    odd = np.flatnonzero((out < NORM_LOW) | (out > NORM_HIGH))  # zero, under- or overflowed
    if odd.size:  # measured again divided by their largest entry, as vector_norms does
        top = np.abs(rows[odd]).max(axis=1)  # (r,)
        fine = (top > 0) & np.isfinite(top)
        unit = rows[odd[fine]] / top[fine, None]  # entries in [-1, 1]
        out[odd[fine]] = top[fine] * np.sqrt(np.mean(unit * unit, axis=1))
    return out.reshape(a.shape[:-1])


def inverse_norms(norms: np.ndarray) -> np.ndarray:
    """1 / norm: (M,) -> (M,) float64, with 0.0 for a zero norm, so a zero vector's cosine is 0.0, never NaN.

    >>> inverse_norms(np.array([2.0, 0.0])).tolist()
    [0.5, 0.0]
    """
    out = np.zeros_like(norms, dtype=np.float64)
    np.divide(1.0, norms, out=out, where=norms > 0)
    return out
