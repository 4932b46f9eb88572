"""Integer codes of rows and queries, and the certified bound on the scores they give.

The integer screen of a neighbour search (``int16_screen``) scores every row
from small integer codes instead of floats, and keeps every row that the
bound below cannot rule out. These codes serve exact search only: one scale
per row (or query), a power of two. (Deployment-side int8 with one range per
dimension is another method with another meaning.)

Codes
-----
A vector x (D,) becomes ``x = s * c + r``: ``s`` a power of two (0 for a zero
vector), ``c = rint(x / s)`` integers with ``|c_i| <= limit``, and the
residual ``r = x - s * c``. ``s`` is the smallest power of two with
``max|x_i| / s <= limit``, so the codes use all but at most one bit of the
range. ``limit = code_limit(D)`` keeps every integer dot product of two codes
inside int32 (``D * limit**2 < 2**31``), so the integer product ``I = c_q . c_w``
is exact; it is int16 (2,364 for D = 384, 6,553 for D = 50) and so a pair of
codes multiplies and adds in one AVX2 instruction (``vpmaddwd``).

The residual is computed exactly in float64: ``s * c_i`` is exact (a power of
two times an integer below 2**15); if ``c_i = 0`` then ``r_i = x_i``; else
``|x_i| >= s / 2``, so ``x_i`` is a multiple of ``s * 2**-53`` as ``s * c_i`` is,
and ``|r_i| <= s / 2`` holds at most 52 significant bits: the subtraction is
exact. Its length ``rho`` is computed in float64 and widened by
``1 + (D + 8) * 2**-52``, more than the relative rounding of a sum of D
squares and a square root (``D u`` with ``u = 2**-53``; Higham 2002, section
3.1): for queries by ``vector_norms(r)``, for rows by the encoding kernel's
running sum of squares, plus ``sqrt(D) * 2**-511`` for squares below 2**-1022
that underflow lost.

The bound
---------
With ``q = s_q c_q + r_q`` and ``w = s_w c_w + r_w``::

    q . w = s_q s_w (c_q . c_w) + s_q (c_q . r_w) + r_q . w
    |q . w - s_q s_w I| <= s_q |c_q| |r_w| + |r_q| |w|          (Cauchy-Schwarz, twice)

The search ranks by the float64 rescoring (``rescore``), not by the real
number ``q . w``: a float64 dot product of length D is within
``gamma |q| |w|`` of it, ``gamma = (D + 8) * 2**-52`` (>= ``D u / (1 - D u)``,
Higham 2002, eq. 3.5), and the cosine's division and clip add a few ``u``
more (``2 gamma`` covers them). So, with ``n`` the float64 lengths the
rescoring divides by and ``N = n (1 + gamma)`` >= the true length, the
rescored score lies within ``center +- err``, in *query units*:

==========  =====================  ============================  =====================================
metric      unit                   center                        err
==========  =====================  ============================  =====================================
dot         score / s_q            ``s_w I``                     ``|c_q| rho_w + beta N_w``, ``beta = (rho_q + gamma N_q) / s_q``
cosine      score * n_q / s_q      ``(s_w / n_w) I``             ``|c_q| rho_w / n_w + beta``, ``beta = (rho_q (1 + gamma) + 2 gamma n_q) / s_q``
==========  =====================  ============================  =====================================

(``rho`` the widened residual lengths; a zero row has center and err 0: its
score is exactly 0.) Each is ``a_w I + alpha b_w + beta c_w`` with per-row
terms ``a, b, c`` (``row_terms``) and per-query terms ``alpha = |c_q|``,
``beta`` (``QueryCodes``). Dividing by ``s_q``, a power of two, is exact, so
one comparison per pair in the kernel decides (after one per query and
tile of 16 rows from the extremes of their terms, ``tile_terms``, which
rules most tiles out at once). The kernel widens each
computed bound by ``2**-46 (|center| + err)``, far more than the few float64
roundings (each at most ``2**-53`` relative) that computing ``a, b, c, beta``
and the bound itself makes, so a computed upper bound is never below the
true one, nor a computed lower bound above it.

A row whose upper bound is below the k-th best lower bound among other rows
is beaten, in exact scores, by k rows: it cannot be listed, whatever the tie
rule. Every other row is rescored exactly. For the cosine, scores are
clipped to [-1, 1], where two scores above 1 would tie: the bar never rises
above 1 (``n_q / s_q`` in query units), and a bar at or below -1 rules
nothing out.

Glossary: ``V`` vocabulary size, ``D`` model width; ``D2 = ceil(D / 2)`` pairs
of codes, ``T = ceil(V / 16)`` tiles of 16 rows; ``m`` queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import MissingExtraError
from ..lengths import length_range, vector_norms

__all__ = ["RowCodes", "QueryCodes", "encode_rows", "encode_queries", "code_limit", "row_terms", "codes_fit", "tile_terms",
           "TILE", "LOW", "HIGH"]

TILE = 16  # rows per tile of the packed codes: two AVX2 registers of eight int32 scores
# Lengths the integer screen certifies: every nonzero length of a row or query in
# [LOW, HIGH] (as for the float32 screen), so no term of the bound nears float64's range.
LOW, HIGH = 1e-15, 1e15
_INT32_MAX = 2**31 - 1


def code_limit(D: int) -> int:
    """The largest code magnitude for width D: ``D' * limit**2 < 2**31`` with D' = D rounded up to even.

    Any dot product of two such code vectors is then exact in int32, and so
    are the pair sums of ``vpmaddwd`` (``2 * limit**2 < 2**31``).

    >>> code_limit(384), code_limit(50), code_limit(1)
    (2364, 6553, 32767)
    """
    if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
        raise ValueError(f"D must be a positive int, got {D!r}")
    return min(32767, math.isqrt(_INT32_MAX // (2 * -(-D // 2))))


def widening(D: int) -> float:
    """``1 + gamma`` with ``gamma = (D + 8) * 2**-52``: the relative rounding a float64 length or dot product of width D may carry."""
    return 1.0 + (D + 8) * 2.0**-52


@dataclass(frozen=True)
class RowCodes:
    """Integer codes of a table's rows, packed for the screen's kernel.

    This is a copy of the table (2 bytes per entry): part of the table's
    resident cost, like the table itself, not of a search's working memory.

    Attributes
    ----------
    packed : np.ndarray, shape (T, D2, 16, 2), int16
        Tile t, pair p, slot j of the tile: codes 2p and 2p + 1 of row
        ``ids[16 t + j]``; padding slots and codes past D are 0.
    ids : np.ndarray, shape (T * 16,), int64
        The row in each slot, -1 for the padding. Rows are placed by scale,
        then length, largest first, so the 16 rows of a tile have nearly equal
        ``a`` terms and one check per tile bounds them all (``tile_terms``).
    scales : np.ndarray, shape (V,), float64
        ``s_w``, powers of two; 0.0 for a zero row.
    residuals : np.ndarray, shape (V,), float64
        ``rho_w``, at least the length of ``w - s_w c_w``.
    D : int
        The table's width.
    limit : int
        ``code_limit(D)``: no code is larger in magnitude.
    """

    packed: np.ndarray
    ids: np.ndarray
    scales: np.ndarray
    residuals: np.ndarray
    D: int
    limit: int

    @property
    def V(self) -> int:
        return len(self.scales)

    @property
    def nbytes(self) -> int:
        """Bytes held: the packed codes, the slots' ids and the two float64 arrays."""
        return self.packed.nbytes + self.ids.nbytes + self.scales.nbytes + self.residuals.nbytes


