"""The self-join: every row of the table as a query, each block pair of W W^T scored once.

When the queries are the table itself (hubs, the neighbour graph), the score
matrix ``S = W W^T`` (cosine: of the unit rows) is symmetric: the scores of
query block i against row block j are those of query block j against row
block i, transposed. ``self_join`` cuts the rows into blocks of b and, for
each pair ``j >= i``, computes ``S_ij = W_i @ W_j.T  # (b, b)`` once, then feeds
both sides: ``S_ij`` to the queries of block i, ``S_ij.T`` to those of block j.
That is half the products of the per-query search of every id (``per_query``).

Query blocks run in order. By step i, block i's queries have seen rows of the
blocks before it (through the transposes of steps 0 .. i-1) and at step i see
those from i on: their pools are complete, so they are rescored and handed out
(a generator), while the later blocks' pools wait. Those pools, ``pool_slots(K)``
candidates for each of the V queries, are the price of the halving: O(V K),
counted in the plan (``plan.plan_self_join``).

The rest is the float screen's way, unchanged (``float_screen``): each query's bar
starts at the k-th best of a sample of rows, less 2 eps (``precision.margin``),
rises with its pool's k-th best, and only block entries at or above it are
pooled (``pool.CandidatePool``); the pooled candidates are rescored in float64
as the reference scores them (``rescore``). So the lists are identical, id for
id and score for score, to the per-query search's; a zero row lists the smallest ids.

One of the ways behind the front door's "every row's k nearest"
(``search.Search.every_row``; ``every_row`` says when it is taken).

Why the float GEMM and not the integer screen (``int16_screen``): the compiled
integer kernel applies each query's bar as it scores and never writes a score
matrix, so it has no ``S_ij`` to hand to the other side; the GEMM does.
(benchmarks/README.md has the measured comparison.)

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``b`` rows in a block.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

import numpy as np

from ..lengths import inverse_norms
from .plan import PairPlan
from .pool import CandidatePool
from .precision import longest_other, margin
from .rescore import Rescorer
from .threads import block_runner

__all__ = ["self_join", "SelfJoin", "ListBlock"]

ListBlock = tuple[int, int, np.ndarray, np.ndarray]  # start, stop, ids (n, K) int64, scores (n, K) float64


def self_join(W: np.ndarray, k: int, metric: str, plan: PairPlan, *, row_norms: np.ndarray,
              progress: Callable[[int], None] | None = None) -> Iterator[ListBlock]:
    """The exact top-k of every row of W among the other rows, a block of queries at a time, in order.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
        The table; never changed, never copied whole.
    k : int
        Neighbours per row, ``1 <= k <= V - 1``; each row leaves out its own id.
    metric : {"cosine", "dot"}
    plan : PairPlan
        Block size, workers and GEMM dtype, within a memory budget
        (``plan.plan_self_join``), the O(V K) pools included; the front door
        makes it once per metric. The result does not depend on it.
    row_norms : np.ndarray, shape (V,), float64
        ``vector_norms(W)``, checked as the front door checks queries by id
        (``checks.check_queries``).
    progress : callable, optional
        Called with the number of rows whose lists are done, after each block.

    Yields
    ------
    start, stop : int
        The block's rows, ``[start, stop)``, in order from 0 to V.
    ids : np.ndarray, shape (stop - start, K), int64
        Best first, equal scores by the smaller id: row for row what the
        per-query search of every id returns (``per_query.search_queries``).
    scores : np.ndarray, shape (stop - start, K), float64
        As the per-query search scores them.

    >>> from embedlab.engine.neighbors.plan import plan_self_join
    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> plan = plan_self_join(3, 2, 2, 8, 2**20)
    >>> [ids.tolist() for _, _, ids, _ in self_join(W, 2, "dot", plan, row_norms=np.linalg.norm(W, axis=1))]
    [[[1, 2], [0, 2], [1, 0]]]
    """
    if plan.screen != "float":
        raise ValueError(f"self_join scores with the float GEMM; a plan for {plan.screen!r} products runs through "
                         f"every_row.join_blocks")
    return SelfJoin(W, k, metric, row_norms, np.float32 if plan.itemsize == 4 else np.float64, plan).run(progress)


class SelfJoin:
    """The scan's state: every query's pool, bar and margin, and the blocks; the float GEMM scores them.

    ``bf16_join.Bf16SelfJoin`` scores the same block pairs with bfloat16
    products, overriding ``_sample_kth``, ``_survivors`` and the margins.
    """

    def __init__(self, W, k, metric, row_norms, dtype, plan: PairPlan) -> None:
        V = len(W)
        self.W, self.k, self.metric, self.row_norms, self.dtype, self.plan = W, k, metric, row_norms, dtype, plan
        self.inv_norms = inverse_norms(row_norms) if metric == "cosine" else None  # (V,)
        reach = row_norms[longest_other(row_norms, np.arange(V), V)]  # (V,) the longest row each may meet
        self.eps = margin(metric, W.shape[1], dtype, row_norms, reach)  # (V,)
        self.pool = CandidatePool(V, k)  # (V, P): filled by both sides of every block pair
        self.edges = list(range(0, V, plan.block)) + [V]
        # Transposed survivors of each block's queries, merged into its pools once about one per
        # row has gathered (a merge sorts the whole pools of the queries it touches).
        self.waiting: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in self.edges[:-1]]
        self.lock = threading.Lock()  # the current query block's pools, merged into by every worker
        self.pair_workers = plan.workers  # Python threads scoring block pairs at once

    def run(self, progress: Callable[[int], None] | None) -> Iterator[ListBlock]:
        self.bar = self._first_bars()  # (V,)
        nb = len(self.edges) - 1
        with block_runner(self.pair_workers) as run:
            for i in range(nb):
                self.found = []  # block i's survivors not yet merged into its pools
                for _ in run(lambda j: self._pair(i, j), range(i, nb)):
                    pass
                yield self._close(i, progress)

    def _close(self, i: int, progress: Callable[[int], None] | None) -> ListBlock:
        """Block i's step is over: its last survivors pooled, its lists rescored and handed out."""
        self._add_sorted(self.found)
        start, stop = self.edges[i], self.edges[i + 1]
        ids, scores = self._lists(start, stop)
        if progress is not None:
            progress(stop - start)
        return start, stop, ids, scores

    # -- one step alone, for a cluster's task (``every_row.step_lists``, ``cluster``) ---------------

    def block_bars(self, i: int) -> np.ndarray:
        """Block i's first bars (``_first_bars`` of its rows alone): (n,) float64, a cluster's first round."""
        a, b = self.edges[i], self.edges[i + 1]
        return self._first_bars({a})[a:b]

    def begin_step(self, i: int, first: np.ndarray, known: np.ndarray) -> None:
        """Make ready for step i alone: the bars of rows [a, V) from what other steps found.

        ``first`` (V - a,) float64: those rows' first bars (``block_bars``);
        ``known`` (V - a,) float64: the exact k-th best score each is known to
        reach from other steps' lists (-inf where fewer than k are known).
        The bar is ``max(first, known - 2 eps(known))``: a screening score
        below it is more than 2 eps below a score that k listed rows reach
        exactly, so the row is beaten by them (``pool``'s rule, with the exact
        score in place of a screening one; for ``bf16_join``'s eps growing
        with |t| this holds too, since the margin is taken at that score).
        Rows before a take no part (+inf).
        """
        a, V = self.edges[i], len(self.W)
        self.bar = np.full(V, np.inf)
        with np.errstate(invalid="ignore"):  # known = -inf: -inf, or NaN (0 * inf), and the first bar stays
            raised = known - 2 * self._margin(slice(a, V), known)
        self.bar[a:] = np.maximum(first, np.where(np.isnan(raised), -np.inf, raised))
        self.bar[a:][self.row_norms[a:] == 0] = np.inf  # a zero row's list is known: nothing pooled for it
        self.found = []

    def end_step(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """After pairs (i, j) for every j >= i ran (``_pair``): the partial lists of the rows they reached.

        Block i's rows have seen rows [a, V), their own left out; each later
        block's rows, the rows of block i (through the transposes). Returns
        ``rows (h,) int64`` (ascending, those with at least one entry) and
        their lists over the rows seen, ``ids (h, K) int64`` and ``scores
        (h, K) float64`` by ``(-score, id)``, id V and score -inf in an empty
        slot. A zero row of block i gets its whole list (the smallest ids);
        elsewhere it gets none. No two steps list the same row for the same
        query (each pair of blocks is one step's), so merged by ``(-score,
        id)`` over steps 0 .. j, block j's lists are ``run``'s
        (``cluster.ScatteredTable.pair_steps``).
        """
        self._add_sorted(self.found)
        self.found = []
        nb = len(self.edges) - 1
        out_rows, out_ids, out_scores = [], [], []
        for j in range(i, nb):
            self._add_sorted(self.waiting[j])
            self.waiting[j] = []
            start, stop = self.edges[j], self.edges[j + 1]
            ids, scores = self._lists(start, stop, zero_rows=j == i, complete=False)
            reached = np.flatnonzero(ids[:, 0] < len(self.W))  # rows with at least one entry
            out_rows.append(start + reached)
            out_ids.append(ids[reached])
            out_scores.append(scores[reached])
        return np.concatenate(out_rows), np.concatenate(out_ids), np.concatenate(out_scores)

    def _rows(self, at: slice | np.ndarray) -> np.ndarray:
        """Rows ``W[at]`` as the GEMM sees them: unit (cosine) or as they are, in its dtype -> (n, D)."""
        rows = self.W[at]  # (n, D)
        if self.inv_norms is not None:  # unit rows; zero rows stay 0
            return np.multiply(rows, self.inv_norms[at, None], dtype=self.dtype)
        return rows if rows.dtype == self.dtype else rows.astype(self.dtype)

    def _first_bars(self, blocks: set[int] | None = None) -> np.ndarray:
        """Each query's k-th best GEMM score among rows spread over the table, less 2 eps: (V,).

        Only for the blocks starting at ``blocks`` where given (the others +inf).

        As ``float_screen.FloatScreen._first_bar`` sets it (the query's own row left out);
        a zero row gets +inf: its list is known (``_lists``) and nothing is pooled for it.
        """
        V, k = len(self.W), self.k
        # At most half a block (its scores and their partition copy fit where one score block
        # does, in the plan), at least k + 1 (the query's own row left out).
        n_sample = min(V, max(k + 1, min(self.plan.block // 2, max(4 * k, min(2048, V // 32)))))
        sample = np.unique(np.linspace(0, V - 1, n_sample).astype(np.int64))  # (s,) ascending
        bar = np.full(V, np.inf)
        for start, stop in zip(self.edges[:-1], self.edges[1:]):
            if blocks is None or start in blocks:
                kth = self._sample_kth(start, stop, sample)  # (n,)
                bar[start:stop] = kth - 2 * self._margin(slice(start, stop), kth)
        bar[self.row_norms == 0] = np.inf
        return bar

    def _sample_kth(self, start: int, stop: int, sample: np.ndarray) -> np.ndarray:
        """The k-th best GEMM score of queries [start, stop) among the rows ``sample`` (s,), own row left out: (n,)."""
        with np.errstate(over="ignore"):
            S = self._rows(slice(start, stop)) @ self._rows(sample).T  # (n, s)
        own = np.flatnonzero((sample >= start) & (sample < stop))
        S[sample[own] - start, own] = -np.inf
        return np.partition(S, S.shape[1] - self.k, axis=1)[:, S.shape[1] - self.k]

    def _margin(self, at: slice, kth: np.ndarray) -> np.ndarray:
        """The margin eps of queries ``at`` whose k-th best screening score is now ``kth``: (n,) float64.

        The float GEMM's is fixed per query (``precision.margin``); a screen whose
        bound grows with the score (``bf16_join``) reads ``kth``.
        """
        return self.eps[at]

    def _bar(self, start: int, stop: int) -> np.ndarray:
        """Queries [start, stop)'s bar now: the first bar, raised by the pool's k-th best less 2 eps: (n,)."""
        kth = self.pool.scores[start:stop, self.k - 1]  # (n,)
        return np.maximum(self.bar[start:stop], kth - 2 * self._margin(slice(start, stop), kth))

    def _pair(self, i: int, j: int) -> None:
        """Block pair (i, j >= i): S_ij's survivors into block i's pools, S_ij.T's into block j's.

        Runs on a worker thread. During step i, block j > i's pools and
        waiting survivors are this call's alone; block i's pools are shared by
        the step's calls: its survivors are gathered and merged under a lock,
        a batch at a time.
        """
        a, b, c, d = self.edges[i], self.edges[i + 1], self.edges[j], self.edges[j + 1]
        if i == j:  # block i's queries are next: their transposed survivors still waiting join their pools
            with self.lock:
                self._add_sorted(self.waiting[i])
            self.waiting[i] = []
        # A stale bar (another thread's merge not yet seen) is lower, never wrong: it only lets more through.
        bar_i = self._bar(a, b)
        bar_j = self._bar(c, d) if j > i else None  # the transpose: rows of block i are candidates of block j's
        waiting = self.waiting[j]
        for side, r, cc, approx in self._survivors(a, b, c, d, bar_i, bar_j):
            if side == 0:
                with self.lock:  # gathered over the step's pairs, merged a batch at a time: few merges
                    self.found.append((r + a, cc + c, approx))
                    if sum(len(f[0]) for f in self.found) >= self.plan.batch:
                        self._add_sorted(self.found)
                        self.found = []
            else:
                waiting.append((cc + c, r + a, approx))
                if sum(len(w[0]) for w in waiting) >= d - c:  # merged about once a row of block j has one
                    self._add_sorted(waiting)
                    waiting.clear()

    def _survivors(self, a: int, b: int, c: int, d: int, bar_i: np.ndarray,
                   bar_j: np.ndarray | None) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Entries of S_ij = rows [a, b) times rows [c, d) at or above a bar, a batch at a time.

        Yields ``(side, r, c, approx)``: side 0 for block i's queries (r, c
        with S[r, c] >= bar_i[r]), then side 1 for block j's (S[r, c] >=
        bar_j[c]; only where ``bar_j`` is given); r, c (f,) int64 within the
        blocks, approx (f,) their screening scores. On the diagonal (a == c)
        a query never meets itself.
        """
        with np.errstate(over="ignore"):  # only a row times itself can overflow (precision.check_dot_range)
            S = self._rows(slice(a, b)) @ self._rows(slice(c, d)).T  # (n_i, n_j)
        if a == c:
            np.fill_diagonal(S, -np.inf)  # a query never lists itself
        for r, cc in _marked(S >= bar_i.astype(self.dtype)[:, None], self.plan.batch):
            yield 0, r, cc, S[r, cc]
        if bar_j is not None:
            for r, cc in _marked(S >= bar_j.astype(self.dtype)[None, :], self.plan.batch):
                yield 1, r, cc, S[r, cc]

    def _add_sorted(self, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Pool survivors (query, row, GEMM score) of several block pairs at once, ordered by query then id."""
        if parts:
            qi, ids, approx = (np.concatenate(column) for column in zip(*parts))
            order = np.lexsort((ids, qi))
            self._add(qi[order], ids[order], approx[order])

    def _add(self, qi: np.ndarray, ids: np.ndarray, approx: np.ndarray) -> None:
        """Pool survivors sorted by query; the pools prune with each query's margin (``_pool_margin``)."""
        if qi.size:
            approx = approx.astype(np.float64)
            self.pool.add(qi, ids, approx, self._pool_margin(qi, approx), self._settle)

    def _pool_margin(self, qi: np.ndarray, approx: np.ndarray) -> np.ndarray:
        """The margins (V,) the pools of queries ``qi`` prune with when ``approx`` joins them: the fixed ones here."""
        return self.eps

    def _settle(self, q: int, cand: np.ndarray) -> np.ndarray:
        """The exact top-k ids of query q's candidates (c,), taken in chunks (as ``float_screen.FloatScreen._settle``)."""
        rescorer = self._rescorer(q, q + 1)
        top = cand[:0]
        step = max(1, self.plan.rescore - self.k)
        for s in range(0, cand.size, step):
            chunk = np.concatenate([top, cand[s:s + step]])[None, :]  # (1, c)
            top = rescorer.top_k(np.array([0]), chunk)[0][0]
        return top

    def _rescorer(self, start: int, stop: int) -> Rescorer:
        q64 = np.asarray(self.W[start:stop], dtype=np.float64)  # (n, D) the queries as the rescoring sees them
        return Rescorer(self.W, q64, self.row_norms[start:stop], self.row_norms, self.metric,
                        np.arange(start, stop), self.k)

    def _lists(self, start: int, stop: int, *, zero_rows: bool = True,
               complete: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Block [start, stop)'s pools rescored: ids (n, K) int64, scores (n, K) float64.

        ``zero_rows``: a zero row gets its list (the smallest ids; nothing is
        pooled for it). ``complete``: the pools have seen every row, so an
        empty slot left is an error; else (``end_step``) it stays, id V and
        score -inf.
        """
        n, k, V = stop - start, self.k, len(self.W)
        pooled = self.pool.ids[start:stop]  # (n, P)
        ids, scores = self._rescorer(start, stop).top_k(np.arange(n), pooled, chunk=self.plan.rescore)  # (n, K) each
        first = np.arange(k + 1)  # a zero row scores 0.0 against every row: the smallest ids, one spare
        for q in np.flatnonzero(self.row_norms[start:stop] == 0) if zero_rows else ():
            ids[q], scores[q] = first[first != start + q][:k], 0.0
        if complete and n and ids.max() >= V:  # an empty slot survived: never hand out an id that does not exist
            raise FloatingPointError("fewer than k rows got a finite score; the table's values are out of range")
        return ids, scores + 0.0  # + 0.0 turns -0.0 into 0.0


def _marked(mask: np.ndarray, batch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(row, column) of the True entries of mask (n, m), row-major, at most about ``batch`` at a time.

    Splits the rows in halves while a part holds more than ``batch``, so the
    index arrays stay small even when a whole block passes (equal rows).
    """
    n = len(mask)
    if n > 1 and np.count_nonzero(mask) > batch:
        yield from _marked(mask[:n // 2], batch)
        for r, c in _marked(mask[n // 2:], batch):
            yield r + n // 2, c
        return
    found = np.flatnonzero(mask)
    for s in range(0, found.size, max(1, batch)):
        yield np.divmod(found[s:s + batch], mask.shape[1])
