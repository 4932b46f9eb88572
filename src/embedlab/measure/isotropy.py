"""Isotropy: does a table use every direction alike, or do its rows crowd into a narrow cone?

Trained token tables are anisotropic (Ethayarajh 2019; Gao et al. 2019, "representation degeneration"): their
rows share a common direction, so any two tokens look alike by cosine. Five measures, each as its paper defines
it, on one table:

* the mean cosine of random pairs of rows (Ethayarajh 2019, "How contextual are contextualized word
  representations?"): near 0 for an isotropic table, near 1 in a narrow cone;
* the share of the variance in the first principal component;
* IsoScore (Rudman et al. 2022, "IsoScore: measuring the uniformity of embedding space utilization"): from the
  covariance's eigenvalues ``l`` (D of them), ``l' = sqrt(D) l / ||l||``, the isotropy defect
  ``delta = ||l' - 1|| / sqrt(2 (D - sqrt(D)))`` and ``((D - delta^2 (D - sqrt(D)))^2 - D) / (D (D - 1))``:
  1 when every direction has the same variance, (k - 1)/(D - 1) when k directions share it all, 0 for one;
* the partition-function ratio (Mu & Viswanath 2018, "All-but-the-top"): ``Z(c) = sum_w exp(c^T w)`` over the
  unit eigenvectors ``c`` of ``W^T W``, both signs (the sign of an eigenvector is arbitrary), and
  ``min Z / max Z``: 1 for an isotropic table, near 0 when one direction dominates;
* the mean row's length (against the mean row length), and what removing it and the top ``d = D / 100``
  principal components ("all-but-the-top", Mu & Viswanath 2018) does to neighbour lists: the mean overlap of a
  sample of rows' k nearest (cosine) before and after.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.neighbors.search import Search
from ..engine.row_blocks import row_edges

__all__ = ["PAIRS", "ABTT_QUERIES", "Isotropy", "isotropy", "isoscore"]

PAIRS = 10_000  # random pairs of distinct rows whose cosines are averaged (Ethayarajh's measure)
ABTT_QUERIES = 1_000  # rows whose neighbour lists are compared before and after all-but-the-top (V if fewer)


@dataclass(frozen=True)
class Isotropy:
    """How isotropic one table is.

    Attributes
    ----------
    mean_cosine : float
        Mean cosine of ``pairs`` random pairs of distinct rows (``numpy.random.default_rng(seed)``).
    pairs : int
    first_pc_share : float
        Share of the total variance on the first principal component, in (0, 1].
    isoscore : float
        IsoScore, in [0, 1].
    partition_ratio : float
        ``min_c Z(c) / max_c Z(c)`` (Mu & Viswanath 2018), in (0, 1].
    mean_norm : float
        ``||mean row||``.
    mean_norm_ratio : float
        ``||mean row|| / mean of ||row||``: 1 when every row is the same vector, near 0 when the mean cancels.
    abtt_d : int
        Principal components all-but-the-top removes (``max(1, D // 100)``).
    abtt_overlap : float or None
        Mean overlap of the sample's k nearest before and after; None where k is 0.
    variances : np.ndarray, shape (D,), float64
        The covariance's eigenvalues, largest first (the variance per principal component).
    """

    mean_cosine: float
    pairs: int
    first_pc_share: float
    isoscore: float
    partition_ratio: float
    mean_norm: float
    mean_norm_ratio: float
    abtt_d: int
    abtt_overlap: float | None
    variances: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {"mean_cosine": self.mean_cosine, "pairs": self.pairs, "first_pc_share": self.first_pc_share,
                "isoscore": self.isoscore, "partition_ratio": self.partition_ratio, "mean_norm": self.mean_norm,
                "mean_norm_ratio": self.mean_norm_ratio, "abtt_d": self.abtt_d, "abtt_overlap": self.abtt_overlap,
                "variances": self.variances.tolist()}


def isotropy(table: Any, *, k: int = 10, seed: int = 0, pairs: int = PAIRS, memory: int | None = None,
             block: int = 65536) -> Isotropy:
    """The isotropy measures of one table.

    Parameters
    ----------
    table : EmbeddingTable
        At least 2 rows.
    k : int
        Neighbours per list of the all-but-the-top comparison; 0 leaves it out.
    seed : int
        Seed of the random pairs and of the sampled rows.
    pairs : int
        Random pairs of the mean cosine.
    memory : int, optional
        Working memory of the neighbour searches, bytes. The table after all-but-the-top is one more (V, D)
        float32 table, resident while it is searched.
    block : int
        Rows per block of the sums.

    Returns
    -------
    Isotropy

    >>> from embedlab.engine.table import EmbeddingTable
    >>> iso = isotropy(EmbeddingTable(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])), k=0)
    >>> round(iso.isoscore, 6), iso.first_pc_share, iso.partition_ratio
    (1.0, 0.5, 1.0)
    """
    V, D = table.V, table.D
    edges = row_edges(V, block)
    mean = sum(table.lookup(np.arange(a, b)).astype(np.float64).sum(axis=0) for a, b in edges) / V  # (D,)
    cov, gram, length = np.zeros((D, D)), np.zeros((D, D)), 0.0
    for a, b in edges:
        x = table.lookup(np.arange(a, b)).astype(np.float64)  # (m, D)
        centred = x - mean
        cov += centred.T @ centred
        gram += x.T @ x
        length += float(np.linalg.norm(x, axis=1).sum())
    variances, axes = np.linalg.eigh(cov / V)  # ascending
    variances, axes = np.clip(variances[::-1], 0.0, None), axes[:, ::-1]  # (D,), (D, D) largest first
    d = max(1, D // 100)
    return Isotropy(mean_cosine=_mean_cosine(table, pairs, seed), pairs=pairs,
                    first_pc_share=float(variances[0] / variances.sum()) if variances.sum() > 0 else 1.0,
                    isoscore=isoscore(variances), partition_ratio=_partition_ratio(table, gram, edges),
                    mean_norm=float(np.linalg.norm(mean)), mean_norm_ratio=float(np.linalg.norm(mean) / (length / V))
                    if length > 0 else 0.0, abtt_d=d,
                    abtt_overlap=_abtt_overlap(table, mean, axes[:, :d], k, seed, memory) if k else None,
                    variances=variances)


def isoscore(variances: np.ndarray) -> float:
    """IsoScore (Rudman et al. 2022) of a covariance's eigenvalues (D,).

    >>> round(isoscore(np.array([1.0, 1.0, 1.0, 0.0])), 12)  # 3 of 4 directions alike: (k - 1) / (D - 1)
    0.666666666667
    """
    n = len(variances)
    if n < 2 or not np.any(variances > 0):
        return 0.0
    normalised = variances * math.sqrt(n) / np.linalg.norm(variances)  # (D,)
    defect = np.linalg.norm(normalised - 1.0) / math.sqrt(2 * (n - math.sqrt(n)))
    return float(((n - defect ** 2 * (n - math.sqrt(n))) ** 2 - n) / (n * (n - 1)))


def _mean_cosine(table: Any, pairs: int, seed: int) -> float:
    """Mean cosine of ``pairs`` pairs (i, j), i != j, drawn as ``rng.integers(V, size=(pairs, 2))`` with the
    pairs of one row twice drawn again (the same rule, the next draws), the zero row's cosine 0."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(table.V, size=(pairs, 2))  # (P, 2)
    while (same := drawn[:, 0] == drawn[:, 1]).any():
        drawn[same] = rng.integers(table.V, size=(int(same.sum()), 2))
    x = table.lookup(drawn[:, 0]).astype(np.float64)  # (P, D)
    y = table.lookup(drawn[:, 1]).astype(np.float64)  # (P, D)
    both = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)  # (P,)
    cos = np.divide(np.einsum("ij,ij->i", x, y), both, out=np.zeros(pairs), where=both > 0)
    return float(np.clip(cos, -1.0, 1.0).mean())