@dataclass(frozen=True)
class QueryCodes:
    """Integer codes of m queries and their terms of the bound, in query units.

    Attributes
    ----------
    codes : np.ndarray, shape (m4, 2 * D2), int16
        One row per query, m rounded up to a multiple of 4 with zero rows.
    alpha : np.ndarray, shape (m4,), float64
        ``|c_q|``, widened; 0 for the padding.
    beta : np.ndarray, shape (m4,), float64
        The residual's term (see the module docstring); 0 for the padding.
    top : np.ndarray, shape (m4,), float64
        The largest score the rescoring can give, in query units: ``n_q / s_q``
        for the cosine (a cosine of 1), +inf for dot.
    scales : np.ndarray, shape (m,), float64
        ``s_q``.
    """

    codes: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    top: np.ndarray
    scales: np.ndarray


def encode_rows(W: np.ndarray, limit: int | None = None, *, row_norms: np.ndarray | None = None,
                block: int = 4096) -> RowCodes:
    """Codes of every row of W (V, D); W is never changed.

    ``limit`` defaults to ``code_limit(D)`` (at most that); ``row_norms``
    (V,) are ``vector_norms(W)``, computed if not given. Rows are placed in
    the packed codes by scale, then by length, the largest first, so long
    rows (high dot products) raise each query's bar early (``RowCodes.ids``). The rows
    are encoded by compiled kernels (``int16_kernel.row_tops`` and
    ``encode_slots``: numba, the ``models`` extra).

    Raises
    ------
    ValueError
        For NaN or infinity, or a limit out of range.
    MissingExtraError
        (an ``ImportError``) without numba.

    >>> codes = encode_rows(np.array([[3.0, -1.5], [0.0, 0.0]]), 4)
    >>> codes.ids[:2].tolist(), codes.scales.tolist(), codes.packed[0, 0, :2].tolist()
    ([0, 1], [1.0, 0.0], [[3, -2], [0, 0]])
    """
    row_tops, encode_slots = _kernels()
    V, D = W.shape
    limit = _check_limit(limit, D)
    T, D2 = -(-V // TILE), -(-D // 2)
    if W.dtype not in (np.float32, np.float64):
        W = W.astype(np.float32)  # float16 widened exactly (a new array: W itself is never changed)
    lengths = vector_norms(W) if row_norms is None else row_norms  # (V,)
    tops = np.empty(V)
    for v0 in range(0, V, block):
        bad = row_tops(W[v0:v0 + block], tops[v0:v0 + block])
        if bad >= 0:
            raise ValueError(f"row {v0 + bad} contains NaN or infinity: it has no integer code")
    ids = np.full(T * TILE, -1, dtype=np.int64)
    ids[:V] = np.lexsort((-lengths, -_scales(tops, limit)))  # (V,) longest scale first, then length: high dot scores early
    packed = np.zeros((T, D2, TILE, 2), dtype=np.int16)
    scales, squares = np.zeros(V), np.zeros(V)  # by slot
    encode_slots(W, ids[:V], 0, limit, packed, scales, squares)
    by_id = np.empty(V, dtype=np.int64)
    by_id[ids[:V]] = np.arange(V)  # (V,) the slot of each row
    scales = scales[by_id]
    # sqrt(ss) rounds by (D + 8) 2**-52 at most; squares below 2**-1022 lost to underflow add sqrt(D) 2**-511.
    residuals = np.where(scales > 0, np.sqrt(squares[by_id]) * widening(D) + np.sqrt(D) * 2.0**-511, 0.0)
    return RowCodes(packed=packed, ids=ids, scales=scales, residuals=residuals, D=D, limit=limit)


def _kernels():
    try:
        from .int16_kernel import encode_slots, row_tops
    except ModuleNotFoundError as exc:
        if exc.name in ("numba", "llvmlite"):
            raise MissingExtraError.for_module("numba", "integer codes", ("models",)) from exc
        raise
    return row_tops, encode_slots


def encode_queries(q64: np.ndarray, q_norms: np.ndarray, metric: str, limit: int) -> QueryCodes:
    """Codes of nonzero queries (m, D) float64 with lengths (m,), and their terms of the bound."""
    m, D = q64.shape
    codes, scales, rho = _encode(q64, limit)  # (m, D), (m,), (m,)
    m4, D2 = -(-m // 4) * 4, -(-D // 2)
    padded = np.zeros((m4, 2 * D2), dtype=np.int16)
    padded[:m, :D] = codes
    wide = widening(D)
    alpha, beta, top = np.zeros(m4), np.zeros(m4), np.full(m4, np.inf)
    # |c_q|: the sum of squares of integers below 2**15 is exact in float64; the root rounds once.
    alpha[:m] = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64)) * (1 + 2.0**-52)
    gamma = wide - 1.0
    if metric == "dot":
        beta[:m] = (rho + gamma * q_norms * wide) / scales
    else:
        beta[:m] = (rho * wide + 2 * gamma * q_norms) / scales
        top[:m] = q_norms / scales  # a cosine of 1; exact (s_q is a power of two)
    beta[:m] *= 1 + 2.0**-50  # the roundings of the lines above
    return QueryCodes(codes=padded, alpha=alpha, beta=beta, top=top, scales=scales)


