"""Under-trained tokens: rows that stayed near where rows that never trained are (Land & Bartolo 2024).

Land & Bartolo, "Fishing for Magikarp: Automatically Detecting Under-trained
Tokens in Large Language Models" (2024, arXiv 2405.05417): a token the model
(almost) never saw in training keeps an output-head row close to the rows of
tokens known to be unused, since the gradient of the softmax pushes every
unseen row the same way. Their indicators, as their code computes them
(``magikarp/utils.py``, ``embedding_distance_metrics`` and ``cosine_distance``,
of github.com/cohere-ai/magikarp; ``magikarp/model.py`` picks the table), on
the output head of an untied model or on the table of a tied one, with
``mat`` (V, D) that table and ``m = mean(mat[reference])``:

=====================================  ===============================================================
``cosine_distance_without_first_pc``   the main one: ``p`` the first principal component of ``mat``
                                       (scikit-learn's ``PCA(n_components=1)``, rows centred);
                                       ``mat' = mat - outer(mat @ p, p)``; the cosine distance of
                                       each row of ``mat'`` to the mean of its reference rows
``cosine_distance_without_mean``       ``mat - mean(mat)`` (every row), the same
``cosine_distance``                    each row of ``mat`` to ``m``
``l2_distance``                        ``||row - m||``
``input_l2_norm``                      untied only: ``||row||`` of the token (input) table
=====================================  ===============================================================

The cosine distance is theirs to the letter: ``1 - (r . v) / max(||r|| ||v||, 1e-6)``
(the clip keeps zero rows at distance 1). A smaller value means more like the
unused rows: candidates are the tokens whose main indicator is at most the
``percentile``-th percentile (2 by default, their ``DEFAULT_THRESHOLD_PERCENTILE``)
of the reachable tokens' (``candidates``: their ``candidates_for_verification``).

Where their code puts the input norm first for an untied model (its default
indicator), the main one here is the cosine distance without the first
principal component, the paper's indicator; an untied model without any
reference row falls back to theirs, the input norm. A tied model without
reference rows is refused: there is nothing to compare to (their
``ValueError("known_unused_tokens must be provided for tied embeddings")``).

Everything is computed a block of rows at a time in float64 (their code runs in
the model's float32); rows holding NaN or infinity are left out of the
principal component and the means, and their indicators are NaN. The first
principal component is exact (the top eigenvector of the D x D covariance,
``numpy.linalg.eigh``) when that costs at most ``EXACT_WORK`` multiply-adds
(V * D * D); above, it is found by block subspace iteration on the covariance
with Rayleigh-Ritz steps (``SUBSPACE`` vectors, until the relative residual
``||C v - lambda v|| / lambda`` is below ``TOLERANCE``, at most
``MAX_ITERATIONS`` steps), as scikit-learn's randomized solver, which their
code runs on tables this size, approximates it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["INDICATORS", "MAIN", "FALLBACK", "DEFAULT_PERCENTILE", "REFERENCE_PATTERNS", "FirstComponent",
           "Indicators", "indicators", "threshold_and_candidates", "named_reference", "EXACT_WORK"]

MAIN = "cosine_distance_without_first_pc"
FALLBACK = "input_l2_norm"  # the main indicator of an untied model without reference rows (theirs by default)
INDICATORS = (MAIN, "cosine_distance_without_mean", "cosine_distance", "l2_distance", FALLBACK)
DEFAULT_PERCENTILE = 2.0  # magikarp/utils.py, DEFAULT_THRESHOLD_PERCENTILE
COSINE_CLIP = 1e-6  # magikarp/utils.py, cosine_distance: the denominator's floor
EXACT_WORK = 2 * 10**10  # multiply-adds (V * D * D) up to which the first component is exact
SUBSPACE, TOLERANCE, MAX_ITERATIONS = 8, 1e-6, 30
BLOCK_VALUES = 1 << 21  # values read at a time (16 MiB as float64)
# Names of tokens that families reserve and never train: BERT's [unused0], Llama 3's
# <|reserved_special_token_0|>, Gemma's <unused0> (and <unused_0>).
REFERENCE_PATTERNS = (re.compile(r"\[unused\d+\]"), re.compile(r"<\|reserved_special_token_\d+\|>"),
                      re.compile(r"<unused_?\d+>"))


def named_reference(tokens: Sequence[str | None]) -> tuple[int, ...]:
    """Ids whose token matches one of ``REFERENCE_PATTERNS`` whole.

    >>> named_reference(["[PAD]", "[unused0]", "<|reserved_special_token_7|>", "<unused_3>", "unused"])
    (1, 2, 3)
    """
    return tuple(i for i, t in enumerate(tokens) if t is not None and any(p.fullmatch(t) for p in REFERENCE_PATTERNS))


@dataclass(frozen=True)
class FirstComponent:
    """How the first principal component was found.

    ``method`` ``"eigh"`` (exact) or ``"subspace iteration"``; ``iterations``
    (0 for eigh); ``residual`` ``||C v - lambda v|| / lambda``; ``variance_share``
    ``lambda / trace(C)``, the share of the variance along it; ``converged``.
    """

    method: str
    iterations: int
    residual: float
    variance_share: float
    converged: bool

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "iterations": self.iterations, "residual": self.residual,
                "variance_share": self.variance_share, "converged": self.converged}


@dataclass(frozen=True)
class Indicators:
    """Each indicator of every row (``values``: name -> (V,) float64, NaN for a non-finite row)."""

    values: dict[str, np.ndarray]
    main: str
    reference: tuple[int, ...]
    component: FirstComponent | None = None
    left_out: tuple[int, ...] = field(default=())  # non-finite rows, out of the component and the means


def indicators(mat: np.ndarray, reference: Sequence[int], *, input_norms: np.ndarray | None = None,
               finite: np.ndarray | None = None) -> Indicators:
    """Land & Bartolo's indicators of every row of ``mat`` against the mean of its ``reference`` rows.

    Parameters
    ----------
    mat : np.ndarray, shape (V, D), floating
        The output head of an untied model, or the table of a tied one.
    reference : sequence of int
        Ids of rows known to be unused; empty only with ``input_norms``.
    input_norms : np.ndarray, shape (V_in,), optional
        The L2 norm of each row of the input table (untied models): the
        ``input_l2_norm`` indicator, padded with NaN (or cut) to V.
    finite : np.ndarray, shape (V,) bool, optional
        Which rows are finite (``degenerate.scan_rows``); found here if not given.

    Returns
    -------
    Indicators
        ``main`` is ``MAIN`` with reference rows, else ``FALLBACK``.

    Raises
    ------
    ValueError
        For no reference row (after leaving out non-finite ones) and no input norms.

    >>> mat = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [0.5, 0.5]])
    >>> r = indicators(mat, [2, 3])
    >>> [round(float(x), 3) for x in r.values["cosine_distance"]]
    [0.947, 0.837, 0.001, 0.002, 0.257]
    """
    V = mat.shape[0]
    finite = np.isfinite(mat).all(axis=1) if finite is None else finite  # (V,)
    ref = np.array(sorted({int(i) for i in reference if 0 <= int(i) < V and finite[int(i)]}), dtype=np.int64)
    values: dict[str, np.ndarray] = {}
    component = None
    if ref.size:
        p, component = first_component(mat, finite)
        values.update(_distances(mat, finite, ref, p))
    elif input_norms is None:
        raise ValueError("no reference row to compare to: give known-unused ids, or the input norms of an untied "
                         "model")
    if input_norms is not None:
        norms = np.full(V, np.nan)  # (V,)
        n = min(V, len(input_norms))
        norms[:n] = input_norms[:n]
        values[FALLBACK] = norms
    return Indicators(values=values, main=MAIN if ref.size else FALLBACK, reference=tuple(ref.tolist()),
                      component=component, left_out=tuple(np.flatnonzero(~finite).tolist()))


def threshold_and_candidates(main: np.ndarray, population: Sequence[int], eligible: Sequence[int],
                             percentile: float) -> tuple[float, tuple[int, ...]]:
    """magikarp/utils.py, ``candidates_for_verification``: the threshold and the ids at or under it.

    ``threshold = np.percentile(main[population], percentile)`` (linear
    interpolation, NumPy's default); candidates are the ``eligible`` ids whose
    ``main`` is at most the threshold, sorted by ``main`` (then by id). NaN
    values are left out of both.

    >>> threshold_and_candidates(np.array([0.1, 0.5, 0.9, 0.3]), [0, 1, 2, 3], [0, 1, 2, 3], 50.0)
    (0.4, (0, 3))
    """
    values = main[np.asarray(list(population), dtype=np.int64)]
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), ()
    threshold = float(np.percentile(values, percentile))
    found = [int(i) for i in eligible if np.isfinite(main[i]) and main[i] <= threshold]
    return threshold, tuple(sorted(found, key=lambda i: (main[i], i)))


# -- the first principal component -------------------------------------------------------

def first_component(mat: np.ndarray, finite: np.ndarray) -> tuple[np.ndarray, FirstComponent]:
    """The first principal component (D,) of the finite rows of ``mat`` (centred, as scikit-learn's PCA)."""
    V, D = mat.shape
    mean = _mean(mat, finite)  # (D,)
    if V * D * D <= EXACT_WORK:
        return _exact_component(mat, finite, mean)
    return _iterated_component(mat, finite, mean)


def _exact_component(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, FirstComponent]:
    """The top eigenvector of the covariance (D, D), summed block by block in float64."""
    D = mat.shape[1]
    cov = np.zeros((D, D))  # (D, D)
    for rows in _blocks(mat, finite):
        rows -= mean
        cov += rows.T @ rows
    values, vectors = np.linalg.eigh(cov)  # ascending
    p = vectors[:, -1]  # (D,)
    residual = float(np.linalg.norm(cov @ p - values[-1] * p) / max(values[-1], np.finfo(float).tiny))
    share = float(values[-1] / max(np.trace(cov), np.finfo(float).tiny))
    return p, FirstComponent("eigh", 0, residual, share, True)


def _iterated_component(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, FirstComponent]:
    """Block subspace iteration on the covariance, one pass over the table per step (two products)."""
    D = mat.shape[1]
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((D, SUBSPACE)))  # (D, k) a fixed start
    trace = sum(float(np.einsum("ij,ij->", rows - mean, rows - mean)) for rows in _blocks(mat, finite))
    p, value, residual, step = Q[:, 0], 0.0, float("inf"), 0
    for step in range(1, MAX_ITERATIONS + 1):
        Z = _covariance_times(mat, finite, mean, Q)  # (D, k) = C Q
        H = Q.T @ Z  # (k, k)
        values, vectors = np.linalg.eigh((H + H.T) / 2)
        w = vectors[:, -1]  # (k,) the top Ritz vector's coordinates
        value = float(values[-1])
        p = Q @ w  # (D,)
        residual = float(np.linalg.norm(Z @ w - value * p) / max(value, np.finfo(float).tiny))
        if residual < TOLERANCE:
            break
        Q, _ = np.linalg.qr(Z)
    share = value / max(trace, np.finfo(float).tiny)
    return p / np.linalg.norm(p), FirstComponent("subspace iteration", step, residual, share, residual < TOLERANCE)


def _covariance_times(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``(X - mean).T @ (X - mean) @ Q`` over the finite rows, in the table's float32 (float64 for float64)."""
    dtype = np.float64 if mat.dtype == np.float64 else np.float32
    Qd, shift = Q.astype(dtype), (mean @ Q).astype(dtype)  # (D, k), (k,)
    Z = np.zeros(Q.shape)  # (D, k)
    sums = np.zeros(Q.shape[1])  # (k,) the sum of the rows of Y: 0 up to rounding
    for start, stop in _spans(mat.shape[0], mat.shape[1]):
        keep = finite[start:stop]
        rows = mat[start:stop][keep].astype(dtype, copy=False)  # (b, D)
        Y = rows @ Qd - shift  # (b, k) (X - mean) Q
        Z += rows.T @ Y
        sums += Y.sum(axis=0, dtype=np.float64)
    return Z - np.outer(mean, sums)  # (X - mean).T Y = X.T Y - mean (1.T Y)


# -- the distances ----------------------------------------------------------------------

def _distances(mat: np.ndarray, finite: np.ndarray, ref: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """magikarp/utils.py, ``embedding_distance_metrics``, a block of rows at a time in float64."""
    V = mat.shape[0]
    mean_row = _mean(mat, finite)  # (D,) mean of every (finite) row
    m = mat[ref].astype(np.float64).mean(axis=0)  # (D,) mean of the reference rows
    m_without_pc = m - (m @ p) * p  # (D,) = mean of the reference rows of mat - outer(mat @ p, p)
    m_without_mean = m - mean_row  # (D,) = mean of the reference rows of mat - mean_row
    out = {name: np.full(V, np.nan) for name in INDICATORS[:4]}
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite rows: their NaN is set below
        for start, stop in _spans(V, mat.shape[1]):
            _block_distances(mat, start, stop, p, m, m_without_pc, mean_row, m_without_mean, out)
    for values in out.values():
        values[~finite] = np.nan
    return out


def _block_distances(mat: np.ndarray, start: int, stop: int, p: np.ndarray, m: np.ndarray, m_without_pc: np.ndarray,
                     mean_row: np.ndarray, m_without_mean: np.ndarray, out: dict[str, np.ndarray]) -> None:
    """The four distances of rows ``start:stop``, written into ``out``."""
    rows = mat[start:stop].astype(np.float64)  # (b, D)
    part = slice(start, stop)
    out["cosine_distance"][part] = _cosine_distance(rows, m)
    out["l2_distance"][part] = np.sqrt(np.einsum("ij,ij->i", rows - m, rows - m))
    without_pc = rows - np.outer(rows @ p, p)  # (b, D)
    out[MAIN][part] = _cosine_distance(without_pc, m_without_pc)
    rows -= mean_row  # (b, D) centred on the mean of every row
    out["cosine_distance_without_mean"][part] = _cosine_distance(rows, m_without_mean)


def _cosine_distance(rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """magikarp/utils.py, ``cosine_distance``: ``1 - rows @ v / clip(||rows|| ||v||, min=1e-6)`` (b,)."""
    with np.errstate(invalid="ignore", over="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows)) * np.linalg.norm(v)  # (b,)
        return 1 - (rows @ v) / np.clip(norms, COSINE_CLIP, None)


def _mean(mat: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """The mean (D,) of the finite rows, summed in float64."""
    total, n = np.zeros(mat.shape[1]), 0
    for rows in _blocks(mat, finite):
        total += rows.sum(axis=0)
        n += len(rows)
    return total / max(n, 1)


def _blocks(mat: np.ndarray, finite: np.ndarray):
    """The finite rows of ``mat``, a block at a time, as fresh float64 arrays (b, D)."""
    for start, stop in _spans(mat.shape[0], mat.shape[1]):
        yield mat[start:stop][finite[start:stop]].astype(np.float64)


def _spans(V: int, D: int) -> list[tuple[int, int]]:
    block = max(1, BLOCK_VALUES // max(D, 1))
    return [(start, min(start + block, V)) for start in range(0, V, block)]
