"""The bf16 screen on embedlab's own kernels (AMX tiles, or AVX512-BF16): float32 scores filtered in cache, no torch.

A peer of ``bf16_screen`` (whose bound and rescoring it shares) for the CPU
where one of embedlab's bf16 kernels runs: ``amx_kernel`` (AMX-BF16 tiles)
or, on a CPU with AVX512-BF16 and no AMX, ``avx512_bf16_kernel``
(``vdpbf16ps``); both take the same arguments and compute the same
screening scores within the same bound. ``dispatch.search_block`` takes it
for a block of queries planned on the bf16 screen where a kernel is
compiled here (``capability.bf16_kernel``), else ``bf16_screen.Bf16Screen``
(torch's matmul).

1. *Screen.* As ``Bf16Screen``: the queries rounded to bfloat16 once (cosine:
   the unit queries; or, where every query is a bfloat16 value already, the
   query as it is, its scores times ``float32(1 / |q|)``), the rows' bfloat16
   bits (the table's cached ``bf16_rows``, a bf16 checkpoint's own bits, or a
   chunk rounded now). The kernel's ``screen_parts`` multiplies a chunk of rows
   by every query (on the tiles, or 16 queries a register), sums in float32, scales for cosine
   (``fl32(fl32(P * qinv) * rinv)``) and returns only the entries at or above
   each query's bar: the scores never leave the cache. Unlike torch's matmul
   the sum is not rounded to bfloat16, so the bound is
   ``precision.bf16_value_margin(..., product_rounded=False)``: ``A + r |s~|``
   with r only cosine's float32 scalings.
2. *Filter and pool.* A first bar from a strided sample of rows (``_first_bar``:
   the sample's screening scores in NumPy, the same arithmetic in another
   order of summation, within the same bound; each query's k best of them
   scored again in float32, within the float screen's margin); then, before
   each chunk and each part of the kernel's output, the pool's k-th float32
   score less the float screen's margin raises it (``_bar_below``, as
   ``Bf16Screen``'s: a row whose screening score is below it scores,
   exactly, below k others). The entries that pass are scored again in
   float32 (``pair_scores.pair_dots``) and pooled a part at a time
   (``_pool_float32``), as ``Bf16Screen`` pools them.
3. *Rescore.* ``FloatScreen._rescore``: the pool in float64, ordered by
   ``(-score, id)``: the float screen's answer, id for id and bit for bit.

``software=True`` runs ``amx_kernel.screen_rows_software`` (NumPy, any CPU)
in place of the kernel: the tests check the screen's lists through it on
every CPU, and through each kernel where the CPU has its units.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m``
queries in a block, ``v`` rows in a chunk.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ..bf16_matrix import Bf16Matrix
from ..lengths import length_range
from . import amx_kernel
from .amx_kernel import PAIR, bf16_bits, pack_queries
from .bf16_screen import bar32
from .capability import bf16_kernel
from .float_screen import FloatScreen
from .plan import BlockPlan
from . import pool_insert
from .pair_scores import pair_dots
from .pool import CandidatePool
from .precision import bf16_value_margin, longest_other, round_bf16

__all__ = ["AmxScreen", "CHUNK_ROWS", "PART_ENTRY_BYTES", "bf16_exact"]

CHUNK_ROWS = 4096  # rows the kernel screens between two raises of the bars (a multiple of 32)
# Bytes an entry that passes holds while its part of the kernel's output is pooled: the kernel's output (12),
# its int64 copies, the float32 rescoring, the sort by query and the filtered copies (about 85 measured with tracemalloc on a table of equal rows).
PART_ENTRY_BYTES = 96


class AmxScreen(FloatScreen):
    """Nonzero queries (m, D) screened on embedlab's bf16 kernel with the bf16 bound, then rescored (steps 1-3).

    Takes ``FloatScreen``'s arguments but the GEMM's dtype (float32 is the
    pool's), ``rows``: the table's bfloat16 bits (V, D) uint16 (``Bf16Rows``
    or a ``Bf16Matrix``'s bits), or None to round a chunk at a time;
    ``kernel``: the kernel's module (``amx_kernel`` or
    ``avx512_bf16_kernel``; None: the one that runs here,
    ``capability.bf16_kernel``, AMX first); and ``software``: the kernels'
    arithmetic in NumPy instead (tests). ``run(plan)`` returns ids (m, K)
    int64 and scores (m, K) float64.

    Raises
    ------
    RuntimeError
        From ``run`` where ``software`` is False and the kernel does not run
        here (its ``status`` says why; no kernel runs here: ``amx_kernel``'s).
    """

    def __init__(self, W: Any, q64: np.ndarray, q_norms: np.ndarray, exclude: np.ndarray | None, k: int,
                 metric: str, row_norms: np.ndarray, inv_norms: np.ndarray | None, *,
                 rows: np.ndarray | None = None, kernel: Any = None, software: bool = False) -> None:
        super().__init__(W, q64, q_norms, exclude, k, metric, row_norms, inv_norms, np.float32)
        if kernel is None and not software:
            kernel = bf16_kernel() or amx_kernel  # none runs here: the AMX one's RuntimeError, from ``run``
        self.kernel = kernel
        m, D = q64.shape
        exact_q = (round_bf16(q64) == q64).all(axis=1)  # (m,) queries bfloat16 holds as they are
        # Cosine with every query exact: the query as it is, scaled by float32(1 / |q|) after the product.
        self.raw = metric == "cosine" and bool(exact_q.all())
        unit = q64 / q_norms[:, None] if metric == "cosine" and not self.raw else q64  # (m, D) float64
        self.packed = pack_queries(bf16_bits(unit))  # rounded once
        m_pad = len(self.packed.bits)
        self.qinv = np.ones(m_pad, dtype=np.float32)  # (m_pad,)
        if self.raw:
            self.qinv[:m] = (1 / q_norms).astype(np.float32)
        self.rinv = None if inv_norms is None else np.ascontiguousarray(inv_norms, dtype=np.float32)  # (V,)
        if isinstance(W, Bf16Matrix) and rows is None:
            rows = W.bits  # a bf16 checkpoint's own bits
        self.rows, self.software = rows, software
        self.eps32 = self.eps  # (m,) the float screen's margin, of a pooled float32 score
        reach = row_norms[longest_other(row_norms, exclude, m)]  # (m,)
        shortest = length_range(row_norms)[0]
        shortest = shortest if np.isfinite(shortest) else 1.0
        self._bound_terms = (reach, shortest, exact_q if metric == "dot" or self.raw else np.zeros_like(exact_q))
        self.A, self.r = np.zeros(m), 0.0  # the bound (``_bound``), set when the plan is known
        self._buf: np.ndarray | None = None  # (CHUNK_ROWS, D_pad) uint16: a chunk padded or rounded, reused

    def _bound(self, plan: BlockPlan) -> None:
        """The screening scores' bound ``A + r |s~|`` (``precision.bf16_value_margin``, without the product's
        rounding), each side's rounding counted where it happens: the rows' where the table is not made of
        bfloat16 values (``Bf16Rows`` know; else ``bf16_exact`` looks, ``plan.rows`` rows at a time, within
        the plan's block of rows), the queries' where they were rounded (unit queries always are)."""
        reach, shortest, q_exact = self._bound_terms
        rows, D = self.rows, self.W.shape[1]
        exact_w = bool(rows.exact) if hasattr(rows, "exact") else bf16_exact(self.W, max(1, plan.rows))
        A_exact, self.r = bf16_value_margin(self.metric, D, self.q_norms, reach, shortest, exact_inputs=exact_w,
                                            exact_queries=True, product_rounded=False)
        A_round = bf16_value_margin(self.metric, D, self.q_norms, reach, shortest, exact_inputs=exact_w,
                                    exact_queries=False, product_rounded=False)[0]
        self.A = np.where(q_exact, A_exact, A_round)  # (m,)

    def _bar_below(self, T: np.ndarray) -> np.ndarray:
        """The screening bar (m,) float64 under which a row scores, exactly, below T (m,): ``f^-1(T - A)``,
        with ``f(s) = s + r |s|`` (as ``Bf16Screen._bar_below``), lowered by 2**-40 of its terms for its own
        float64 evaluation."""
        y = T - self.A
        with np.errstate(invalid="ignore"):  # T = -inf: the bar stays -inf
            bar = np.where(y >= 0, y / (1 + self.r), y / (1 - self.r))
            return bar - 2.0**-40 * (np.abs(T) + self.A)

    def _first_bar(self) -> np.ndarray:
        """A first bar (m,) from a strided sample of rows: each query's k best screening scores among them
        (NumPy, ``amx_kernel.scores_software``), scored again; the least, less its margin, is
        ``T`` (k rows score at least that), and the bar is ``_bar_below(T)``. The k best are scored in float32
        (``_float32_scores``), each within the float screen's margin ``eps32`` of its exact score: T is the
        least of them less ``eps32``."""
        V, k, m = len(self.W), self.k, len(self.q64)
        sample = np.unique(np.linspace(0, V - 1, min(V, max(self.plan.sample, k + 1))).astype(np.int64))  # (s,)
        bits = self._bits(sample)  # (s_pad, D_pad)
        rinv = np.ones(len(bits), dtype=np.float32)
        if self.rinv is not None:
            rinv[:sample.size] = self.rinv[sample]
        S = amx_kernel.scores_software(bits, self.packed, rinv, self.qinv)[:sample.size, :m].T  # (m, s) float32
        S = np.array(S)  # writable, C-contiguous
        if self.exclude is not None:
            at = np.minimum(np.searchsorted(sample, self.exclude), sample.size - 1)  # (m,)
            own = np.flatnonzero(sample[at] == self.exclude)
            S[own, at[own]] = -np.inf
        s = S.shape[1]
        if s < k:
            return np.full(m, -np.inf)
        best = np.argpartition(S, s - k, axis=1)[:, s - k:]  # (m, k)
        qi, ids = np.repeat(np.arange(m), k), sample[best.ravel()]
        scores = self._float32_scores(qi, ids).reshape(m, k).astype(np.float64)  # (m, k) within eps32 of exact
        scores[np.take_along_axis(S, best, axis=1) == -np.inf] = -np.inf  # a query's own id is no witness
        return self._bar_below(scores.min(axis=1) - self.eps32)

    def _scan(self, plan: BlockPlan) -> CandidatePool:
        """Screen every row, a chunk at a time on the kernel (``_step``); pool the entries that pass, a part of the
        kernel's output at a time (``_part_entries``), the bars raised by the pool before each part."""
        m, V = len(self.q64), len(self.W)
        self._bound(plan)
        pool = CandidatePool(m, self.k)
        bar = self._first_bar()  # (m,)
        bars = np.full(len(self.packed.bits), np.inf, dtype=np.float32)  # (m_pad,) padding never passes
        entries = self._part_entries(plan)
        for v0, v1 in self._runs(V, self._step(plan)):
            bits = self._bits(slice(v0, v1))  # (v_pad, D_pad)
            rinv = self._rinv(v0, v1, len(bits))  # (v_pad,)
            bar = self._screen(bits, rinv, v0, v1 - v0, bar, bars, pool, entries)
        return pool

    def _screen(self, bits: np.ndarray, rinv: np.ndarray, v0: int, v: int, bar: np.ndarray, bars: np.ndarray,
                pool: CandidatePool, entries: int) -> np.ndarray:
        """Screen the table's rows ``v0`` to ``v0 + v``, their bits ``bits`` (v_pad, D_pad), on the kernel (or in
        software) and pool the entries that pass, the bars raised before the rows and after each part (the kernel
        reads ``bars`` again at each part) -> the raised bar (m,) float64."""
        k, m = self.k, len(self.q64)
        # k pooled rows score at least the pool's k-th float32 score less the float margin.
        bar = np.maximum(bar, self._bar_below(pool.scores[:, k - 1] - self.eps32))
        bars[:m] = bar32(bar)
        parts = ([amx_kernel.screen_rows_software(bits, self.packed, rinv, self.qinv, bars)] if self.software
                 else self.kernel.screen_parts(bits, self.packed, rinv, self.qinv, bars, entries))
        for r, q, _ in parts:
            keep = r < v  # padding rows out
            r = r + v0
            if self.exclude is not None:
                keep &= r != self.exclude[q]  # a query's own id is never listed
            self._pool_float32(q[keep], r[keep], pool)
            bar = np.maximum(bar, self._bar_below(pool.scores[:, k - 1] - self.eps32))
            bars[:m] = bar32(bar)
        return bar

    def _step(self, plan: BlockPlan) -> int:
        """Rows the kernel screens between two raises of the bars, a multiple of 32: ``CHUNK_ROWS`` where the
        table's bits are read where they lie (``_bits``: no copy, the chunk costs no memory), else as many as the
        plan's block of rows holds as a padded copy of bits (``plan.plan_bytes`` counts 10 bytes an entry of
        it: five times as many rows as 2-byte bits; as many where they are rounded now, 10 bytes an entry on
        the way). A chunk of a few rows costs a pass of Python and a switch of threads each (``GIL``): the
        fewer, the faster."""
        D, D_pad = self.W.shape[1], self.packed.bits.shape[1]
        held = self.rows
        if held is not None and D == D_pad and isinstance(held, np.ndarray) and held.flags.c_contiguous:
            return CHUNK_ROWS
        rows = plan.rows * (5 if held is not None else 1)
        return max(PAIR, min(CHUNK_ROWS, rows // PAIR * PAIR))

    @staticmethod
    def _runs(V: int, step: int) -> Iterator[tuple[int, int]]:
        """Runs of rows [v0, v1) of ``step`` rows (a multiple of 32), the last one split into its whole pairs of
        row tiles and the fewer than 32 rows left (padded: ``_bits`` copies only those)."""
        for v0 in range(0, V, step):
            v1 = min(V, v0 + step)
            whole = v0 + (v1 - v0) // PAIR * PAIR
            if whole > v0:
                yield v0, whole
            if v1 > whole:
                yield whole, v1

    def _part_entries(self, plan: BlockPlan) -> int:
        """Entries of the kernel's output pooled at a time: the plan's score block for the bf16 screen
        (``plan.plan_bytes``: ``n v`` entries of 14 bytes, the torch screen's product, widening and mask, which
        this screen never makes) at ``PART_ENTRY_BYTES`` each; ``amx_kernel.screen_parts`` takes at least one
        pair of row tiles' worth, which the plan counts too."""
        return plan.queries * plan.rows * 14 // PART_ENTRY_BYTES

    def _pool_float32(self, qi: np.ndarray, ids: np.ndarray, pool: CandidatePool) -> None:
        """Score the pairs (query, row) (f,) again in float32, as the float screen scores them, and pool them.

        ``_float32_scores``: within the float screen's margin (``eps32``) of
        the exact score whatever the order of the sum
        (``Bf16Screen._pool_float32``). The compiled loop of ``pool_insert``
        puts them in the pool one at a time (the pool's ``2 eps`` rule); those
        it leaves (a query's slots full of near-ties) and all of them where it
        is not compiled go the NumPy way: an entry more than two margins below
        its query's k-th best, here or in the pool, goes at once; the rest are
        pooled ``plan.rescore`` pairs at a time (``CandidatePool.add``).
        """
        k = self.k
        scores = self._float32_scores(qi, ids)  # (f,)
        left = pool_insert.insert(pool, qi, ids, scores, self.eps32)  # compiled: the entries put in place
        if left is not None:  # all in place but those whose query's slots were full
            qi, ids, scores = qi[left], ids[left], scores[left]
            if not qi.size:
                return
        order = np.lexsort((-scores, qi))  # by query, best first
        qi, ids, scores = qi[order], ids[order], scores[order]
        # Each query's k-th best here and in the pool, less two float margins: what scores below is beaten by k
        # others (as ``CandidatePool.add`` would find, for a fraction of its cost where most entries go).
        hit, start, count = np.unique(qi, return_index=True, return_counts=True)
        kth = np.full(len(self.q64), -np.inf)
        kth[hit] = np.where(count >= k, scores[np.minimum(start + k - 1, qi.size - 1)], -np.inf)
        kth = np.maximum(kth, pool.scores[:, k - 1])
        keep = scores >= (kth - 2 * self.eps32)[qi]
        qi, ids, scores = qi[keep], ids[keep], scores[keep]
        step = max(1, self.plan.rescore)
        for s in range(0, qi.size, step):
            pool.add(qi[s:s + step], ids[s:s + step], scores[s:s + step], self.eps32, self._settle)

    def _float32_scores(self, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The float screen's float32 scores of pairs (query, row) (f,) -> (f,) float32: ``q . w`` of the float32
        (unit) query and the row (``pair_scores.pair_dots``: read in place), cosine times ``float32(1 / |w|)``."""
        scores = pair_dots(self.W, self.queries, qi, ids)
        if self.rinv is not None:
            scores *= self.rinv[ids]
        return scores

    def _bits(self, which: slice | np.ndarray) -> np.ndarray:
        """bfloat16 bits of rows ``which`` (a run, or ids), (v_pad, D_pad) uint16, C-contiguous: a view of the
        table's bits where they are laid out as the kernel reads them, else a padded copy (rounded now where
        the table has no bits)."""
        D, D_pad = self.W.shape[1], self.packed.bits.shape[1]
        held = self.rows
        if isinstance(which, slice):
            v = which.stop - which.start
            if (held is not None and D == D_pad and v % PAIR == 0 and isinstance(held, np.ndarray)
                    and held.flags.c_contiguous):
                return held[which]
        else:
            v = which.size
        v_pad = -(-v // PAIR) * PAIR
        if self._buf is None or len(self._buf) < v_pad:
            self._buf = np.zeros((v_pad, D_pad), dtype=np.uint16)
        out = self._buf[:v_pad]
        out[:v, :D] = held[which] if held is not None else bf16_bits(np.asarray(self.W[which]))
        out[v:] = 0
        return out

    def _rinv(self, v0: int, v1: int, v_pad: int) -> np.ndarray:
        """The rows' factors (v_pad,) float32: ``float32(1 / |w|)`` for cosine, 1 for dot (padding rows' entries
        are dropped whatever they score)."""
        if self.rinv is None:
            return np.ones(v_pad, dtype=np.float32)
        if v1 - v0 == v_pad:
            return self.rinv[v0:v1]
        out = np.zeros(v_pad, dtype=np.float32)
        out[:v1 - v0] = self.rinv[v0:v1]
        return out


def bf16_exact(W: Any, block: int = 4096) -> bool:
    """Whether every entry of the table W (V, D) is a bfloat16 value, ``block`` rows at a time (NumPy, no torch).

    >>> bf16_exact(np.array([[1.0, 0.5]], dtype=np.float32)), bf16_exact(np.array([[1.0 + 2**-10]]))
    (True, False)
    """
    if isinstance(W, Bf16Matrix):
        return True
    for start in range(0, len(W), block):
        rows = np.asarray(W[start:start + block])
        if rows.dtype == np.float32:
            if np.any(np.bitwise_and(rows.view(np.uint32), np.uint32(0xFFFF))):  # the low half of each float32
                return False
        elif not np.array_equal(round_bf16(np.asarray(rows, dtype=np.float64)), rows):
            return False
    return True
