"""The integer screen: certified bounds from int16 codes find each query's candidates, then an exact rescoring.

``Int16Screen`` is a peer of ``float_screen.FloatScreen`` (the float GEMM way
to the same three steps) and of ``torch_screen``, with the same answer;
``dispatch.search_block`` sends it a block of queries where the plan says
``screen="int16"`` (``capability`` chooses). Its neighbours: ``codes`` (the
codes and their bound), ``int16_kernel`` (the compiled kernel) and
``rescore`` (step 3).

1. *First bar.* The compiled kernel (``int16_kernel``) bounds the scores of
   rows spread over the table (``plan.sample``), and each query's k-th best
   lower bound among them becomes its first bar.
2. *Screen.* The kernel scores every row from its integer codes, a block of
   rows at a time (about 192 KiB of codes, so the block stays in the L2 cache
   while every query passes over it); a row whose upper bound reaches the
   query's bar becomes a candidate, and its lower bound may raise the bar.
   When one query gathers more candidates than its slots hold (exact ties,
   duplicated rows), they are settled exactly and only the best k kept.
3. *Rescore.* The candidates still at or above the final bar are scored in
   float64 and ordered by ``(-score, id)`` (``rescore``).

Why a dropped row cannot be listed: the ``codes`` module derives the bound.

Memory: per query, K float64 lower bounds, C = 2K + 64 candidates (16 bytes
each), its codes (2 D bytes) and their encoding temporaries; per worker, the
sample of rows that sets the first bar; no score block at all
(``plan.plan_bytes`` counts them for ``screen="int16"``). The table's codes
are its resident cost (``EmbeddingTable.codes``), outside the budget; the
per-row terms of the bound (24 bytes a row, and their tile extremes,
``Int16Table``) are made once per search and metric and counted in it
(``plan.fixed_bytes``).

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m`` queries
in the block, ``m4`` that rounded up to 4, ``C`` candidate slots per query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .codes import TILE, RowCodes, encode_queries, row_terms, tile_terms
from .plan import BlockPlan
from .rescore import Rescorer

__all__ = ["Int16Table", "Int16Screen", "BLOCK_BYTES"]

BLOCK_BYTES = 192 * 2**10  # codes of one block of rows: fits the L2 cache of a core (512 KiB on Zen 3)


@dataclass(frozen=True)
class Int16Table:
    """A table's codes with the per-row terms of one metric's bound.

    Attributes
    ----------
    codes : RowCodes
        The table's codes (``codes.encode_rows``).
    terms : np.ndarray, shape (3, T * 16), float64
        ``a, b, c`` of every slot (``codes.row_terms``).
    extremes : np.ndarray, shape (4, T), float64
        Their extremes per tile (``codes.tile_terms``).
    """

    codes: RowCodes
    terms: np.ndarray
    extremes: np.ndarray

    @classmethod
    def build(cls, codes: RowCodes, row_norms: np.ndarray, metric: str) -> "Int16Table":
        """The codes with one metric's per-row terms (``codes.row_terms``) and their tile extremes."""
        terms = row_terms(codes, row_norms, metric)  # (3, T * 16)
        return cls(codes, terms, tile_terms(terms))


