"""The integer screen's compiled kernel: integer scores of a block of rows, bounded and selected in one pass.

``screen_rows`` scores 4 queries x 16 rows at a time with ``simd.madd``
(int16 pairs into int32, ``vpmaddwd`` on AVX2), and applies each query's bar
to the 64 scores while they are still in cache: first once per tile, from
the tile's largest integer score and the extremes of its rows' terms (rows
are placed so that a tile's terms are nearly equal), then, where that does
not rule the tile out, row by row: a row whose certified upper bound
(``codes``) reaches the bar is kept as a candidate and its lower bound raises
the bar (a heap of each query's k best lower bounds). No score matrix
is ever written. Compiled by numba (cached on disk), without the GIL, so
blocks of queries run on threads (``threads``).

Glossary: ``K`` top-k; ``m4`` queries (a multiple of 4), ``D2`` pairs of codes
per row, ``T`` tiles of 16 rows, ``C`` candidate slots per query.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .simd import add8, broadcast_pair, load16, madd, store8, zeros8

__all__ = ["screen_rows", "row_tops", "encode_slots", "SLACK"]

# Each computed bound is widened by SLACK * (|center| + err): far above the few
# float64 roundings (2**-53 relative each) that computing it makes (codes module).
SLACK = 2.0**-46


@njit(nogil=True, cache=True)
def screen_rows(codes, alpha, beta, top, own, floor, tiles, ids, a, b, c, extremes, heap, cand_ids, cand_up, counts,
                collect, start):  # pragma: no cover - compiled; exercised through int16_screen
    """Screen one block of rows for m4 queries; returns -1 when done, or the tile where it stopped.

    codes (m4, 2 D2) int16: the queries' codes; alpha, beta, top, floor
    (m4,) float64 and own (m4,) int64 (-1: none), as in ``codes.QueryCodes``
    (``floor``: a bar already certified, e.g. by a sample of rows); tiles
    (T, D2, 16, 2) int16 and ids (T*16,) int64 (-1: padding): the block's
    packed codes and row ids; a, b, c (T*16,) float64: the terms of those
    rows' bounds (``codes.row_terms``); extremes (4, T) float64: their
    largest and smallest a, largest b and c per tile (``codes.tile_terms``),
    so that one comparison rules a whole tile out for a query. heap (m4, K)
    float64: each query's K best lower bounds (a min-heap, -inf empty).
    cand_ids (m4, C) int64, cand_up (m4, C) float64, counts (m4,) int64: the
    candidates so far and their upper bounds (only with ``collect``; without
    it the pass only raises the heap). Work runs over tiles
    ``t = 4-query tile * T + row tile`` from ``start``. It stops, before
    tile t, when a query's candidates would not fit even after dropping
    those below its bar; the caller settles them exactly and calls again.
    """
    m4, width = codes.shape
    T, D2 = tiles.shape[0], tiles.shape[1]
    q_flat, t_flat = codes.ravel(), tiles.ravel()
    block = np.empty(64, dtype=np.int32)  # the 4 x 16 integer scores of a tile
    room = cand_ids.shape[1] - 16
    for t in range(start, (m4 // 4) * T):
        q0, rt = (t // T) * 4, t % T
        if collect:
            for qi in range(q0, q0 + 4):
                if counts[qi] > room:
                    _prune(qi, _bar(heap[qi, 0], floor[qi], top[qi]), cand_ids, cand_up, counts)
                    if counts[qi] > room:
                        return t
        _scores(q_flat, q0 * width, width, t_flat, rt * D2 * 32, D2, block)
        for i in range(4):
            qi = q0 + i
            bar = _bar(heap[qi, 0], floor[qi], top[qi])
            best = block[i * 16]
            for j in range(1, 16):  # vectorised: the tile's largest integer score
                best = max(best, block[i * 16 + j])
            center = (extremes[0, rt] if best >= 0 else extremes[1, rt]) * best  # >= every row's center
            err = alpha[qi] * extremes[2, rt] + beta[qi] * extremes[3, rt]  # >= every row's err
            if center + err + SLACK * (abs(center) + err) < bar:
                continue  # no row of the tile reaches the bar
            for j in range(16):
                r = rt * 16 + j
                if ids[r] < 0 or ids[r] == own[qi]:
                    continue
                center = a[r] * block[i * 16 + j]
                err = alpha[qi] * b[r] + beta[qi] * c[r]
                err += SLACK * (abs(center) + err)
                if center + err < bar:
                    continue
                if collect:
                    cand_ids[qi, counts[qi]] = ids[r]
                    cand_up[qi, counts[qi]] = center + err
                    counts[qi] += 1
                if center - err > heap[qi, 0]:
                    _replace_root(heap[qi], center - err)
                    bar = _bar(heap[qi, 0], floor[qi], top[qi])
    return -1


@njit(nogil=True, cache=True, inline="always")
def _scores(q_flat, q_at, width, t_flat, t_at, D2, out):  # pragma: no cover - compiled
    """Integer scores of 4 queries (codes from q_at, rows of width ``width``) x one tile of 16 rows -> out (64,)."""
    c00, c01, c10, c11 = zeros8(), zeros8(), zeros8(), zeros8()
    c20, c21, c30, c31 = zeros8(), zeros8(), zeros8(), zeros8()
    for p in range(D2):
        w0 = load16(t_flat, t_at + p * 32)  # rows 0-7 of the tile, codes 2p and 2p + 1
        w1 = load16(t_flat, t_at + p * 32 + 16)  # rows 8-15
        x = broadcast_pair(q_flat, q_at + 2 * p)
        c00, c01 = add8(c00, madd(x, w0)), add8(c01, madd(x, w1))
        x = broadcast_pair(q_flat, q_at + width + 2 * p)
        c10, c11 = add8(c10, madd(x, w0)), add8(c11, madd(x, w1))
        x = broadcast_pair(q_flat, q_at + 2 * width + 2 * p)
        c20, c21 = add8(c20, madd(x, w0)), add8(c21, madd(x, w1))
        x = broadcast_pair(q_flat, q_at + 3 * width + 2 * p)
        c30, c31 = add8(c30, madd(x, w0)), add8(c31, madd(x, w1))
    store8(out, 0, c00)
    store8(out, 8, c01)
    store8(out, 16, c10)
    store8(out, 24, c11)
    store8(out, 32, c20)
    store8(out, 40, c21)
    store8(out, 48, c30)
    store8(out, 56, c31)


@njit(nogil=True, cache=True, inline="always")
def _bar(heap_root, floor, top):  # pragma: no cover - compiled
    """A query's bar: the best certified k-th lower bound, never above ``top``; at or below ``-top``, none."""
    bar = min(max(heap_root, floor), top)
    return bar if bar > -top else -np.inf


