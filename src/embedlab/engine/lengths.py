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

__all__ = ["vector_norms", "rms", "inverse_norms", "NORM_LOW", "NORM_HIGH", "SQUARES_LOW", "SQUARES_HIGH"]

# A sum of squares in this range lost nothing to overflow or underflow (as in
# ``embed._sum_of_squares``); lengths outside the square roots of it are
# measured again, scaled (``vector_norms``).
SQUARES_LOW, SQUARES_HIGH = 1e-280, 1e300
NORM_LOW, NORM_HIGH = 1e-140, 1e150


def vector_norms(X: np.ndarray) -> np.ndarray:
    """Euclidean length of every row: (M, D) -> (M,), float64.

    Accumulated in float64 whatever the dtype, in blocks of about 32 MB, so
    float16 rows do not overflow and a huge table is never copied whole.
    Rows whose sum of squares leaves float64's range (entries near 1e-160 or
    1e160) are measured again scaled by their largest entry, so a tiny row
    is not given length 0 nor a huge finite one length inf. Identical rows
    get bit-identical lengths.

    >>> vector_norms(np.array([[3.0, 4.0], [0.0, 0.0], [3e-300, 4e-300]])).tolist()
    [5.0, 0.0, 5e-300]
    """
    out = np.empty(len(X), dtype=np.float64)  # (M,)
    step = max(1, 2**22 // max(X.shape[1], 1))
    for start in range(0, len(X), step):
        rows = np.asarray(X[start:start + step], dtype=np.float64)  # (b, D)
        with np.errstate(over="ignore", under="ignore"):  # out-of-range sums are measured again below
            out[start:start + len(rows)] = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    odd = np.flatnonzero((out < NORM_LOW) | (out > NORM_HIGH))  # zero, underflowed or overflowed
    if odd.size:
        rows = np.asarray(X[odd], dtype=np.float64)  # (r, D)
        top = np.abs(rows).max(axis=1)  # (r,) 0 for a zero row, inf/nan for a row holding them
        fine = (top > 0) & np.isfinite(top)
        unit = rows[fine] / top[fine, None]  # entries in [-1, 1]: the sum of squares stays in range
        with np.errstate(over="ignore"):  # a length beyond float64's largest value is inf
            out[odd[fine]] = top[fine] * np.sqrt(np.einsum("ij,ij->i", unit, unit))
    return out


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