def _partition_ratio(table: Any, gram: np.ndarray, edges: list[tuple[int, int]]) -> float:
    """``min Z(c) / max Z(c)`` over the unit eigenvectors c of ``W^T W`` and their negatives, each ``log Z`` a
    running log-sum-exp over the blocks of rows (``exp(c^T w)`` overflows on long rows)."""
    _, U = np.linalg.eigh(gram)  # (D, D) unit eigenvectors
    C = np.hstack([U, -U])  # (D, 2D)
    top, total = np.full(C.shape[1], -np.inf), np.zeros(C.shape[1])
    for a, b in edges:
        s = table.lookup(np.arange(a, b)).astype(np.float64) @ C  # (m, 2D)
        new_top = np.maximum(top, s.max(axis=0))
        total = total * np.exp(top - new_top) + np.exp(s - new_top).sum(axis=0)
        top = new_top
    log_z = top + np.log(total)  # (2D,)
    return float(np.exp(log_z.min() - log_z.max()))


def _abtt_overlap(table: Any, mean: np.ndarray, axes: np.ndarray, k: int, seed: int, memory: int | None) -> float:
    """Mean overlap of a sample of rows' k nearest (cosine) in the table and after all-but-the-top: the mean
    subtracted and the projections on the top principal ``axes`` (D, d) removed."""
    V = table.V
    k = min(k, V - 1)
    ids = np.arange(V) if V <= ABTT_QUERIES else np.sort(
        np.random.default_rng(seed).choice(V, size=ABTT_QUERIES, replace=False))
    processed = np.empty((V, table.D), dtype=np.float32)  # (V, D): the one table all-but-the-top makes
    for a, b in row_edges(V, max(1, 2**16)):
        centred = table.lookup(np.arange(a, b)).astype(np.float64) - mean  # (m, D)
        processed[a:b] = centred - (centred @ axes) @ axes.T
    before = Search(table, k, "cosine", ids=ids, memory=memory).nearest("cosine").ids  # (N, K)
    after = Search(processed, k, "cosine", ids=ids, memory=memory).nearest("cosine").ids  # (N, K)
    return float(np.mean([len(np.intersect1d(x, y)) / k for x, y in zip(before, after)]))
