"""Exact top-k nearest tokens by cosine similarity or dot product.

The rule every engine keeps (``embed.nearest_by_cosine``): the k ids with the
largest score, best first, equal scores ordered by the smaller id; the cosine
of a zero-length vector is 0.0.

How ``search`` finds them, for each block of queries:

1. *Screen.* A float32 GEMM scores the queries against one block of vocabulary
   rows at a time: ``S = Q_blk @ W_blk.T  # (n, v)``.
2. *Filter.* Each query keeps a small pool of candidates and the k-th best
   GEMM score among them. Rounding moves a GEMM score by at most ``eps``
   (``precision.margin``), so an entry more than ``2 * eps`` below that k-th best is
   beaten by k others in exact scores too: only the entries of ``S`` at or
   above the bar are looked at again. On real tables that is a few per query
   per block, so the selection costs one compare over the block instead of a
   partition of every row of V scores.
3. *Rescore.* At the end the pooled candidates are scored again in float64
   the way the reference scores them (``dot``, or ``dot / (|q| * |w|)``), and
   sorted by ``(-score, id)``. Identical rows get bit-identical scores, so
   exact ties are ordered by id, which GEMM scores (and faiss, ``torch.topk``,
   ``argpartition``) do not guarantee.

Blocks cover both queries and vocabulary rows, so the working memory stays
under ``memory`` bytes whatever N and V are (``plan.plan_search`` counts the
blocks and every array of size V or N; the table and its codes are its
resident cost, outside the budget). Blocks of queries run on one thread per core, each with a one-thread GEMM
(``threads``), so the filter keeps every core busy too, not only the GEMM.

Where the table's integer codes are at hand and the CPU multiplies them fast
(AVX2), steps 1-2 run on the codes instead (``coded_scan``): a compiled kernel
scores int16 codes and keeps only the rows whose certified upper bound
reaches each query's k-th best lower bound; step 3 is the same. With a torch
``device`` (a GPU), steps 1-2 run with torch there (``torch_screen``) and step
3 on the CPU as always. ``cluster`` runs this whole search on the workers of a
Dask cluster, a block of queries per task.

This module checks the input and walks the blocks of queries; the stages live
beside it: ``plan`` (block sizes and workers for a memory budget), ``scan``
(steps 1-3 on one block of queries), ``coded_scan`` and ``codes`` (the
integer screen and its bound), ``capability`` (which screen runs), ``rescore``
(step 3), ``pool`` (the candidate pool),
``precision`` (the GEMM's dtype, its rounding margin, float64's range) and
``threads`` (where blocks of queries run).

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import ChoiceError, ShapeError, SizeError
from .capability import choose_screen
from .codes import RowCodes, encode_rows
from .coded_scan import CodedTable
from .lengths import inverse_norms, vector_norms
from .plan import NORMS_BLOCK, plan_search
from .precision import check_dot_range
from .scan import search_block
from .threads import block_runner, worker_count

__all__ = ["Neighbors", "search", "check_k", "check_queries", "METRICS", "DEFAULT_MEMORY"]

METRICS = ("cosine", "dot")
DEFAULT_MEMORY = 256 * 2**20  # bytes of working memory for one search


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
    Q: np.ndarray | None,
    k: int,
    metric: str,
    *,
    exclude: np.ndarray | None = None,
    row_norms: np.ndarray | None = None,
    memory: int = DEFAULT_MEMORY,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    codes: RowCodes | None = None,
    screen: str = "auto",
    device: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``Q @ W.T`` (dot) or of the cosine, with the tie rule.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
        The table; never changed, never copied whole.
    Q : np.ndarray, shape (N, D), floating, or None
        Query vectors, finite. ``None`` queries the rows ``W[exclude]``
        themselves (queries by id), gathered a block at a time.
    k : int
        Neighbours per query, ``1 <= k <= V`` (``V - 1`` with ``exclude``).
    metric : {"cosine", "dot"}
    exclude : np.ndarray, shape (N,), int64, optional
        One id per query to leave out (the query's own id), each in
        ``[0, V)``. Nothing else is left out: a duplicate row under another
        id stays in.
    row_norms : np.ndarray, shape (V,), float64, optional
        Lengths of the rows of W (``vector_norms(W)``); computed if not given.
    memory : int
        Working memory budget in bytes: every array the search allocates
        (lengths, inverse lengths, per-row terms, blocks; ``plan.plan_search``)
        but the outputs (N, K); the table and its codes are the table's
        resident cost, not counted.
    workers : int, optional
        Threads running blocks of queries at once, each with a one-thread
        GEMM (``threadpoolctl`` sets it); by default one per available core,
        or 1 without ``threadpoolctl``. The result does not depend on it.
    progress : callable, optional
        Called with the number of queries finished after each block of queries.
    codes : RowCodes, optional
        The table's integer codes (``codes.encode_rows(W)``, built once per
        table, e.g. by ``EmbeddingTable.codes``): with them, ``"auto"`` runs
        the integer screen where this CPU multiplies them fast.
    screen : {"auto", "int16", "float"}
        How candidates are found (``capability.choose_screen``): the integer
        screen's certified bounds (``coded_scan``) or the float GEMM's
        rounding margin (``scan``). The result does not depend on it.
    device : str, optional
        A torch device (``"cpu"``, ``"cuda"``, ``"cuda:N"``): the products and
        the filter (steps 1-2) run with torch there, TF32 off; survivors are
        rescored on the CPU as without it (``torch_screen``), so the result
        is the same. Blocks of queries then run one at a time (torch
        parallelises each product). ``None``: NumPy on the CPU.

    Returns
    -------
    ids : np.ndarray, shape (N, K), int64
        Best first; equal scores by the smaller id. A zero query scores 0.0
        against every row, so its list is the smallest ids.
    scores : np.ndarray, shape (N, K), float64
        ``dot(q, w)``, or ``dot(q, w) / (|q| * |w|)`` clipped to [-1, 1] and
        0.0 where either length is 0; never NaN.

    Raises
    ------
    ValueError
        For an unknown metric, k out of range (a one-row table has no
        neighbour), a query or a row with NaN or infinity, a query whose
        length is subnormal, dot products that float64 cannot rank (their
        ``|q| |w|`` above about 2e307 or below 1e-280, the query's own row
        aside; ``precision.check_dot_range``), an
        unknown screen, or ``screen="int16"`` on lengths outside [1e-15, 1e15].
    BudgetError
        (a ``ValueError``) for a budget below one query against K + 1 rows;
        its ``minimum`` is the smallest that works, named in the message.
    ShapeError
        (a ``ValueError``) if Q is not (N, D), exclude is not (N,) ids, or
        the codes are not those of a (V, D) table.
    MissingExtraError
        (an ``ImportError``) for ``screen="int16"`` without numba, or a device without torch.
    ChoiceError
        (a ``ValueError``) for an unknown device, a CUDA device torch does
        not see, or ``screen="int16"`` with a device.

    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> search(W, np.array([[0.0, 1.0]]), 3, "dot")[0].tolist()
    [[1, 2, 0]]
    """
    N, V, D = _check(W, Q, k, metric, exclude)
    norms_given = row_norms is not None
    if row_norms is None:
        row_norms = vector_norms(W, block_bytes=NORMS_BLOCK)
    if not np.isfinite(row_norms).all():  # a NaN or infinite entry makes its row's length so
        raise ValueError(f"row {int(np.flatnonzero(~np.isfinite(row_norms))[0])} of the table contains NaN or infinity")
    q_norms = row_norms[exclude] if Q is None else vector_norms(np.asarray(Q), block_bytes=NORMS_BLOCK)  # (N,)
    check_queries(q_norms, row_norms, metric, exclude)
    torch_device, matmul = _device(device, screen)
    on_torch = torch_device is not None  # the float screen, with torch; torch parallelises each product itself
    plan = plan_search(V, D, k, metric, memory, q_norms=q_norms, row_norms=row_norms, table_dtype=W.dtype,
                       by_id=Q is None, norms_given=norms_given, codes_given=codes is not None and not on_torch,
                       screen="float" if on_torch else screen,
                       workers=1 if on_torch else worker_count(workers))  # counts every array below but the outputs
    dtype = np.float32 if plan.itemsize == 4 else np.float64
    coded = None if plan.screen == "float" else _coded_table(W, codes, metric, row_norms)
    ids = np.empty((N, k), dtype=np.int64)
    scores = np.empty((N, k), dtype=np.float64)
    inv_norms = inverse_norms(row_norms) if metric == "cosine" and coded is None else None  # (V,) float screen only

    def one_block(start: int) -> int:
        stop = min(N, start + plan.queries)
        excl = None if exclude is None else exclude[start:stop]
        block = W[excl] if Q is None else Q[start:stop]  # (n, D)
        ids[start:stop], scores[start:stop] = search_block(W, block, k, metric, excl, row_norms, inv_norms,
                                                           dtype, plan, coded, torch_device)
        return stop - start

    with matmul, block_runner(plan.workers) as run:
        for n_done in run(one_block, range(0, N, plan.queries)):
            if progress is not None:
                progress(n_done)
    if N and ids.max() >= V:  # an empty slot survived: never hand out an id that does not exist
        raise FloatingPointError("fewer than k rows got a finite score; the table's values are out of range")
    return ids, scores


