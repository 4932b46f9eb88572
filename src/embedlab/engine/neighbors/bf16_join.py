"""The self-join on bfloat16 products: every row's k nearest on the CPU's matrix units (AMX, AVX512-BF16).

``self_join`` scores each block pair of W W^T once and feeds both sides;
here the pair is scored by torch's bfloat16 matmul, which oneDNN runs on
AMX tiles or AVX512-BF16 where the CPU has them (``capability.fast_bf16``)
and in software elsewhere (slow, but the same arithmetic: the tests run it
on any CPU):

    S_ij = bf16(W_i) @ bf16(W_j).T        # (b, b) bfloat16, rows rounded as they are
    dot:    S_ij                         # as it is
    cosine: S_ij * r_i[:, None] * r_j     # r = float32(1 / |w|), in float32

The rows are not scaled before rounding, so the same bfloat16 table serves
both metrics, and a bf16 checkpoint's table (float32 holding bfloat16
values) is rounded exactly. The block is filtered against each query's bar,
both sides (S_ij for block i's queries, its transpose for block j's), in
one compiled pass over the tensor's memory in place (``bf16_filter``; with
torch's ops where numba is missing); only the survivors leave it, to the
pools and the float64 rescoring that ``self_join`` runs unchanged. So the
lists are the float self-join's, id for id and score for score. Where both
metrics are asked, ``joint_blocks`` runs both scans on one product per pair.

The bar is certified with ``precision.bf16_value_margin``: a screening score
s~ is within ``A + r |s~|`` of the exact one, so with ``eps(t) = (A + r |t|) /
(1 - 2 r)`` a row whose score is below ``t - 2 eps(t)`` loses, exactly, to
every row scored t. The pools prune by the same rule, with eps taken at the
largest |score| they hold after the merge (eps only grows with |t|, so a
larger one is safe). The bound's last term, the rounding of the product to
bfloat16, is measured on the score rather than on |q| |w|
(``precision.bf16_margin``'s, 0.0117 relative for cosine): on a random
128,256 x 4,096 table, where a query's 10th best cosine is about 0.07, that
is 2**-8 * 0.07 plus gamma_D = 2.4e-4, 20 times tighter, and about k + a few
rows per query pass the filter instead of hundreds.

One Python thread runs the pairs; torch's matmul uses the plan's
``workers`` threads (torch's setting restored after each block of queries),
and the filter splits each block's rows over as many.

Which tables: ``every_row.choose_method`` takes this where the CPU has the
units and the table holds bfloat16 values; for float32 rows the input
rounding adds ``(2u + u^2) |q| |w|`` to the bound and the int16 screen
stays faster (benchmarks/README.md, ``hubs_llm.py``).

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``b`` rows in a block.
"""

from __future__ import annotations

import contextlib
import importlib.util
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator

import numpy as np

from .plan import PairPlan
from .precision import bf16_value_margin, longest_other, round_bf16
from .self_join import ListBlock, SelfJoin
from .torch_screen import import_torch

__all__ = ["Bf16SelfJoin", "joint_blocks", "share_products", "bf16_exact"]

_CHECK_ROWS = 4096  # rows checked for bfloat16 values (``bf16_exact``) at a time