def row_terms(codes: RowCodes, row_norms: np.ndarray, metric: str) -> np.ndarray:
    """Per-slot terms ``a, b, c`` of the bound: (3, T * 16) float64 in the order of ``codes.ids``, 0 for the padding.

    dot: ``a = s_w``, ``b = rho_w``, ``c = N_w``; cosine: ``a = s_w / n_w``,
    ``b = rho_w / n_w``, ``c = 1``; all 0 for a zero row (its score is exactly 0).
    """
    out = np.zeros((3, len(codes.ids)))
    V, rows = codes.V, codes.ids[:codes.V]  # (V,) the row in each slot
    # Gathered and scaled in place: beside the result, one (V,) mask at most (``plan.fixed_bytes``).
    a, b, c = out[0, :V], out[1, :V], out[2, :V]  # (V,) views
    np.take(codes.scales, rows, out=a, mode="clip")  # "clip": no buffer (the ids are valid)
    np.take(codes.residuals, rows, out=b, mode="clip")
    np.take(row_norms, rows, out=c, mode="clip")
    if metric == "dot":
        c *= widening(codes.D)
    else:
        np.divide(1.0, c, out=c, where=c > 0)  # 1 / n_w; a zero row keeps 0
        a *= c
        b *= c
        b *= 1 + 2.0**-50  # two roundings
        np.greater(c, 0, out=c)  # 1 for a nonzero row
    return out


