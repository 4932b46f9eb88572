"""The exact rescoring of a neighbour search: candidates scored in float64 as the reference scores them.

Every screen (the float GEMM of ``float_screen`` and ``torch_screen``, the integer codes of ``int16_screen``)
ends here: its candidates are scored again in float64 (``dot``, or
``dot / (|q| * |w|)`` clipped to [-1, 1]) and ordered by ``(-score, id)``.
Identical rows get bit-identical scores, so exact ties are ordered by id.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``m`` queries
in a block, ``h`` of them rescored at once, ``L`` candidates each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lengths import SQUARES_HIGH, SQUARES_LOW
from .pair_scores import pair_dots64

__all__ = ["Rescorer"]


@dataclass(frozen=True)
class Rescorer:
    """What exact scores of m queries against the table's rows need.

    Attributes
    ----------
    W : np.ndarray, shape (V, D), floating
        The table.
    q64 : np.ndarray, shape (m, D), float64
        The queries.
    q_norms : np.ndarray, shape (m,), float64
        Their lengths (``lengths.vector_norms``).
    row_norms : np.ndarray, shape (V,), float64
        The rows' lengths.
    metric : str
        ``"cosine"`` or ``"dot"``.
    exclude : np.ndarray, shape (m,), int64, or None
        Each query's own id, never listed.
    k : int
        Neighbours per query.
    """

    W: np.ndarray
    q64: np.ndarray
    q_norms: np.ndarray
    row_norms: np.ndarray
    metric: str
    exclude: np.ndarray | None
    k: int

    def top_k(self, qi: np.ndarray, cand: np.ndarray, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by (-score, id) of candidates (h, L), -1 empty -> ids, scores (h, K).

        ``qi`` (h,) are the queries' places in the block. An empty slot, and a
        query's own id, get score -inf and id V: they sort last. ``chunk``:
        pairs scored at once (``scores``; all by default), empty slots not
        counted; a pair's score does not depend on it.
        """
        valid = cand >= 0
        if self.exclude is not None:  # a query by id never lists itself, whatever its screening score
            valid &= cand != self.exclude[qi][:, None]
        scores = np.full(cand.shape, -np.inf)
        pairs_q, pairs_w = np.broadcast_to(qi[:, None], cand.shape)[valid], cand[valid]  # (f,), (f,) row-major
        step = max(1, chunk or pairs_w.size)
        scores[valid] = np.concatenate([self.scores(pairs_q[s:s + step], pairs_w[s:s + step])
                                        for s in range(0, pairs_w.size, step)] or [np.empty(0)])
        ids = np.where(valid, cand, len(self.W))  # an empty slot sorts last
        order = np.lexsort((ids, -scores), axis=-1)[:, :self.k]  # (h, K)
        return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)

    def scores(self, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Scores as the reference computes them, in float64: (r,) pairs -> (r,).

        The dot products are ``pair_scores.pair_dots64``'s: each row read
        where it lies (a float32 table) and widened in the loop, one fixed
        order of the float64 sum, so identical rows score bit-identically.
        """
        q_norms, w_norms = self.q_norms[qi], self.row_norms[ids]  # (r,), (r,)
        out = np.zeros(len(ids))  # (r,)
        # Out-of-range pairs (inf / inf, 0 / 0) are measured again below.
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            dots = pair_dots64(self.W, np.ascontiguousarray(self.q64), qi, ids)  # (r,) rows read in place
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
            unit_q = self.q64[qi[odd]] / q_norms[odd, None]
            unit_w = np.asarray(self.W[ids[odd]], dtype=np.float64) / w_norms[odd, None]
            out[odd] = np.einsum("ij,ij->i", unit_q, unit_w)
        return np.clip(out, -1.0, 1.0, out=out)
