"""Every row of the table as a query: the k nearest of each token, a block of rows at a time, in order.

Two exact ways give the same lists (``search``'s, id for id and score for score):

- ``"self-join"`` (``self_join``): each block pair of W W^T scored once with the
  float32 GEMM, both sides fed; half the products, O(V K) pools;
- ``"per-query"``: ``search`` over blocks of query ids, each row a query
  against the whole table, with the integer screen where this CPU runs it
  (``capability.choose_screen``), the float GEMM screen otherwise.

``"auto"`` picks from benchmarks/selfjoin.py's measurements: where the
integer screen runs (AVX2, numba, lengths it certifies), one query per row,
which took 0.75-0.94x the self-join's time on minilm (D = 384) and GloVe
(D = 50): it scores from int16 codes without writing a score matrix, which
the self-join's GEMM must write and filter on both sides. Elsewhere the
self-join, 1.1-1.5x faster than the float screen on both tables, where its
O(V K) pools fit ``memory``; one query per row where they do not.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..errors import ChoiceError, SizeError
from .capability import choose_screen
from .codes import RowCodes, codes_fit, encode_rows
from .lengths import vector_norms
from .plan import plan_self_join
from .search import DEFAULT_MEMORY, search
from .self_join import ListBlock, self_join
from .threads import worker_count

__all__ = ["scan_rows", "choose_method", "int16_runs", "METHODS"]

METHODS = ("auto", "self-join", "per-query")
_QUERY_BLOCK = 4096  # rows per search call on the per-query way: its lists are handed out this often


def scan_rows(W: np.ndarray, k: int, metric: str, *, method: str = "auto", row_norms: np.ndarray | None = None,
              codes: RowCodes | None = None, memory: int = DEFAULT_MEMORY, workers: int | None = None,
              progress: Callable[[int], None] | None = None) -> Iterator[ListBlock]:
    """The exact top-k of every row of W among the other rows, in blocks of rows, in order.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
    k : int
        ``1 <= k <= V - 1``; each row leaves out its own id.
    metric : {"cosine", "dot"}
    method : {"auto", "self-join", "per-query"}
        Which way (module docstring); the lists do not depend on it.
    row_norms : np.ndarray, shape (V,), float64, optional
    codes : RowCodes, optional
        The table's integer codes, for the per-query way's integer screen.
    memory, workers, progress
        As ``search`` (``progress`` counts rows whose lists are done).

    Yields
    ------
    start, stop, ids (n, K) int64, scores (n, K) float64
        As ``self_join``.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for an unknown method; otherwise as ``search``.
    """
    if method not in METHODS:
        raise ChoiceError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}", parameter="method",
                          value=method, expected=f"one of {', '.join(METHODS)}")
    row_norms = vector_norms(W) if row_norms is None else row_norms
    if method == "auto":
        method = choose_method(W, k, row_norms, memory=memory, workers=workers)
    if method == "self-join":
        return self_join(W, k, metric, row_norms=row_norms, memory=memory, workers=workers, progress=progress)
    if codes is None and int16_runs(row_norms):
        codes = encode_rows(W, row_norms=row_norms)  # once for the whole scan, as EmbeddingTable.codes
    return _per_query(W, k, metric, row_norms, codes, memory, workers, progress)


def choose_method(W: np.ndarray, k: int, row_norms: np.ndarray, *, memory: int = DEFAULT_MEMORY,
                  workers: int | None = None) -> str:
    """``"per-query"`` where the integer screen runs or the self-join's pools do not fit, else ``"self-join"``.

    W (V, D), row_norms (V,) float64; ``memory`` and ``workers`` as ``self_join``.

    >>> choose_method(np.eye(3), 1, np.ones(3), memory=64) # pools of 3 rows do not fit in 64 bytes
    'per-query'
    """
    V, D = W.shape
    if int16_runs(row_norms):
        return "per-query"
    try:
        plan_self_join(V, D, k, 8, memory, workers=worker_count(workers))  # float64 scores: the larger plan
    except SizeError:
        return "per-query"
    return "self-join"


def int16_runs(row_norms: np.ndarray) -> bool:
    """Whether ``search`` runs the integer screen with the rows (V,) as queries, given the table's codes.

    >>> int16_runs(np.array([1e20, 1.0]))  # a length the codes' bound does not certify
    False
    """
    return choose_screen("auto", codes_given=True, fits=codes_fit(row_norms, row_norms)) == "int16"


def _per_query(W, k, metric, row_norms, codes, memory, workers, progress) -> Iterator[ListBlock]:
    V = len(W)
    for start in range(0, V, _QUERY_BLOCK):
        stop = min(V, start + _QUERY_BLOCK)
        ids, scores = search(W, None, k, metric, exclude=np.arange(start, stop), row_norms=row_norms, memory=memory,
                             workers=workers, progress=progress, codes=codes)
        yield start, stop, ids, scores
