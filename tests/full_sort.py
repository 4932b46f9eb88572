"""The tests' oracle for neighbour lists: every float64 score, sorted by (-score, id).

The obvious way, independent of the engine: one (N, V) score matrix, cosine as
``dot / (|q| |w|)`` with NumPy's own lengths (0.0 where either is 0), clipped to
[-1, 1], and a lexicographic sort per query. Exact on tables of small integers
(dyadic values), where float64 computes every score without rounding.
"""

from __future__ import annotations

import numpy as np


def full_sort(W, Q, k, metric, exclude=None):
    """Top-k of the queries Q (N, D) against W (V, D): ids (N, K) int64 and scores (N, K) float64.

    ``exclude`` (N,) leaves out one id per query (its own).
    """
    W = np.asarray(W, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    S = Q @ W.T  # (N, V)
    if metric == "cosine":
        both = np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1))
        S = np.clip(np.divide(S, both, out=np.zeros_like(S), where=both > 0), -1.0, 1.0)
    if exclude is not None:
        S[np.arange(len(Q)), exclude] = -np.inf
    ids = np.arange(W.shape[0])
    order = np.array([np.lexsort((ids, -row))[:k] for row in S], dtype=np.int64).reshape(len(S), k)
    return order, np.take_along_axis(S, order, axis=1)


def self_full_sort(W, k, metric):
    """Every row of W as a query, itself left out: ids (V, K) int64 and scores (V, K) float64."""
    V = np.shape(W)[0]
    return full_sort(W, W, k, metric, exclude=np.arange(V))
