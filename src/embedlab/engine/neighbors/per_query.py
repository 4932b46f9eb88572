"""The per-query search: blocks of queries, each against the whole table, on threads, following a plan.

What the front door (``search.Search``) runs in this process for "these
queries' k nearest" (and what every task of ``cluster`` runs on a worker, and
``every_row`` for one query per row): the queries cut into blocks of
``plan.queries``, each block sent to its screen by ``dispatch.search_block``,
``plan.workers`` blocks at a time (``threads``), with the GEMM's dtype and the
screen the plan names. Its input is the front door's, checked and planned
there (``checks``, ``plan``); nothing is checked or planned again here.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np

from ..lengths import inverse_norms
from .codes import RowCodes, encode_rows
from .dispatch import search_block, search_block_joint
from .int16_screen import Int16Table
from .plan import BlockPlan
from .threads import block_runner
from .torch_screen import exact_matmul

__all__ = ["search_queries", "search_queries_joint"]


def search_queries(W: np.ndarray, k: int, metric: str, plan: BlockPlan, *, row_norms: np.ndarray,
                   vectors: np.ndarray | None = None, exclude: np.ndarray | None = None,
                   codes: RowCodes | None = None, device: Any = None, bf16: np.ndarray | None = None,
                   progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of queries by vector or by id, a block of queries at a time, as ``plan`` cuts them.

    Parameters
    ----------
    W : np.ndarray, shape (V, D), floating
        The table; never changed, never copied whole.
    k : int
        Neighbours per query, checked (``checks.check_k``).
    metric : {"cosine", "dot"}
    plan : BlockPlan
        The plan the front door made for these queries or for more of them
        (``plan.plan_search``): its screen, GEMM dtype, blocks and workers.
    row_norms : np.ndarray, shape (V,), float64
        The rows' lengths, finite.
    vectors : np.ndarray, shape (N, D), float64, optional
        Query vectors, checked. ``None`` queries the rows ``W[exclude]``
        themselves (queries by id), gathered a block at a time.
    exclude : np.ndarray, shape (N,), int64, optional
        One id per query to leave out (the query's own id).
    codes : RowCodes, optional
        The table's integer codes, for ``plan.screen == "int16"`` (built here
        where not given, as the plan counted them).
    device : torch.device, optional
        Where the torch screen runs (``torch_screen.resolve_device``); the
        plan is then the float screen's (or the bf16 screen's), on one worker.
    bf16 : np.ndarray, shape (V, D), uint16, optional
        The table's rows in bfloat16 (``bf16_screen.bf16_rows``), for
        ``plan.screen == "bf16"``; rounded a block at a time where not given.
    progress : callable, optional
        Called with the number of queries finished after each block of queries.

    Returns
    -------
    ids : np.ndarray, shape (N, K), int64
        Best first; equal scores by the smaller id. A zero query's list is the smallest ids.
    scores : np.ndarray, shape (N, K), float64
        ``dot(q, w)``, or the cosine clipped to [-1, 1] and 0.0 where a length is 0; never NaN.

    Raises
    ------
    FloatingPointError
        Where fewer than k rows got a finite score (values out of range).

    >>> from embedlab.engine.neighbors.plan import plan_blocks
    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> plan = plan_blocks(3, 2, 3, 8, 2**20, n_queries=1)
    >>> search_queries(W, 3, "dot", plan, row_norms=np.linalg.norm(W, axis=1),
    ...                vectors=np.array([[0.0, 1.0]]))[0].tolist()
    [[1, 2, 0]]
    """
    V = len(W)
    N = len(exclude) if vectors is None else len(vectors)
    dtype = np.float32 if plan.itemsize == 4 else np.float64
    coded = _int16_table(W, codes, metric, row_norms) if plan.screen == "int16" else None
    ids = np.empty((N, k), dtype=np.int64)
    scores = np.empty((N, k), dtype=np.float64)
    inv_norms = inverse_norms(row_norms) if metric == "cosine" and coded is None else None  # (V,) float screens only

    def one_block(start: int) -> int:
        stop = min(N, start + plan.queries)
        excl = None if exclude is None else exclude[start:stop]
        block = W[excl] if vectors is None else vectors[start:stop]  # (n, D)
        ids[start:stop], scores[start:stop] = search_block(W, block, k, metric, excl, row_norms, inv_norms,
                                                           dtype, plan, coded, device,
                                                           bf16 if plan.screen == "bf16" else None)
        return stop - start

    products = contextlib.nullcontext() if device is None else exact_matmul()  # TF32, reduced sums off on a device
    with products, block_runner(plan.workers) as run:
        for n_done in run(one_block, range(0, N, plan.queries)):
            if progress is not None:
                progress(n_done)
    if N and ids.max() >= V:  # an empty slot survived: never hand out an id that does not exist
        raise FloatingPointError("fewer than k rows got a finite score; the table's values are out of range")
    return ids, scores


def search_queries_joint(W: np.ndarray, k: int, plan: BlockPlan, *, row_norms: np.ndarray,
                         vectors: np.ndarray | None = None, exclude: np.ndarray | None = None,
                         progress: Callable[[int], None] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Exact top-k of the queries by cosine and by dot from one pass over the table per block of queries.

    The arguments are ``search_queries``'s, ``plan`` cosine's on the float
    screen in float32 with blocks of fewer queries than D (the front door
    checks it: ``Search._joint_plan``). Returns ``{"cosine": (ids, scores),
    "dot": (ids, scores)}``, each (N, K) int64 and float64, list for list
    what ``search_queries`` gives for each metric
    (``dispatch.search_block_joint``). ``progress`` is called with the
    number of queries finished after each block of queries.
    """
    N = len(exclude) if vectors is None else len(vectors)
    inv_norms = inverse_norms(row_norms)  # (V,) cosine's
    found = {m: (np.empty((N, k), dtype=np.int64), np.empty((N, k), dtype=np.float64)) for m in ("cosine", "dot")}

    def one_block(start: int) -> int:
        stop = min(N, start + plan.queries)
        excl = None if exclude is None else exclude[start:stop]
        block = W[excl] if vectors is None else vectors[start:stop]  # (n, D)
        for metric, (i, s) in search_block_joint(W, block, k, excl, row_norms, inv_norms, plan).items():
            found[metric][0][start:stop], found[metric][1][start:stop] = i, s
        return stop - start

    with block_runner(plan.workers) as run:
        for n_done in run(one_block, range(0, N, plan.queries)):
            if progress is not None:
                progress(n_done)
    if N and max(ids.max() for ids, _ in found.values()) >= len(W):  # an empty slot survived
        raise FloatingPointError("fewer than k rows got a finite score; the table's values are out of range")
    return found


def _int16_table(W: np.ndarray, codes: RowCodes | None, metric: str, row_norms: np.ndarray) -> Int16Table:
    """The codes and one metric's bound terms of the integer screen (the codes built where not given)."""
    if codes is None:
        codes = encode_rows(W, row_norms=row_norms)
    return Int16Table.build(codes, row_norms, metric)
