"""The float screen: a GEMM scores a block of queries against every block of rows; survivors are rescored.

``FloatScreen`` takes nonzero queries (m, D) to their exact top-k, in the
three steps the front door's search makes for each block of queries
(``dispatch.search_block`` sends a block here, to ``int16_screen`` or to
``torch_screen``):

1. *Screen.* A GEMM in the plan's dtype (``precision.gemm_dtype``) scores the
   queries against one block of rows at a time: ``S = Q_blk @ W_blk.T  # (m, v)``.
2. *Filter.* Each query keeps a small pool of candidates (``pool``) and the
   k-th best GEMM score among them. Rounding moves a GEMM score by at most
   ``eps`` (``precision.margin``), so an entry more than ``2 * eps`` below that
   k-th best is beaten by k others in exact scores too: only the entries of
   ``S`` at or above the bar are looked at again.
3. *Rescore.* The pooled candidates are scored again in float64 as the
   reference scores them and ordered by ``(-score, id)`` (``rescore``).

``torch_screen.TorchScreen`` replaces steps 1-2 (``_first_bar``, ``_scan``)
with torch on a device; step 3 is shared. ``JointScreen`` runs steps 1-3 for
cosine and dot of the same queries on one float32 product per block of rows.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m`` nonzero
queries in a block, ``v`` rows in a block.
"""

from __future__ import annotations

import threading

import numpy as np

from ..bf16_matrix import Bf16Matrix
from .. import widened_product
from ..row_blocks import CORES, map_row_blocks
from ..widened_product import MOST_QUERIES
from .plan import BlockPlan
from .pool import CandidatePool
from .precision import longest_other, margin
from .rescore import Rescorer

__all__ = ["FloatScreen", "JointScreen", "WIDEN_CHUNK_BYTES"]

# Bytes of float32 rows a table kept as bfloat16 bits is widened into at a time before they are multiplied:
# in a core's L2 cache (measured: 64 rows of 4,096, 1 MiB, 0.8 ns a value widened and multiplied by 2
# queries; 1,024 rows, 3.3 ns).
WIDEN_CHUNK_BYTES = 1 << 20
_chunks = threading.local()  # each thread's chunk of widened rows, reused


