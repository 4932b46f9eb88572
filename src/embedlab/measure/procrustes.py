"""Orthogonal Procrustes: the rotation that best aligns one table's rows to another's, and each row's drift.

Two tables trained apart (two seeds, a model and its fine-tune, a merge) can hold the same geometry turned
in space: their coordinates differ everywhere while every cosine between rows is kept. Orthogonal
Procrustes (Schönemann 1966) finds the orthogonal map ``R`` (D, D) that brings B's rows closest to A's,

    R = argmin ||B R - A||_F  over  R^T R = I,   R = U V^T  where  U S V^T = svd(B^T A)

(scipy's ``orthogonal_procrustes(B, A)``; Hamilton et al. 2016 align word vectors of two decades this way).
Optionally both tables are centred on their mean row first, and B is scaled by ``s = trace(S) / ||B||_F^2``
(the scale that minimises the residual once ``R`` is fixed). A few rows that moved far on their own
(a fine-tune's new tokens, a merge's replaced rows) tilt a least-squares fit, so that rows which did
not move at all come out "drifted": where some rows' residuals lie beyond the median + 10 MAD
(``TRIM_MADS``) of all the residuals, and they are at most a tenth of the rows, the map is fitted
once more without them (``Alignment.fitted``), and every row is measured with that map. Each row's aligned cosine
``cos(a_i, s (b_i - mu_B) R + mu_A)`` is 1 where the row only turned with the rest, lower where it
moved on its own: the rows that drifted most come first.

Glossary: ``V`` vocabulary size, ``D`` model width, ``n`` rows shared by the two tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..engine.row_blocks import row_edges

__all__ = ["Alignment", "align", "TRIM_MADS"]

TRIM_MADS = 10  # residuals beyond the median + this many MADs are left out of a second fit


@dataclass(frozen=True)
class Alignment:
    """B aligned to A on their shared rows.

    Attributes
    ----------
    rotation : np.ndarray, shape (D, D), float64
        The orthogonal map ``R``: ``s (B - mu_B) R + mu_A`` approximates A.
    scale : float
        ``s`` (1.0 unless ``scale=True``).
    mean_a, mean_b : np.ndarray, shape (D,), float64
        The mean rows subtracted (zeros unless ``center=True``).
    cosines : np.ndarray, shape (n,), float64
        Each shared row's aligned cosine, in [-1, 1]; 0.0 where a row has length 0 (the reference's rule).
    residuals : np.ndarray, shape (n,), float64
        ``||a_i - aligned b_i||``, in the table's units.
    center, scaled : bool
        The options the map was fitted with.
    fitted : int
        Rows the map was fitted on: all n, or fewer where rows far off the first fit were left out.
    """

    rotation: np.ndarray
    scale: float
    mean_a: np.ndarray
    mean_b: np.ndarray
    cosines: np.ndarray
    residuals: np.ndarray
    center: bool
    scaled: bool
    fitted: int = 0

    @property
    def residual(self) -> float:
        """``||A - aligned B||_F`` over the shared rows."""
        return float(np.sqrt(np.sum(self.residuals ** 2)))


def align(A: Any, B: Any, *, center: bool = False, scale: bool = False, block: int = 65536) -> Alignment:
    """Align B's rows to A's with the orthogonal map of least squares (orthogonal Procrustes).

    Parameters
    ----------
    A, B : np.ndarray, shape (n, D), floating, or anything with ``shape`` whose row slices are arrays
        Row ``i`` of A and row ``i`` of B are the same token (the shared rows, in the same order).
    center : bool
        Subtract each table's mean row first (the map then turns the rows about their means).
    scale : bool
        Also fit the one factor ``s`` that best scales B to A after the rotation.
    block : int
        Rows per block of the sums: the work holds a few (block, D) float64 arrays, never (n, D).

    Returns
    -------
    Alignment

    Raises
    ------
    ShapeError
        (a ``ValueError``) for tables that are not 2-D, of different shapes, or without rows.

    >>> A = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    >>> Q = np.array([[0.0, -1.0], [1.0, 0.0]])  # a quarter turn
    >>> a = align(A, A @ Q.T)
    >>> np.allclose(a.rotation, Q), np.allclose(a.cosines, 1.0)
    (True, True)
    """
    if len(A.shape) != 2 or tuple(A.shape) != tuple(B.shape) or A.shape[0] < 1:
        raise ShapeError(f"Procrustes needs two tables of the same shape (n, D) with n >= 1, got {tuple(A.shape)} and "
                         f"{tuple(B.shape)}")
    n, D = A.shape
    edges = row_edges(n, block)
    mean_a = _mean(A, edges) if center else np.zeros(D)  # (D,)
    mean_b = _mean(B, edges) if center else np.zeros(D)  # (D,)
    R, s = _fit(A, B, edges, mean_a, mean_b, scale, keep=None)
    cosines, residuals = _measure(A, B, edges, R, s, mean_a, mean_b)
    median = float(np.median(residuals))
    mad = float(np.median(np.abs(residuals - median)))
    far = residuals > median + TRIM_MADS * mad  # (n,) rows that moved on their own, far off the first fit
    fitted = n
    if mad > 0 and 0 < int(far.sum()) <= n // 10:
        R, s = _fit(A, B, edges, mean_a, mean_b, scale, keep=~far)
        cosines, residuals = _measure(A, B, edges, R, s, mean_a, mean_b)
        fitted = n - int(far.sum())
    return Alignment(rotation=R, scale=s, mean_a=mean_a, mean_b=mean_b, cosines=cosines, residuals=residuals,
                     center=center, scaled=scale, fitted=fitted)


def _fit(A: Any, B: Any, edges: list[tuple[int, int]], mean_a: np.ndarray, mean_b: np.ndarray, scale: bool,
         keep: np.ndarray | None) -> tuple[np.ndarray, float]:
    """The map R (D, D) and scale s of least squares over the rows ``keep`` (n,) bool (all where None)."""
    D = len(mean_a)
    M = np.zeros((D, D))  # B^T A over the centred rows
    b_energy = 0.0  # ||B - mu_B||_F^2
    for start, stop in edges:
        a = np.asarray(A[start:stop], dtype=np.float64) - mean_a  # (m, D)
        b = np.asarray(B[start:stop], dtype=np.float64) - mean_b  # (m, D)
        if keep is not None:
            a, b = a[keep[start:stop]], b[keep[start:stop]]
        M += b.T @ a
        b_energy += float(np.sum(b * b))
    U, S, Vt = np.linalg.svd(M)  # M = U S V^T
    return U @ Vt, (float(S.sum() / b_energy) if scale and b_energy > 0 else 1.0)


def _measure(A: Any, B: Any, edges: list[tuple[int, int]], R: np.ndarray, s: float, mean_a: np.ndarray,
             mean_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's aligned cosine and residual (n,) under the map."""
    n = edges[-1][1]
    cosines, residuals = np.empty(n), np.empty(n)
    for start, stop in edges:
        a = np.asarray(A[start:stop], dtype=np.float64)  # (m, D)
        b = s * ((np.asarray(B[start:stop], dtype=np.float64) - mean_b) @ R) + mean_a  # (m, D) in A's frame
        residuals[start:stop] = np.linalg.norm(a - b, axis=1)
        cosines[start:stop] = _cosines(a, b)
    return cosines, residuals


def _mean(X: Any, edges: list[tuple[int, int]]) -> np.ndarray:
    """The mean row (D,) float64, summed a block at a time."""
    total = sum(np.asarray(X[a:b], dtype=np.float64).sum(axis=0) for a, b in edges)
    return total / edges[-1][1]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine (m,) clipped to [-1, 1]; 0.0 where either row has length 0."""
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)  # (m,)
    dots = np.einsum("ij,ij->i", a, b)  # (m,)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where((na > 0) & (nb > 0), dots / (na * nb), 0.0)
    return np.clip(cos, -1.0, 1.0)