class Bf16SelfJoin(SelfJoin):
    """``SelfJoin`` whose block pairs are scored by torch's bfloat16 matmul (module docstring).

    Parameters are ``self_join``'s; ``plan.screen`` is ``"bf16"``. ``rows``:
    the table's cached bfloat16 rows (``EmbeddingTable.bf16_rows``, (V, D)
    uint16, ``bf16_screen.Bf16Rows``) where it has them: read as they are,
    so no second copy is made, and their ``exact`` flag spares the check.
    """

    def __init__(self, W: np.ndarray, k: int, metric: str, row_norms: np.ndarray, plan: PairPlan, *,
                 share: "Bf16SelfJoin | None" = None, rows: np.ndarray | None = None) -> None:
        super().__init__(W, k, metric, row_norms, np.float32, plan)
        torch = self.torch = import_torch("the bfloat16 self-join (screen='bf16')")
        V, D = W.shape
        self.threads, self.pair_workers = plan.workers, 1  # torch's threads; one Python thread scores the pairs
        self.products: _Products | None = None  # the block pairs' products, shared with another metric's scan
        with self._torch_threads():
            if share is not None:  # another metric's scan of the same table: its check and its bfloat16 table
                exact, self.table = share.exact_inputs, share.table
            elif rows is not None:  # the table's own bfloat16 rows: one copy, the table's (counted in its resident cost)
                exact = rows.exact if hasattr(rows, "exact") else bf16_exact(W, torch)
                self.table = bits_tensor(torch, rows)  # (V, D) the same memory
            else:
                exact = bf16_exact(W, torch)
                self.table = self._convert(slice(0, V)) if plan.whole else None  # (V, D) bfloat16, or per block
        reach = row_norms[longest_other(row_norms, np.arange(V), V)]  # (V,) the longest row each may meet
        nonzero = row_norms[row_norms > 0]
        shortest = float(nonzero.min()) if nonzero.size else 1.0
        self.A, self.r = bf16_value_margin(metric, D, row_norms, reach, shortest, exact_inputs=exact)  # (V,), float
        self.exact_inputs = exact
        self.inv32 = None if self.inv_norms is None else self.inv_norms.astype(np.float32)  # (V,) r = float32(1 / |w|)
        self.inv_t = None if self.inv32 is None else torch.from_numpy(self.inv32)  # (V,) the same, to torch
        self.kernel = _kernel()  # the compiled filter, or None: torch's ops
        self.block_i: tuple[int, Any] = (-1, None)  # the query block's rows in bfloat16, kept for its step

    def run(self, progress: Callable[[int], None] | None) -> Iterator[ListBlock]:
        blocks = super().run(progress)
        while True:
            with self._torch_threads():  # torch's threads for this block of queries, the caller's between
                try:
                    block = next(blocks)
                except StopIteration:
                    return
            yield block

    # -- the margins: A + r |t|, at the k-th best score t ----------------------------------

    def _margin(self, at: slice, kth: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):  # an empty pool: kth = -inf, eps = inf, bar -inf
            return (self.A[at] + self.r * np.abs(kth)) / (1 - 2 * self.r)

    def _pool_margin(self, qi: np.ndarray, approx: np.ndarray) -> np.ndarray:
        """Margins (V,) for a merge: each query's eps at the largest |score| it holds or gains, which bounds its new k-th best."""
        hit, start = np.unique(qi, return_index=True)  # qi sorted by query
        held = self.pool.scores[hit]  # (h, P) -inf in empty slots
        largest = np.maximum(np.abs(np.where(np.isfinite(held), held, 0.0)).max(axis=1),
                             np.maximum.reduceat(np.abs(approx), start))  # (h,)
        eps = np.zeros(len(self.W))  # (V,) only the merged queries' entries are read
        eps[hit] = (self.A[hit] + self.r * largest) / (1 - 2 * self.r)
        return eps

    # -- the products and the filter, in torch ----------------------------------------------

    def _sample_kth(self, start: int, stop: int, sample: np.ndarray) -> np.ndarray:
        torch = self.torch
        rows = self._bf16(sample)  # (s, D)
        inv = None if self.inv_t is None else self.inv_t[start:stop]
        S = self._scaled(self._block(start, stop) @ rows.T, inv, sample)  # (n, s)
        own = np.flatnonzero((sample >= start) & (sample < stop))
        S[torch.from_numpy(sample[own] - start), torch.from_numpy(own)] = -np.inf
        S = S.float().numpy()  # (n, s) exact
        return np.partition(S, S.shape[1] - self.k, axis=1)[:, S.shape[1] - self.k].astype(np.float64)

    def _survivors(self, a: int, b: int, c: int, d: int, bar_i: np.ndarray,
                   bar_j: np.ndarray | None) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """As ``SelfJoin._survivors``: S_ij by torch's bfloat16 matmul, both sides filtered in one pass.

        The pass is ``bf16_filter.filter_block`` (numba) over the block's
        bits in place; without numba, torch's ops (``_side``).
        """
        S = self._product(a, b, c, d)  # (n_i, n_j) bfloat16
        if self.kernel is None:
            yield from self._side(0, S, bar_i, slice(a, b), slice(c, d))
            if bar_j is not None:  # the transpose: block j's queries, rows of block i as candidates
                yield from self._side(1, S.T, bar_j, slice(c, d), slice(a, b))
            return
        bits = S.view(self.torch.int16).numpy().view(np.uint16)  # (n_i, n_j) the block's memory, not a copy
        empty = np.empty(0, dtype=np.float32)
        row_inv, col_inv = (empty, empty) if self.inv32 is None else (self.inv32[a:b], self.inv32[c:d])
        bar_col = np.full(d - c, np.inf, dtype=np.float32) if bar_j is None else _down32(bar_j)
        bar_row = _down32(bar_i)
        n = b - a
        cuts = [n * t // self.threads for t in range(self.threads + 1)]  # rows of the block per thread

        def part(t: int) -> list[tuple[np.ndarray, ...]]:
            lo, hi = cuts[t], cuts[t + 1]
            out = _buffers(max(self.plan.batch, d - c))
            found, start = [], 0
            while start < hi - lo:
                count, start = self.kernel(bits[lo:hi], row_inv[lo:hi] if row_inv.size else empty, col_inv,
                                           bar_row[lo:hi], bar_col, start, *out)
                found.append((out[0][:count] + lo, out[1][:count].copy(), out[2][:count].copy(),
                              out[3][:count].copy()))
            return found

        if self.threads == 1:
            parts = [part(0)]
        else:  # the compiled pass releases the GIL: the block's rows split over the threads
            with ThreadPoolExecutor(self.threads) as threads:
                parts = list(threads.map(part, range(self.threads)))
        for r, cc, approx, side in (chunk for found in parts for chunk in found):
            for bit, one in ((1, 0), (2, 1)):
                keep = (side & bit) > 0
                if keep.any():
                    yield one, r[keep], cc[keep], approx[keep].astype(np.float64)

    def _product(self, a: int, b: int, c: int, d: int) -> Any:
        """S_ij = bf16(W[a:b]) @ bf16(W[c:d]).T (n_i, n_j) bfloat16, its diagonal -inf where a == c; shared where set."""
        def compute() -> Any:
            S = self._block(a, b) @ self._bf16(slice(c, d)).T  # (n_i, n_j)
            if a == c:
                S.fill_diagonal_(-np.inf)  # a query never lists itself
            return S

        return compute() if self.products is None else self.products.get((a, c), compute)

    def _side(self, side: int, S: Any, bar: np.ndarray, rows: slice, cols: slice
              ) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Survivors of one side of a block: S (n, m) with its queries as rows -> (side, r, c, approx), r and c as in S_ij."""
        torch = self.torch
        bar_t = torch.from_numpy(_down32(bar))  # (n,) rounded down: a bar never rises by its rounding
        top = S.amax(dim=1)  # (n,) bfloat16, exact
        if self.inv_t is not None:  # the bound of each row's scaled scores (docstring of _survivors)
            top = top.float().clamp_(min=0).mul_(self.inv_t[rows]).mul_(self.inv_t[cols].max())
        hit = torch.nonzero(top >= bar_t).flatten()  # (h,) rows that may hold a survivor
        if not hit.numel():
            return
        C = self._scaled(S[hit], self.inv_t[rows][hit] if self.inv_t is not None else None, cols)  # (h, m)
        r, cc = torch.nonzero(C >= bar_t[hit, None], as_tuple=True)  # by row, then column
        approx = C[r, cc].double().numpy()  # (f,) only the survivors leave torch
        r, cc = hit[r].numpy(), cc.numpy()
        if side == 1:
            r, cc = cc, r  # back to S_ij's (row of block i, column of block j)
        for s in range(0, r.size, max(1, self.plan.batch)):
            yield side, r[s:s + self.plan.batch], cc[s:s + self.plan.batch], approx[s:s + self.plan.batch]

    def _scaled(self, S: Any, inv_rows: Any, cols: slice | np.ndarray) -> Any:
        """Products (n, m) as the screen scores them: bfloat16 for dot; for cosine, in float32, times r_i then r_j."""
        if self.inv_t is None:
            return S
        cols_t = self.inv_t[cols] if isinstance(cols, slice) else self.inv_t[self.torch.from_numpy(cols)]
        C = S.float()  # (n, m) exact: every bfloat16 is a float32
        C.mul_(inv_rows[:, None])
        return C.mul_(cols_t[None, :])

    def _block(self, start: int, stop: int) -> Any:
        """The query block's rows in bfloat16, converted once for its step (each block pair of the step reads them)."""
        if self.block_i[0] != start:
            self.block_i = (start, self._bf16(slice(start, stop)))
        return self.block_i[1]

    def _bf16(self, at: slice | np.ndarray) -> Any:
        """Rows ``W[at]`` rounded to bfloat16 as they are: (n, D), from the whole table where the plan made it."""
        if self.table is not None:
            return self.table[at] if isinstance(at, slice) else self.table[self.torch.from_numpy(at)]
        return self._convert(at)

    def _convert(self, at: slice | np.ndarray) -> Any:
        """``W[at]`` (n, D) to bfloat16 in torch, one rounding (a view where W is float32 and ``at`` a slice).

        float64 rows are rounded to bfloat16's 8 bits first (``precision.round_bf16``), so that their
        float32 copy is exact and torch's conversion keeps them: float64 -> float32 -> bfloat16 would
        round twice, beyond the bound's one rounding (``precision.bf16_value_margin``).
        """
        rows = np.asarray(round_bf16(np.asarray(self.W[at])), dtype=np.float32)  # (n, D)
        return _tensor(self.torch, rows).to(self.torch.bfloat16)

    @contextlib.contextmanager
    def _torch_threads(self) -> Iterator[None]:
        torch = self.torch
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)


