"""Floating-point precision of a neighbour search: the GEMM's dtype, its rounding margin, float64's range.

The screen scores in float32 where that is safe (``gemm_dtype``); every GEMM
score is within ``margin`` of the exact score, which is what lets the filter
drop a row for good; and ``check_dot_range`` refuses dot products that even
float64 cannot rank, before any work is done.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries; ``m`` queries in a block.
"""

from __future__ import annotations

import numpy as np

from ..lengths import SQUARES_LOW, length_range

__all__ = ["gemm_dtype", "margin", "bf16_margin", "bf16_value_margin", "BF16_UNIT_ROUNDOFF", "round_bf16", "check_dot_range",
           "longest_other", "CHECK_CHUNK"]

CHECK_CHUNK = 1024  # entries of the row lengths that the range check masks at a time
BF16_UNIT_ROUNDOFF = 2.0**-8  # bfloat16 keeps 8 significant bits: round-to-nearest is off by at most 2**-8 relative
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
TINY32 = 2.0**-126  # the smallest normal float32 and bfloat16 (the same exponent range): flushed below it


def gemm_dtype(table_dtype: np.dtype, metric: str, q_norms: np.ndarray, row_norms: np.ndarray) -> type:
    """The GEMM's dtype: float32 for float16/float32 tables, unless their scores leave float32's comfortable range.

    Dot scores are at most ``|q| |w|``; cosine scales queries and rows to unit
    length by ``1 / |w|``. Either way float32 is used only when every nonzero
    length lies in [1e-15, 1e15] (and dot scores below 1e30): outside it,
    scores or scale factors could overflow, or underflow past the rounding
    margin, so the search runs in float64, which changes no result.

    ``check_dot_range`` has refused dot products that float64 cannot hold.
    """
    if table_dtype == np.float64:
        return np.float64
    low, high = length_range(q_norms, row_norms)  # never concatenated: O(1) memory beyond a mask
    in_range = low == np.inf or (low >= 1e-15 and high <= 1e15)
    if metric == "dot":
        in_range = in_range and float(q_norms.max(initial=0.0)) * float(row_norms.max(initial=0.0)) <= 1e30
    return np.float32 if in_range else np.float64