class FloatScreen:
    """Nonzero queries (m, D) screened with a GEMM against every row of the table, then rescored (steps 1-3).

    ``run(plan)`` returns ids (m, K) int64 and scores (m, K) float64. The
    screen (``_first_bar``, ``_scan``) is what ``torch_screen.TorchScreen``
    replaces; the rescoring (``run``, ``_settle``) is shared.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
        The table.
    q64 : np.ndarray, shape (m, D), float64
        The nonzero queries.
    q_norms : np.ndarray, shape (m,), float64
        Their lengths (all > 0).
    exclude : np.ndarray, shape (m,), int64, or None
        Each query's own id, never listed.
    k : int
    metric : {"cosine", "dot"}
    row_norms : np.ndarray, shape (V,), float64
    inv_norms : np.ndarray, shape (V,), float64, or None
        ``1 / row_norms`` (0 for a zero row) for cosine; None for dot.
    dtype : type
        The GEMM's dtype, ``np.float32`` or ``np.float64`` (the plan's ``itemsize``).
    """

    def __init__(self, W, q64, q_norms, exclude, k, metric, row_norms, inv_norms, dtype):
        self.W, self.q64, self.q_norms, self.exclude = W, q64, q_norms, exclude
        self.k, self.metric, self.row_norms, self.inv_norms, self.dtype = k, metric, row_norms, inv_norms, dtype
        # Cosine: the scores scaled by 1 / |w| (m multiplies a row), not the rows (D a row), where that is fewer
        # multiplies and the GEMM is float32 (_scores; benchmarks/README.md, "Cosine's row rescaling").
        self.scale_after = inv_norms is not None and dtype == np.float32 and len(q64) < W.shape[1]
        unit = q64 / q_norms[:, None] if metric == "cosine" else q64
        self.queries = unit.astype(dtype)  # (m, D) what the GEMM sees
        reach = row_norms[longest_other(row_norms, exclude, len(q_norms))]  # (m,) the longest row each may meet
        self.eps = margin(metric, W.shape[1], dtype, q_norms, reach)  # (m,)
        self._exact_top_k = Rescorer(W, q64, q_norms, row_norms, metric, exclude, k).top_k

    def run(self, plan: BlockPlan) -> tuple[np.ndarray, np.ndarray]:
        self.plan = plan
        return self._rescore(self._scan(plan), plan)

    def _rescore(self, pool: CandidatePool, plan: BlockPlan) -> tuple[np.ndarray, np.ndarray]:
        """Step 3: the pooled candidates scored in float64, ``plan.rescore`` entries at a time: ids (m, K) int64
        and scores (m, K) float64, ordered by ``(-score, id)``."""
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

    def _scan(self, plan: BlockPlan) -> CandidatePool:
        """Screen every row, block by block; return the pooled candidates."""
        m, V = len(self.queries), len(self.W)
        pool = CandidatePool(m, self.k)
        bar = self._first_bar()  # (m,)
        S_buf = np.empty(m * plan.rows, dtype=self.dtype)  # reused: (m, v) views of it
        mask_buf = np.empty(m * plan.rows, dtype=bool)
        copies = self.W.dtype != self.dtype or (self.inv_norms is not None and not self.scale_after)
        rows_buf = (np.empty((plan.rows, self.W.shape[1]), dtype=self.dtype) if copies
                    else None)  # (v, D) rows scaled or converted, reused; none where the GEMM reads W as it is
        for v0 in range(0, V, plan.rows):
            v1 = min(V, v0 + plan.rows)
            S = self._scores(np.arange(v0, v1), out=S_buf[:m * (v1 - v0)].reshape(v1 - v0, m),
                             rows_buf=rows_buf)  # (m, v) a view of the (v, m) product
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
            pool.add(r + a, c + v0, S[r + a, c], self.eps, self._settle)  # S may be a transposed view

    def _scores(self, ids: np.ndarray, out: np.ndarray | None = None,
                rows_buf: np.ndarray | None = None, scale: bool = True) -> np.ndarray:
        """GEMM scores of the queries against rows ``ids`` (s,), ascending -> (m, s).

        ``out`` (s, m), C-contiguous, receives the product ``rows @ queries.T``;
        the scores returned are its transposed view. A run of ids is sliced
        (a view); a sample is gathered. A float32 GEMM of fewer queries than
        D reads the table's rows as they are: cosine scores ``dot(q / |q|, w)``
        and multiplies each column by ``1 / |w|`` afterwards (``scale_after``:
        m x s multiplies, not a scaled copy of s x D rows). Otherwise the rows
        are scaled to unit length first: with m >= D that is fewer multiplies,
        and float64 tables may hold rows so short (lengths near 1e-308) that
        their products with a unit query lose relative precision in float64's
        subnormals. Rows scaled, or of
        another dtype than the GEMM's (float16 rows), go to ``rows_buf`` (s, D)
        where given: a fresh array per block would cost a page fault per 4 KiB.
        The query's own id, where it is among them, scores -inf.
        ``scale=False`` leaves the product of ``scale_after`` unscaled
        (``JointScreen`` pools it for dot first).

        Why ``precision.margin`` bounds the float32 cosine score (u = 2**-24,
        gamma_D = D u / (1 - D u); Higham 2002, section 3.1):
        the query is rounded to the GEMM's dtype, q' = q/|q| (1 + d) with
        |d| <= u entrywise, so ``|q'.w - q.w/|q|| <= u |w|``; the GEMM's sum, in
        any order, is off by at most ``gamma_D sum|q'_i w_i| <= gamma_D (1 + u) |w|``;
        the product with ``1 / |w|`` (a float64 value, relative error 2**-53) is
        rounded once to the GEMM's dtype (u relative). Divided by |w|, the
        score is off by at most ``(D + 3) u`` to first order, within the
        margin's ``(D + 8) eps = (2 D + 16) u``. Where products underflow (the
        GEMM runs in float32 only for lengths in [1e-15, 1e15],
        ``precision.gemm_dtype``), each loses at most 2**-150 absolute, at
        most ``D 2**-150 / 1e-15`` after the division: far below u. A zero row
        scores ``0 * 0 = 0``, as the reference's cosine of a zero vector.
        """
        run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == ids.size else ids
        scaled = None if rows_buf is None else rows_buf[:len(ids)]
        narrow = isinstance(self.W, Bf16Matrix) or self.W.dtype == np.float16  # 2 bytes an entry: widened in cache
        if narrow and isinstance(run, slice) and out is not None and self.dtype == np.float32:
            S = self._widened_product(run, out).T  # (m, s) a bf16 or float16 table's rows widened as multiplied
        else:
            rows = self.W[run]  # (s, D)
            if self.inv_norms is not None and not self.scale_after:  # a float64 GEMM: unit rows; zero rows stay 0
                rows = np.multiply(rows, self.inv_norms[run, None], out=scaled, dtype=self.dtype)
            elif rows.dtype != self.dtype and scaled is not None:  # float16 rows: the GEMM runs in float32
                np.copyto(scaled, rows)
                rows = scaled
            elif rows.dtype != self.dtype:
                rows = rows.astype(self.dtype)
            # Only a query's own row can overflow (precision.check_dot_range): it is set to -inf below.
            # rows @ queries.T, not queries @ rows.T: for a few queries OpenBLAS runs the (s, D) x (D, m)
            # product about twice as fast (measured: 2 to 128 queries, D = 4,096); its rounding differs, within
            # the margin, which holds for any order of summation.
            with np.errstate(over="ignore"):
                S = np.matmul(rows, self.queries.T, out=out).T  # (m, s) a view of the (s, m) product
        if self.scale_after and scale:  # float32 cosine: each column times 1 / |w| (0 for a zero row), rounded once
            np.multiply(S, self.inv_norms[run], out=S, casting="unsafe")
        if self.exclude is not None:
            at = np.minimum(np.searchsorted(ids, self.exclude), ids.size - 1)  # (m,)
            own = np.flatnonzero(ids[at] == self.exclude)
            S[own, at[own]] = -np.inf
        return S

    def _widened_product(self, run: slice, out: np.ndarray) -> np.ndarray:
        """``rows @ queries.T`` (s, m) into ``out`` for rows ``run`` of a table kept as bfloat16 bits
        (``bf16_matrix.Bf16Matrix``) or as float16 (an F16 tensor's map), ``WIDEN_CHUNK_BYTES`` of float32 rows
        at a time: each chunk is widened
        into a buffer of its thread's, scaled to unit length where the GEMM scales the rows (as ``_scores``
        does, in the GEMM's dtype), and multiplied while it is in the core's cache (widening a whole block
        first cost about 4 times as much here: the block leaves the cache before the product reads it).
        Where the plan runs one worker, the chunks run on every core (``row_blocks``): a few queries pass
        over the table once, not once per core. The values multiplied are the widened table's, bit for bit;
        only the product's order of summation may differ, which the margin covers. Holds one chunk
        (``WIDEN_CHUNK_BYTES``) per thread. Up to ``widened_product.MOST_QUERIES`` queries, where the rows are
        multiplied as they are (not scaled first), each share is one call of the compiled loop
        (``widened_product``: the entries widened in registers, no buffer, the GIL let go), where it is compiled
        for the table's dtype."""
        D, s = self.W.shape[1], run.stop - run.start
        step = max(1, WIDEN_CHUNK_BYTES // (4 * D))  # rows of a chunk
        kept = self.W.bits if isinstance(self.W, Bf16Matrix) else self.W  # (V, D) uint16 bits or float16
        in_loop = (len(self.queries) <= MOST_QUERIES and (self.inv_norms is None or self.scale_after)
                   and widened_product.compiled(kept.dtype))  # rows multiplied as they are, few queries

        def share(a: int, b: int) -> None:  # one thread's share of the block: its chunks in order
            if in_loop:  # the entries widened in registers, every query multiplied while the row is in L1
                widened_product.widened_product(kept[run.start + a:run.start + b], self.queries, out[a:b])
                return
            buf = getattr(_chunks, "rows", None)
            if buf is None or buf.shape != (step, D):
                buf = _chunks.rows = np.empty((step, D), dtype=np.float32)
            for c0 in range(a, b, step):
                c1 = min(b, c0 + step)
                part = slice(run.start + c0, run.start + c1)
                rows = buf[:c1 - c0]  # (c, D) float32, widened exactly
                if kept is self.W:
                    np.copyto(rows, kept[part])
                else:
                    self.W.widen_into(part, rows)
                if self.inv_norms is not None and not self.scale_after:  # unit rows; zero rows stay 0
                    np.multiply(rows, self.inv_norms[part, None], out=rows, dtype=self.dtype)
                with np.errstate(over="ignore"):  # only a query's own row can overflow: set to -inf by the caller
                    np.matmul(rows, self.queries.T, out=out[c0:c1])

        threads = CORES if self.plan.workers == 1 else 1
        map_row_blocks(share, s, -(-s // threads), parallel=threads > 1)  # one share per core
        return out

    def _settle(self, i: int, cand: np.ndarray) -> np.ndarray:
        """The exact top-k ids of one query's candidates (c,), taken in chunks."""
        top = cand[:0]
        step = max(1, self.plan.rescore - self.k)
        for s in range(0, cand.size, step):
            chunk = np.concatenate([top, cand[s:s + step]])[None, :]  # (1, c)
            top = self._exact_top_k(np.array([i]), chunk)[0][0]
        return top


class JointScreen:
    """Cosine and dot for the same nonzero queries (m, D) from one float32 product per block of rows.

    ``run(plan)`` returns ``{"cosine": (ids, scores), "dot": (ids, scores)}``,
    each (m, K) int64 and float64, list for list what two ``FloatScreen``
    runs give (the rescoring decides both; the screen only finds candidates).
    It runs where both metrics are planned on the float screen in float32 and
    cosine scales after the product (m < D, ``FloatScreen.scale_after``):

    - the product is cosine's, ``P = W_blk @ (q / |q|).T  # (v, m)``, read
      from the table as it is;
    - dot pools ``P`` first: ``dot(q, w) = |q| dot(q / |q|, w)``, and a
      positive factor per query ranks a query's rows alike, so dot's screen
      score is ``P`` and its bound ``precision.margin("dot", ...) / |q|``:
      ``P`` is off by at most ``(D + 2) u |w|`` (the derivation in
      ``FloatScreen._scores``, without the last scaling), within
      ``(D + 8) eps |w| <= margin / |q|`` for every row the query meets;
    - then ``P`` times ``1 / |w|`` in place is cosine's score, the same
      arithmetic as ``FloatScreen``'s, pooled with cosine's bound.

    Parameters are ``FloatScreen``'s but ``metric`` and ``inv_norms``, which
    is cosine's ``1 / row_norms`` (V,) float64 (0 for a zero row).
    """

    def __init__(self, W, q64, q_norms, exclude, k, row_norms, inv_norms):
        self.cos = FloatScreen(W, q64, q_norms, exclude, k, "cosine", row_norms, inv_norms, np.float32)
        if not self.cos.scale_after:
            raise ValueError(f"the joint screen scales after the product: m={len(q64)} queries must be fewer than D")
        self.dot = FloatScreen(W, q64, q_norms, exclude, k, "dot", row_norms, None, np.float32)
        self.dot.queries = self.cos.queries  # (m, D) float32, the unit queries: one product serves both
        self.dot.eps = self.dot.eps / q_norms  # (m,) the bound of dot(q, w) / |q|
        self.screens = {"cosine": self.cos, "dot": self.dot}

    def run(self, plan: BlockPlan) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        pools = self._scan(plan)
        return {metric: screen._rescore(pools[metric], plan) for metric, screen in self.screens.items()}

    def _scan(self, plan: BlockPlan) -> dict[str, CandidatePool]:
        """Screen every row once for both metrics, block by block (``FloatScreen._scan``, twice over one product)."""
        cos, dot = self.cos, self.dot
        m, V, k = len(cos.queries), len(cos.W), cos.k
        cos.plan = dot.plan = plan
        pools = {"cosine": CandidatePool(m, k), "dot": CandidatePool(m, k)}
        bars = {"cosine": cos._first_bar(), "dot": dot._first_bar()}  # (m,) each, from the same strided sample
        S_buf = np.empty(m * plan.rows, dtype=np.float32)  # reused: (m, v) views of it
        mask_buf = np.empty(m * plan.rows, dtype=bool)
        rows_buf = np.empty((plan.rows, cos.W.shape[1]), dtype=np.float32) if cos.W.dtype != np.float32 else None
        for v0 in range(0, V, plan.rows):
            v1 = min(V, v0 + plan.rows)
            S = cos._scores(np.arange(v0, v1), out=S_buf[:m * (v1 - v0)].reshape(v1 - v0, m), rows_buf=rows_buf,
                            scale=False)  # (m, v) dot(q / |q|, w), the own id at -inf
            for metric in ("dot", "cosine"):  # dot reads the product as it is; cosine scales it in place after
                screen, pool = self.screens[metric], pools[metric]
                if metric == "cosine":  # as FloatScreen._scores; a zero own row's -inf * 0 is NaN, never marked
                    with np.errstate(invalid="ignore"):
                        np.multiply(S, cos.inv_norms[v0:v1], out=S, casting="unsafe")
                bars[metric] = np.maximum(bars[metric], pool.scores[:, k - 1] - 2 * screen.eps)
                mask = np.greater_equal(S, bars[metric].astype(np.float32)[:, None],
                                        out=mask_buf[:S.size].reshape(S.shape))
                screen._pool_marked(S, mask, v0, pool, 0, m)
        return pools
