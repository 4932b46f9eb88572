"""Exact top-k nearest tokens by cosine similarity or dot product.

The rule every engine keeps (``embed.nearest_by_cosine``): the k ids with the
largest score, best first, equal scores ordered by the smaller id; the cosine
of a zero-length vector is 0.0.

How ``search`` finds them, for each block of queries:

1. *Screen.* A float32 GEMM scores the queries against one block of vocabulary
   rows at a time: ``S = Q_blk @ W_blk.T  # (n, v)``.
2. *Filter.* Each query keeps a small pool of candidates and the k-th best
   GEMM score among them. Rounding moves a GEMM score by at most ``eps``
   (``_margin``), so an entry more than ``2 * eps`` below that k-th best is
   beaten by k others in exact scores too: only the entries of ``S`` at or
   above the bar are looked at again. On real tables that is a few per query
   per block, so the selection costs one compare over the block instead of a
   partition of every row of V scores.
3. *Rescore.* At the end the pooled candidates are scored again in float64
   the way the reference scores them (``dot``, or ``dot / (|q| * |w|)``), and
   sorted by ``(-score, id)``. Identical rows get bit-identical scores, so
   exact ties are ordered by id, which GEMM scores (and faiss, ``torch.topk``,
   ``argpartition``) do not guarantee.

Blocks cover both queries and vocabulary rows, so the working memory stays
under ``memory`` bytes whatever N and V are (``plan_blocks``). Blocks of
queries run on one thread per core, each with a one-thread GEMM, so the
filter keeps every core busy too, not only the GEMM.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..errors import ShapeError, SizeError
from .lengths import SQUARES_HIGH, SQUARES_LOW, inverse_norms, vector_norms

__all__ = ["Neighbors", "BlockPlan", "search", "plan_blocks", "METRICS", "DEFAULT_MEMORY"]

METRICS = ("cosine", "dot")
DEFAULT_MEMORY = 256 * 2**20  # bytes of working memory for one search
# Preferred score block (queries x rows), measured on 2 cores: big enough
# that per-block overhead is small, small enough to stay in the L3 cache.
_PREFERRED_QUERIES = 1024
_PREFERRED_ROWS = 8192
# Rows spread over the table that set each query's first bar: 1/32 of V, at most 2048
# (it costs a GEMM of its own; a larger sample gained nothing measurable).
_SAMPLE_ROWS = 2048


@dataclass(frozen=True)
class Neighbors:
    """The result of a neighbour search.

    Attributes
    ----------
    ids : np.ndarray, shape (N, K), int64
        Token ids, best first; equal scores by the smaller id.
    scores : np.ndarray, shape (N, K), float64
        Cosine similarity (in [-1, 1]) or dot product of each listed row.
    metric : str
        ``"cosine"`` or ``"dot"``.
    tokens : list of list of str, or None
        The token strings of ``ids`` where the table has a vocabulary.
    """

    ids: np.ndarray
    scores: np.ndarray
    metric: str
    tokens: list[list[str]] | None = None


@dataclass(frozen=True)
class BlockPlan:
    """How ``search`` cuts its work to stay within a memory budget.

    Attributes
    ----------
    queries : int
        Queries per block, n.
    rows : int
        Vocabulary rows per block, v.
    sample : int
        Rows spread over the table that set each query's first bar.
    batch : int
        Survivors of the filter pooled at once.
    rescore : int
        Candidates rescored in float64 at once.
    workers : int
        Threads running blocks of queries at once.
    bytes : int
        The most working memory the search needs at a time, in bytes.
    """

    queries: int
    rows: int
    sample: int
    batch: int
    rescore: int
    workers: int
    bytes: int


def search(
    W: np.ndarray,
    Q: np.ndarray | None,
    k: int,
    metric: str,
    *,
    exclude: np.ndarray | None = None,
    row_norms: np.ndarray | None = None,
    memory: int = DEFAULT_MEMORY,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``Q @ W.T`` (dot) or of the cosine, with the tie rule.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
        The table; never changed, never copied whole.
    Q : np.ndarray, shape (N, D), floating, or None
        Query vectors, finite. ``None`` queries the rows ``W[exclude]``
        themselves (queries by id), gathered a block at a time.
    k : int
        Neighbours per query, ``1 <= k <= V`` (``V - 1`` with ``exclude``).
    metric : {"cosine", "dot"}
    exclude : np.ndarray, shape (N,), int64, optional
        One id per query to leave out (the query's own id), each in
        ``[0, V)``. Nothing else is left out: a duplicate row under another
        id stays in.
    row_norms : np.ndarray, shape (V,), float64, optional
        Lengths of the rows of W (``vector_norms(W)``); computed if not given.
    memory : int
        Working memory budget in bytes; the outputs are not counted
        (``plan_blocks`` says what is).
    workers : int, optional
        Threads running blocks of queries at once, each with a one-thread
        GEMM (``threadpoolctl`` sets it); by default one per available core,
        or 1 without ``threadpoolctl``. The result does not depend on it.
    progress : callable, optional
        Called with the number of queries finished after each block of queries.

    Returns
    -------
    ids : np.ndarray, shape (N, K), int64
        Best first; equal scores by the smaller id. A zero query scores 0.0
        against every row, so its list is the smallest ids.
    scores : np.ndarray, shape (N, K), float64
        ``dot(q, w)``, or ``dot(q, w) / (|q| * |w|)`` clipped to [-1, 1] and
        0.0 where either length is 0; never NaN.

    Raises
    ------
    ValueError
        For an unknown metric, k out of range (a one-row table has no
        neighbour), a query or a row with NaN or infinity, a query whose
        length is subnormal, dot products that float64 cannot rank (their
        ``|q| |w|`` above about 2e307 or below 1e-280, the query's own row
        aside; ``_check_dot_range``), or a budget below one block.
    ShapeError
        (a ``ValueError``) if Q is not (N, D) or exclude is not (N,) ids.

    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> search(W, np.array([[0.0, 1.0]]), 3, "dot")[0].tolist()
    [[1, 2, 0]]
    """
    N, V, D = _check(W, Q, k, metric, exclude)
    if row_norms is None:
        row_norms = vector_norms(W)
    if not np.isfinite(row_norms).all():  # a NaN or infinite entry makes its row's length so
        raise ValueError(f"row {int(np.flatnonzero(~np.isfinite(row_norms))[0])} of the table contains NaN or infinity")
    q_norms = row_norms[exclude] if Q is None else vector_norms(np.asarray(Q))  # (N,)
    short = np.flatnonzero((q_norms > 0) & (q_norms < np.finfo(np.float64).tiny))
    if short.size:
        raise ValueError(f"query vector {int(short[0])} is too short for float64: its length "
                         f"{q_norms[short[0]]:.3g} is subnormal, too imprecise to divide by")
    if metric == "dot":
        _check_dot_range(q_norms, row_norms, exclude)
    dtype = _gemm_dtype(W.dtype, metric, q_norms, row_norms)
    plan = plan_blocks(V, D, k, np.dtype(dtype).itemsize, memory, n_queries=N, workers=_workers(workers))
    ids = np.empty((N, k), dtype=np.int64)
    scores = np.empty((N, k), dtype=np.float64)
    inv_norms = inverse_norms(row_norms) if metric == "cosine" else None  # (V,)

    def one_block(start: int) -> int:
        stop = min(N, start + plan.queries)
        excl = None if exclude is None else exclude[start:stop]
        block = W[excl] if Q is None else Q[start:stop]  # (n, D)
        ids[start:stop], scores[start:stop] = _search_block(W, block, k, metric, excl, row_norms, inv_norms,
                                                            dtype, plan)
        return stop - start

    with _block_runner(plan.workers) as run:
        for n_done in run(one_block, range(0, N, plan.queries)):
            if progress is not None:
                progress(n_done)
    if N and ids.max() >= V:  # an empty slot survived: never hand out an id that does not exist
        raise FloatingPointError("fewer than k rows got a finite score; the table's values are out of range")
    return ids, scores


