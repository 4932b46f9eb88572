"""Exact top-k nearest tokens by cosine similarity or dot product.

The rule every engine keeps (``embed.nearest_by_cosine``): the k ids with the
largest score, best first, equal scores ordered by the smaller id. Scores come
from GEMM blocks of queries against blocks of vocabulary rows, so the extra
memory stays under a budget whatever N and V are.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Neighbors", "search", "METRICS", "DEFAULT_MEMORY"]

METRICS = ("cosine", "dot")
DEFAULT_MEMORY = 256 * 2**20  # bytes of score blocks at a time


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


def search(
    W: np.ndarray,
    Q: np.ndarray,
    k: int,
    metric: str,
    *,
    exclude: np.ndarray | None = None,
    row_norms: np.ndarray | None = None,
    memory: int = DEFAULT_MEMORY,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``Q @ W.T`` (dot) or of the cosine, with the tie rule.

    Parameters
    ----------
    W : np.ndarray, shape (V, D)
        The table.
    Q : np.ndarray, shape (N, D)
        Query vectors.
    k : int
        Neighbours per query, ``1 <= k <= V`` (``V - 1`` when excluding).
    metric : {"cosine", "dot"}
    exclude : np.ndarray, shape (N,), int64, optional
        One id per query to leave out (the query's own id).
    row_norms : np.ndarray, shape (V,), float64
        Lengths of the rows of W; required for cosine.
    memory : int
        Budget in bytes for one block of scores.

    Returns
    -------
    ids : np.ndarray, shape (N, K), int64
    scores : np.ndarray, shape (N, K), float64

    Notes
    -----
    The cosine of a zero-length row or query is 0.0. Scores are computed in
    float32 for float16/float32 tables and float64 for float64 tables.
    """
    dtype = np.float64 if W.dtype == np.float64 else np.float32
    N, V = Q.shape[0], W.shape[0]
    Q = Q.astype(dtype)  # (N, D) a copy: queries are scaled below
    inv_rows = None
    if metric == "cosine":
        q_norms = np.linalg.norm(Q.astype(np.float64), axis=1)  # (N,)
        Q *= _inverse(q_norms).astype(dtype)[:, None]
        inv_rows = _inverse(row_norms).astype(dtype)  # (V,)
    ids = np.empty((N, k), dtype=np.int64)
    scores = np.empty((N, k), dtype=np.float64)
    itemsize = np.dtype(dtype).itemsize
    n_block = max(1, min(N, memory // max(1, V * itemsize)))
    for start in range(0, N, n_block):
        stop = min(N, start + n_block)
        S = Q[start:stop] @ W.T.astype(dtype, copy=False)  # (n, V)
        if inv_rows is not None:
            S *= inv_rows
            np.clip(S, -1.0, 1.0, out=S)
        if exclude is not None:
            S[np.arange(stop - start), exclude[start:stop]] = -np.inf
        ids[start:stop], scores[start:stop] = _top_k(S, k)
    return ids, scores


def _top_k(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of each row of S (n, V) by (-score, id)."""
    n, V = S.shape
    # The k-th largest score of each row; every entry >= it is a candidate,
    # so ties at the boundary are all seen before the tie rule picks.
    kth = np.partition(S, V - k, axis=1)[:, V - k]  # (n,)
    ids = np.empty((n, k), dtype=np.int64)
    scores = np.empty((n, k), dtype=np.float64)
    for r in range(n):
        cand = np.flatnonzero(S[r] >= kth[r])  # ascending ids
        order = np.lexsort((cand, -S[r, cand]))[:k]
        ids[r] = cand[order]
        scores[r] = S[r, ids[r]]
    return ids, scores


def _inverse(norms: np.ndarray) -> np.ndarray:
    """1 / norm, with 0.0 for a zero norm so zero vectors score 0.0, never NaN."""
    out = np.zeros_like(norms, dtype=np.float64)
    np.divide(1.0, norms, out=out, where=norms > 0)
    return out
