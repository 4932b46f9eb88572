"""Position similarity: the cosine between rows of a position table, as arrays.

A position table (T_max, D) holds one vector per position. How alike two of
its rows are is their cosine; this module measures it along the table:

* ``adjacent_cosine``: cosine of rows p and p + 1, for every p;
* ``mean_cosine_by_offset``: the cosine of rows p and p + k averaged over p, per k;
* ``cosine_matrix``: the cosine of every pair of rows.

They are pure array functions: ``nn.neighbour_cosine_curve`` (the demo's
curve) and ``measure.positions`` (learned against sinusoidal, with a
smoothness verdict) both reach them down here. For the sinusoidal table
(Vaswani et al. 2017, section 3.5) the cosine of rows p and p + k is
``(2 / D) * sum_i cos(k w_i)``, the same for every p.

Cosine follows the lab's rule: a zero-length row has cosine 0.0 with anything.
A row holding NaN or infinity is refused (``ValueError`` naming the row and
column), never measured as if it were a zero row. Everything is computed in
float64, with lengths exact over float64's whole range (``lengths.vector_norms``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ShapeError
from .lengths import vector_norms

__all__ = ["adjacent_cosine", "mean_cosine_by_offset", "cosine_matrix", "position_table"]


def adjacent_cosine(table: Any) -> np.ndarray:
    """Cosine of rows p and p + 1 for p = 0 .. T_max - 2.

    Parameters
    ----------
    table : array_like, shape (T_max, D), T_max >= 2

    Returns
    -------
    numpy.ndarray, shape (T_max - 1,), float64
        In [-1, 1]; 0.0 where either row has zero length.

    Raises
    ------
    ShapeError
        (a ``ValueError``) for a table that is not 2-D with at least 2 rows.
    ValueError
        For a table holding NaN or infinity (names the row and column).

    >>> adjacent_cosine([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]).round(4).tolist()
    [0.7071, 0.0]
    """
    unit = _unit_rows(position_table(table))  # (T_max, D)
    return _cosines_at(unit, 1)  # (T_max - 1,)


def mean_cosine_by_offset(table: Any, offsets: Sequence[int]) -> np.ndarray:
    """For each offset k, the cosine of rows p and p + k, averaged over p.

    Parameters
    ----------
    table : array_like, shape (T_max, D), T_max >= 2
    offsets : sequence of int, length K
        Each ``1 <= k < T_max``.

    Returns
    -------
    numpy.ndarray, shape (K,), float64

    Raises
    ------
    ShapeError
        For a table that is not 2-D with at least 2 rows.
    ValueError
        For an offset outside ``[1, T_max)`` (names it and T_max), or a table
        holding NaN or infinity (names the row and column).

    >>> mean_cosine_by_offset([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [1, 2]).tolist()
    [0.0, 1.0]
    """
    unit = _unit_rows(position_table(table))  # (T_max, D)
    T_max = unit.shape[0]
    for k in offsets:  # every offset is checked before any is measured
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < T_max:
            raise ValueError(f"offset {k!r} is out of range: expected an int with 1 <= k < T_max = {T_max}")
    return np.array([_cosines_at(unit, k).mean() for k in offsets], dtype=np.float64)  # (K,)


def cosine_matrix(table: Any) -> np.ndarray:
    """Cosine of every pair of rows: (T_max, D) -> (T_max, T_max), float64.

    Zero-length rows have cosine 0.0 with every row. Raises ``ShapeError`` for
    a table that is not 2-D with at least 2 rows, ``ValueError`` for one
    holding NaN or infinity (names the row).

    >>> cosine_matrix([[1.0, 0.0], [0.0, 2.0]]).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    unit = _unit_rows(position_table(table))  # (T_max, D)
    return np.clip(unit @ unit.T, -1.0, 1.0)  # (T_max, T_max)


def position_table(table: Any) -> np.ndarray:
    """A (T_max, D) float64 table, checked: 2-D, T_max >= 2, D >= 1, every entry finite.

    NaN or infinity is refused, naming the row (as the table loaders do): a
    NaN row would otherwise read as a zero row (cosine 0.0) and give a finite,
    wrong curve.

    Raises ``ShapeError`` (a ``ValueError``) for a wrong shape, ``ValueError``
    for a non-finite entry.

    >>> position_table([[1, 2], [3, 4]]).dtype
    dtype('float64')
    """
    P = np.asarray(table, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 2 or P.shape[1] < 1:
        raise ShapeError(f"position table has shape {np.shape(table)}, expected (T_max, D) with T_max >= 2, D >= 1")
    finite = np.isfinite(P)  # (T_max, D)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(f"position table holds {P[r, c]} at row {r}, column {c}: NaN and infinity are refused")
    return P


# -- helpers -----------------------------------------------------------------

def _cosines_at(unit: np.ndarray, k: int) -> np.ndarray:
    return np.clip(np.einsum("pd,pd->p", unit[:-k], unit[k:]), -1.0, 1.0)  # (T_max - k,)


def _unit_rows(P: np.ndarray) -> np.ndarray:
    norms = vector_norms(P)[:, None]  # (T_max, 1) exact for rows near 1e-200 or 1e200 too
    return np.divide(P, norms, out=np.zeros_like(P), where=norms > 0)  # (T_max, D) zero rows stay zero
