"""Every row of the table as a query: which way finds each token's k nearest, and the per-query way's blocks.

The room behind the front door's second door (``search.Search.every_row``).
Three exact ways give the same lists, id for id and score for score:

- ``"self-join"`` (``self_join``): each block pair of W W^T scored once with the
  float32 GEMM, both sides fed; half the products, O(V K) pools;
- ``"bf16 self-join"`` (``bf16_join``): the same pairs scored by bfloat16
  products on the CPU's matrix units (AMX, AVX512-BF16: ``capability.fast_bf16``),
  with the bound of ``precision.bf16_value_margin``; where both metrics are
  asked and the budget holds both scans (``joint_plans``), one product per
  pair serves both (``JointLists``), the metric not yet asked for held;
- ``"per-query"`` (``per_query_blocks``): blocks of query ids, each row a query
  against the whole table (``per_query``), with the integer screen where this
  CPU runs it (``capability``), the float GEMM screen otherwise.

``choose_method`` picks from benchmarks/selfjoin.py's measurements. Where
bfloat16 products run on matrix units, the bf16 self-join (measured on an
Intel Xeon with AMX: torch's bf16 matmul did 2,048 x 16,384 x 4,096 in 329 ms
against NumPy float32's 1,353 ms; benchmarks/README.md, `hubs_llm.py`).
Elsewhere, where the integer screen runs (AVX2, numba, lengths it certifies), one query per row,
which took 0.75-0.94x the self-join's time on minilm (D = 384) and GloVe
(D = 50): it scores from int16 codes without writing a score matrix, which
the self-join's GEMM must write and filter on both sides. Elsewhere the
self-join, 1.1-1.5x faster than the float screen on both tables, where its
O(V K) pools fit ``memory``; one query per row where they do not. On a torch
device the per-query way runs, its screens there; on a Dask cluster,
``cluster``: the bf16 self-join's steps as tasks (``step_lists``), or blocks
of queries.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any, Callable, Iterator

import numpy as np

from ...errors import SizeError
from .capability import bf16_how, fast_bf16, fast_int16, int16_runs
from .codes import RowCodes
from .per_query import search_queries
from .plan import BlockPlan, PairPlan, plan_self_join
from .precision import gemm_dtype
from .bf16_join import Bf16SelfJoin, bf16_exact, share_products
from .self_join import ListBlock, SelfJoin

__all__ = ["choose_method", "method_reason", "bf16_refusal", "join_blocks", "pair_scans", "step_bars", "step_lists", "joint_plans", "JointLists", "per_query_blocks", "METHODS",
           "QUERY_BLOCK"]

METHODS = ("bf16 self-join", "self-join", "per-query")
QUERY_BLOCK = 4096  # rows per call of the per-query search: its lists are handed out this often


def choose_method(V: int, D: int, k: int, row_norms: np.ndarray, *, memory: int, workers: int,
                  screen: str = "auto", rows: np.ndarray | None = None) -> str:
    """One of ``METHODS``: the bf16 self-join on matrix units, else one query per row where the integer
    screen runs or the self-join's pools do not fit, else the (float) self-join.

    ``row_norms`` (V,) float64; ``memory`` the budget in bytes and ``workers``
    the threads, as ``plan.plan_self_join`` takes them. ``screen="bf16"``
    asks for the bf16 self-join on any CPU (torch's bfloat16 matmul runs in
    software where the units are missing: the same lists, slowly);
    ``"auto"`` takes it where ``capability.fast_bf16`` and the table ``rows``
    (V, D) hold bfloat16 values (``bf16_join.bf16_exact``: a bf16
    checkpoint's table), whose rounding is exact and whose bound is tight.
    Either needs float32 scores (every nonzero length in [1e-15, 1e15],
    ``precision.gemm_dtype``) and its plan to fit; else the choice is made
    as without it.

    Measured (benchmarks/README.md, ``hubs_llm.py``): both metrics of every
    row, 2 cores with AMX, against one query per row on the int16 screen:
    3.1x faster on a 32,000 x 1,024 bf16 table, 1.7x on minilm's rows rounded
    to bfloat16, but 0.56x on minilm's float32 rows (rounding them to
    bfloat16 costs 2**-7 |q| |w| of bound, and hundreds of rows a query pass).

    >>> choose_method(3, 3, 1, np.ones(3), memory=64, workers=1)  # pools of 3 rows do not fit in 64 bytes
    'per-query'
    """
    if bf16_refusal(V, D, k, row_norms, memory=memory, workers=workers, screen=screen, rows=rows) is None:
        return "bf16 self-join"
    if int16_runs(row_norms):
        return "per-query"
    try:
        plan_self_join(V, D, k, 8, memory, workers=workers)  # float64 scores: the larger plan
    except SizeError:
        return "per-query"
    return "self-join"


def bf16_refusal(V: int, D: int, k: int, row_norms: np.ndarray, *, memory: int, workers: int, screen: str = "auto",
                 rows: np.ndarray | None = None) -> str | None:
    """Why every row's lists do not come from the bf16 self-join, in words; None where they do (``choose_method``).

    >>> bf16_refusal(3, 3, 1, np.ones(3), memory=2**20, workers=1, screen="float")
    'screen=float asked for'
    """
    if screen not in ("auto", "bf16"):
        return f"screen={screen} asked for"
    if screen == "auto" and not fast_bf16():
        return bf16_how()
    if screen == "auto" and (rows is None or not _bf16_rows(rows)):
        return "the table's values are not bfloat16 (rounding them costs 2**-7 |q| |w| of bound)"
    if gemm_dtype(np.dtype(np.float32), "cosine", row_norms, row_norms) != np.float32:
        return "some row length is outside [1e-15, 1e15], where only float64 scores certify"
    try:
        plan_self_join(V, D, k, 4, memory, workers=workers, screen="bf16")
    except SizeError:
        return "its plan does not fit the memory budget"
    return None


def method_reason(method: str, screen: str, refusal: str | None = None) -> str:
    """Why ``choose_method`` took ``method`` for a self-join, in words, for the plan and the ``--memory`` output.

    ``screen`` is the one asked for (``"auto"``, ``"bf16"``, ``"float"``, ``"int16"``); ``refusal`` why
    the bf16 self-join was not taken (``bf16_refusal``), for a float self-join.

    >>> method_reason("self-join", "float", "screen=float asked for")
    'float GEMM self-join, each block pair once for both sides: screen=float asked for'
    """
    pairs = "each block pair once for both sides"
    if method == "bf16 self-join":
        why = ("asked for (screen=bf16)" if screen == "bf16"
               else "the table holds bfloat16 values (its rounding is exact, its bound tight)")
        return f"bf16 self-join {bf16_how()}, {pairs}: {why}"
    if screen != "auto":
        return f"float GEMM self-join, {pairs}: {refusal or f'screen={screen} asked for'}"
    int16 = ("the int16 codes' bound does not certify these row lengths" if fast_int16()
             else "no int16 screen here (it needs AVX2 and numba)")
    return f"float GEMM self-join, {pairs}: {int16}; no bf16 self-join: {refusal}"


def _bf16_rows(rows: np.ndarray) -> bool:
    return bf16_exact(rows)


def join_blocks(W: np.ndarray, k: int, metric: str, plan: PairPlan, *, row_norms: np.ndarray,
                progress: Callable[[int], None] | None = None, bf16: np.ndarray | None = None) -> Iterator[ListBlock]:
    """The self-join's lists (``self_join.self_join``'s arguments and blocks) on the plan's products.

    ``plan.screen`` ``"bf16"``: ``bf16_join`` (torch's bfloat16 matmul), on
    the table's cached bfloat16 rows ``bf16`` (V, D) uint16 where given;
    ``"float"``: ``self_join``.
    """
    return _scan(W, k, metric, row_norms, plan, bf16).run(progress)


def pair_scans(W: np.ndarray, k: int, plans: dict[str, PairPlan], row_norms: np.ndarray, *,
               share: Any = None) -> list[SelfJoin]:
    """One scan per metric of ``plans``, for steps run alone (``step_bars``, ``step_lists``): a cluster's tasks.

    The bf16 scans share one bfloat16 table and each block pair's product
    (as ``bf16_join.joint_blocks``); ``share``, an object with the
    ``exact_inputs`` and ``table`` of an earlier bf16 scan of the same W
    (``bf16_join.Bf16SelfJoin``), spares the check and the conversion of the
    table (``cluster`` keeps one per worker).
    """
    scans: list[SelfJoin] = []
    for metric, plan in plans.items():
        lead = share or next((s for s in scans if isinstance(s, Bf16SelfJoin)), None)
        scans.append(Bf16SelfJoin(W, k, metric, row_norms, plan, share=lead) if plan.screen == "bf16"
                     else _scan(W, k, metric, row_norms, plan))
    share_products([s for s in scans if isinstance(s, Bf16SelfJoin)])
    return scans


def step_bars(scans: list[SelfJoin], i: int) -> dict[str, np.ndarray]:
    """Each scan's first bars of block i's rows (``SelfJoin.block_bars``): {metric: (n,) float64}."""
    with _threads(scans):
        return {scan.metric: scan.block_bars(i) for scan in scans}


def step_lists(scans: list[SelfJoin], i: int, first: dict[str, np.ndarray],
               known: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Step i of the self-join alone: block pairs (i, j) for j >= i, each scored once, both sides fed.

    Parameters
    ----------
    scans : list of SelfJoin
        From ``pair_scans``, one per metric; their pairs run in lockstep (one
        bfloat16 product per pair for all of them).
    i : int
        The step: block i of the plan's rows, ``[a, b)``.
    first, known : dict of metric -> np.ndarray, shape (V - a,), float64
        The first bars of rows [a, V) (``step_bars``) and the exact k-th best
        score each is known to reach from other steps (-inf where unknown):
        ``SelfJoin.begin_step``.

    Returns
    -------
    dict of metric -> (rows (h,) int64, ids (h, K) int64, scores (h, K) float64)
        ``SelfJoin.end_step``: block i's rows over rows [a, V), the later
        rows over block i's rows, id V and -inf in empty slots. Merged by
        ``(-score, id)`` over steps 0 .. j (``cluster.merge_lists``), block
        j's lists are ``join_blocks``' block j, id for id and score for score:
        half the products of one query band per block, and no two steps share
        an entry.

    >>> from embedlab.engine.neighbors.plan import plan_self_join
    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> plans = {"dot": plan_self_join(3, 2, 2, 8, 2**20, block=2)}
    >>> scans = pair_scans(W, 2, plans, np.linalg.norm(W, axis=1))
    >>> rows, ids, _ = step_lists(scans, 1, {"dot": np.full(1, -np.inf)}, {"dot": np.full(1, -np.inf)})["dot"]
    >>> rows.tolist(), ids.tolist()  # row 2 has seen no other row of its block; nothing to list
    ([], [])
    """
    nb = len(scans[0].edges) - 1
    with _threads(scans):
        for scan in scans:
            scan.begin_step(i, first[scan.metric], known[scan.metric])
        for j in range(i, nb):
            for scan in scans:
                scan._pair(i, j)
        return {scan.metric: scan.end_step(i) for scan in scans}


def _threads(scans: list[SelfJoin]) -> Any:
    """torch's threads as the first bf16 scan's plan says (restored on leaving), or nothing to set."""
    bf16 = next((s for s in scans if isinstance(s, Bf16SelfJoin)), None)
    return contextlib.nullcontext() if bf16 is None else bf16._torch_threads()


def joint_plans(plans: dict[str, PairPlan], V: int, D: int, k: int, memory: int) -> dict[str, PairPlan] | None:
    """The plans of one bf16 scan for every metric (``JointLists``), where it fits ``memory``; else None.

    Needs a bf16 plan per metric, two or more, with the same blocks. Counted:
    the largest plan, the other scans' pools (their bfloat16 table is the
    first's, counted once), and the lists held for the metrics not yet
    asked for (16 bytes a neighbour, V K each). Each returned plan carries
    that total in ``bytes``.

    >>> from embedlab.engine.neighbors.plan import plan_self_join
    >>> one = plan_self_join(1000, 64, 10, 4, 2**24, screen="bf16")
    >>> joint_plans({"cosine": one, "dot": one}, 1000, 64, 10, 2**24)["dot"].bytes > one.bytes
    True
    """
    if len(plans) < 2 or any(p.screen != "bf16" for p in plans.values()) or len({p.block for p in plans.values()}) > 1:
        return None
    table = V * D * 2
    own = [p.pools - (table if p.whole else 0) for p in plans.values()]  # each scan's pools without the table
    need = max(p.bytes for p in plans.values()) + sum(own) - max(own) + (len(plans) - 1) * 16 * V * k
    if need > memory:
        return None
    return {m: replace(p, bytes=need) for m, p in plans.items()}


class JointLists:
    """Every metric's lists from one scan, handed out a metric at a time.

    ``blocks(metric)`` runs the scan and hands out that metric's blocks as
    they come, holding the others' (V, K) lists until they are asked for
    (then handed out from memory, the scan not run again). ``scan`` makes
    the scan: an iterator of ``{metric: block}`` in row order, one product
    per block pair for every metric (``bf16_join.joint_blocks`` in this
    process, ``cluster.ScatteredTable.pair_steps`` on a cluster), each
    metric's plan from ``joint_plans``.
    """

    def __init__(self, scan: Callable[[], Iterator[dict[str, ListBlock]]]) -> None:
        self.scan = scan
        self.held: dict[str, list[ListBlock]] = {}

    def blocks(self, metric: str, progress: Callable[[int], None] | None = None) -> Iterator[ListBlock]:
        if metric in self.held:
            for block in self.held.pop(metric):
                if progress is not None:
                    progress(block[1] - block[0])
                yield block
            return

        others: dict[str, list[ListBlock]] | None = None
        for out in self.scan():
            if others is None:
                others = {m: [] for m in out if m != metric}
            for m in others:
                others[m].append(out[m])
            if progress is not None:
                progress(out[metric][1] - out[metric][0])
            yield out[metric]
        self.held = others or {}  # complete: a scan stopped early holds nothing


def _scan(W: np.ndarray, k: int, metric: str, row_norms: np.ndarray, plan: PairPlan,
          bf16: np.ndarray | None = None) -> SelfJoin:
    """The scan's state for the plan's products: ``bf16_join.Bf16SelfJoin`` (on ``bf16``, the table's cached
    bfloat16 rows, where given) or ``self_join.SelfJoin``."""
    if plan.screen == "bf16":

        return Bf16SelfJoin(W, k, metric, row_norms, plan, rows=bf16)
    return SelfJoin(W, k, metric, row_norms, np.float32 if plan.itemsize == 4 else np.float64, plan)


def per_query_blocks(W: np.ndarray, k: int, metric: str, plan: BlockPlan, *, row_norms: np.ndarray,
                     codes: RowCodes | None = None, device: Any = None,
                     progress: Callable[[int], None] | None = None) -> Iterator[ListBlock]:
    """Every row's top-k by the per-query way: ``QUERY_BLOCK`` rows at a time, each leaving out its own id.

    The arguments are ``per_query.search_queries``'s, ``plan`` made for every
    row as a query; yields ``(start, stop, ids (n, K) int64, scores (n, K)
    float64)`` in order, as ``self_join`` does.

    >>> from embedlab.engine.neighbors.plan import plan_blocks
    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> plan = plan_blocks(3, 2, 2, 8, 2**20, n_queries=3)
    >>> [ids.tolist() for _, _, ids, _ in per_query_blocks(W, 2, "dot", plan, row_norms=np.linalg.norm(W, axis=1))]
    [[[1, 2], [0, 2], [1, 0]]]
    """
    V = len(W)
    for start in range(0, V, QUERY_BLOCK):
        stop = min(V, start + QUERY_BLOCK)
        ids, scores = search_queries(W, k, metric, plan, row_norms=row_norms,
                                     exclude=np.arange(start, stop, dtype=np.int64), codes=codes, device=device,
                                     progress=progress)
        yield start, stop, ids, scores
