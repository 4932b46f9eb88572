"""Deployment-time reductions of a table: fewer dimensions, or fewer bits per dimension.

Each reduction maps a (V, D) table to what a deployment stores, and gives the
vectors the reduced scores are computed from (``Reduced.rows``: a dot
product, or a cosine, of those rows is the reduced score):

* ``pca``: the table centred by its mean and projected on its first d'
  principal axes (scikit-learn's ``PCA``, full SVD: deterministic, signs
  fixed by ``svd_flip``), fitted on the table or a seeded sample of it;
  d' float32 values a token.
* ``truncate``: the first d' coordinates (Matryoshka representation
  learning, Kusupati et al. 2022: meaningful only for models trained so that
  every prefix is itself an embedding); d' float32 values.
* ``int8``: per-dimension scalar quantisation to 256 levels between the
  dimension's minimum and maximum over the table, as sentence-transformers'
  ``quantize_embeddings(precision="int8")`` computes it:
  ``code = clip(floor((x - min) / ((max - min) / 255)), 0, 255) - 128``; D bytes.
  Scores are the codes' dot products (or cosines).
* ``binary``: one bit a dimension, the sign (``x > 0``), packed 8 to a byte
  (sentence-transformers' ``"ubinary"``); ceil(D / 8) bytes. Codes are
  compared by Hamming distance, which the rows ``2 * bit - 1`` (+-1) turn
  into a dot product: ``s . t = D - 2 * hamming(s, t)``, so one ranking
  stands for both metrics.
* ``pq``: product quantisation (Jegou, Douze and Schmid 2011) through
  faiss's ``IndexPQ``: m sub-vectors of D / m dimensions, each coded by one
  of 2^8 centroids; m bytes a token (plus the codebooks). Queries stay
  full precision (asymmetric distance): the reduced score is the query
  against the decoded row. For cosine the codebooks are trained on unit rows.

This per-dimension int8 is a deployment format; the per-row int8 codes an
exact search may use for a first pass are another thing, kept apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MissingExtraError, SizeError

__all__ = ["Reduced", "PCAFit", "fit_pca", "pca", "truncate", "int8", "int8_codes", "binary", "binary_codes",
           "pq", "pq_subquantizers", "PQ_BITS", "PQ_ADVISED_POINTS"]

PQ_BITS = 8  # bits per sub-vector code: 256 centroids, one byte
PQ_ADVISED_POINTS = 39  # training rows a centroid faiss's k-means asks for (it warns below 39 * 256)


@dataclass(frozen=True)
class Reduced:
    """A reduced table: what is stored, and the rows its scores are computed from.

    Attributes
    ----------
    method : str
        ``"pca"``, ``"truncate"``, ``"int8"``, ``"binary"`` or ``"pq"``.
    size : str
        The size in words (``"d'=128"``, ``"m=48"``).
    rows : np.ndarray, shape (V, d), float32
        Reduced rows; the reduced score of rows i and j is ``rows[i] . rows[j]``
        (or their cosine). For pq, the decoded rows.
    bytes_per_token : float
        Bytes a token's code takes (binary: D / 8 rounded up).
    side_bytes : int
        Bytes stored once beside the codes: the PCA mean and axes, the int8
        ranges, the pq codebooks; 0 for truncation and binary.
    """

    method: str
    size: str
    rows: np.ndarray
    bytes_per_token: float
    side_bytes: int


@dataclass(frozen=True)
class PCAFit:
    """A PCA of a table: mean (D,), axes (n_axes, D), fitted on ``n_rows`` rows."""

    mean: np.ndarray
    axes: np.ndarray
    n_rows: int


def fit_pca(W: np.ndarray, n_axes: int, *, max_rows: int = 100_000, seed: int = 0) -> PCAFit:
    """Fit scikit-learn's ``PCA(n_axes, svd_solver="full")`` on the table, or on ``max_rows`` of its rows.

    The rows are a seeded sample (``numpy.random.default_rng(seed)``, without
    replacement) when V > max_rows, so the same call gives the same axes.
    The first d' axes of this fit are the d'-axis PCA (full SVD), so one fit
    serves every d' <= n_axes.

    Raises
    ------
    SizeError
        For n_axes outside [1, min(V, D)].
    MissingExtraError
        Without scikit-learn (the ``plots`` extra).
    """
    V, D = W.shape
    if isinstance(n_axes, bool) or not isinstance(n_axes, (int, np.integer)) or not 1 <= n_axes <= min(V, D):
        raise SizeError(f"PCA needs 1 to min(V, D) = {min(V, D)} axes, got {n_axes!r}", parameter="dims",
                        value=n_axes, expected=f"1 to {min(V, D)}")
    try:
        from sklearn.decomposition import PCA
    except ImportError:
        raise MissingExtraError.for_module("sklearn", "PCA (compress --methods pca)", ("plots",)) from None
    sample = W if V <= max_rows else W[np.sort(np.random.default_rng(seed).choice(V, max_rows, replace=False))]
    fit = PCA(n_components=int(n_axes), svd_solver="full").fit(np.asarray(sample, dtype=np.float64))
    return PCAFit(mean=fit.mean_.astype(np.float64), axes=fit.components_.astype(np.float64), n_rows=len(sample))


def pca(W: np.ndarray, fit: PCAFit, d: int) -> Reduced:
    """The centred table projected on the fit's first d axes: ``(W - mean) @ axes[:d].T``, (V, d) float32."""
    _check_d(d, fit.axes.shape[0])
    rows = ((np.asarray(W, dtype=np.float64) - fit.mean) @ fit.axes[:d].T).astype(np.float32)  # (V, d)
    return Reduced("pca", f"d'={d}", rows, 4.0 * d, 8 * fit.mean.size + 8 * d * fit.axes.shape[1])