def tile_terms(terms: np.ndarray) -> np.ndarray:
    """Per tile of 16 slots, the extremes of their terms: (3, T * 16) -> (4, T) float64.

    Rows ``a_max, a_min, b_max, c_max``. For every row j of a tile and any
    integer score I_j, with ``I = max_j I_j``: ``a_j I_j <= a_max I`` if
    ``I >= 0``, else ``<= a_min I`` (all ``a >= 0``); and ``err_j <= alpha
    b_max + beta c_max``. So one comparison per query and tile can rule out
    all 16 rows.
    """
    tiles = terms.reshape(3, -1, TILE)  # (3, T, 16)
    return np.stack([tiles[0].max(axis=1), tiles[0].min(axis=1), tiles[1].max(axis=1), tiles[2].max(axis=1)])


def codes_fit(q_norms: np.ndarray, row_norms: np.ndarray) -> bool:
    """Whether every nonzero length of queries (m,) and rows (V,) lies in [LOW, HIGH], where the bound is certified."""
    low, high = length_range(q_norms, row_norms)
    return low == np.inf or bool(low >= LOW and high <= HIGH)


def _encode(X: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes (M, D) int16, scales (M,) and widened residual lengths (M,) of float64 rows X (M, D)."""
    scales = _scales(_largest(X), limit)  # (M,)
    safe = np.where(scales > 0, scales, 1.0)[:, None]
    codes = np.clip(np.rint(X / safe), -limit, limit)  # (M, D) a division by a power of two: exact
    residual = X - safe * codes  # (M, D) exact (module docstring)
    return codes.astype(np.int16), scales, vector_norms(residual) * widening(X.shape[1])


def _largest(X: np.ndarray) -> np.ndarray:
    """max |x_i| of every row of float64 X (M, D) -> (M,); ValueError for NaN or infinity."""
    if not np.isfinite(X).all():
        raise ValueError("vectors to encode contain NaN or infinity")
    return np.abs(X).max(axis=1) if X.shape[1] else np.zeros(len(X))


def _scales(top: np.ndarray, limit: int) -> np.ndarray:
    """The smallest power of two s with top / s <= limit, (M,) -> (M,); 0 for a zero vector.

    frexp gives top / limit = f * 2**e with f in [0.5, 1), so s = 2**e.
    """
    return np.where(top > 0, np.ldexp(1.0, np.frexp(top / limit)[1]), 0.0)


def _check_limit(limit: int | None, D: int) -> int:
    most = code_limit(D)
    if limit is None:
        return most
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or not 1 <= limit <= most:
        raise ValueError(f"limit must be an int from 1 to code_limit({D}) = {most}, got {limit!r}")
    return int(limit)