class Int16Screen:
    """Nonzero queries (m, D) screened with integer codes against every row (steps 1-3)."""

    def __init__(self, W, q64, q_norms, exclude, k, metric, row_norms, table: Int16Table) -> None:
        from .int16_kernel import screen_rows  # numba: imported only when this screen runs

        self.screen_rows = screen_rows
        self.k, self.metric, self.table = k, metric, table
        self.m = len(q64)
        self.queries = encode_queries(q64, q_norms, metric, table.codes.limit)
        m4 = len(self.queries.codes)
        self.own = np.full(m4, -1, dtype=np.int64)  # (m4,) -1: no id left out
        if exclude is not None:
            self.own[:self.m] = exclude
        self.rescorer = Rescorer(W, q64, q_norms, row_norms, metric, exclude, k)
        self.slots = 2 * k + 64  # C: room for k, near-ties, and one tile of 16 more

    def run(self, plan: BlockPlan) -> tuple[np.ndarray, np.ndarray]:
        """The exact top-k of every query: ids (m, K) int64, scores (m, K) float64."""
        floor = self._first_bar(plan.sample)  # (m4,)
        cand_ids, cand_up, counts, heap = self._screen(floor)
        bar = self._bar(heap[:, 0], floor)  # (m4,)
        keep = (np.arange(self.slots) < counts[:, None]) & (cand_up >= bar[:, None])  # (m4, C)
        keep = keep[:self.m]
        width = max(1, int(keep.sum(axis=1).max(initial=0)))
        cand = np.full((self.m, width), -1, dtype=np.int64)  # (m, L) -1: empty
        rank = np.cumsum(keep, axis=1) - 1
        rows, cols = np.nonzero(keep)
        cand[rows, rank[rows, cols]] = cand_ids[rows, cols]
        ids = np.empty((self.m, self.k), dtype=np.int64)
        scores = np.empty((self.m, self.k))
        step = max(1, plan.rescore // width)
        for s in range(0, self.m, step):
            part = np.arange(s, min(s + step, self.m))
            ids[part], scores[part] = self.rescorer.top_k(part, cand[part])
        return ids, scores

    def _first_bar(self, n_sample: int) -> np.ndarray:
        """Each query's k-th best lower bound among rows spread over the table, (m4,); +inf for the padding."""
        codes = self.table.codes
        V = codes.V
        sample = np.unique(np.linspace(0, V - 1, max(1, n_sample)).astype(np.int64))  # (s,) slots, ascending
        n16 = -(-sample.size // TILE) * TILE
        ids = np.full(n16, -1, dtype=np.int64)
        ids[:sample.size] = codes.ids[sample]
        rows = np.zeros((n16, codes.packed.shape[1], 2), dtype=np.int16)  # (s16, D2, 2)
        rows[:sample.size] = codes.packed[sample // TILE, :, sample % TILE, :]
        tiles = np.ascontiguousarray(rows.reshape(-1, TILE, rows.shape[1], 2).transpose(0, 2, 1, 3))
        terms = np.zeros((3, n16))
        terms[:, :sample.size] = self.table.terms[:, sample]
        m4 = len(self.own)
        floor = np.full(m4, -np.inf)
        floor[self.m:] = np.inf  # padding queries keep nothing
        heap = np.full((m4, self.k), -np.inf)
        none = np.zeros((m4, 1), dtype=np.int64), np.zeros((m4, 1)), np.zeros(m4, dtype=np.int64)
        self._kernel(floor, tiles, ids, terms, tile_terms(terms), heap, *none, collect=False, start=0)
        out = heap[:, 0].copy()
        out[self.m:] = np.inf
        return out

    def _screen(self, floor: np.ndarray):
        """Every row, a block at a time -> candidates (m4, C) ids and upper bounds, counts (m4,), heap (m4, K)."""
        codes = self.table.codes
        T, D2 = codes.packed.shape[:2]
        m4 = len(self.own)
        per_block = max(1, BLOCK_BYTES // (D2 * TILE * 2 * 2))  # tiles of codes per block of rows
        heap = np.full((m4, self.k), -np.inf)  # the k best lower bounds of the rows screened
        cand_ids = np.zeros((m4, self.slots), dtype=np.int64)
        cand_up = np.zeros((m4, self.slots))
        counts = np.zeros(m4, dtype=np.int64)
        for t0 in range(0, T, per_block):
            t1 = min(T, t0 + per_block)
            ids, tiles = codes.ids[t0 * TILE:t1 * TILE], codes.packed[t0:t1]  # (b,), (t, D2, 16, 2)
            terms, extremes = self.table.terms[:, t0 * TILE:t1 * TILE], self.table.extremes[:, t0:t1]
            start = 0
            while start >= 0:
                start = self._kernel(floor, tiles, ids, terms, extremes, heap, cand_ids, cand_up, counts,
                                     collect=True, start=start)
                if start >= 0:  # a tile whose queries ran out of slots: settle them exactly
                    q0 = start // (t1 - t0) * 4
                    for qi in range(q0, q0 + 4):
                        if counts[qi] > self.slots - 16:
                            self._settle(qi, floor, cand_ids, cand_up, counts)
        return cand_ids, cand_up, counts, heap

    def _kernel(self, floor, tiles, ids, terms, extremes, heap, cand_ids, cand_up, counts, *, collect, start) -> int:
        """One call of ``int16_kernel.screen_rows``; each row of terms (3, b) is passed as a contiguous (b,) array."""
        q = self.queries
        return self.screen_rows(q.codes, q.alpha, q.beta, q.top, self.own, floor, tiles, ids, *terms, extremes,
                                heap, cand_ids, cand_up, counts, collect, start)

    def _settle(self, qi: int, floor, cand_ids, cand_up, counts) -> None:
        """Keep only the exact top-k of query qi's candidates; their k-th score becomes a bar."""
        top_ids, top_scores = self.rescorer.top_k(np.array([qi]), cand_ids[qi:qi + 1, :counts[qi]])
        real = top_ids[0] < self.table.codes.V  # (K,) fewer than k valid candidates: empty slots
        n = int(real.sum())
        units = self._units(top_scores[0, real], qi)  # (n, 2) lower and upper, in query units
        cand_ids[qi, :n] = top_ids[0, real]
        cand_up[qi, :n] = units[:, 1]
        counts[qi] = n
        if n == self.k:  # k rows score at least the k-th: a certified bar
            floor[qi] = max(floor[qi], units[-1, 0])

    def _units(self, scores: np.ndarray, qi: int) -> np.ndarray:
        """Exact scores (n,) of query qi in query units, rounded outward: (n, 2) lower and upper."""
        q = self.queries
        scale = 1.0 / q.scales[qi] if self.metric == "dot" else q.top[qi]  # a power of two, or n_q / s_q
        x = scores * scale
        wide = np.abs(x) * 2.0**-50  # one rounding (none for dot)
        return np.stack([x - wide, x + wide], axis=1)

    def _bar(self, heap_root: np.ndarray, floor: np.ndarray) -> np.ndarray:
        """The kernel's bar (``int16_kernel._bar``) of every query, (m4,)."""
        top = self.queries.top
        bar = np.minimum(np.maximum(heap_root, floor), top)
        return np.where(bar > -top, bar, -np.inf)