@njit(nogil=True, cache=True)
def _prune(qi, bar, cand_ids, cand_up, counts):  # pragma: no cover - compiled
    """Drop query qi's candidates whose upper bound is below its bar, keeping the order of the rest."""
    kept = 0
    for s in range(counts[qi]):
        if cand_up[qi, s] >= bar:
            cand_ids[qi, kept] = cand_ids[qi, s]
            cand_up[qi, kept] = cand_up[qi, s]
            kept += 1
    counts[qi] = kept


@njit(nogil=True, cache=True)
def _replace_root(heap, value):  # pragma: no cover - compiled
    """Put ``value`` in place of the smallest entry of a min-heap (K,) and sift it down."""
    K = heap.shape[0]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= K:
            break
        if child + 1 < K and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= value:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = value


@njit(nogil=True, cache=True)
def row_tops(X, out):  # pragma: no cover - compiled; exercised through codes
    """max |x| of every row of X (b, D) into out (b,) float64; returns the first row holding NaN or infinity, or -1."""
    for i in range(X.shape[0]):
        top = 0.0
        for d in range(X.shape[1]):
            x = abs(np.float64(X[i, d]))
            if not x <= 1.8e308:  # NaN or infinity
                return i
            top = max(top, x)
        out[i] = top
    return -1


@njit(nogil=True, cache=True)
def encode_slots(W, rows, p0, limit, packed, scales, squares):  # pragma: no cover - compiled; exercised through codes
    """Codes of rows ``rows`` (b,) of W (V, D) float32/float64 into slots p0 .. p0 + b - 1 of packed (T, D2, 16, 2).

    As ``codes._encode`` makes them, one pass per row: scales[p] a power of
    two (0 for a zero row), squares[p] the float64 sum of the squared
    residuals, each residual exact (``codes`` module docstring).
    """
    D = W.shape[1]
    for i in range(rows.shape[0]):
        w, p = rows[i], p0 + i
        t, j = p // 16, p % 16
        top = 0.0
        for d in range(D):
            top = max(top, abs(np.float64(W[w, d])))
        if top == 0.0:  # a zero row: codes 0 (packed starts at 0), scale 0, no residual
            scales[p] = 0.0
            squares[p] = 0.0
            continue
        s = math.ldexp(1.0, math.frexp(top / limit)[1])  # the smallest power of two with top / s <= limit
        total = 0.0
        for d in range(D):
            x = np.float64(W[w, d])
            c = min(max(np.rint(x / s), -limit), limit)
            r = x - s * c  # exact
            total += r * r
            packed[t, d // 2, j, d % 2] = np.int16(c)
        scales[p] = s
        squares[p] = total