def truncate(W: np.ndarray, d: int) -> Reduced:
    """The first d coordinates of every row (Matryoshka truncation), (V, d) float32."""
    _check_d(d, W.shape[1])
    return Reduced("truncate", f"d'={d}", np.ascontiguousarray(W[:, :d], dtype=np.float32), 4.0 * d, 0)


def int8_codes(X: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Per-dimension int8 codes of X (N, D) given ``ranges`` (2, D): row 0 the minima, row 1 the maxima.

    ``clip(floor((x - min) / step), 0, 255) - 128`` with ``step = (max - min)
    / 255`` (1 where max == min), the ranges in float32, as
    sentence-transformers' ``quantize_embeddings(precision="int8")``
    computes it.

    The maximum itself may land one code below 127, as there: in float32,
    ``1 / (1 / 255)`` is just under 255.

    >>> int8_codes(np.array([[0.0, 1.0], [1.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 1.0]])).tolist()
    [[-128, -128], [126, -128]]
    """
    ranges = np.asarray(ranges).astype(np.float32)  # (2, D)
    starts = ranges[0]
    steps = (ranges[1] - starts) / 255
    steps = np.where(steps == 0, 1, steps)
    return (np.clip(np.floor((np.asarray(X) - starts) / steps), 0, 255) - 128).astype(np.int8)  # (N, D)


def int8(W: np.ndarray) -> Reduced:
    """int8 codes with the table's own per-dimension ranges; rows are the codes as float32 (exact)."""
    ranges = np.vstack([W.min(axis=0), W.max(axis=0)])  # (2, D)
    codes = int8_codes(W, ranges)  # (V, D)
    return Reduced("int8", f"{W.shape[1]} x int8", codes.astype(np.float32), float(W.shape[1]), 4 * ranges.size)


def binary_codes(X: np.ndarray) -> np.ndarray:
    """The signs of X (N, D) packed 8 to a byte, (N, ceil(D / 8)) uint8: sentence-transformers' ``"ubinary"``.

    >>> binary_codes(np.array([[1.0, -1.0, 0.0, 2.0]])).tolist()
    [[144]]
    """
    return np.packbits(np.asarray(X) > 0, axis=-1)


def binary(W: np.ndarray) -> Reduced:
    """Sign bits; rows are +-1 (float32), whose dot product is ``D - 2 * hamming``."""
    D = W.shape[1]
    rows = np.where(np.asarray(W) > 0, 1.0, -1.0).astype(np.float32)  # (V, D)
    return Reduced("binary", f"{D} bits", rows, float(-(-D // 8)), 0)


def pq_subquantizers(D: int) -> int:
    """The default m: the divisor of D nearest D / 8 (8 dimensions a sub-vector), the larger on a tie.

    >>> pq_subquantizers(384), pq_subquantizers(50), pq_subquantizers(7)
    (48, 5, 1)
    """
    divisors = [m for m in range(1, D + 1) if D % m == 0]
    return min(divisors, key=lambda m: (abs(m - D / 8), -m))


def pq(W: np.ndarray, m: int, *, unit: bool = False, seed: int = 0) -> Reduced:
    """Product quantisation with faiss's ``IndexPQ(D, m, 8)``, trained on the table; rows are the decoded rows.

    Parameters
    ----------
    W : np.ndarray, shape (V, D)
    m : int
        Sub-quantisers, dividing D; V must be at least 2^8 = 256 (one
        training point per centroid at the least).
    unit : bool
        Train and encode the unit rows (for cosine).
    seed : int
        faiss's k-means seed.

    Raises
    ------
    SizeError
        For m not dividing D, or V < 256.
    MissingExtraError
        Without faiss (the ``bench`` extra).
    """
    V, D = W.shape
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1 or D % m:
        raise SizeError(f"pq needs a number of sub-quantisers m dividing D={D}, got {m!r}", parameter="pq_m",
                        value=m, expected=f"a divisor of D={D}")
    if V < 2 ** PQ_BITS:
        raise SizeError(f"pq with {PQ_BITS}-bit codes needs V >= {2 ** PQ_BITS} rows to train its centroids, "
                        f"got V={V}", parameter="methods", value="pq", expected=f"a table of {2 ** PQ_BITS} rows or more")
    faiss = _faiss()
    X = np.asarray(W, dtype=np.float32)
    if unit:
        lengths = np.linalg.norm(X.astype(np.float64), axis=1, keepdims=True)
        X = (X / np.where(lengths > 0, lengths, 1.0)).astype(np.float32)
    X = np.ascontiguousarray(X)
    index = faiss.IndexPQ(D, int(m), PQ_BITS)
    index.pq.cp.seed = seed
    index.pq.cp.verbose = False
    index.pq.cp.min_points_per_centroid = 1  # faiss would print its advice to stderr; compress says it in a note
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one thread: the same centroids every run, and no OpenMP spinning on a busy machine
    try:
        index.train(X)
        codes = index.pq.compute_codes(X)  # (V, m) uint8
        rows = index.pq.decode(codes)  # (V, D) float32
    finally:
        faiss.omp_set_num_threads(threads)
    return Reduced("pq", f"m={m}", rows, float(m * PQ_BITS // 8), 4 * D * 2 ** PQ_BITS)


def _check_d(d: int, limit: int) -> None:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 1 <= d <= limit:
        raise SizeError(f"d'={d!r} is out of range: a reduced width from 1 to {limit}", parameter="dims", value=d,
                        expected=f"1 to {limit}")


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise MissingExtraError.for_module("faiss", "product quantisation (compress --methods pq)",
                                           ("bench",)) from None
    return faiss