def check_queries(q_norms: np.ndarray, row_norms: np.ndarray, metric: str, exclude: np.ndarray | None = None) -> None:
    """Refuse queries that ``search`` cannot rank, by their lengths: what it checks before any block runs.

    A caller that searches its queries a block at a time checks them all
    first, so that an error comes before any list and names the query's
    place among all of them, not within its block.

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
        For a length that is subnormal (too imprecise to divide by), or, for
        the dot product, products float64 cannot rank
        (``precision.check_dot_range``); each names the query.

    >>> check_queries(np.array([1.0, 2.0]), np.array([1.0, 3.0]), "dot")
    """
    short = np.flatnonzero((q_norms > 0) & (q_norms < np.finfo(np.float64).tiny))
    if short.size:
        raise ValueError(f"query vector {int(short[0])} is too short for float64: its length "
                         f"{q_norms[short[0]]:.3g} is subnormal, too imprecise to divide by")
    if metric == "dot":
        check_dot_range(q_norms, row_norms, exclude)


def _device(device: str | None, screen: str) -> tuple[Any, Any]:
    """The torch device and the context its products run in (TF32 off), or (None, a null context)."""
    if device is None:
        return None, contextlib.nullcontext()
    from .torch_screen import exact_matmul, resolve_device  # torch only where a device was asked for

    torch_device = resolve_device(device)
    if screen != "int16":
        choose_screen(screen, codes_given=False, fits=True)  # refuses an unknown screen
    else:
        raise ChoiceError(f"screen='int16' runs on the CPU's integer kernel, not on device {device!r}",
                          parameter="screen", value=screen, expected="'auto' or 'float' with a device")
    return torch_device, exact_matmul()


