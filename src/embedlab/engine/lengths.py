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

from typing import Any, Callable

import numpy as np

from .row_blocks import CORES, map_row_blocks
from .sum_of_squares import sums_of_squares

__all__ = ["vector_norms", "lengths_from_sums", "norms_bytes", "LENGTHS_BLOCK_BYTES", "length_range", "rms",
           "inverse_norms", "NORM_LOW", "NORM_HIGH", "SQUARES_LOW", "SQUARES_HIGH"]

# A sum of squares in this range lost nothing to overflow or underflow (as in
# ``embed._sum_of_squares``); lengths outside the square roots of it are
# measured again, scaled (``vector_norms``).
SQUARES_LOW, SQUARES_HIGH = 1e-280, 1e300
# Bytes of float64 rows (as ``vector_norms`` counts a block) a loader measures at a time, while the block it read is in
# a core's cache (``sources.tensor_data``, ``bf16_matrix.block_lengths``).
LENGTHS_BLOCK_BYTES = 1 << 19
NORM_LOW, NORM_HIGH = 1e-140, 1e150


def vector_norms(X: np.ndarray, *, block_bytes: int = 32 * 2**20, parallel: bool = True) -> np.ndarray:
    """Euclidean length of every row: (M, D) -> (M,), float64.

    The squares summed in float64 whatever the dtype, in one fixed order
    (``sum_of_squares``: compiled for this CPU where llvmlite is, NumPy's
    arrays elsewhere, the same bits), so float16 rows do not overflow, in
    blocks of ``block_bytes`` of float64 rows (at least one row; a block is
    copied only where its dtype must be, float16 to float32, integers to
    float64, or it is not contiguous), so a huge table is never copied
    whole. The blocks run on one thread per core (``row_blocks``), each
    holding a block of ``block_bytes / CORES``, so together they hold at most
    ``block_bytes`` as one thread did. Rows whose sum of squares leaves
    float64's range (entries near 1e-160 or 1e160, and zero rows) are
    measured again scaled by their largest entry, a quarter block at a time,
    so a tiny row is not given length 0 nor a huge finite one length inf.
    Each row's length depends on that row alone: identical rows get
    bit-identical lengths, whatever the blocks and threads (``parallel=False``
    runs them on this thread, in order). Besides the result (8 M bytes), it
    holds at most twice ``block_bytes`` plus 48 bytes per row of a block
    (``norms_bytes``: a block's float64 copy and the NumPy loop's arrays).

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
    part = out[a:b]  # (b,) a view
    sums_of_squares(np.asarray(X[a:b]), out=part)  # float64, in the fixed order
    lengths_from_sums(part, lambda odd: X[a + odd])


def lengths_from_sums(part: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray]) -> None:
    """Sums of squares (b,) float64 -> the rows' lengths, in place; rows out of range measured again, scaled.

    ``part`` holds ``sum_of_squares.sums_of_squares`` of b rows; each becomes
    its square root. A length outside [``NORM_LOW``, ``NORM_HIGH``] (a zero
    row, or a sum that underflowed or overflowed) is measured again from the
    row itself, ``rows_of(i)`` ((r,) indices into the b rows -> those rows
    (r, D), any real dtype), divided by its largest entry (Blue 1978), a
    quarter of the b rows at a time. ``vector_norms`` and a loader measuring
    a bf16 block from its bits (``bf16_matrix.block_lengths``) both end here.
    """
    np.sqrt(part, out=part)
    found = np.flatnonzero((part < NORM_LOW) | (part > NORM_HIGH))  # zero, underflowed or overflowed rows
    quarter = max(1, len(part) // 4)
    for s in range(0, found.size, quarter):  # a quarter block at a time: 3 copies fit in one
        odd = found[s:s + quarter]
        rows = np.asarray(rows_of(odd), dtype=np.float64)  # (r, D)
        top = np.abs(rows).max(axis=1)  # (r,) 0 for a zero row, inf/nan for a row holding them
        fine = (top > 0) & np.isfinite(top)
        unit = rows[fine] / top[fine, None]  # entries in [-1, 1]: the sum of squares stays in range
        with np.errstate(over="ignore"):  # a length beyond float64's largest value is inf
            part[odd[fine]] = top[fine] * np.sqrt(sums_of_squares(unit))


def norms_bytes(M: int, D: int, block_bytes: int) -> int:
    """Bytes ``vector_norms`` holds at a time for M rows of width D, besides its result (M,) float64.

    The larger of its two passes over blocks of b rows: the sums of squares
    (``sum_of_squares``: compiled, at most a contiguous copy of a float16,
    integer or strided block, 8 b D bytes; in NumPy, that copy and the
    block's lanes, at most 8 b D bytes each); the odd rows of a block, a quarter
    block at a time, gathered, divided by their largest entry and copied (3 x
    8 D b / 4), with a few (b,) arrays. An upper bound, for ``plan.fixed_bytes``.

    >>> norms_bytes(10, 4, 2**20)
    1120
    """
    rows = min(M, max(1, block_bytes // (8 * max(D, 1))))  # b: rows per block
    quarter = max(1, rows // 4)
    return max(16 * rows * D, 3 * 8 * quarter * D) + 48 * rows  # NumPy's loop: a float64 copy and its lanes


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