def margin(metric: str, D: int, dtype: type, q_norms: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """A bound on |GEMM score - exact score| per query, shape (m,), float64.

    ``reach`` (m,) is the length of the longest row each query is scored
    against (its own id, left out, aside).

    A dot product of length D in floating point is off by at most
    ``D * u * sum|q_i w_i| <= D * u * |q| * |w|`` (u = eps / 2; Higham,
    Accuracy and Stability of Numerical Algorithms, 2002, section 3.1).
    Scaling rows and queries to unit length and rounding the float64 queries
    and the bar to the GEMM's dtype add a few u more; (D + 8) * eps covers it
    with room to spare. Cosine scores use unit vectors, so |q| |w| <= 1; the
    float32 screen's cosine, ``dot(q / |q|, w)`` times ``1 / |w|`` rounded once,
    is off by at most (D + 3) u (derived in ``float_screen.FloatScreen._scores``).
    The bound holds whatever the order of summation (blocked, pairwise, split
    over threads, with fused multiply-adds), so it covers any BLAS and a GPU's
    float32 products too, as long as they are not rounded to TF32 (``torch_screen``).
    """
    unit = (D + 8) * np.finfo(dtype).eps
    if metric == "cosine":
        return np.full(q_norms.shape, unit)
    return unit * q_norms * reach


def bf16_margin(metric: str, D: int, q_norms: np.ndarray, reach: np.ndarray,
                shortest: float = 1.0) -> np.ndarray:
    """A bound on |bf16 screen score - exact score| per query, shape (m,), float64.

    The bf16 screen's score of a query q against a row w (``bf16_screen``):

    - dot: ``fl16(bf16(q) . bf16(w))``, the product of the two vectors rounded
      to bfloat16, its D products summed in float32 in any order, and the
      result rounded to bfloat16 (torch's CPU matmul returns bfloat16);
    - cosine: the same product of ``bf16(q / |q|)`` and ``bf16(w)`` (the row as
      it is, not scaled), then times ``float32(1 / |w|)``, rounded to float32.

    ``reach`` (m,) is the length of the longest row each query is scored
    against; ``shortest`` the length of the shortest nonzero row (cosine).

    With u = 2**-8 (bfloat16's unit roundoff), v = 2**-24 (float32's) and
    gamma_D = D v / (1 - D v) (Higham, Accuracy and Stability of Numerical
    Algorithms, 2002, section 3.1, eq. 3.5):

    1. rounding q and w to bfloat16 moves each product q_i w_i by at most
       (2u + u^2) |q_i w_i|, so the dot product by (2u + u^2) sum|q_i w_i|;
    2. a product of two bfloat16 values is exact in float32 (8 + 8 bits); their
       sum in float32, in any order, blocked or split over threads, with or
       without fused multiply-adds, is off by at most gamma_D sum|q^_i w^_i|;
    3. rounding the float32 sum to bfloat16 adds u times its magnitude;
    4. subnormals: the matrix units treat subnormal inputs as zero and flush
       subnormal results (Intel's AMX and AVX512-BF16 do), so each element or
       partial sum may lose up to 2**-126 more: at most 2**-126 (sqrt(D) (|q| +
       |w|) + 2 D) in all (Cauchy-Schwarz: sum|w_i| <= sqrt(D) |w|).

    With sum|q_i w_i| <= |q| |w|: ``c = (2u + u^2) + gamma_D (1 + u)^2 +
    u (1 + u)^2 (1 + gamma_D)`` bounds steps 1-3 relative to ``|q| |w|``, about
    3u = 0.0117. Cosine divides by |w| (steps 1-4 with |q| = 1), and the
    scaling by the rounded ``1 / |w|`` adds 2v + v^2 relative. The result is
    widened by 2**-20 relative to cover its own float64 evaluation.
    """
    u, v = BF16_UNIT_ROUNDOFF, FLOAT32_UNIT_ROUNDOFF
    gamma = D * v / (1 - D * v)
    c = (2 * u + u * u) + gamma * (1 + u) ** 2 + u * (1 + u) ** 2 * (1 + gamma)
    root = float(np.sqrt(D))
    if metric == "cosine":
        low = shortest if shortest > 0 else 1.0
        scaled = c * (1 + 2 * v + v * v) + (2 * v + v * v) + TINY32 * (root * (1 + 1 / low) + 2 * D / low)
        return np.full(q_norms.shape, scaled * (1 + 2.0**-20))
    slack = TINY32 * (root * (q_norms + reach) + 2 * D)
    return (c * q_norms * reach + slack) * (1 + 2.0**-20)


def bf16_value_margin(metric: str, D: int, q_norms: np.ndarray, reach: np.ndarray, shortest: float = 1.0, *,
                      exact_inputs: bool = False, exact_queries: bool | None = None,
                      product_rounded: bool = True) -> tuple[np.ndarray, float]:
    """``bf16_margin`` with the last rounding measured on the score: a bound ``A + r |score|`` per query.

    The self-join's bf16 screen (``bf16_join``) scores two rows as it stands,
    both sides rounded to bfloat16 as they are (not scaled):

    - dot: ``S = fl16(bf16(q) . bf16(w))``, D products summed in float32 in
      any order, rounded to bfloat16 (torch's CPU matmul returns bfloat16);
    - cosine: ``fl32(fl32(S * r_q) * r_w)`` with ``r = float32(1 / |w|)``, the
      same S scaled after the product, so one bfloat16 table serves both metrics.

    Returns ``(A, r)``, A (m,) float64 and r a float, such that every
    screening score ``s~`` of query q is within ``A_q + r |s~|`` of the exact
    score. ``bf16_margin`` bounds the rounding of the float32 sum to bfloat16
    (its step 3) by ``u |q| |w|``; here it is ``u |s~|`` (round to nearest:
    ``x = s~ (1 + d)``, ``|d| <= u``; Higham 2002, section 2.2, eq. 2.5), much
    smaller where the scores that decide a list lie, far below ``|q| |w|``.
    Steps 1, 2 and 4 are ``bf16_margin``'s (``exact_inputs``: every entry
    already a bfloat16 value, as a bf16 checkpoint's table widened to float32,
    so step 1's rounding is exact and adds nothing; ``exact_queries``, where
    given, says it of the queries apart, ``exact_inputs`` then of the rows:
    one side rounded moves each product by at most u |q_i w_i|, so p = u):

        dot:    A = (p + gamma_D (1 + p)) |q| reach + 2**-126 (sqrt(D) (|q| + reach) + 2 D),   r = u
        cosine: A = p + gamma_D (1 + p) + 2**-126 (2 sqrt(D) / l + 2 D / l**2),             r = (u + t) / (1 - t)

    with u = 2**-8, v = 2**-24, gamma_D = D v / (1 - D v), p = 0 for exact
    inputs, u where one side is rounded, else 2u + u^2, l = ``shortest`` (the shortest nonzero row), and
    t = (1 + v)**4 - 1 for cosine's two float32 factors and two float32
    products. Both are widened by 2**-20 relative for their own float64
    evaluation. ``product_rounded=False``: the float32 sum is the score as it
    is, not rounded to bfloat16 (the AMX kernel of ``amx_kernel`` leaves its
    float32 scores in the tiles): the u of r goes, r = 0 for dot and
    t / (1 - t) for cosine; A is unchanged (the 2**-126 terms are the tiles'
    flushing of subnormal inputs and sums, ``bf16_margin``'s step 4).

    How a screen uses it: with ``eps(t) = (A + r |t|) / (1 - 2 r)``, a
    candidate whose screening score is below ``t - 2 eps(t)`` scores, exactly,
    below the exact score of any row whose screening score is t (the upper
    bound ``s + A + r|s|`` and the lower bound ``s - A - r|s|`` both grow
    with s), the value-aware form of ``pool.CandidatePool``'s ``2 eps`` rule.

    >>> A, r = bf16_value_margin("cosine", 4096, np.ones(1), np.ones(1), exact_inputs=True)
    >>> bool(A[0] < 3e-4) and 0.0039 < r < 0.004
    True
    """
    u, v = BF16_UNIT_ROUNDOFF, FLOAT32_UNIT_ROUNDOFF
    gamma = D * v / (1 - D * v)
    rounded = (not exact_inputs) + (not (exact_inputs if exact_queries is None else exact_queries))
    p = (1 + u) ** rounded - 1  # 0, u or 2u + u^2: one factor (1 + u) per rounded side
    root = float(np.sqrt(D))
    widen = 1 + 2.0**-20
    if metric == "cosine":
        low = shortest if shortest > 0 else 1.0
        t = (1 + v) ** 4 - 1
        A = p + gamma * (1 + p) + TINY32 * (2 * root / low + 2 * D / (low * low))
        rounding = u if product_rounded else 0.0  # the float32 sum rounded to bfloat16, or left as it is
        return np.full(q_norms.shape, A * widen), (rounding + t) / (1 - t) * widen
    A = (p + gamma * (1 + p)) * q_norms * reach + TINY32 * (root * (q_norms + reach) + 2 * D)
    return A * widen, (u if product_rounded else 0.0) * widen


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to bfloat16's 8 significant bits, to nearest, ties to even: (...) -> (...) float64.

    Other dtypes are returned as they are (float32 and float16 go to
    bfloat16 in one rounding). Rounding the float64 mantissa directly keeps
    to one rounding: float64 -> float32 -> bfloat16 would round twice, and a
    value just above a midpoint could land on the wrong side. Values whose
    float32 would be subnormal are what the matrix units flush anyway
    (``bf16_margin``, step 4).

    >>> round_bf16(np.array([1 + 2**-8 + 2**-40, 1 + 2**-8, 1 + 3 * 2**-8])).tolist()  # 1 + 2**-8: a midpoint
    [1.0078125, 1.0, 1.015625]
    """
    if x.dtype != np.float64:
        return x
    bits = np.ascontiguousarray(x).view(np.int64)  # sign and magnitude: the carry stays in the magnitude
    low = np.int64(1) << 45  # the 45 bits below bfloat16's 7 stored mantissa bits
    odd = (bits >> 45) & 1
    return ((bits + (low // 2 - 1) + odd) & ~(low - 1)).view(np.float64)


def check_dot_range(q_norms: np.ndarray, row_norms: np.ndarray, exclude: np.ndarray | None) -> None:
    """Refuse dot products that float64 cannot rank: (N,), (V,), (N,) ids or None.

    ``|dot(q, w)| <= |q| |w|``: above about 2e307 it may overflow to inf; a
    nonzero pair whose ``|q| |w|`` is below 1e-280 (``SQUARES_LOW``) loses its
    digits to underflow, and with them its order. Each query is checked
    against the longest and the shortest nonzero row other than its own id
    (a query by id never scores itself). Zero rows and queries score 0.0 exactly.

    Raises ``ValueError`` naming the query and the row.
    """
    V = len(row_norms)
    if not len(q_norms) or V < 2:
        return
    own = np.full(len(q_norms), -1) if exclude is None else exclude  # (N,)
    far = longest_other(row_norms, exclude, len(q_norms))  # (N,)
    shortest = _two_shortest_nonzero(row_norms)  # the shortest nonzero rows
    with np.errstate(over="ignore", under="ignore"):
        top = q_norms * row_norms[far]  # (N,)
        i = int(np.argmax(top))
        if top[i] > np.finfo(np.float64).max / 8:
            raise ValueError(f"dot products overflow float64: {_query_name(i, exclude)} (length {q_norms[i]:.3g}) times row "
                             f"{int(far[i])} (length {row_norms[far[i]]:.3g})")
        if not shortest.size:
            return
        near = np.where(own == shortest[0], shortest[-1], shortest[0])  # (N,)
        low = np.where((q_norms > 0) & (near != own), q_norms * row_norms[near], np.inf)  # (N,)
        i = int(np.argmin(low))
        if low[i] < SQUARES_LOW:
            raise ValueError(f"dot products underflow float64: {_query_name(i, exclude)} (length {q_norms[i]:.3g}) times row "
                             f"{int(near[i])} (length {row_norms[near[i]]:.3g}) is below {SQUARES_LOW:g}, too "
                             f"small to rank; scale the vectors (cosine does not depend on length)")


def _query_name(i: int, exclude: np.ndarray | None) -> str:
    return f"query vector {i}" if exclude is None else f"token {int(exclude[i])}"


def longest_other(row_norms: np.ndarray, exclude: np.ndarray | None, n: int) -> np.ndarray:
    """For each of n queries the id of the longest row but its own (``exclude``): (n,) int64."""
    longest = _two_largest(row_norms)
    if exclude is None or longest.size < 2:
        return np.full(n, longest[0])
    return np.where(exclude == longest[0], longest[1], longest[0])


def _two_largest(x: np.ndarray) -> np.ndarray:
    """Indices of the largest and the second largest entry of x (n,), at most n of them; the smaller index wins a tie.

    O(n) time, a chunk of ``CHECK_CHUNK`` entries at a time: each chunk is
    copied (``argmax`` copies a read-only array whole, such as a table's
    cached lengths), so it never holds an (n,) array (``plan.fixed_bytes``).
    """
    best: list[tuple[float, int]] = []
    for a in range(0, x.size, CHECK_CHUNK):
        part = np.array(x[a:a + CHECK_CHUNK])  # (b,) a writable copy
        for _ in range(min(2, part.size)):
            i = int(np.argmax(part))
            best.append((-float(part[i]), a + i))
            part[i] = -np.inf
    best.sort()
    return np.array([i for _, i in best[:2]], dtype=np.int64)


def _two_shortest_nonzero(x: np.ndarray) -> np.ndarray:
    """Indices of the shortest and second shortest nonzero entry of x (n,) >= 0, at most two; the smaller index wins a tie.

    Taken a chunk of ``CHECK_CHUNK`` entries at a time, so it holds a few
    chunk-sized arrays, never an (n,) one (``plan.fixed_bytes``).
    """
    best: list[tuple[float, int]] = []
    for a in range(0, x.size, CHECK_CHUNK):
        part = x[a:a + CHECK_CHUNK]
        masked = np.where(part > 0, part, np.inf)  # (b,)
        best += [(float(masked[i]), a + int(i)) for i in _two_largest(-masked) if masked[i] < np.inf]
    best.sort()
    return np.array([i for _, i in best[:2]], dtype=np.int64)
