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
(V * D * D); above, it is found by Lanczos iteration on the covariance (full
reorthogonalisation; one pass over the table per step, its products in the
table's float32), until the relative residual ``||C v - lambda v|| / lambda``
is below ``TOLERANCE``, at most ``MAX_ITERATIONS`` steps; ``FirstComponent``
says how it went. Their code hands a table this size to scikit-learn's
randomized solver, which approximates the same vector.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["INDICATORS", "MAIN", "FALLBACK", "DEFAULT_PERCENTILE", "REFERENCE_PATTERNS", "FirstComponent",
           "Indicators", "indicators", "threshold_and_candidates", "named_reference", "reference_names", "EXACT_WORK"]

MAIN = "cosine_distance_without_first_pc"
FALLBACK = "input_l2_norm"  # the main indicator of an untied model without reference rows (theirs by default)
INDICATORS = (MAIN, "cosine_distance_without_mean", "cosine_distance", "l2_distance", FALLBACK)
DEFAULT_PERCENTILE = 2.0  # magikarp/utils.py, DEFAULT_THRESHOLD_PERCENTILE
COSINE_CLIP = 1e-6  # magikarp/utils.py, cosine_distance: the denominator's floor
EXACT_WORK = 2 * 10**10  # multiply-adds (V * D * D) up to which the first component is exact
TOLERANCE, MAX_ITERATIONS = 1e-5, 60
BLOCK_VALUES = 1 << 21  # values read at a time (16 MiB as float64)
SPAN_VALUES = 1 << 26  # values per product in the Lanczos steps (256 MiB of float32: few, large products)
# Names of tokens that families reserve and never train, each as people write it: BERT's [unused0],
# Llama 3's <|reserved_special_token_0|>, Gemma's <unused0> (and <unused_0>).
REFERENCE_PATTERNS = {"[unusedN]": re.compile(r"\[unused\d+\]"),
                      "<|reserved_special_token_N|>": re.compile(r"<\|reserved_special_token_\d+\|>"),
                      "<unusedN>": re.compile(r"<unused_?\d+>")}


def named_reference(tokens: Sequence[str | None]) -> tuple[int, ...]:
    """Ids whose token matches one of ``REFERENCE_PATTERNS`` whole.

    >>> named_reference(["[PAD]", "[unused0]", "<|reserved_special_token_7|>", "<unused_3>", "unused"])
    (1, 2, 3)
    """
    return tuple(i for i, t in enumerate(tokens) if t is not None and _pattern(t) is not None)


def reference_names(tokens: Sequence[str | None], ids: Sequence[int]) -> tuple[str, ...]:
    """The patterns of ``REFERENCE_PATTERNS`` (as people write them) that the tokens of ``ids`` match, in the
    table's order: what to call a reference set found by name.

    >>> reference_names(["<|reserved_special_token_0|>", "<|reserved_special_token_1|>", "w"], [0, 1])
    ('<|reserved_special_token_N|>',)
    """
    found = {_pattern(tokens[i]) for i in ids if 0 <= i < len(tokens) and tokens[i] is not None}
    return tuple(name for name in REFERENCE_PATTERNS if name in found)


def _pattern(token: str) -> str | None:
    return next((name for name, pattern in REFERENCE_PATTERNS.items() if pattern.fullmatch(token)), None)


@dataclass(frozen=True)
class FirstComponent:
    """How the first principal component was found.

    ``method`` ``"eigh"`` (exact) or ``"Lanczos"``; ``iterations``
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
    for rows in _finite_blocks(mat, finite, np.float64, fresh=True):
        rows -= mean
        cov += rows.T @ rows
    values, vectors = np.linalg.eigh(cov)  # ascending
    p = vectors[:, -1]  # (D,)
    residual = float(np.linalg.norm(cov @ p - values[-1] * p) / max(values[-1], np.finfo(float).tiny))
    share = float(values[-1] / max(np.trace(cov), np.finfo(float).tiny))
    return p, FirstComponent("eigh", 0, residual, share, True)


def _iterated_component(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, FirstComponent]:
    """Lanczos on the covariance with full reorthogonalisation: one pass over the table per step (two
    matrix-vector products, memory-bound: a skinny matrix product costs several passes' time here)."""
    D = mat.shape[1]
    v = np.random.default_rng(0).standard_normal(D)  # (D,) a fixed start
    basis = [v / np.linalg.norm(v)]
    alphas: list[float] = []
    betas: list[float] = []
    value, residual, s = 0.0, float("inf"), np.ones(1)
    for step in range(1, min(MAX_ITERATIONS, D) + 1):
        w = _covariance_times(mat, finite, mean, basis[-1])  # (D,) C v
        alphas.append(float(w @ basis[-1]))
        B = np.array(basis)  # (j, D)
        w -= B.T @ (B @ w)  # full reorthogonalisation, twice is enough (Kahan)
        w -= B.T @ (B @ w)
        beta = float(np.linalg.norm(w))
        T = np.diag(alphas) + np.diag(betas, 1) + np.diag(betas, -1)  # (j, j) the Lanczos tridiagonal
        values, vectors = np.linalg.eigh(T)
        value, s = float(values[-1]), vectors[:, -1]
        residual = beta * abs(float(s[-1])) / max(value, np.finfo(float).tiny)  # ||C p - lambda p|| / lambda
        if residual < TOLERANCE or beta == 0.0:
            break
        betas.append(beta)
        basis.append(w / beta)
    p = np.array(basis[:len(s)]).T @ s  # (D,)
    share = value / max(_centred_trace(mat, finite, mean), np.finfo(float).tiny)
    return p / np.linalg.norm(p), FirstComponent("Lanczos", step, residual, share, residual < TOLERANCE)


def _covariance_times(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``(X - mean).T @ (X - mean) @ v`` (D,) over the finite rows: products in the table's float32
    (float64 for float64), sums in float64."""
    dtype = np.float64 if mat.dtype == np.float64 else np.float32
    vd, shift = v.astype(dtype), float(mean @ v)
    z = np.zeros(mat.shape[1])  # (D,)
    total = 0.0  # the sum of y: 0 up to rounding
    for rows in _finite_blocks(mat, finite, dtype, SPAN_VALUES):
        y = (rows @ vd).astype(np.float64) - shift  # (b,) (X - mean) v
        z += (y.astype(dtype) @ rows).astype(np.float64)
        total += float(y.sum())
    return z - total * mean  # (X - mean).T y = X.T y - mean (1.T y)


def _centred_trace(mat: np.ndarray, finite: np.ndarray, mean: np.ndarray) -> float:
    """The trace of the covariance: the sum of the squared lengths of the centred finite rows."""
    total = 0.0
    for rows in _finite_blocks(mat, finite, np.float64, fresh=True):
        rows -= mean
        total += float(np.einsum("ij,ij->", rows, rows))
    return total


# -- the distances ----------------------------------------------------------------------

def _distances(mat: np.ndarray, finite: np.ndarray, ref: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """magikarp/utils.py, ``embedding_distance_metrics``, from five dot products per row, in float64.

    With ``r`` a row, ``m`` the mean of the reference rows, ``mu`` the mean of every row and ``p`` the first
    principal component (unit length): ``r - (r.p) p`` has squared length ``|r|^2 - (r.p)^2``; ``r - mu``
    has ``|r|^2 - 2 r.mu + |mu|^2``; ``|r - m|^2 = |r|^2 - 2 r.m + |m|^2``; and each dot with a mean of
    shifted rows is the dot with the mean less the shift's. One product of each block with the five
    vectors, instead of three shifted copies of it; float64 keeps the differences exact to ~1e-8 of the
    lengths, far inside the 1e-6 the tests hold them to.
    """
    V = mat.shape[0]
    mean_row = _mean(mat, finite)  # (D,) mean of every (finite) row
    m = mat[ref].astype(np.float64).mean(axis=0)  # (D,) mean of the reference rows
    m_without_pc = m - (m @ p) * p  # (D,) = mean of the reference rows of mat - outer(mat @ p, p)
    m_without_mean = m - mean_row  # (D,) = mean of the reference rows of mat - mean_row
    vectors = np.stack([m, p, m_without_pc, mean_row, m_without_mean], axis=1)  # (D, 5)
    dots, squares = np.empty((V, 5)), np.empty(V)  # (V, 5), (V,)
    buffer = np.empty((min(V, max(1, BLOCK_VALUES // mat.shape[1])), mat.shape[1]))  # (b, D) reused
    for start, stop in _spans(V, mat.shape[1]):
        rows = buffer[:stop - start]
        np.copyto(rows, mat[start:stop])
        with np.errstate(invalid="ignore", over="ignore"):  # a non-finite row: NaN, set below
            dots[start:stop] = rows @ vectors
            squares[start:stop] = np.einsum("ij,ij->i", rows, rows)
    r_m, r_p, r_m_without_pc, r_mu, r_m_without_mean = dots.T  # (V,) each
    with np.errstate(invalid="ignore", over="ignore"):
        out = {
            MAIN: _cosine_distance(r_m_without_pc - r_p * (p @ m_without_pc), squares - r_p ** 2, m_without_pc),
            "cosine_distance_without_mean": _cosine_distance(r_m_without_mean - mean_row @ m_without_mean,
                                                             squares - 2 * r_mu + mean_row @ mean_row, m_without_mean),
            "cosine_distance": _cosine_distance(r_m, squares, m),
            "l2_distance": np.sqrt(np.maximum(squares - 2 * r_m + m @ m, 0.0)),
        }
    for values in out.values():
        values[~finite] = np.nan
    return out


def _cosine_distance(dot: np.ndarray, squares: np.ndarray, v: np.ndarray) -> np.ndarray:
    """magikarp/utils.py, ``cosine_distance``: ``1 - r.v / clip(||r|| ||v||, min=1e-6)``, from ``r.v`` and
    ``||r||^2`` (V,)."""
    norms = np.sqrt(np.maximum(squares, 0.0)) * np.linalg.norm(v)  # (V,)
    return 1 - dot / np.clip(norms, COSINE_CLIP, None)


def _mean(mat: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """The mean (D,) of the finite rows, summed in float64."""
    total, n = np.zeros(mat.shape[1]), 0
    for rows in _finite_blocks(mat, finite, mat.dtype):
        total += rows.sum(axis=0, dtype=np.float64)
        n += len(rows)
    return total / max(n, 1)


def _finite_blocks(mat: np.ndarray, finite: np.ndarray, dtype: Any, values: int = BLOCK_VALUES, *,
                   fresh: bool = False):
    """The finite rows of ``mat``, a block at a time, as ``dtype`` arrays (b, D): views of ``mat`` where
    they can be, fresh arrays (which the caller may change) with ``fresh``."""
    for start, stop in _spans(mat.shape[0], mat.shape[1], values):
        keep = finite[start:stop]
        rows = mat[start:stop] if keep.all() else mat[start:stop][keep]  # the mask makes a copy
        yield rows.astype(dtype, copy=fresh)


def _spans(V: int, D: int, values: int = BLOCK_VALUES) -> list[tuple[int, int]]:
    block = max(1, values // max(D, 1))
    return [(start, min(start + block, V)) for start in range(0, V, block)]
