"""The bf16 screen: the products in bfloat16 on the CPU's matrix units, a certified margin, an exact rescoring.

A peer of ``float_screen``, ``int16_screen`` and ``torch_screen`` (which
``Bf16Screen`` extends: its scan, bar and survivors-only transfer already run
in torch); ``dispatch.search_block`` sends it a block of queries where the
plan says ``screen="bf16"`` (``capability`` chooses: AMX-BF16 or AVX512-BF16
and torch with oneDNN, a D and N where it wins) and a device is asked for or
none of embedlab's bf16 kernels runs here (else ``amx_screen``, no torch:
AMX tiles or AVX512-BF16, ``capability.bf16_kernel``).

1. *Screen.* Queries rounded to bfloat16 (cosine: the unit queries ``q / |q|``,
   or, where every query is a bfloat16 value already, as a row of a bf16
   checkpoint's table asked by id, the query as it is: no rounding), rows
   rounded to bfloat16 as they are (not scaled), and the product
   ``S = bf16(Q) @ bf16(W_blk).T  # (m, v)`` by torch's bfloat16 matmul on the
   CPU (oneDNN: AMX or AVX512-BF16 where present, software elsewhere; it sums
   in float32 and returns bfloat16). Cosine multiplies each column by
   ``float32(1 / |w|)`` (and, for queries as they are, each row by
   ``float32(1 / |q|)`` first, as the self-join ``bf16_join`` scores). Every
   score is then a float32.
2. *Filter.* Each screening score s~ is within ``A + r |s~|`` of the exact
   score x (``precision.bf16_value_margin``, derived there: A carries the
   inputs' rounding, ``(1 + u)**n - 1`` for the n sides rounded, 0, 1 or 2,
   and the float32 sum's ``gamma_D``, relative to ``|q| |w|``; r the
   rounding of the product to bfloat16, ``u = 2**-8`` of the score itself,
   and cosine's float32 scalings). Proof of the filter: ``f(s) = s + r |s|``
   is increasing (r < 1), and ``x <= f(s~) + A``. If k rows score at least T
   exactly (the first bar: k sampled rows scored in float64, less float64's
   margin; later: the pool's k-th float32 score less the float screen's
   margin), a row with ``s~ < f^-1(T - A)`` has ``x < T`` and is beaten by k
   others, strictly, so the tie rule never reaches it (``_bar_below``). Near
   the scores that decide a list, far below ``|q| |w|``, this is several
   times tighter than ``precision.bf16_margin`` (``3u |q| |w|``), which stays
   for a device (``TorchScreen``). The bar is float64; it is rounded DOWN to
   float32 (``bar32``), so that ``score >= bar32`` holds exactly where
   ``score >= bar`` does: the comparison loses nothing to rounding.
3. *Rescore.* The survivors are scored in float64 and ordered by
   ``(-score, id)`` (``rescore``), as on every screen: the answer is the
   float screen's, id for id and bit for bit.

The rows' bfloat16 copy (``bf16_rows``, V x D x 2 bytes, ``Bf16Rows``: it
knows whether the rounding was exact) is the table's resident cost where a
table caches it (``EmbeddingTable.bf16_rows``), like its int16 codes, and the
self-join reads the same copy; a plain array's rows are rounded a block at a time, in the
search's working memory (``plan.plan_bytes``). bfloat16 has float32's
exponent range, so the screen runs only where float32 does (every nonzero
length in [1e-15, 1e15], ``capability.choose_screen``).

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m``
queries in a block, ``v`` rows in a block, ``s`` sampled rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..bf16_matrix import Bf16Matrix
from ..lengths import length_range
from .amx_kernel import bf16_bits
from .bf16_join import bf16_exact, bits_tensor
from .plan import BlockPlan
from .pool import CandidatePool
from .precision import bf16_margin, bf16_value_margin, longest_other, margin, round_bf16
from .rescore import Rescorer
from .torch_screen import TorchScreen, import_torch

__all__ = ["Bf16Screen", "Bf16Rows", "bf16_rows", "bf16_exact_rows", "bar32", "ROWS_BLOCK"]

ROWS_BLOCK = 4096  # rows rounded to bfloat16 at a time by ``bf16_rows``, at most
BLOCK_BYTES = 1 << 20  # and at most this many bytes of them as float32 (each temporary of the rounding)


class Bf16Screen(TorchScreen):
    """``TorchScreen`` with bfloat16 products and the value-aware bf16 bound; rescoring unchanged (steps 1-3).

    Takes ``FloatScreen``'s arguments, ``rows`` (the table's bfloat16 rows,
    ``bf16_rows``: (V, D) uint16 holding bfloat16 bits, or None to round a
    block of rows at a time) and ``device`` (a ``torch.device``, the CPU by
    default). ``run(plan)`` returns ids (m, K) int64 and scores (m, K) float64.
    Where ``rows`` is None, whether the table holds bfloat16 values is checked
    here (one pass over it, ``bf16_exact_rows``).
    """

    def __init__(self, *args: Any, rows: np.ndarray | None = None, device: Any = None) -> None:
        torch = import_torch("bf16 screens")
        super().__init__(*args, device=torch.device("cpu") if device is None else device)
        W, q64, q_norms, D = self.W, self.q64, self.q_norms, self.W.shape[1]
        exact_q = _bf16_valued(q64)  # (m,) queries that bfloat16 holds as they are (rows of a bf16 table, by id)
        # Cosine on the CPU with every query exact: the query as it is, scaled by float32(1 / |q|) after the
        # product, as the self-join scores (no rounding of q / |q|); else the unit query, rounded once.
        self.raw = self.metric == "cosine" and self.device.type == "cpu" and bool(exact_q.all())
        unit = q64 / q_norms[:, None] if self.metric == "cosine" and not self.raw else q64  # (m, D) float64
        self.queries_t = _bf16_tensor(round_bf16(unit), self.device)  # (m, D) bfloat16: one rounding
        self.q_inv32 = (1 / q_norms).astype(np.float32) if self.raw else None  # (m,) float32(1 / |q|)
        self.inv_t = None if self.inv_norms is None else torch.tensor(
            self.inv_norms.astype(np.float32), device=self.device)  # (V,) float32(1 / |w|)
        self.rows_t = None if rows is None else bits_tensor(torch, rows).to(self.device)
        self._buf = None  # (v, D) float32: a block of rows on its way to bfloat16, reused
        self.eps32 = self.eps  # (m,) the float screen's margin: of a survivor's float32 score (``_pool_float32``)
        reach = self.row_norms[longest_other(self.row_norms, self.exclude, len(q_norms))]  # (m,)
        shortest = length_range(self.row_norms)[0]  # the shortest nonzero row: inf where there is none
        shortest = shortest if np.isfinite(shortest) else 1.0
        self.eps = bf16_margin(self.metric, D, q_norms, reach, shortest=shortest)  # (m,) on a device (``TorchScreen``)
        # The value-aware bound on the CPU (``_bar_below``): A + r |s~|, the rounding of each side counted once.
        exact_w = getattr(rows, "exact", None)
        exact_w = bf16_exact_rows(W) if exact_w is None else exact_w
        q_exact = exact_q if self.metric == "dot" or self.raw else np.zeros_like(exact_q)  # unit queries are rounded
        A_exact, self.r = bf16_value_margin(self.metric, D, q_norms, reach, shortest, exact_inputs=exact_w,
                                            exact_queries=True)
        A_round = bf16_value_margin(self.metric, D, q_norms, reach, shortest, exact_inputs=exact_w,
                                    exact_queries=False)[0]
        self.A = np.where(q_exact, A_exact, A_round)  # (m,)
        self.eps64 = margin(self.metric, W.shape[1], np.float64, q_norms, reach)  # (m,) of a float64 score
        self.rescorer = Rescorer(W, q64, q_norms, self.row_norms, self.metric, self.exclude, self.k)

    def _bar_below(self, T: np.ndarray) -> np.ndarray:
        """The screening bar (m,) float64 under which a row scores, exactly, below T (m,): ``f^-1(T - A)``.

        A screening score s~ is within ``A + r |s~|`` of the exact score x
        (``precision.bf16_value_margin``), so ``x <= f(s~) + A`` with ``f(s)
        = s + r |s|``, increasing (r < 1). Where ``s~ < f^-1(T - A)``, ``x <
        T``: a row below the bar is beaten by every row whose exact score is
        at least T. The bar is lowered by 2**-40 of its terms to cover its
        own float64 evaluation (a few roundings of 2**-53).
        """
        y = T - self.A  # (m,)
        with np.errstate(invalid="ignore"):  # T = -inf: the bar stays -inf
            bar = np.where(y >= 0, y / (1 + self.r), y / (1 - self.r))
            return bar - 2.0**-40 * (np.abs(T) + self.A)

    def _first_bar(self) -> np.ndarray:
        """A first bar from a block's worth of rows spread over the table, shape (m,).

        The bf16 margin is wide (about 0.023 for cosine), so a bar from a
        small sample lets hundreds of rows per query into the pool. Here
        ``plan.rows`` rows (as many as a block, ``plan.plan_bytes``) are
        screened, each query's k best of them scored in float64 (on the
        CPU), and the least of those exact scores, less one bf16 margin (and
        float64's), is the bar: k rows score at least that.
        """
        V, k = len(self.W), self.k
        sample = np.unique(np.linspace(0, V - 1, min(V, max(self.plan.sample, self.plan.rows))).astype(np.int64))
        S = self._device_scores(sample)  # (m, s) float32
        s = S.shape[1]
        if self.device.type != "cpu":
            kth = self.torch.kthvalue(S, s - k + 1, dim=1).values.cpu().numpy()
            return kth.astype(np.float64) - 2 * self.eps
        S = S.numpy()
        best = np.argpartition(S, s - k, axis=1)[:, s - k:]  # (m, k) each query's k best screening scores
        qi, ids = np.repeat(np.arange(len(S)), k), sample[best.ravel()]  # (m k,) pairs
        step = max(1, self.plan.rescore)
        exact = np.concatenate([self.rescorer.scores(qi[a:a + step], ids[a:a + step])
                                for a in range(0, qi.size, step)]).reshape(-1, k)  # (m, k) float64
        exact[np.take_along_axis(S, best, axis=1) == -np.inf] = -np.inf  # a query's own id is no witness
        return self._bar_below(exact.min(axis=1) - self.eps64)  # k rows score at least that

    def _scan(self, plan: BlockPlan) -> CandidatePool:
        """Screen every row, block by block, the filter in NumPy on the scores' memory (CPU); else on the device.

        On the CPU the product writes into a buffer made once, NumPy widens
        it to float32 (and scales it for cosine) in another (``_cpu_scores``),
        and each survivor is scored again in float32 at once, as the float
        screen scores it (``_pool_float32``): the pool holds scores within
        the float screen's margin, so near-ties within the wide bf16 margin
        do not crowd it, and its k-th best raises the bar by one bf16 margin
        and one float margin (not two bf16 margins). On another device,
        ``TorchScreen._scan``.
        """
        if self.device.type != "cpu":
            return super()._scan(plan)
        torch, k = self.torch, self.k
        m, V = len(self.queries), len(self.W)
        pool = CandidatePool(m, k)  # float32 scores: near-ties within the bf16 margin do not crowd it
        bar = self._first_bar()  # (m,)
        inv32 = None if self.inv_t is None else self.inv_t.numpy()  # (V,) float32
        product = torch.empty(m * plan.rows, dtype=torch.bfloat16)  # reused: (m, v) views of it
        scores = np.empty(m * plan.rows, dtype=np.float32)
        mask_buf = np.empty(m * plan.rows, dtype=bool)
        for v0 in range(0, V, plan.rows):
            v1 = min(V, v0 + plan.rows)
            S = scores[:m * (v1 - v0)].reshape(m, v1 - v0)  # (m, v) float32
            self._cpu_scores(v0, v1, product[:S.size].view(S.shape), S, inv32)
            # k pooled rows score at least the pool's k-th float32 score less the float margin: a row whose
            # screening score is below ``_bar_below`` of that is beaten by k others.
            bar = np.maximum(bar, self._bar_below(pool.scores[:, k - 1] - self.eps32))
            mask = np.greater_equal(S, bar32(bar)[:, None], out=mask_buf[:S.size].reshape(S.shape))
            self._pool_float32(mask, v0, pool, inv32)
        return pool

    def _pool_float32(self, mask: np.ndarray, v0: int, pool: CandidatePool, inv32: np.ndarray | None) -> None:
        """Score the marked entries of the block (m, v) again in float32, ``plan.rescore`` at a time; pool them.

        ``q . w`` of the float32 (unit) query and the row in float32, cosine
        times ``float32(1 / |w|)``: within the float screen's margin
        (``precision.margin``, ``eps32``) of the exact score, whatever the
        order of the sum, so the pool prunes as the float screen's does.
        """
        found = np.flatnonzero(mask)  # survivors, by query then by id
        step = max(1, self.plan.rescore)
        for s in range(0, found.size, step):
            r, c = np.divmod(found[s:s + step], mask.shape[1])
            c += v0
            rows = np.asarray(self.W[c], dtype=np.float32)  # (f, D)
            scores = np.einsum("ij,ij->i", self.queries[r], rows)  # (f,) float32
            if inv32 is not None:
                scores *= inv32[c]
            pool.add(r, c, scores, self.eps32, self._settle)

    def _cpu_scores(self, v0: int, v1: int, product: Any, S: np.ndarray, inv32: np.ndarray | None) -> None:
        """The scores of rows [v0, v1) into S (m, v) float32, through ``product`` (m, v) bfloat16 (CPU).

        As ``_device_scores``: a bfloat16's bits are the top half of the
        float32 of the same value, so the widening is a shift (exact).
        """
        torch = self.torch
        self.torch.matmul(self.queries_t, self._rows(slice(v0, v1), v1 - v0).T, out=product)  # (m, v) bfloat16
        bits = product.view(torch.int16).numpy().view(np.uint16)  # (m, v)
        np.left_shift(bits, 16, out=S.view(np.uint32), dtype=np.uint32)  # widened: exact
        if self.q_inv32 is not None:
            np.multiply(S, self.q_inv32[:, None], out=S)  # the query as it is: times float32(1 / |q|) first
        if inv32 is not None:
            np.multiply(S, inv32[v0:v1], out=S)  # float32(product) * float32(1 / |w|), rounded once
        if self.exclude is not None:
            own = np.flatnonzero((self.exclude >= v0) & (self.exclude < v1))
            S[own, self.exclude[own] - v0] = -np.inf

    def _bar_tensor(self, bar: np.ndarray) -> Any:
        """The bar (m,) float64 as float32 rounded down: a float32 score reaches one as it reaches the other."""
        return self.torch.tensor(bar32(bar), device=self.device)

    def _device_scores(self, ids: np.ndarray) -> Any:
        """Screening scores of the queries against rows ``ids`` (s,), ascending -> float32 tensor (m, s).

        ``bf16(q) . bf16(w)`` summed in float32 and returned in bfloat16 by
        the matmul, widened to float32 (exactly); cosine times the row's
        ``float32(1 / |w|)`` (zero rows stay 0), rounded once. The query's own
        id scores -inf.
        """
        torch = self.torch
        run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == ids.size else ids
        product = self.queries_t @ self._rows(run, ids.size).T  # (m, s) bfloat16
        S = product.float()  # widened: exact
        if self.q_inv32 is not None:  # the query as it is: times float32(1 / |q|) first, as ``_cpu_scores``
            S *= torch.from_numpy(self.q_inv32)[:, None]
        if self.inv_t is not None:  # float32(product) * float32(1 / |w|), rounded once
            S *= self.inv_t[run if isinstance(run, slice) else torch.as_tensor(ids, device=self.device)]
        return self._exclude_own(S, ids)

    def _rows(self, run: slice | np.ndarray, s: int) -> Any:
        """The rows ``run`` (s of them) in bfloat16, (s, D): a view of the cached rows, or rounded now."""
        if self.rows_t is not None:
            return self.rows_t[run] if isinstance(run, slice) else self.rows_t[self.torch.as_tensor(run)]
        rows = self.W[run]  # (s, D)
        if self._buf is None or len(self._buf) < s:
            self._buf = np.empty((max(s, self.plan.rows), rows.shape[1]), dtype=np.float32)
        buf = self._buf[:s]
        np.copyto(buf, round_bf16(rows) if rows.dtype == np.float64 else rows)  # exact: float16 widens,
        return _bf16_tensor(buf, self.device)  # float64 was rounded to 8 significant bits already


class Bf16Rows(np.ndarray):
    """A table's bfloat16 rows (V, D) uint16 (``bf16_rows``) that know whether the rounding was exact.

    ``exact`` is True where every entry of the table was a bfloat16 value
    already (a bf16 checkpoint's table widened to float32): the screens then
    count no input rounding for the rows (``precision.bf16_value_margin``).
    """

    exact: bool = False

    def __array_finalize__(self, obj: Any) -> None:
        self.exact = getattr(obj, "exact", False)


def bf16_rows(W: np.ndarray) -> Bf16Rows:
    """The table's rows rounded to bfloat16, as its bit patterns: (V, D) -> (V, D) uint16 (``Bf16Rows``).

    Each entry rounded to nearest, ties to even, once (float64 entries are
    rounded in float64 first, ``round_bf16``: no double rounding through
    float32), in NumPy (``amx_kernel.bf16_bits``: no torch). ``ROWS_BLOCK``
    rows at a time, at most ``BLOCK_BYTES`` of float32 (1 MiB), so it holds
    a few such temporaries beside the result;
    each block is compared with its rounding on the way (``exact``). A bf16
    checkpoint's table (``Bf16Matrix``) is its own bits: returned as they are
    (a view, exact). View it as ``torch.bfloat16``
    (``torch.from_numpy(rows).view(torch.bfloat16)``).

    >>> rows = bf16_rows(np.array([[1.0, 1 + 2**-8, 1 + 3 * 2**-8]], dtype=np.float32))  # ties to even
    >>> rows.tolist(), rows.exact, bf16_rows(np.array([[1.0, 0.5]])).exact
    ([[16256, 16256, 16258]], False, True)
    """
    if isinstance(W, Bf16Matrix):
        held = W.bits.view(Bf16Rows)
        held.exact = True
        return held
    V, D = W.shape
    out = np.empty((V, D), dtype=np.uint16)
    exact = True
    step = max(1, min(ROWS_BLOCK, BLOCK_BYTES // (4 * max(D, 1))))  # rows whose float32 fill BLOCK_BYTES
    for v0 in range(0, V, step):
        v1 = min(V, v0 + step)
        rows = np.asarray(W[v0:v1])  # (b, D)
        out[v0:v1] = bits = bf16_bits(rows)
        if exact:  # the rounding's float32, bits << 16, equal to every entry
            exact = bool(np.array_equal((bits.astype(np.uint32) << 16).view(np.float32), rows))
    result = out.view(Bf16Rows)
    result.exact = exact
    return result


def bf16_exact_rows(W: np.ndarray) -> bool:
    """Whether every entry of W (V, D) is a bfloat16 value, in blocks (``bf16_join.bf16_exact``)."""
    return bf16_exact(W)


def _bf16_valued(x: np.ndarray) -> np.ndarray:
    """Rows of x (m, D) float64 whose every entry bfloat16 holds as it is: (m,) bool."""
    return (round_bf16(np.asarray(x, dtype=np.float64)) == x).all(axis=1)



def bar32(bar: np.ndarray) -> np.ndarray:
    """float64 bars (m,) as the largest float32 at or below each: (m,) float32.

    For a float32 score s, ``s >= bar32(b)`` exactly when ``s >= b``.

    >>> bar32(np.array([1 + 2**-30, -(1 + 2**-30)])).tolist() == [1.0, -(1 + 2**-23)]
    True
    """
    down = bar.astype(np.float32)  # (m,) to nearest
    above = down.astype(np.float64) > bar
    down[above] = np.nextafter(down[above], np.float32(-np.inf))
    return down




def _bf16_tensor(x: np.ndarray, device: Any) -> Any:
    """A float32 or float64 array (..., D) as a bfloat16 tensor on ``device``: to nearest even, once."""
    torch = import_torch("bf16 screens")
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device=device, dtype=torch.bfloat16)