class _Products:
    """One block pair's product for several scans that take the pairs in the same order: made by the first, dropped after the last."""

    def __init__(self, users: int) -> None:
        self.users = users
        self.key: tuple[int, int] | None = None
        self.S: Any = None
        self.left = 0

    def get(self, key: tuple[int, int], compute: Callable[[], Any]) -> Any:
        if self.key != key:
            self.key, self.S, self.left = key, compute(), self.users
        S = self.S
        self.left -= 1
        if self.left == 0:
            self.key, self.S = None, None
        return S


def joint_blocks(W: np.ndarray, k: int, plans: dict[str, PairPlan], row_norms: np.ndarray,
                 rows: np.ndarray | None = None) -> Iterator[dict[str, ListBlock]]:
    """Every row's lists under several metrics from ONE bfloat16 product per block pair: {metric: block} in row order.

    The products do not depend on the metric (rows are rounded as they are;
    cosine scales the product afterwards), so the scans of ``plans``'
    metrics (each a bf16 plan with the same block) take the pairs in
    lockstep and share each product and the bfloat16 table: the matmuls of
    one scan, the filters, pools and rescoring of each. The blocks are each
    metric's ``join_blocks`` blocks, id for id and score for score. ``rows``:
    the table's cached bfloat16 rows where it has them (``Bf16SelfJoin``).
    """
    first, *rest = plans
    scans = [Bf16SelfJoin(W, k, first, row_norms, plans[first], rows=rows)]
    scans += [Bf16SelfJoin(W, k, m, row_norms, plans[m], share=scans[0]) for m in rest]
    share_products(scans)
    lead = scans[0]
    with lead._torch_threads():
        for scan in scans:
            scan.bar = scan._first_bars()  # (V,)
    nb = len(lead.edges) - 1
    for i in range(nb):
        with lead._torch_threads():  # torch's threads for this block of queries, the caller's between
            for scan in scans:
                scan.found = []
            for j in range(i, nb):
                for scan in scans:
                    scan._pair(i, j)
            out = {scan.metric: scan._close(i, None) for scan in scans}
        yield out


