"""Degenerate rows of a table: all-zero rows, rows holding NaN or infinity, exact copies, and rows far
longer than the rest.

A row that is all zeros scores 0 against every hidden vector and has no
direction; a row with NaN or infinity makes every logit it enters NaN; two ids
with the very same row cannot be told apart by the model (a copy left by a
conversion, or padding rows initialised to one value). ``scan_rows`` finds
each kind in one pass over the table, a block of rows at a time (a 128k x 4k
table is never copied whole), and measures each row's L2 length on the way.

Exact copies are rows with the very same bits (``-0.0`` is not ``0.0``);
all-zero and non-finite rows are listed as such and left out of the copies. A
row's bits are summed as unsigned integers (exact, whatever the order) to
find rows that may be equal; only those are compared, bit for bit.

A projection (PCA, t-SNE, UMAP) is wrecked by such rows: OPT's all-zero
padding row sits 75 units out in a t-SNE picture whose median distance is 8,
and squeezes the other points into a corner. ``left_out`` names the rows a
projection leaves out of its fit: all-zero rows, copies of a row already in
it, and rows longer than ``long_limit`` of the table's row lengths.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["DegenerateRows", "RowScan", "scan_rows", "BLOCK_VALUES", "LeftOut", "left_out", "long_limit",
           "LONG_MADS", "MAD_FLOOR"]

BLOCK_VALUES = 1 << 21  # values of the table read at a time (16 MiB as float64)
# A row is far longer than the rest beyond median + LONG_MADS x MAD of the table's row lengths (MAD: the median
# absolute deviation, unscaled). Ten MADs is about 6.7 standard deviations of a normal spread of lengths: no row
# of a table of 10^6 gaussian rows, yet OPT's or GloVe's few longest rows. MAD_FLOOR: the MAD is taken as at least
# this share of the median, so that a table of unit rows (MAD ~1e-8 from rounding) has no outlier by rounding.
LONG_MADS = 10.0
MAD_FLOOR = 1e-3


@dataclass(frozen=True)
class DegenerateRows:
    """The degenerate rows of one table.

    Attributes
    ----------
    part : str
        ``"input"`` (the token table) or ``"head"`` (an output head of its own).
    rows : int
        Rows of the table.
    zero : tuple of int
        Ids whose row is all zeros.
    nonfinite : tuple of int
        Ids whose row holds NaN or infinity.
    duplicates : tuple of tuple of int
        Groups of ids whose rows are bit-for-bit the same (zero and non-finite
        rows left out), each ascending, groups ordered by their first id.
    """

    part: str
    rows: int
    zero: tuple[int, ...]
    nonfinite: tuple[int, ...]
    duplicates: tuple[tuple[int, ...], ...]

    @property
    def copied(self) -> frozenset[int]:
        """Every id in a group of copies."""
        return frozenset(i for group in self.duplicates for i in group)

    def to_dict(self, tokens: Sequence[str | None] = ()) -> dict[str, Any]:
        """JSON-able, each id with its token where ``tokens`` has one."""
        named = (lambda i: {"id": i, "token": tokens[i] if i < len(tokens) else None})
        return {"part": self.part, "rows": self.rows, "zero": [named(i) for i in self.zero],
                "nonfinite": [named(i) for i in self.nonfinite],
                "duplicates": [[named(i) for i in group] for group in self.duplicates]}


@dataclass(frozen=True)
class RowScan:
    """What one pass over a table found: its degenerate rows and each row's length.

    ``norms`` (V,) float64: each row's L2 length, accumulated in float64; NaN
    for a row that holds NaN or infinity. ``finite`` (V,) bool.
    """

    degenerate: DegenerateRows
    norms: np.ndarray
    finite: np.ndarray


def scan_rows(matrix: np.ndarray, part: str = "input") -> RowScan:
    """All-zero, non-finite and copied rows of ``matrix``, and every row's length, in one pass.

    Parameters
    ----------
    matrix : np.ndarray, shape (V, D), floating
    part : {"input", "head"}

    Returns
    -------
    RowScan

    >>> m = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [np.nan, 1.0], [-0.0, 0.0]])
    >>> d = scan_rows(m).degenerate
    >>> d.zero, d.nonfinite, d.duplicates
    ((1, 4), (3,), ((0, 2),))
    """
    V, D = matrix.shape
    squares = np.empty(V, dtype=np.float64)  # (V,) each row's sum of squares
    finite = np.ones(V, dtype=bool)  # (V,)
    zero = np.zeros(V, dtype=bool)  # (V,)
    wide_bits = matrix.dtype.itemsize == 8
    # (V,) each row's bits summed as integers, exactly (wrapping past 2**64 only for float64): a bfloat16
    # table widened to float32 has 16 zero bits in every value, so a sum kept to 32 bits would collide often
    keys = np.empty(V, dtype=np.uint64)
    unsigned = np.dtype(f"u{matrix.dtype.itemsize}")
    block = max(1, BLOCK_VALUES // max(D, 1))
    wide = np.empty((min(block, V), D), dtype=np.float64)  # (b, D) reused: a fresh array per block costs its pages
    for start in range(0, V, block):
        rows = np.ascontiguousarray(matrix[start:start + block])  # (b, D)
        n = len(rows)
        np.copyto(wide[:n], rows)
        with np.errstate(over="ignore", invalid="ignore"):
            squares[start:start + n] = np.einsum("ij,ij->i", wide[:n], wide[:n])
        keys[start:start + n] = rows.view(unsigned).sum(axis=1, dtype=keys.dtype)
        if wide_bits:  # float64 squares can overflow a finite row, and underflow a nonzero one to 0
            finite[start:start + n] = np.isfinite(rows).all(axis=1)
            zero[start:start + n] = ~rows.any(axis=1)
    # A float32 or float16 value squared in float64 neither overflows nor underflows to 0: the sum of squares
    # is finite exactly when the row is, and 0 exactly when every value is (-0.0 included).
    if not wide_bits:
        finite = np.isfinite(squares)
        zero = squares == 0
    norms = np.sqrt(squares)  # (V,)
    norms[~finite] = np.nan
    zero &= finite
    groups = _copies(matrix, keys, finite & ~zero)
    degenerate = DegenerateRows(part=part, rows=V, zero=tuple(np.flatnonzero(zero).tolist()),
                                nonfinite=tuple(np.flatnonzero(~finite).tolist()), duplicates=groups)
    return RowScan(degenerate=degenerate, norms=norms, finite=finite)


def _copies(matrix: np.ndarray, keys: np.ndarray, eligible: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Groups of rows with the very same bits, among rows whose bit sums (``keys``) are equal."""
    ids = np.flatnonzero(eligible)  # (n,)
    order = ids[np.argsort(keys[ids], kind="stable")]  # (n,) by key, then by id
    sorted_keys = keys[order]
    same = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])  # positions whose key repeats the one before
    if same.size == 0:
        return ()
    starts = np.unique(np.concatenate([same, same + 1]))  # every position in a run of equal keys
    groups: dict[bytes, list[int]] = {}
    for i in sorted(order[starts].tolist()):
        digest = hashlib.blake2b(np.ascontiguousarray(matrix[i]).tobytes(), digest_size=32).digest()
        groups.setdefault(digest + keys[i].tobytes(), []).append(i)
    found = []
    for members in groups.values():
        if len(members) > 1:
            first = np.ascontiguousarray(matrix[members[0]]).view(np.uint8)
            same_bits = [i for i in members if np.array_equal(np.ascontiguousarray(matrix[i]).view(np.uint8), first)]
            if len(same_bits) > 1:
                found.append(tuple(same_bits))
    return tuple(sorted(found))


