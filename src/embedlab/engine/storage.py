"""How a table's matrices are stored: 2-D, floating, finite, row-major and read-only.

``readonly_matrix`` is the one check every matrix of an ``EmbeddingTable``
passes (the token table, the position and token-type tables): a read-only
row-major array that nothing can write is kept as is, anything else is copied
once; NaN, infinity and float64 rows whose length leaves float64's range are
refused, naming the row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeError
from .lengths import NORM_HIGH, NORM_LOW, vector_norms
from .row_blocks import map_row_blocks

__all__ = ["readonly_matrix"]


def readonly_matrix(matrix: Any, what: str, width: int | None = None, *, finite: bool = False) -> np.ndarray:
    """The matrix as the table keeps it: (rows, D), floating, finite, row-major, read-only.

    Parameters
    ----------
    matrix : array_like, shape (rows, D), floating
        Kept as is when it is a row-major array that nothing can write
        (``_frozen``); copied once otherwise.
    what : str
        How messages name the matrix (``"table (glove, /path)"``).
    width : int, optional
        The D it must have (the token table's), for position and token-type tables.
    finite : bool
        True where the caller has shown every entry finite: a float16 or
        float32 matrix whose row lengths, measured in float64, are all finite
        (a NaN or an infinity makes its row's length NaN or inf; a float32
        row's sum of squares cannot overflow float64). The scan for NaN and
        infinity is skipped then; a float64 matrix is always scanned (its
        rows' lengths may leave float64's range).

    Raises
    ------
    ShapeError
        (a ``ValueError``) if it is not 2-D with at least one row and column, or not ``width`` wide.
    TypeError
        If its dtype is not floating.
    ValueError
        For NaN or infinity (names row and column), or a float64 row whose
        length overflows or is a nonzero subnormal (names the row).

    >>> readonly_matrix([[1.0, 2.0]], "table").flags.writeable
    False
    """
    if isinstance(matrix, np.ndarray) and matrix.flags.c_contiguous and _frozen(matrix):
        arr = matrix  # a read-only row-major map or view of read-only memory: nobody can write through it
    else:
        arr = np.array(matrix, order="C")  # always a fresh, row-major copy
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ShapeError(f"{what} must be a 2-D array with at least one row and column, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{what} must be floating point, got dtype {arr.dtype}")
    if width is not None and arr.shape[1] != width:
        raise ShapeError(f"{what} has width {arr.shape[1]}, the token table has D={width}")
    if not finite or arr.dtype == np.float64:
        _check_finite(arr, what)
    if arr.flags.writeable:
        arr.flags.writeable = False
    return arr


def _frozen(arr: np.ndarray) -> bool:
    """True when nothing can write ``arr``'s memory: it and every array it views are read-only,
    and the buffer beneath them (a read-only map, ``bytes``) is too. A read-only view of a
    writable array is not frozen: its owner can still change it (case C02)."""
    base: Any = arr
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        if base.base is None:
            return True  # a read-only array that owns its memory
        base = base.base
    try:
        return memoryview(base).readonly
    except TypeError:
        return False


def _check_finite(arr: np.ndarray, what: str) -> None:
    """Refuse NaN and infinity: they make every ranking and every cosine that touches them wrong.

    Also refuses a row whose length overflows float64 (finite entries near
    1e308) or is a nonzero subnormal (entries near 1e-310); only float64
    tables can hold them, and every length is measured in float64. Scanned in
    blocks of rows on one thread per core (``row_blocks``), so a
    memory-mapped table is read once and no full-size boolean array is made;
    the error names the first bad row of the table, whichever thread met it.
    """
    step = max(1, 2**22 // arr.shape[1])  # rows per block, ~4M values
    for problem in map_row_blocks(lambda a, b: _first_problem(arr, a, b, what), arr.shape[0], step):
        if problem is not None:
            raise problem


def _first_problem(arr: np.ndarray, start: int, stop: int, what: str) -> ValueError | None:
    """The error for the first bad row among rows [start, stop), or None when they are all fine."""
    rows = arr[start:stop]  # (b, D)
    finite = np.isfinite(rows)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        value = arr[start + r, c]
        return ValueError(f"{what} holds {value} at row {start + r}, column {c}: NaN and infinity are refused")
    if arr.dtype == np.float64 and np.abs(rows).max() > NORM_HIGH:
        too_long = np.flatnonzero(~np.isfinite(vector_norms(rows)))
        if too_long.size:
            r = int(too_long[0])
            return ValueError(f"{what}: row {start + r} is too long for float64, its length overflows (largest "
                              f"entry {np.abs(rows[r]).max():.3g}); lengths are measured in float64")
    if arr.dtype == np.float64 and ((rows != 0) & (np.abs(rows) < NORM_LOW)).any():
        lengths = vector_norms(rows)  # (b,)
        too_short = np.flatnonzero((lengths > 0) & (lengths < np.finfo(np.float64).tiny))
        if too_short.size:
            r = int(too_short[0])
            return ValueError(f"{what}: row {start + r} is too short for float64, its length is subnormal "
                              f"(largest entry {np.abs(rows[r]).max():.3g}), too imprecise to divide by; lengths "
                              f"are measured in float64")
    return None