def share_products(scans: list[Bf16SelfJoin]) -> None:
    """Let several bf16 scans of one table, taking the block pairs in lockstep, compute each pair's product once."""
    if len(scans) > 1:
        products = _Products(len(scans))
        for scan in scans:
            scan.products = products


def bits_tensor(torch: Any, rows: np.ndarray) -> Any:
    """The bfloat16 rows (V, D) uint16 as a ``torch.bfloat16`` tensor on the same memory, never written.

    A bf16 checkpoint's table is kept read-only (``bf16_matrix.Bf16Matrix``);
    torch warns of every read-only array it wraps, though the screens and the
    self-join only read the rows.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        return torch.from_numpy(np.asarray(rows)).view(torch.bfloat16)


def bf16_exact(W: np.ndarray, torch: Any = None) -> bool:
    """Whether every entry of W (V, D) is a bfloat16 value (a bf16 checkpoint's table widened), checked in blocks.

    >>> bf16_exact(np.array([[1.0, 0.5]], dtype=np.float32)), bf16_exact(np.array([[1.0 + 2**-10]], dtype=np.float32))
    (True, False)
    """
    torch = torch or import_torch("the bfloat16 self-join (screen='bf16')")
    for start in range(0, len(W), _CHECK_ROWS):
        rows = np.asarray(W[start:start + _CHECK_ROWS])  # (n, D)
        if rows.dtype != np.float32 and not np.array_equal(rows.astype(np.float32), rows):
            return False
        block = _tensor(torch, np.asarray(rows, dtype=np.float32))
        if not torch.equal(block.to(torch.bfloat16).float(), block):
            return False
    return True


def _buffers(cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The filter's output: rows, columns (cap,) int64, scores (cap,) float32, sides (cap,) uint8."""
    return (np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.float32),
            np.empty(cap, dtype=np.uint8))


def _kernel() -> Callable[..., tuple[int, int]] | None:
    """``bf16_filter.filter_block`` where numba is installed, else None."""
    if importlib.util.find_spec("numba") is None:
        return None
    from .bf16_filter import filter_block

    return filter_block


def _down32(x: np.ndarray) -> np.ndarray:
    """float64 (n,) -> float32 (n,) rounded down: a bar never rises by its rounding."""
    y = x.astype(np.float32)
    return np.where(y > x, np.nextafter(y, np.float32(-np.inf)), y)


def _tensor(torch: Any, a: np.ndarray) -> Any:
    """A torch view of a NumPy array, read-only ones too (never written through: torch warns that it could be)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.ascontiguousarray(a))


