"""The candidate pool of a neighbour search: a few candidates per query, pruned as rows are screened.

Each query keeps its best candidates by GEMM score, at most ``pool_slots(k)``;
a candidate more than 2 eps below the k-th best (eps from ``precision.margin``)
is beaten by k others in exact scores too and is dropped for good. More
near-ties than slots are settled exactly, in float64, by the screen.

Glossary: ``K`` top-k; ``m`` queries in a block; ``P`` slots per query.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["CandidatePool", "pool_slots"]


class CandidatePool:
    """Candidates of m queries: ids and GEMM scores, best first, at most P each.

    Every row left out of a pool is beaten, in exact (-score, id) order, by k
    rows that stay in it, so the exact top-k of the pool is that of the rows
    it has seen.
    """

    def __init__(self, m: int, k: int) -> None:
        self.k = k
        P = pool_slots(k)
        self.ids = np.full((m, P), -1, dtype=np.int64)  # (m, P) -1: an empty slot
        self.scores = np.full((m, P), -np.inf)  # (m, P) descending; [:, k-1] is the k-th best

    def add(self, qi: np.ndarray, ids: np.ndarray, approx: np.ndarray, eps: np.ndarray,
            settle: Callable[[int, np.ndarray], np.ndarray]) -> None:
        """Merge survivors (query index, row id, GEMM score), sorted by query, and prune."""
        k, P = self.k, self.ids.shape[1]
        hit = qi[np.concatenate(([True], qi[1:] != qi[:-1]))]  # (h,) qi is sorted
        old = self.ids[hit] >= 0  # (h, P)
        rows = np.concatenate([np.repeat(hit, P)[old.ravel()], qi])
        cand = np.concatenate([self.ids[hit][old], ids])
        scores = np.concatenate([self.scores[hit][old], approx])
        order = np.lexsort((-scores, rows))  # by query, best GEMM score first
        rows, cand, scores = rows[order], cand[order], scores[order]
        start = np.searchsorted(rows, hit)  # (h,) where each query's group starts
        count = np.diff(np.append(start, rows.size))
        kth = np.where(count >= k, scores[np.minimum(start + k - 1, rows.size - 1)], -np.inf)
        # More than 2 eps below the k-th best GEMM score is beaten by k others
        # in exact scores too: drop it for good.
        keep = scores >= np.repeat(kth - 2 * eps[hit], count)
        rank = np.arange(rows.size) - np.repeat(start, count)  # place within its group
        over = np.repeat(np.add.reduceat(keep, start, dtype=np.intp) > P, count)
        self.ids[hit], self.scores[hit] = -1, -np.inf
        put = keep & ~over
        self.ids[rows[put], rank[put]] = cand[put]
        self.scores[rows[put], rank[put]] = scores[put]
        for i in np.unique(rows[keep & over]):  # more near-ties than slots: settle them exactly
            mine = keep & (rows == i)
            top = settle(i, cand[mine])  # (K,)
            approx_of = dict(zip(cand[mine].tolist(), scores[mine].tolist()))
            kept = sorted(((approx_of[j], j) for j in top.tolist()), reverse=True)
            self.ids[i, :k] = [j for _, j in kept]
            self.scores[i, :k] = [s for s, _ in kept]


def pool_slots(k: int) -> int:
    """Candidates a pool keeps per query: k, and room for near-ties before they are settled exactly."""
    return 2 * k + 8
