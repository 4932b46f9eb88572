"""The bf16 screen: the products in bfloat16 on the CPU's matrix units, a certified margin, an exact rescoring.

A peer of ``float_screen``, ``int16_screen`` and ``torch_screen`` (which
``Bf16Screen`` extends: its scan, bar and survivors-only transfer already run
in torch); ``dispatch.search_block`` sends it a block of queries where the
plan says ``screen="bf16"`` (``capability`` chooses: AMX-BF16 or AVX512-BF16
and torch with oneDNN, a D and N where it wins).

1. *Screen.* Queries rounded to bfloat16 (cosine: the unit queries ``q / |q|``),
   rows rounded to bfloat16 as they are (not scaled), and the product
   ``S = bf16(Q) @ bf16(W_blk).T  # (m, v)`` by torch's bfloat16 matmul on the
   CPU (oneDNN: AMX or AVX512-BF16 where present, software elsewhere; it sums
   in float32 and returns bfloat16). Cosine multiplies each column by
   ``float32(1 / |w|)``. Every score is then a float32.
2. *Filter.* Each score is within ``eps`` of the exact one
   (``precision.bf16_margin``, derived there; about 3 * 2**-8 relative to
   ``|q| |w|``), so an entry more than ``2 * eps`` below a query's k-th best
   screening score is beaten by k others in exact scores too. The bar is
   float64; it is rounded DOWN to float32 (``bar32``), so that
   ``score >= bar32`` holds exactly where ``score >= bar`` does: the
   comparison loses nothing to rounding.
3. *Rescore.* The survivors are scored in float64 and ordered by
   ``(-score, id)`` (``rescore``), as on every screen: the answer is the
   float screen's, id for id and bit for bit.

The rows' bfloat16 copy (``bf16_rows``, V x D x 2 bytes) is the table's
resident cost where a table caches it (``EmbeddingTable.bf16_rows``), like
its int16 codes; a plain array's rows are rounded a block at a time, in the
search's working memory (``plan.plan_bytes``). bfloat16 has float32's
exponent range, so the screen runs only where float32 does (every nonzero
length in [1e-15, 1e15], ``capability.choose_screen``).

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m``
queries in a block, ``v`` rows in a block, ``s`` sampled rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import MissingExtraError
from ..lengths import length_range
from .precision import bf16_margin, longest_other
from .torch_screen import TorchScreen

__all__ = ["Bf16Screen", "bf16_rows", "round_bf16", "bar32", "ROWS_BLOCK"]

ROWS_BLOCK = 4096  # rows rounded to bfloat16 at a time by ``bf16_rows``


class Bf16Screen(TorchScreen):
    """``TorchScreen`` with bfloat16 products and the bf16 margin; rescoring unchanged (steps 1-3).

    Takes ``FloatScreen``'s arguments, ``rows`` (the table's bfloat16 rows,
    ``bf16_rows``: (V, D) uint16 holding bfloat16 bits, or None to round a
    block of rows at a time) and ``device`` (a ``torch.device``, the CPU by
    default). ``run(plan)`` returns ids (m, K) int64 and scores (m, K) float64.
    """

    def __init__(self, *args: Any, rows: np.ndarray | None = None, device: Any = None) -> None:
        torch = _torch()
        super().__init__(*args, device=torch.device("cpu") if device is None else device)
        W, q64, q_norms = self.W, self.q64, self.q_norms
        unit = q64 / q_norms[:, None] if self.metric == "cosine" else q64  # (m, D) float64
        self.queries_t = _bf16_tensor(round_bf16(unit), self.device)  # (m, D) bfloat16: one rounding
        self.inv_t = None if self.inv_norms is None else torch.tensor(
            self.inv_norms.astype(np.float32), device=self.device)  # (V,) float32(1 / |w|)
        self.rows_t = None if rows is None else torch.from_numpy(rows).view(torch.bfloat16).to(self.device)
        self._buf = None  # (v, D) float32: a block of rows on its way to bfloat16, reused
        reach = self.row_norms[longest_other(self.row_norms, self.exclude, len(q_norms))]  # (m,)
        shortest = length_range(self.row_norms)[0]  # the shortest nonzero row: inf where there is none
        self.eps = bf16_margin(self.metric, W.shape[1], q_norms, reach,
                               shortest=shortest if np.isfinite(shortest) else 1.0)  # (m,)

    def _bar_tensor(self, bar: np.ndarray) -> Any:
        """The bar (m,) float64 as float32 rounded down: a float32 score reaches one as it reaches the other."""
        return self.torch.tensor(bar32(bar), device=self.device)

    def _device_scores(self, ids: np.ndarray) -> Any:
        """Screening scores of the queries against rows ``ids`` (s,), ascending -> float32 tensor (m, s).

        ``bf16(q) . bf16(w)`` summed in float32 and returned in bfloat16 by
        the matmul, widened to float32 (exactly); cosine times the row's
        ``float32(1 / |w|)`` (zero rows stay 0). The query's own id scores -inf.
        """
        torch = self.torch
        run = slice(ids[0], ids[-1] + 1) if ids[-1] - ids[0] + 1 == ids.size else ids
        S = (self.queries_t @ self._rows(run, ids.size).T).float()  # (m, s) bfloat16 products, widened
        if self.inv_t is not None:
            S *= self.inv_t[torch.as_tensor(ids, device=self.device)][None, :]  # float32 products, rounded once
        if self.exclude is not None:
            at = np.minimum(np.searchsorted(ids, self.exclude), ids.size - 1)  # (m,)
            own = np.flatnonzero(ids[at] == self.exclude)
            if own.size:
                S[torch.as_tensor(own, device=self.device), torch.as_tensor(at[own], device=self.device)] = -np.inf
        return S

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


def bf16_rows(W: np.ndarray) -> np.ndarray:
    """The table's rows rounded to bfloat16, as its bit patterns: (V, D) -> (V, D) uint16.

    Each entry rounded to nearest, ties to even, once (float64 entries are
    rounded in float64 first, ``round_bf16``: no double rounding through
    float32). ``ROWS_BLOCK`` rows at a time, so it holds one block of
    float32 beside the result. View it as ``torch.bfloat16``
    (``torch.from_numpy(rows).view(torch.bfloat16)``).

    >>> bf16_rows(np.array([[1.0, 1 + 2**-8, 1 + 3 * 2**-8]], dtype=np.float32)).tolist()  # ties to even
    [[16256, 16256, 16258]]
    """
    torch = _torch()
    V, D = W.shape
    out = np.empty((V, D), dtype=np.uint16)
    out_t = torch.from_numpy(out).view(torch.bfloat16)  # (V, D) the same memory
    buf = np.empty((min(V, ROWS_BLOCK), D), dtype=np.float32)
    for v0 in range(0, V, ROWS_BLOCK):
        v1 = min(V, v0 + ROWS_BLOCK)
        rows = W[v0:v1]  # (b, D)
        np.copyto(buf[:v1 - v0], round_bf16(rows) if rows.dtype == np.float64 else rows)
        out_t[v0:v1].copy_(torch.from_numpy(buf[:v1 - v0]))  # float32 -> bfloat16, to nearest even
    return out


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to bfloat16's 8 significant bits, to nearest, ties to even: (...) -> (...) float64.

    Other dtypes are returned as they are (float32 and float16 go to
    bfloat16 in one rounding). Rounding the float64 mantissa directly keeps
    to one rounding: float64 -> float32 -> bfloat16 would round twice, and a
    value just above a midpoint could land on the wrong side. Values whose
    float32 would be subnormal are what the matrix units flush anyway
    (``precision.bf16_margin``, step 4).

    >>> round_bf16(np.array([1 + 2**-9 + 2**-40, 1 + 2**-9, 1 + 3 * 2**-9])).tolist()
    [1.00390625, 1.0, 1.0078125]
    """
    if x.dtype != np.float64:
        return x
    bits = np.ascontiguousarray(x).view(np.int64)  # sign and magnitude: the carry stays in the magnitude
    low = np.int64(1) << 45  # the 45 bits below bfloat16's 7 stored mantissa bits
    odd = (bits >> 45) & 1
    return ((bits + (low // 2 - 1) + odd) & ~(low - 1)).view(np.float64)


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


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingExtraError.for_module("torch", "bf16 screens", ("torch",)) from None
    return torch


def _bf16_tensor(x: np.ndarray, device: Any) -> Any:
    """A float32 or float64 array (..., D) as a bfloat16 tensor on ``device``: to nearest even, once."""
    torch = _torch()
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device=device, dtype=torch.bfloat16)