# -- the rows a projection leaves out ----------------------------------------------------------------------------

@dataclass(frozen=True)
class LeftOut:
    """The degenerate rows among those a projection was asked to fit (``left_out``).

    Attributes
    ----------
    zero : tuple of int
        Ids whose row is all zeros (``-0.0`` included).
    copies : tuple of (int, int)
        ``(id, original)``: a row with the very same bits as the row of
        ``original``, an id asked before it (or kept: the probe), which stays.
    long : tuple of int
        Ids whose row is longer than ``limit``.
    limit : float
        The row length beyond which a row is far longer than the rest
        (``long_limit``: median + ``LONG_MADS`` x MAD of the table's row lengths).
    """

    zero: tuple[int, ...]
    copies: tuple[tuple[int, int], ...]
    long: tuple[int, ...]
    limit: float

    @property
    def ids(self) -> tuple[int, ...]:
        """Every id named, ascending."""
        return tuple(sorted({*self.zero, *(i for i, _ in self.copies), *self.long}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: ``zero``, ``copies`` (``[id, original]`` pairs), ``long`` and ``limit``."""
        return {"zero": list(self.zero), "copies": [list(pair) for pair in self.copies], "long": list(self.long),
                "limit": self.limit}


def long_limit(norms: np.ndarray) -> float:
    """The row length beyond which a row is far longer than the rest: median + ``LONG_MADS`` x MAD.

    ``norms`` (V,) float64: every row's length. The MAD (median absolute
    deviation) is taken as at least ``MAD_FLOOR`` x the median. Lengths are
    divided by the longest first, so that lengths near 1e308 neither
    overflow the median's mean of two nor the sum; a limit beyond float64 is
    infinity (no row is longer).

    >>> long_limit(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    13.0
    """
    top = float(np.max(norms, initial=0.0))
    if not top > 0.0:
        return math.inf  # every row all zeros (or none): no row is longer than the rest
    unit = norms / top  # (V,) in [0, 1]
    median = float(np.median(unit))
    mad = float(np.median(np.abs(unit - median)))
    with np.errstate(over="ignore"):
        return float(np.float64(top) * (median + LONG_MADS * max(mad, MAD_FLOOR * median)))


def left_out(rows: np.ndarray, ids: Sequence[int], norms: np.ndarray, limit: float,
             keep: Sequence[int] = ()) -> LeftOut:
    """The rows a projection leaves out of its fit: all-zero rows, copies, rows longer than ``limit``.

    Parameters
    ----------
    rows : np.ndarray, shape (n, D), floating
        The rows asked for, in order (``scan_rows`` finds the zero rows and the copies among them).
    ids : sequence of int, length n
        Their token ids.
    norms : np.ndarray, shape (n,), float64
        Their lengths, as the table measures them.
    limit : float
        ``long_limit`` of the table's row lengths.
    keep : sequence of int
        Ids never left out (the probe: the figure is drawn around it); a copy
        of one of them is left out instead.

    Returns
    -------
    LeftOut
        Of each group of copies the first id kept (a kept id before all), the others named as its copies.

    >>> rows = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [9.0, 9.0], [0.0, 1.0]])
    >>> out = left_out(rows, [10, 11, 12, 13, 14], np.hypot(rows[:, 0], rows[:, 1]), 5.0, keep=[12])
    >>> out.zero, out.copies, out.long, out.ids
    ((11,), ((10, 12),), (13,), (10, 11, 13))
    """
    scan = scan_rows(rows).degenerate
    ids = [int(i) for i in ids]
    kept = set(int(i) for i in keep)
    copies = []
    for group in scan.duplicates:  # positions among the rows, ascending: the order asked
        members = sorted((ids[j] for j in group), key=lambda i: i not in kept)  # a kept id first (a stable sort)
        copies += [(i, members[0]) for i in members[1:] if i not in kept]
    zero = tuple(ids[j] for j in scan.zero if ids[j] not in kept)
    long = tuple(i for i, n in zip(ids, norms.tolist()) if n > limit and i not in kept)
    return LeftOut(zero=zero, copies=tuple(copies), long=long, limit=float(limit))
