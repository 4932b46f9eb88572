"""One block of queries sent to its screen: zero queries listed at once, the others screened and rescored.

The room between the blocked searches (``per_query``, and through it each
task of ``cluster``) and the screens, which are peers behind it:
``int16_screen`` or the bf16 screen where the plan says so (``amx_screen``,
embedlab's kernel, on a CPU where it runs; else ``bf16_screen``, on a
device too), ``torch_screen`` where a device was asked for, ``float_screen``
otherwise. It imports the screens; none of them
imports it back.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``n`` queries
in a block, ``m`` of them nonzero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lengths import vector_norms
from .amx_screen import AmxScreen
from .bf16_screen import Bf16Screen
from .capability import kernel_runs
from .float_screen import FloatScreen, JointScreen
from .int16_screen import Int16Screen, Int16Table
from .plan import BlockPlan
from .torch_screen import TorchScreen

__all__ = ["search_block", "search_block_joint"]


def search_block(W: np.ndarray, Q: np.ndarray, k: int, metric: str, exclude: np.ndarray | None,
                 row_norms: np.ndarray, inv_norms: np.ndarray | None, dtype: type, plan: BlockPlan,
                 coded: Int16Table | None = None, device: Any = None,
                 bf16: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of one block of queries Q (n, D) -> ids (n, K) int64, scores (n, K) float64.

    The arguments are those the blocked search has checked and prepared: the
    table W (V, D), ``exclude`` (n,) ids or None, ``row_norms`` (V,) float64,
    ``inv_norms`` (V,) for cosine or None, the GEMM's ``dtype``, the
    ``BlockPlan``, and the table's codes with one metric's bound terms where
    the integer screen runs (``int16_screen``), or a ``torch.device`` where
    the GEMM and the filter run with torch (``torch_screen``); the float GEMM
    screen otherwise. Where ``plan.screen`` is ``"bf16"``, the bf16 screen
    runs with the table's bfloat16 rows ``bf16`` (V, D) uint16 where given:
    ``amx_screen`` where one of embedlab's bf16 kernels runs here (AMX tiles,
    or AVX512-BF16: ``capability.kernel_runs``) and no device is asked for, else ``bf16_screen`` (torch), on ``device`` or the CPU. Raises ``ValueError``
    for a query with NaN or infinity.

    >>> from embedlab.engine.neighbors.plan import plan_blocks
    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> plan = plan_blocks(3, 2, 2, 8, 2**20, n_queries=1)
    >>> search_block(W, np.array([[0.0, 1.0]]), 2, "dot", None, np.linalg.norm(W, axis=1), None,
    ...              np.float64, plan)[0].tolist()
    [[1, 2]]
    """
    q64, q_norms, ids, scores, live = _zero_queries(Q, k, exclude)
    if live.size:
        own = None if exclude is None else exclude[live]
        if plan.screen == "bf16" and device is None and kernel_runs():  # embedlab's own kernel, no torch
            screen = AmxScreen(W, q64[live], q_norms[live], own, k, metric, row_norms, inv_norms, rows=bf16)
        elif plan.screen == "bf16":
            screen = Bf16Screen(W, q64[live], q_norms[live], own, k, metric, row_norms, inv_norms, dtype, rows=bf16,
                                device=device)
        elif coded is not None:
            screen = Int16Screen(W, q64[live], q_norms[live], own, k, metric, row_norms, coded)
        elif device is not None:
            screen = TorchScreen(W, q64[live], q_norms[live], own, k, metric, row_norms, inv_norms, dtype,
                                 device=device)
        else:
            screen = FloatScreen(W, q64[live], q_norms[live], own, k, metric, row_norms, inv_norms, dtype)
        ids[live], scores[live] = screen.run(plan)
    return ids, scores + 0.0  # + 0.0 turns -0.0 into 0.0


def search_block_joint(W: np.ndarray, Q: np.ndarray, k: int, exclude: np.ndarray | None, row_norms: np.ndarray,
                       inv_norms: np.ndarray, plan: BlockPlan) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Cosine and dot top-k of one block of queries Q (n, D), n < D, from one float32 product per block of rows.

    The arguments are ``search_block``'s for cosine on the float screen in
    float32 (``inv_norms`` (V,) is cosine's). Returns ``{"cosine": (ids,
    scores), "dot": (ids, scores)}``, each (n, K) int64 and float64: what
    ``search_block`` gives for each metric alone (``float_screen.JointScreen``).
    Raises ``ValueError`` for a query with NaN or infinity.
    """
    q64, q_norms, ids, scores, live = _zero_queries(Q, k, exclude)
    found = {"cosine": (ids, scores), "dot": (ids.copy(), scores.copy())}
    if live.size:
        own = None if exclude is None else exclude[live]
        for metric, (i, s) in JointScreen(W, q64[live], q_norms[live], own, k, row_norms, inv_norms).run(plan).items():
            found[metric][0][live], found[metric][1][live] = i, s
    return {metric: (i, s + 0.0) for metric, (i, s) in found.items()}  # + 0.0 turns -0.0 into 0.0


def _zero_queries(Q: np.ndarray, k: int, exclude: np.ndarray | None):
    """The queries (n, D) in float64, their lengths (n,), ids (n, K) and scores (n, K) with the zero queries'
    lists filled in, and the indices (m,) of the nonzero ones. Raises ``ValueError`` for NaN or infinity."""
    q64 = np.asarray(Q, dtype=np.float64)  # (n, D) the queries as the rescoring sees them
    if not np.isfinite(q64).all():
        raise ValueError("query vectors contain NaN or infinity")
    q_norms = vector_norms(q64)  # (n,)
    ids = np.empty((len(q64), k), dtype=np.int64)
    scores = np.zeros((len(q64), k))
    # A zero query scores exactly 0.0 against every row: its list is the
    # smallest ids, and it takes no part in the screen.
    for i in np.flatnonzero(q_norms == 0):
        first = np.arange(k + 1)  # one spare for the left-out id
        ids[i] = (first if exclude is None else first[first != exclude[i]])[:k]
    return q64, q_norms, ids, scores, np.flatnonzero(q_norms > 0)