def plan_blocks(V: int, D: int, k: int, itemsize: int, memory: int, *,
                n_queries: int | None = None, workers: int = 1) -> BlockPlan:
    """Block sizes for ``search`` whose working memory fits in ``memory`` bytes.

    Starts from 1024 queries (fewer, so that every worker gets a block) x
    8192 rows, and halves whichever part needs the most memory until all
    workers together fit. Counted per worker: the score block and its mask,
    or the sample that sets the first bar (at most one block, with a
    partition copy); one block of scaled rows; per query, its float64 and
    scaled copies and its pool; one batch of survivors being pooled (however
    many entries of a block pass the filter, they are pooled a batch at a
    time); one batch of candidates being rescored in float64. Not counted:
    the outputs (N, K).

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    memory : int
        The budget in bytes.
    n_queries : int, optional
        N; a block never holds more queries than there are.
    workers : int
        Threads running blocks of queries at once; each needs its own
        working memory, and there are never more than blocks of queries.

    Raises
    ------
    ValueError
        If even one query against K + 1 rows does not fit.

    >>> plan = plan_blocks(30522, 384, 10, 4, 256 * 2**20, n_queries=1000, workers=2)
    >>> plan.queries, plan.rows, plan.workers, plan.bytes <= 256 * 2**20
    (500, 8192, 2, True)
    """
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory <= 0:
        raise ValueError(f"memory must be a positive number of bytes, got {memory!r}")
    min_rows = min(V, k + 1)
    N = n_queries or _PREFERRED_QUERIES
    workers = max(1, min(workers, N))
    n = max(1, min(_PREFERRED_QUERIES, -(-N // workers)))  # give every worker a block
    v = max(min_rows, min(V, _PREFERRED_ROWS))
    batch = rescore = 8192
    while True:
        workers = min(workers, -(-N // n))  # no more workers than blocks
        parts = _plan_bytes(n, v, D, k, itemsize, batch, rescore)
        need = workers * sum(parts.values())
        if need <= memory:
            sample = min(v, max(min_rows, 4 * k, min(_SAMPLE_ROWS, V // 32)))
            return BlockPlan(queries=n, rows=v, sample=sample, batch=batch,
                             rescore=rescore, workers=workers, bytes=need)
        largest = max(parts, key=parts.get)
        if largest == "rescore" and rescore > 1:
            rescore //= 2
        elif largest == "pool" and batch > 1:
            batch //= 2
        elif n > 1 and (n * 4 >= v or v == min_rows):
            n //= 2
        elif v > min_rows:
            v = max(min_rows, v // 2)
        elif batch > 1 or rescore > 1:
            batch, rescore = max(1, batch // 2), max(1, rescore // 2)
        elif workers > 1:
            workers -= 1
        else:
            raise SizeError(f"memory={memory} bytes is too small: one query against {v} rows needs {need} bytes",
                            parameter="memory", value=memory, expected=f"at least {need} bytes for one query "
                            f"against {v} rows")


def _gemm_dtype(table_dtype: np.dtype, metric: str, q_norms: np.ndarray, row_norms: np.ndarray) -> type:
    """The GEMM's dtype: float32 for float16/float32 tables, unless their scores leave float32's comfortable range.

    Dot scores are at most ``|q| |w|``; cosine scales queries and rows to unit
    length by ``1 / |w|``. Either way float32 is used only when every nonzero
    length lies in [1e-15, 1e15] (and dot scores below 1e30): outside it,
    scores or scale factors could overflow, or underflow past the rounding
    margin, so the search runs in float64, which changes no result.

    ``_check_dot_range`` has refused dot products that float64 cannot hold.
    """
    lengths = np.concatenate([q_norms, row_norms])
    lengths = lengths[lengths > 0]
    if table_dtype == np.float64:
        return np.float64
    in_range = not lengths.size or (lengths.min() >= 1e-15 and lengths.max() <= 1e15)
    if metric == "dot":
        in_range = in_range and float(q_norms.max(initial=0.0)) * float(row_norms.max(initial=0.0)) <= 1e30
    return np.float32 if in_range else np.float64


def _check_dot_range(q_norms: np.ndarray, row_norms: np.ndarray, exclude: np.ndarray | None) -> None:
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
    far = _longest_other(row_norms, exclude, len(q_norms))  # (N,)
    nonzero = np.flatnonzero(row_norms > 0)
    shortest = nonzero[_two_largest(-row_norms[nonzero])]  # the shortest nonzero rows
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


def _longest_other(row_norms: np.ndarray, exclude: np.ndarray | None, n: int) -> np.ndarray:
    """For each of n queries the id of the longest row but its own (``exclude``): (n,) int64."""
    longest = _two_largest(row_norms)
    if exclude is None or longest.size < 2:
        return np.full(n, longest[0])
    return np.where(exclude == longest[0], longest[1], longest[0])


def _two_largest(x: np.ndarray) -> np.ndarray:
    """Indices of the largest and the second largest entry of x (n,), at most n of them: O(n)."""
    if x.size <= 2:
        return np.argsort(-x, kind="stable")
    two = np.argpartition(x, x.size - 2)[-2:]
    return two[np.argsort(-x[two], kind="stable")]


def _search_block(W, Q, k, metric, exclude, row_norms, inv_norms, dtype, plan) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of one block of queries Q (n, D) -> ids (n, K), scores (n, K)."""
    q64 = np.asarray(Q, dtype=np.float64)  # (n, D) the queries as the rescoring sees them
    if not np.isfinite(q64).all():
        raise ValueError("query vectors contain NaN or infinity")
    q_norms = vector_norms(q64)  # (n,)
    ids = np.empty((len(q64), k), dtype=np.int64)
    scores = np.zeros((len(q64), k))
    # A zero query scores exactly 0.0 against every row: its list is the
    # smallest ids, and it takes no part in the scan.
    for i in np.flatnonzero(q_norms == 0):
        first = np.arange(k + 1)  # one spare for the left-out id
        ids[i] = (first if exclude is None else first[first != exclude[i]])[:k]
    live = np.flatnonzero(q_norms > 0)  # (m,)
    if live.size:
        scan = _Scan(W, q64[live], q_norms[live], None if exclude is None else exclude[live],
                     k, metric, row_norms, inv_norms, dtype)
        ids[live], scores[live] = scan.run(plan)
    return ids, scores + 0.0  # + 0.0 turns -0.0 into 0.0


class _Scan:
    """Nonzero queries (m, D) scanned against every row of the table (steps 1-3)."""

    def __init__(self, W, q64, q_norms, exclude, k, metric, row_norms, inv_norms, dtype):
        self.W, self.q64, self.q_norms, self.exclude = W, q64, q_norms, exclude
        self.k, self.metric, self.row_norms, self.inv_norms, self.dtype = k, metric, row_norms, inv_norms, dtype
        unit = q64 / q_norms[:, None] if metric == "cosine" else q64
        self.queries = unit.astype(dtype)  # (m, D) what the GEMM sees
        reach = row_norms[_longest_other(row_norms, exclude, len(q_norms))]  # (m,) the longest row each may meet
        self.eps = _margin(metric, W.shape[1], dtype, q_norms, reach)  # (m,)

    def run(self, plan: BlockPlan) -> tuple[np.ndarray, np.ndarray]:
        self.plan = plan
        pool = self._scan(plan)
        ids = np.empty((len(pool.ids), self.k), dtype=np.int64)
        scores = np.empty((len(pool.ids), self.k))
        step = max(1, plan.rescore // pool.ids.shape[1])
        for s in range(0, len(pool.ids), step):
            part = np.arange(s, min(s + step, len(pool.ids)))
            ids[part], scores[part] = self._exact_top_k(part, pool.ids[part])
        return ids, scores

    def _first_bar(self) -> np.ndarray:
        """A first bar from rows spread over the whole table, shape (m,).

        Vocabularies are ordered (special tokens first, then by frequency),
        so the first block of rows alone would set a poor bar. The k-th best
        GEMM score among a strided sample, less 2 eps, is below every exact
        score of the final top-k: k sampled rows score at least that.
        """
        V, k = len(self.W), self.k
        sample = np.unique(np.linspace(0, V - 1, self.plan.sample).astype(np.int64))  # (s,) ascending
        S = self._scores(sample)  # (m, s)
        kth = np.partition(S, S.shape[1] - k, axis=1)[:, S.shape[1] - k]  # (m,)
        return kth - 2 * self.eps

    def _scan(self, plan: BlockPlan) -> _Pool:
        """Screen every row, block by block; return the pooled candidates."""
        m, V = len(self.queries), len(self.W)
        pool = _Pool(m, self.k)
        bar = self._first_bar()  # (m,)
        S_buf = np.empty(m * plan.rows, dtype=self.dtype)  # reused: (m, v) views of it
        mask_buf = np.empty(m * plan.rows, dtype=bool)
        rows_buf = np.empty((plan.rows, self.W.shape[1]), dtype=self.dtype)  # scaled rows, reused
        for v0 in range(0, V, plan.rows):
            v1 = min(V, v0 + plan.rows)
            S = self._scores(np.arange(v0, v1), out=S_buf[:m * (v1 - v0)].reshape(m, v1 - v0),
                             rows_buf=rows_buf)  # (m, v)
            bar = np.maximum(bar, pool.scores[:, self.k - 1] - 2 * self.eps)  # the pool's k-th best raises it
            mask = np.greater_equal(S, bar.astype(self.dtype)[:, None], out=mask_buf[:S.size].reshape(S.shape))
            self._pool_marked(S, mask, v0, pool, 0, m)
        return pool

    def _pool_marked(self, S, mask, v0, pool, a, b) -> None:
        """Pool the marked entries of queries [a, b), at most ``plan.batch`` at a time."""
        batch = self.plan.batch
        if b - a > 1 and np.count_nonzero(mask[a:b]) > batch:  # rare: keep the index arrays small
            mid = (a + b) // 2
            self._pool_marked(S, mask, v0, pool, a, mid)
            self._pool_marked(S, mask, v0, pool, mid, b)
            return
        found = np.flatnonzero(mask[a:b])  # survivors, by query then by id
        for s in range(0, found.size, batch):
            r, c = np.divmod(found[s:s + batch], S.shape[1])
            pool.add(r + a, c + v0, S[a:b].ravel()[found[s:s + batch]], self.eps, self._settle)

    def _scores(self, ids: np.ndarray, out: np.ndarray | None = None,
                rows_buf: np.ndarray | None = None) -> np.ndarray:
        """GEMM scores of the queries against rows ``ids`` (s,), ascending -> (m, s).

        A run of ids is sliced (a view); a sample is gathered. Rows scaled to
        unit length (cosine) or to the GEMM's dtype go to ``rows_buf`` (s, D)
        where given: a fresh array per block would cost a page fault per 4 KiB.
        The query's own id, where it is among them, scores -inf.
        """
        run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == ids.size else ids
        rows = self.W[run]  # (s, D)
        scaled = None if rows_buf is None else rows_buf[:len(ids)]
        if self.inv_norms is not None:  # unit rows; zero rows stay 0
            rows = np.multiply(rows, self.inv_norms[run, None], out=scaled, dtype=self.dtype)
        elif rows.dtype != self.dtype and scaled is not None:  # float16 rows: the GEMM runs in float32
            np.copyto(scaled, rows)
            rows = scaled
        elif rows.dtype != self.dtype:
            rows = rows.astype(self.dtype)
        with np.errstate(over="ignore"):  # only a query's own row can overflow (_check_dot_range): set to -inf
            S = np.matmul(self.queries, rows.T, out=out)  # (m, s)
        if self.exclude is not None:
            at = np.minimum(np.searchsorted(ids, self.exclude), ids.size - 1)  # (m,)
            own = np.flatnonzero(ids[at] == self.exclude)
            S[own, at[own]] = -np.inf
        return S

    def _settle(self, i: int, cand: np.ndarray) -> np.ndarray:
        """The exact top-k ids of one query's candidates (c,), taken in chunks."""
        top = cand[:0]
        step = max(1, self.plan.rescore - self.k)
        for s in range(0, cand.size, step):
            chunk = np.concatenate([top, cand[s:s + step]])[None, :]  # (1, c)
            top = self._exact_top_k(np.array([i]), chunk)[0][0]
        return top

    def _exact_top_k(self, qi: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by (-score, id) of candidates (h, L), -1 empty -> ids, scores (h, K)."""
        valid = cand >= 0
        if self.exclude is not None:  # a query by id never lists itself, whatever its screening score
            valid &= cand != self.exclude[qi][:, None]
        scores = np.full(cand.shape, -np.inf)
        scores[valid] = self._exact_scores(np.broadcast_to(qi[:, None], cand.shape)[valid], cand[valid])
        ids = np.where(valid, cand, len(self.W))  # an empty slot sorts last
        order = np.lexsort((ids, -scores), axis=-1)[:, :self.k]  # (h, K)
        return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)

    def _exact_scores(self, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Scores as the reference computes them, in float64: (r,) pairs -> (r,)."""
        rows = np.asarray(self.W[ids], dtype=np.float64)  # (r, D)
        queries = self.q64[qi]  # (r, D)
        q_norms, w_norms = self.q_norms[qi], self.row_norms[ids]  # (r,), (r,)
        out = np.zeros(len(ids))  # (r,)
        # Out-of-range pairs (inf / inf, 0 / 0) are measured again below.
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            dots = np.einsum("ij,ij->i", queries, rows)  # (r,)
            if self.metric == "dot":
                return dots
            both = q_norms * w_norms  # (r,)
            np.divide(dots, both, out=out, where=both > 0)
        # Lengths whose product leaves [1e-280, 1e300] (underflowing to 0.0
        # included) over- or underflow the dot product: the cosine does not
        # change with length, so take it of the unit vectors (as
        # ``embed.cosine`` rescales such vectors).
        nonzero = (q_norms > 0) & (w_norms > 0)
        odd = np.flatnonzero(nonzero & ((both < SQUARES_LOW) | (both > SQUARES_HIGH)))
        if odd.size:
            unit_q = queries[odd] / q_norms[odd, None]
            unit_w = rows[odd] / w_norms[odd, None]
            out[odd] = np.einsum("ij,ij->i", unit_q, unit_w)
        return np.clip(out, -1.0, 1.0, out=out)


class _Pool:
    """Candidates of m queries: ids and GEMM scores, best first, at most P each.

    Every row left out of a pool is beaten, in exact (-score, id) order, by k
    rows that stay in it, so the exact top-k of the pool is that of the rows
    it has seen.
    """

    def __init__(self, m: int, k: int) -> None:
        self.k = k
        P = _pool_slots(k)
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


def _pool_slots(k: int) -> int:
    """Candidates a pool keeps per query: k, and room for near-ties before they are settled exactly."""
    return 2 * k + 8


def _margin(metric: str, D: int, dtype: type, q_norms: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """A bound on |GEMM score - exact score| per query, shape (m,), float64.

    ``reach`` (m,) is the length of the longest row each query is scored
    against (its own id, left out, aside).

    A dot product of length D in floating point is off by at most
    ``D * u * sum|q_i w_i| <= D * u * |q| * |w|`` (u = eps / 2; Higham,
    Accuracy and Stability of Numerical Algorithms, 2002, section 3.1).
    Scaling rows and queries to unit length and rounding the float64 queries
    and the bar to the GEMM's dtype add a few u more; (D + 8) * eps covers it
    with room to spare. Cosine scores use unit vectors, so |q| |w| <= 1.
    """
    unit = (D + 8) * np.finfo(dtype).eps
    if metric == "cosine":
        return np.full(q_norms.shape, unit)
    return unit * q_norms * reach


def _plan_bytes(n: int, v: int, D: int, k: int, itemsize: int, batch: int, rescore: int) -> dict[str, int]:
    """Working memory of one worker with blocks (n, v), in bytes, by part (see ``plan_blocks``)."""
    P = _pool_slots(k)
    sample = n * v * 2 * itemsize  # the first bar: scores of at most v rows and a partition copy
    scan = n * v * (itemsize + 1) + 8 * v  # the score block and its mask; one query's survivors
    return {
        "block": max(sample, scan) + v * D * (itemsize + 8),  # and one block of scaled rows
        "queries": n * (D * (16 + itemsize) + P * 16 * 3 + 128),  # copies, pool, results
        "pool": (batch + min(batch, n) * P) * 120,  # survivors and the pools they join, sorted
        "rescore": rescore * (2 * D * 8 + 96),  # the gathered float64 rows and query rows
    }


def _workers(workers: int | None) -> int:
    if workers is None:
        if importlib.util.find_spec("threadpoolctl") is None:
            return 1  # without it each thread's GEMM would start BLAS threads of its own
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    return int(workers)


@contextlib.contextmanager
def _block_runner(workers: int) -> Iterator[Callable]:
    """``map`` over blocks of queries: here, or on ``workers`` threads with a one-thread GEMM each."""
    if workers == 1:
        yield map
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as threads:
        try:
            yield threads.map
        except BaseException:
            threads.shutdown(cancel_futures=True)  # an error in one block: do not start the rest
            raise


def _check(W: np.ndarray, Q: np.ndarray | None, k: int, metric: str, exclude: np.ndarray | None) -> tuple[int, int, int]:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}: expected one of {', '.join(METRICS)}")
    V, D = W.shape
    if Q is None and exclude is None:
        raise ValueError("give query vectors Q, or the query ids as exclude")
    if Q is not None and (Q.ndim != 2 or Q.shape[1] != D):
        raise ShapeError(f"queries have shape {Q.shape}, expected (N, D) with D={D}")
    N = len(exclude) if Q is None else Q.shape[0]
    if exclude is not None and (np.shape(exclude) != (N,) or (N and not 0 <= exclude.min() <= exclude.max() < V)):
        raise ShapeError(f"exclude must hold one id in [0, {V}) per query, got shape {np.shape(exclude)}")
    limit = V if exclude is None else V - 1
    if limit < 1:
        raise SizeError("a table with one row has no other token to list", parameter="k", value=k,
                        expected="a table of at least two rows (this one has V=1)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= limit:
        what = "V" if exclude is None else "V-1 (the query itself is left out)"
        raise SizeError(f"k={k!r} is out of range: expected 1 <= k <= {limit}", parameter="k", value=k,
                        expected=f"an int from 1 to {what} = {limit}")
    return N, V, D
