"""What the front door refuses before any search: metrics, k, query ids, query vectors, lengths.

``search.Search`` makes every check here once, when it is made, so that an
error comes before any list and names the query's place among all of them;
the rooms behind it (``per_query``, ``self_join``, ``cluster``, the screens)
take checked input and check nothing again. ``check_k`` is also what a
measurement calls for a k of its own that no search takes as is (``compress``
compares k of a longer list).

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ...errors import ChoiceError, ShapeError, SizeError, TokenIdError
from .defaults import METRICS
from .precision import check_dot_range

__all__ = ["check_metrics", "check_k", "check_ids", "check_vectors", "check_queries", "check_rows"]


def check_metrics(metrics: str | Iterable[str]) -> tuple[str, ...]:
    """The metrics as a tuple, each one of ``METRICS`` and at most once; a string is one metric.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for none, an unknown metric or one given twice; names it.

    >>> check_metrics("dot"), check_metrics(["cosine", "dot"])
    (('dot',), ('cosine', 'dot'))
    """
    chosen = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    expected = f"one or both of {', '.join(METRICS)}, each once"
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise ChoiceError(f"unknown metric {unknown[0]!r}: expected one of {', '.join(METRICS)}", parameter="metrics",
                          value=unknown[0], expected=expected)
    if not chosen or len(set(chosen)) != len(chosen):
        raise ChoiceError(f"metrics {list(chosen)!r}: expected {expected}", parameter="metrics",
                          value=",".join(chosen), expected=expected)
    return chosen


def check_k(k: Any, limit: int, what: str) -> None:
    """Refuse a k that is not an int in ``[1, limit]``, before a table searches.

    Parameters
    ----------
    k : int
        Neighbours per query.
    limit : int
        The largest k: V, or V - 1 for queries by id (the query is left out).
    what : str
        How the message names ``limit`` (``"V"``, ``"V-1 (the query itself is left out)"``); the
        message puts the number first: "from 1 to 511 (V-1: the query itself is left out)".

    Raises
    ------
    TypeError
        If k is not an int (a bool included).
    SizeError
        (a ``ValueError``) if k is outside ``[1, limit]``, or the table has one row.

    >>> check_k(3, 5, "V")
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, got {k!r}")
    if limit < 1:
        raise SizeError(f"k={k}: a table with one row has no other token to list", parameter="k", value=k,
                        expected="a table of at least two rows (this one has V=1)")
    if not 1 <= k <= limit:
        bound = _k_bound(limit, what)
        raise SizeError(f"k={k} is out of range: expected an int from 1 to {bound}", parameter="k", value=k,
                        expected=f"an int from 1 to {bound}")


def _k_bound(limit: int, what: str) -> str:
    """(511, "V-1 (the query itself is left out)") -> "511 (V-1: the query itself is left out)": the number first."""
    name, _, note = what.partition(" (")
    return f"{limit} ({name}: {note[:-1]})" if note.endswith(")") else f"{limit} ({what})"


def check_ids(ids: Any, V: int) -> np.ndarray:
    """Query ids as a flat int64 array (N,), each in ``[0, V)``: a negative id is out of range, never from the end.

    Raises
    ------
    TypeError
        For ids that are not integers (bools included).
    ShapeError
        (a ``ValueError``) for ids that are not one flat list.
    TokenIdError
        (an ``IndexError``) naming the smallest or largest id when one is outside ``[0, V)``.

    >>> check_ids([2, 0], 3).tolist()
    [2, 0]
    """
    arr = np.asarray(ids)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"query ids must be ints, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ShapeError(f"query ids must be one flat list (N,), got shape {arr.shape}")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= V:
            raise TokenIdError(f"token id {int(lo if lo < 0 else hi)} is out of range for V={V}")
    return arr.astype(np.int64, copy=False)


def check_vectors(vectors: Any, D: int) -> np.ndarray:
    """Query vectors (D,) or (N, D) as the float64 array (N, D) a search takes, checked.

    Raises
    ------
    ShapeError
        (a ``ValueError``) for vectors whose width is not D; names both.
    ValueError
        For a vector with NaN or infinity (names the first such row).

    >>> check_vectors([1, 0], 2).shape
    (1, 2)
    """
    Q = np.asarray(vectors, dtype=np.float64)
    if Q.ndim == 1:
        Q = Q[None, :]  # (1, D)
    if Q.ndim != 2 or Q.shape[1] != D:
        raise ShapeError(f"query vectors have shape {np.shape(vectors)}, expected (D,) or (N, D) with D={D}")
    bad = np.flatnonzero(~np.isfinite(Q).all(axis=1))
    if bad.size:
        raise ValueError(f"query vector {int(bad[0])} contains NaN or infinity")
    return Q


def check_rows(row_norms: np.ndarray) -> None:
    """Refuse a table the search cannot rank, seen in its row lengths (V,) float64; names the first such row.

    A NaN or infinite entry (or a length past float64's range) makes its row's
    length non-finite; a nonzero length below float64's smallest normal number
    is too imprecise to divide by (``EmbeddingTable`` refuses both rows when
    it is made; a plain array meets the same rule here).

    Raises
    ------
    ValueError
        Naming the row.

    >>> check_rows(np.array([1.0, 0.0]))
    """
    if not np.isfinite(row_norms).all():  # a NaN or infinite entry makes its row's length so
        raise ValueError(f"row {int(np.flatnonzero(~np.isfinite(row_norms))[0])} of the table contains NaN or "
                         "infinity, or its length overflows float64")
    short = np.flatnonzero((row_norms > 0) & (row_norms < np.finfo(np.float64).tiny))
    if short.size:
        raise ValueError(f"row {int(short[0])} of the table is too short for float64: its length "
                         f"{row_norms[short[0]]:.3g} is subnormal, too imprecise to divide by")


def check_queries(q_norms: np.ndarray, row_norms: np.ndarray, metric: str, exclude: np.ndarray | None = None) -> None:
    """Refuse queries that a search cannot rank, by their lengths.

    Parameters
    ----------
    q_norms : np.ndarray, shape (N,), float64
        The queries' lengths.
    row_norms : np.ndarray, shape (V,), float64
        The table's row lengths.
    metric : {"cosine", "dot"}
    exclude : np.ndarray, shape (N,), int64, optional
        The queries' own ids, for queries by id.

    Raises
    ------
    ValueError
        For a length past float64's range (it overflows), a length that is
        subnormal (too imprecise to divide by), or, for
        the dot product, products float64 cannot rank
        (``precision.check_dot_range``); each names the query.

    >>> check_queries(np.array([1.0, 2.0]), np.array([1.0, 3.0]), "dot")
    """
    long = np.flatnonzero(~np.isfinite(q_norms))
    if long.size:  # a length past float64's largest number: its unit vector would be 0, its products inf
        raise ValueError(f"query vector {int(long[0])} is too long for float64: its length exceeds "
                         f"{np.finfo(np.float64).max:.3g}")
    short = np.flatnonzero((q_norms > 0) & (q_norms < np.finfo(np.float64).tiny))
    if short.size:
        raise ValueError(f"query vector {int(short[0])} is too short for float64: its length "
                         f"{q_norms[short[0]]:.3g} is subnormal, too imprecise to divide by")
    if metric == "dot":
        check_dot_range(q_norms, row_norms, exclude)