def _coded_table(W: np.ndarray, codes: RowCodes | None, metric: str, row_norms: np.ndarray) -> CodedTable:
    """The codes and bound terms of the integer screen (the codes built where not given)."""
    if codes is None:
        codes = encode_rows(W, row_norms=row_norms)
    if (codes.V, codes.D) != W.shape:
        raise ShapeError(f"codes of a ({codes.V}, {codes.D}) table given for a table of shape {W.shape}")
    return CodedTable.build(codes, row_norms, metric)


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


def _check(W: np.ndarray, Q: np.ndarray | None, k: int, metric: str, exclude: np.ndarray | None) -> tuple[int, int, int]:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}: expected one of {', '.join(METRICS)}")
    V, D = W.shape
    if Q is None and exclude is None:
        raise ValueError("give query vectors Q, or the query ids as exclude")
    if Q is not None and (Q.ndim != 2 or Q.shape[1] != D):
        raise ShapeError(f"queries have shape {Q.shape}, expected (N, D) with D={D}")
    N = len(exclude) if Q is None else Q.shape[0]
    if exclude is not None and (np.shape(exclude) != (N,) or (N and not 0 <= exclude.min() <= exclude.max() < V)):
        raise ShapeError(f"exclude must hold one id in [0, {V}) per query, got shape {np.shape(exclude)}")
    limit = V if exclude is None else V - 1
    if limit < 1:
        raise SizeError("a table with one row has no other token to list", parameter="k", value=k,
                        expected="a table of at least two rows (this one has V=1)")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= limit:
        bound = _k_bound(limit, "V" if exclude is None else "V-1 (the query itself is left out)")
        raise SizeError(f"k={k!r} is out of range: expected an int from 1 to {bound}", parameter="k", value=k,
                        expected=f"an int from 1 to {bound}")
    return N, V, D
