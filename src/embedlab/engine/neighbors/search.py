"""The front door of the k nearest: one planned search session, with a door for queries and one for every row.

``Search(table, k, metrics, ...)`` is made once per measurement. Making it
checks everything (``checks``: the metrics, k, the query ids or vectors and
their lengths), chooses the screen per the CPU and the shape (``capability``: the table's
int16 codes or bfloat16 rows are built through the table's cache where their
screen pays), plans the working memory of each metric's search (``plan``; a budget
too small for any of them is refused before any search, naming the largest
minimum) and settles where it runs: in this process on threads, with torch
on a device, or on a Dask cluster (opened at the first search, the table
scattered once for every metric, closed on leaving ``with``). Then:

- door 1, "these queries' k nearest": ``search.nearest(metric)``
  -> ``Neighbors`` (ids (N, K), scores (N, K)); a sub-block of the planned
  queries may be asked for at a time (``ids=``, ``vectors=``);
- door 2, "every row's k nearest": ``search.every_row(metric)`` -> blocks
  ``(start, stop, ids, scores)`` in order: the self-join or one query per
  row (``every_row``), on a device, or on the cluster (``cluster``);
- ``search.memory()`` -> ``SearchMemory``: the budget, the plans made, the
  table's resident cost, for a result's ``memory`` field.

Each search follows the plan made here; nothing behind the door checks or
plans again. The rule every engine keeps (``embed.nearest_by_cosine``): the
k ids with the largest score, best first, equal scores ordered by the smaller
id, the query itself left out when it is a row; the cosine of a zero-length
vector is 0.0.

The rooms behind the door (``engine/neighbors/__init__.py`` has the map):
``per_query`` (blocks of queries on threads), ``self_join``, ``cluster``;
``dispatch`` sends a block to a screen, the screens are peers
(``float_screen``, ``int16_screen``, ``amx_screen``, ``bf16_screen``, ``torch_screen``) and all end in
``rescore``.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np

from ...errors import BudgetError, ChoiceError, MissingExtraError, ShapeError
from ..bf16_matrix import Bf16Matrix
from ..lengths import vector_norms
from ..pages import file_mapped
from .capability import bf16_pays, builds_codes, choose_screen, int16_runs
from .checks import check_ids, check_k, check_metrics, check_queries, check_rows, check_vectors
from .cluster import ScatteredTable
from .bf16_screen import bf16_rows
from .codes import RowCodes, codes_fit, encode_rows
from .copies import Copies, find_copies
from .defaults import DEFAULT_MEMORY, METRICS
from .bf16_join import joint_blocks
from .every_row import (JointLists, bf16_refusal, choose_method, join_blocks, joint_plans, method_reason,
                        per_query_blocks)
from .footprint import ResidentCost, SearchMemory, search_memory
from .per_query import search_queries, search_queries_joint
from .pool import pool_slots
from .plan import NORMS_BLOCK, BlockPlan, PairPlan, plan_search, plan_self_join
from .precision import gemm_dtype
from .self_join import ListBlock
from .threads import worker_count
from .torch_screen import resolve_device

if TYPE_CHECKING:  # the table imports this module: the annotation only
    from ..table import EmbeddingTable

__all__ = ["Search", "Neighbors", "ArrayTable", "SearchMemory", "ListBlock", "check_k", "BY_ID"]

# Queries up to which the float screen reads a table kept as bfloat16 bits (``EmbeddingTable.rows``) as it
# is, widening the rows of each block as it multiplies them, in one pass on every core: no float32 table at
# all. Past them the table is widened whole once (4 V D bytes; for 128,256 x 4,096 about as long as widening
# it in three passes), and blocks of queries run on every core as for any table.
KEPT_QUERIES = 64
BY_ID = "V-1 (the query itself is left out)"  # how k's bound reads where the queries are rows of the table


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


@dataclass(frozen=True)
class _Queries:
    """One set of planned queries: by id (``exclude`` their ids) or by vector, with each metric's plan."""

    exclude: np.ndarray | None  # (N,) int64: the queries' own ids, left out
    vectors: np.ndarray | None  # (N, D) float64, or None for queries by id
    norms: np.ndarray  # (N,) float64
    plans: dict[str, BlockPlan]

    @property
    def n(self) -> int:
        return len(self.norms)


class Search:
    """A planned exact neighbour search over one table: checked, screened and planned once, then searched.

    Parameters
    ----------
    table : EmbeddingTable, ArrayTable or array_like, shape (V, D)
        The table. An ``EmbeddingTable`` (or ``ArrayTable``) lends its cached
        row lengths, int16 codes and bfloat16 rows (resident, outside the
        budget; where ``every_row`` sets the table's copies aside, only its
        lengths: the smaller table builds its own); a plain array is wrapped
        here, its lengths measured for this search (counted in the budget)
        and its codes and bfloat16 rows never cached (the bf16 screen rounds
        a block of rows at a time, counted).
    k : int
        Neighbours per query: ``1 <= k <= V - 1`` where a query is a row of
        the table (``ids``, ``exclude``, ``every_row``), ``1 <= k <= V`` for
        vectors alone.
    metrics : str or sequence of {"cosine", "dot"}
        The metrics to search by, each once (default both); each is planned.
    ids : array_like of int, shape (N,), optional
        Queries by id; each leaves out exactly its own id (a duplicate row
        under another id stays in).
    vectors : array_like, shape (D,) or (N, D), optional
        Query vectors; they leave nothing out (but ``exclude``). With ``ids``
        too, a second set of queries, planned beside the first.
    exclude : array_like of int, shape (N,), optional
        With ``vectors``: the id each vector stands for, left out of its list.
    every_row : bool
        Every row of the table as a query (door 2, ``every_row``), instead of
        ``ids`` and ``vectors``.
    memory : int, optional
        Working memory of each search in bytes (default ``DEFAULT_MEMORY``,
        256 MiB; per task on a cluster): every array a search allocates but
        the outputs (N, K); the table and its codes are its resident cost.
    device : str, optional
        A torch device (``"cpu"``, ``"cuda"``, ``"cuda:N"``): the products and
        the filter run with torch there, TF32 off; candidates are rescored on
        the CPU, so the lists do not change (``torch_screen``).
    scheduler : str or distributed.Client, optional
        A Dask scheduler's address or client: the searches by id run on its
        workers, one task per block of queries (``cluster``). Use ``with``
        so that the connection closes.
    workers : int, optional
        Threads running blocks of queries at once (default one per core;
        1 with a device or a scheduler); the result does not depend on it.
    screen : {"auto", "bf16", "int16", "float"}
        How candidates are found (``capability.choose_screen``); ``"auto"``
        chooses per the CPU and the search's shape (the plan says which and
        why, ``BlockPlan.why``). ``"bf16"`` runs on ``device`` where given;
        every row's lists (``every_row``) then come from the self-join on
        bfloat16 products, here or on the cluster (``bf16_join``), on any CPU.
        The result does not depend on it.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for an unknown or repeated metric, an unknown
        screen or device, ``screen="int16"`` with a device.
    ValueError
        For ``screen="bf16"`` or ``"int16"`` on lengths outside [1e-15, 1e15].
    SizeError, TypeError
        For k out of range or not an int (``checks.check_k``).
    TokenIdError, ShapeError, ValueError
        For query ids outside ``[0, V)``, vectors whose width is not D or
        that hold NaN or infinity, a table row with NaN or infinity, or
        lengths float64 cannot rank (``checks``); for no queries at all, or
        vectors with a scheduler.
    BudgetError
        (a ``ValueError``) for a budget below one query against K + 1 rows
        of any metric; its ``minimum`` is the largest of their minimums.
    MissingExtraError
        (an ``ImportError``) for a device without torch, a scheduler without
        dask.distributed, ``screen="int16"`` without numba, ``screen="bf16"``
        without torch (queries: where none of embedlab's bf16 kernels runs,
        ``capability.kernel_runs``; every row: always, the self-join is torch's).

    >>> W = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    >>> search = Search(W, 2, ids=[0, 2])
    >>> search.nearest("cosine").ids.tolist(), search.nearest("dot").ids.tolist()
    ([[1, 2], [1, 0]], [[1, 2], [1, 0]])
    >>> [ids.tolist() for _, _, ids, _ in Search(W, 1, "dot", every_row=True).every_row("dot")]
    [[[1], [0], [1]]]
    """

    def __init__(self, table: "EmbeddingTable | ArrayTable | Any", k: int, metrics: str | Iterable[str] = METRICS,
                 *, ids: Any = None, vectors: Any = None, exclude: Any = None, every_row: bool = False,
                 memory: int | None = None, device: str | None = None, scheduler: Any = None,
                 workers: int | None = None, screen: str = "auto") -> None:
        self.metrics = check_metrics(metrics)
        # A plain array: nothing cached beyond this search. (The class is asked first: a table's W_E widens a
        # table kept as bfloat16 bits.)
        self._own = not (hasattr(type(table), "W_E") or hasattr(table, "W_E"))
        self._table = ArrayTable(table) if self._own else table
        # The table as held: a bf16 checkpoint's bits (rows widened as a scan reads them) where the queries'
        # scans run here; every row's lists and the cluster read the widened table (``_widen_pays`` below).
        kept = not every_row and scheduler is None and hasattr(self._table, "rows")
        self._W = self._table.rows() if kept else self._table.W_E  # (V, D)
        self.V, self.D = self._W.shape
        self._check_kinds(ids, vectors, exclude, every_row, scheduler)
        by_row = ids is not None or exclude is not None or every_row
        check_k(k, self.V - 1 if by_row else self.V, BY_ID if by_row else "V")
        self.k = int(k)
        self.budget = DEFAULT_MEMORY if memory is None else memory
        self._norms = self._table.norms()  # (V,) float64
        check_rows(self._norms)
        self._every = every_row
        self._sets = self._queries(ids, vectors, exclude, every_row)  # checked, not yet planned
        for metric in self.metrics:  # what float64 cannot rank, before any plan (ids first)
            for part in sorted(self._sets.values(), key=lambda q: q.vectors is not None):
                check_queries(part.norms, self._norms, metric, None if part.vectors is not None else part.exclude)
        if device is not None and screen == "int16":
            raise ChoiceError(f"screen='int16' runs on the CPU's integer kernel, not on device {device!r}",
                              parameter="screen", value=screen, expected="'auto' or 'float' with a device")
        choose_screen(screen, codes_given=False, fits=True)  # refuses an unknown screen now
        if every_row and screen == "bf16" and importlib.util.find_spec("torch") is None:
            # every row's lists on bfloat16 products are the self-join's (``bf16_join``, torch's matmul), which
            # embedlab's bf16 kernels (the queries' bf16 screen, no torch) do not run: refused now, not mid-scan
            raise MissingExtraError.for_module("torch", "bfloat16 self-joins (every_row with screen='bf16')",
                                               ("torch",))
        # Every row's lists where a group of identical rows outgrows a pool: from the table without its copies
        # (``copies``), searched by a search of its own, the lists expanded. Checked as any table was, above;
        # nothing else is planned here.
        self._copies: Copies | None = (find_copies(self._W, self._norms, larger_than=pool_slots(self.k))
                                       if every_row else None)
        if self._copies is not None:
            # (V', D), a table of its own: its lengths those of W's rows, its codes and bfloat16 rows its own
            small = ArrayTable(self._copies.table(self._W), norms=self._norms[self._copies.keep])
            if device is not None:
                resolve_device(device)  # refused now, as any search refuses it, even where none runs
            self._inner = None if small.W_E.shape[0] == 1 else Search(
                small, min(self.k, small.W_E.shape[0] - 1), self.metrics, every_row=True, memory=memory, device=device,
                scheduler=scheduler, workers=workers, screen=screen)
            return
        self._device_name, self._scheduler, self._screen = device, scheduler, screen
        self._method, self._pairs = self._plan_every_row(workers, screen)  # first: the codes follow the method
        joint = joint_plans(self._pairs, self.V, self.D, self.k, self.budget)
        self._pairs = joint or self._pairs
        self._joint = None if joint is None else JointLists(self._joint_scan(joint))
        uses_codes = self._plan(screen, workers)
        if isinstance(self._W, Bf16Matrix) and self._widen_pays():
            self._W = self._table.W_E  # the float screen of many queries: widened once, not once a pass
        self._codes: RowCodes | None = self._table.codes() if uses_codes and not self._own else None
        # The table's bfloat16 rows, cached where a bf16 plan runs here (a plain array rounds a block at a time);
        # not where every row's lists come from a self-join, which runs no per-query plan.
        uses_bf16 = self._method not in ("self-join", "bf16 self-join") and any(
            p.screen == "bf16" for q in self._sets.values() for p in q.plans.values())
        self._bf16 = self._table.bf16_rows() if uses_bf16 and not self._own and scheduler is None else None
        self._device = None if device is None else resolve_device(device)
        self._cluster: ScatteredTable | None = None
        # The lists of a metric not yet asked for, found in the same pass as another's (_joint_plan): per metric,
        # (the query set's name, the block's ids to leave out, its vectors, ids (n, K), scores (n, K)); the last
        # block only, handed out when the same block is asked for under that metric.
        self._held: dict[str, tuple[str, Any, Any, np.ndarray, np.ndarray]] = {}

    # -- what was planned -----------------------------------------------------------------

    @property
    def ids(self) -> np.ndarray | None:
        """The planned query ids (N,) int64 (every id for ``every_row``), read-only; None without."""
        part = self._sets.get("ids")
        return None if part is None else part.exclude

    @property
    def vectors(self) -> np.ndarray | None:
        """The planned query vectors (N, D) float64, checked, read-only; None without."""
        part = self._sets.get("vectors")
        return None if part is None else part.vectors

    @property
    def vector_norms(self) -> np.ndarray | None:
        """The lengths of the planned query vectors (N,) float64; None without."""
        part = self._sets.get("vectors")
        return None if part is None else part.norms

    def plan(self, metric: str, queries: str | None = None) -> BlockPlan:
        """The plan one metric's searches follow: of the ids (or ``queries="vectors"``), or of the vectors alone.

        >>> Search(np.eye(3), 1, "dot", ids=[0]).plan("dot").screen
        'float'
        """
        if self._copies is not None:
            return self._without_copies().plan(self._metric(metric), queries)
        return self._part(queries).plans[self._metric(metric)]

    def _without_copies(self) -> "Search":
        """The search of the table without its copies; a ValueError where that table is one row (nothing planned)."""
        if self._inner is None:
            raise ValueError(f"every row of this table is the same row: its lists are known, no search is planned "
                             f"(V={self.V})")
        return self._inner

    def memory(self) -> SearchMemory:
        """The budget, each metric's plan (of the ids, or of the vectors where there are none) and the table's
        resident cost as it stands: read it after the searches, which may have built the table's codes."""
        if self._copies is not None:
            return self._copies_memory()
        part = self._part(None)
        if self._method in ("self-join", "bf16 self-join"):  # every row: the self-join's block pairs ran
            return search_memory(self.budget, part.plans, part.n, self.k, self._table.resident(), pairs=self._pairs,
                                 method=self._method, why=method_reason(self._method, self._screen, bf16_refusal(
                                     self.V, self.D, self.k, self._norms, memory=self.budget,
                                     workers=self._pairs[next(iter(self._pairs))].workers, screen=self._screen,
                                     rows=self._W)))
        return search_memory(self.budget, part.plans, part.n, self.k, self._table.resident())

    def _copies_memory(self) -> SearchMemory:
        """What a search by the table without its copies holds: that table's search's plans, each ``why`` saying
        so; resident, this table and that one (its lengths, codes and bfloat16 rows too); outputs, V K lists."""
        copies = self._copies
        own = self._table.resident()
        said = (f"every row's lists from the table without its {copies.copies:,} copies ({len(copies.keep):,} rows; "
                f"the largest group {copies.largest:,} identical rows), expanded")
        if self._inner is None:  # one row, many times: the lists are known, nothing searched
            plans = {m: {"bytes": 0, "fixed": 0, "screen": "none", "method": "no search", "queries": 0, "rows": 0,
                         "workers": 1, "why": f"every row is the same row ({self.V:,} copies): {said}"}
                     for m in self.metrics}
            return SearchMemory(self.budget, plans, self.V * self.k * 16, own.to_dict())
        inner = self._inner.memory()
        small = inner.resident
        resident = replace(own, table=own.table + small["table"], norms=own.norms + small["norms"],
                           codes=own.codes + small["codes"], bf16=own.bf16 + small["bf16"])
        said += f" (that table, {small['table']:,} bytes, counted in the resident table)"
        return replace(inner, plans={m: {**p, "why": f"{p.get('why', '')}; {said}"} for m, p in inner.plans.items()},
                       outputs=self.V * self.k * 16, resident=resident.to_dict())

    # -- door 1: these queries' k nearest -------------------------------------------------

    def nearest(self, metric: str, *, ids: Any = None, vectors: Any = None,
                progress: Callable[[int], None] | None = None) -> Neighbors:
        """The k nearest of the planned queries, or of a sub-block of them, under one planned metric.

        Parameters
        ----------
        metric : {"cosine", "dot"}
            One of the planned metrics.
        ids : array_like of int, shape (n,), optional
            Some of the planned query ids (a block of them), n <= N; by
            default all of them. Their lengths were checked when the search
            was made; only their range is checked again.
        vectors : array_like, shape (n, D), optional
            Some of the planned vectors (``Search.vectors[a:b]``), likewise.
        progress : callable, optional
            Called with the number of queries finished after each block of queries.

        Returns
        -------
        Neighbors
            ids (n, K) int64, best first, equal scores by the smaller id (a
            zero query lists the smallest ids); scores (n, K) float64:
            ``dot(q, w)``, or the cosine clipped to [-1, 1], 0.0 where a
            length is 0, never NaN; tokens where the table has a vocabulary.

        Raises
        ------
        ValueError
            For a metric not planned, queries of a kind not planned, or more
            queries than were planned; ``TokenIdError`` for an id outside ``[0, V)``.
            For a search of every row whose table's copies were set aside
            (``every_row``): it plans every row's lists only.
        """
        if self._copies is not None:
            raise ValueError("this search lists every row from its table without its copies: ask every_row(metric)")
        metric = self._metric(metric)
        part, exclude, Q = self._block(ids, vectors)
        plan = part.plans[metric]
        name = "vectors" if part.vectors is not None else "ids"
        held = self._held.pop(metric, None)
        joint = self._joint_plan(part)
        if held is not None and held[0] == name and _same(held[1], exclude) and _same(held[2], Q):
            found, scores = held[3], held[4]  # found with another metric's lists, in the same pass
            if progress is not None:
                progress(len(found))
        elif joint is not None:  # both metrics from one pass over the table; the other held until asked for
            lists = search_queries_joint(self._W, self.k, joint, row_norms=self._norms, vectors=Q, exclude=exclude,
                                         progress=progress)
            found, scores = lists.pop(metric)
            self._held = {other: (name, exclude, Q, *lists[other]) for other in lists}
        elif self._scheduler is not None:
            found, scores = self._scattered().search(exclude, self.k, metric, plan, memory=self.budget,
                                                     device=self._device_name, progress=progress)
        else:
            found, scores = search_queries(self._W, self.k, metric, plan, row_norms=self._norms, vectors=Q,
                                           exclude=exclude, codes=self._codes if plan.screen == "int16" else None,
                                           device=self._device, bf16=self._bf16, progress=progress)
        vocabulary = getattr(self._table, "vocabulary", None)
        tokens = None if vocabulary is None else vocabulary.token_rows(found.tolist())
        return Neighbors(ids=found, scores=scores, metric=metric, tokens=tokens)

    def _joint_plan(self, part: _Queries) -> BlockPlan | None:
        """Cosine's plan where one pass over the table serves both metrics of these queries, else None.

        Both metrics planned on the float screen in float32, in this process
        without a device, in blocks of fewer queries than D (cosine then
        scales after the product: ``float_screen.JointScreen``), both cut
        alike. The second metric's pool of candidates, m x (a few K) entries
        per block, is all the joint scan adds to the plan's working memory,
        beside the lists it holds (N, K), outputs.
        """
        plans = part.plans
        if set(plans) != {"cosine", "dot"} or self._device is not None or self._scheduler is not None:
            return None
        cosine, dot = plans["cosine"], plans["dot"]
        float32 = all(p.screen == "float" and p.itemsize == 4 for p in (cosine, dot))
        if not float32 or min(part.n, cosine.queries) >= self.D or (cosine.rows, cosine.queries) != (
                dot.rows, dot.queries):
            return None
        return cosine

    # -- door 2: every row's k nearest ----------------------------------------------------

    def every_row(self, metric: str, *, progress: Callable[[int], None] | None = None) -> Iterator[ListBlock]:
        """Every row's k nearest other rows under one planned metric, a block of rows at a time, in order.

        Yields ``(start, stop, ids (n, K) int64, scores (n, K) float64)``
        for rows ``[start, stop)``, from 0 to V: row for row what
        ``nearest`` of every id gives. ``progress`` is called with the number
        of rows whose lists are done. Raises ``ValueError`` for a search not
        made with ``every_row=True`` or a metric not planned.

        Where a group of identical rows holds more rows than a query's pool
        (``copies.find_copies``), the lists come from the table without its
        copies, searched by a search of its own, and are expanded
        (``copies``): the same lists, without screening each copy as an exact
        tie again and again. Such a search plans nothing else: ``nearest`` is
        refused, ``plan`` is the smaller table's search's, ``memory`` its
        plans with both tables' resident cost.
        """
        metric = self._metric(metric)
        if not self._every:
            raise ValueError("this search was planned for its queries, not for every row: make it with every_row=True")
        if self._copies is not None:
            return self._expanded(metric, progress)
        return self._every_row(metric, progress)

    def _expanded(self, metric: str, progress: Callable[[int], None] | None) -> Iterator[ListBlock]:
        """Every row's lists from the table without its copies (``copies.Copies.expand``); ``progress`` is told of
        the smaller table's rows as they are done, then of the copies."""
        lists = None if self._inner is None else self._inner.every_row(metric, progress=progress)
        told = False
        for block in self._copies.expand(self._W, self._norms, self.k, metric, lists):
            if not told and progress is not None:
                progress(self._copies.copies + (1 if self._inner is None else 0))
            told = True
            yield block

    def _every_row(self, metric: str, progress: Callable[[int], None] | None) -> Iterator[ListBlock]:
        plan = self._sets["ids"].plans[metric]
        if self._joint is not None:  # one bf16 product per block pair for every metric, here or on the cluster
            yield from self._joint.blocks(metric, progress)
        elif self._scheduler is not None and self._method == "bf16 self-join":  # the self-join's steps as tasks
            for out in self._scattered().pair_steps(self.k, {metric: self._pairs[metric]}, progress=progress):
                yield out[metric]
        elif self._scheduler is not None:
            yield from self._scattered().blocks(self._sets["ids"].exclude, self.k, metric, plan, memory=self.budget,
                                                device=self._device_name, progress=progress)
        elif self._method in ("self-join", "bf16 self-join"):
            yield from join_blocks(self._W, self.k, metric, self._pairs[metric], row_norms=self._norms,
                                 progress=progress, bf16=self._bf16_held())
        else:
            yield from per_query_blocks(self._W, self.k, metric, plan, row_norms=self._norms,
                                        codes=self._codes if plan.screen == "int16" else None, device=self._device,
                                        progress=progress)

    def _joint_scan(self, plans: dict[str, PairPlan]) -> Callable[[], Iterator[dict[str, ListBlock]]]:
        """The scan of every metric's lists at once (``JointLists``): on the cluster's workers, or here."""
        if self._scheduler is not None:
            return lambda: self._scattered().pair_steps(self.k, plans)
        return lambda: joint_blocks(self._W, self.k, plans, self._norms, self._bf16_held())

    def _bf16_held(self) -> np.ndarray | None:
        """The table's bfloat16 rows where it holds them already (the bf16 self-join reads them: one copy), else None."""
        return self._table.bf16_rows_held()

    # -- the cluster, opened once -----------------------------------------------------------

    def __enter__(self) -> "Search":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the cluster connection, where one was opened (the table leaves its workers)."""
        if self._copies is not None:
            if self._inner is not None:
                self._inner.close()
            return
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()

    def _scattered(self) -> ScatteredTable:
        """The table on the cluster's workers: scattered at the first search, once for every metric."""
        if self._cluster is None:
            self._cluster = ScatteredTable(self._scheduler, self._W, row_norms=self._norms, codes=self._codes)
        return self._cluster

    # -- made once: checks and plans ------------------------------------------------------

    def _check_kinds(self, ids: Any, vectors: Any, exclude: Any, every_row: bool, scheduler: Any) -> None:
        """Which queries: ids and/or vectors (exclude only with vectors), or every row; by id on a cluster."""
        if every_row and (ids is not None or vectors is not None):
            raise ValueError("give every_row=True, or the queries (ids, vectors), not both")
        if not every_row and ids is None and vectors is None:
            raise ValueError("give the queries: ids, vectors, or every_row=True")
        if exclude is not None and vectors is None:
            raise ValueError("exclude names the id each query vector stands for: give it with vectors")
        if scheduler is not None and vectors is not None:
            raise ValueError("a cluster searches queries by id: give ids or every_row=True with a scheduler")

    def _queries(self, ids: Any, vectors: Any, exclude: Any, every_row: bool) -> dict[str, _Queries]:
        """The query sets, checked: vectors first, then ids (a budget is refused in that order)."""
        sets = {}
        if vectors is not None:
            Q = check_vectors(vectors, self.D)  # (N, D) float64
            own = None if exclude is None else check_ids(exclude, self.V)
            if own is not None and own.shape != (len(Q),):
                raise ShapeError(f"exclude holds {own.size} ids for {len(Q)} query vectors: expected one per vector")
            sets["vectors"] = _Queries(own, _readonly(Q), _readonly(vector_norms(Q, block_bytes=NORMS_BLOCK)), {})
        if ids is not None or every_row:
            own = np.arange(self.V, dtype=np.int64) if every_row else check_ids(ids, self.V)
            sets["ids"] = _Queries(_readonly(own), None, self._norms if every_row else self._norms[own], {})
        return sets

    def _plan(self, screen: str, workers: int | None) -> bool:
        """Each query set's plan per metric (``plan.plan_search``); True where one plans with the table's codes.

        Raises the ``BudgetError`` of the largest minimum of a set's metrics,
        before any search.
        """
        on_device = self._device_name is not None
        uses_codes = False
        for name, part in self._sets.items():
            # A few queries of a table kept as bfloat16 bits: one block on one worker, whose products run
            # on every core (``FloatScreen._widened_product``): the table is widened once, not once a worker.
            few = isinstance(self._W, Bf16Matrix) and part.n <= KEPT_QUERIES
            threads = 1 if on_device or self._scheduler is not None or few else worker_count(workers)
            codes_given = self._codes_given(part.norms, screen)
            plans, refused = {}, []
            for metric in self.metrics:
                try:
                    plans[metric] = plan_search(self.V, self.D, self.k, metric, self.budget, q_norms=part.norms,
                                                row_norms=self._norms, table_dtype=self._W.dtype,
                                                by_id=part.vectors is None, norms_given=not self._own,
                                                codes_given=codes_given, workers=threads,
                                                screen="float" if on_device and screen == "auto" else screen,
                                                auto_bf16=not self._every, on_device=on_device)
                except BudgetError as exc:
                    refused.append(exc)
            if refused:
                raise max(refused, key=lambda exc: exc.minimum)
            part.plans.update(plans)
            uses_codes |= codes_given
        return uses_codes

    def _widen_pays(self) -> bool:
        """Whether a float-screen plan has more than ``KEPT_QUERIES`` queries: a table kept as bfloat16 bits
        is then widened whole once rather than a block at a time in each pass (the bf16 and int16 screens
        read the bits or the codes, and widen only the rows they rescore)."""
        return any(plan.screen == "float" and part.n > KEPT_QUERIES
                   for part in self._sets.values() for plan in part.plans.values())

    def _codes_given(self, q_norms: np.ndarray, screen: str) -> bool:
        """Whether n queries (their lengths (n,)) plan with the table's int16 codes (built through its cache where not there yet)."""
        if self._own or screen in ("float", "bf16") or self._device_name is not None:
            return False  # a plain array caches none: screen="int16" builds them per search, counted
        n_queries = len(q_norms)
        if (screen == "auto" and not self._every and codes_fit(q_norms, self._norms)
                and all(bf16_pays(n_queries, self.D, self.V, m) for m in self.metrics)):
            return False  # the bf16 screen runs instead
        if self._table.resident().codes > 0 or screen == "int16":
            return True
        if self._every and self._scheduler is None:  # every row as a query: codes wherever the integer screen runs
            return self._method == "per-query" and int16_runs(self._norms)
        return builds_codes(n_queries, self.D, self.V, self.metrics)  # they pay for themselves over many queries

    def _plan_every_row(self, workers: int | None, screen: str) -> tuple[str | None, dict[str, PairPlan]]:
        """In this process, without a device: the self-join (bf16 or float) or one query per row
        (``every_row.choose_method``), and the self-join's plan per metric (bf16 where its scores fit float32)."""
        if not self._every or self._device_name is not None:
            return None, {}
        threads = worker_count(workers)
        if self._scheduler is not None:  # on the cluster: the bf16 self-join's bands, or the queries' blocks
            if choose_method(self.V, self.D, self.k, self._norms, memory=self.budget, workers=1,
                             screen=screen, rows=self._W) != "bf16 self-join":
                return None, {}
            threads = 1
        method = choose_method(self.V, self.D, self.k, self._norms, memory=self.budget, workers=threads,
                               screen=screen, rows=self._W)
        if method == "per-query":
            return method, {}
        itemsize = {m: np.dtype(gemm_dtype(self._W.dtype, m, self._norms, self._norms)).itemsize for m in self.metrics}
        bf16 = {m: method == "bf16 self-join" and gemm_dtype(np.dtype(np.float32), m, self._norms, self._norms) == np.float32
                for m in self.metrics}
        return method, {m: plan_self_join(self.V, self.D, self.k, 4 if bf16[m] else itemsize[m], self.budget,
                                          workers=threads, screen="bf16" if bf16[m] else "float")
                        for m in self.metrics}

    # -- asked for ------------------------------------------------------------------------

    def _metric(self, metric: str) -> str:
        if metric not in self.metrics:
            check_metrics([metric])  # an unknown one is named as such
            raise ValueError(f"metric {metric!r} was not planned: this search plans {', '.join(self.metrics)}")
        return metric

    def _part(self, queries: str | None) -> _Queries:
        """The planned set ``queries`` ("ids" or "vectors"), or the one there is (ids where both are)."""
        name = queries or ("ids" if "ids" in self._sets else "vectors")
        if name not in self._sets:
            raise ValueError(f"this search planned no query {name}")
        return self._sets[name]

    def _block(self, ids: Any, vectors: Any) -> tuple[_Queries, np.ndarray | None, np.ndarray | None]:
        """(the planned set, its ids to leave out, its vectors) for a block of it, or for all of it."""
        if ids is not None and vectors is not None:
            raise ValueError("give ids or vectors, one kind of query at a time")
        if ids is None and vectors is None:
            if len(self._sets) > 1:
                raise ValueError("this search planned ids and vectors: give ids= or vectors=")
            part = next(iter(self._sets.values()))
            return part, part.exclude, part.vectors
        part = self._part("ids" if ids is not None else "vectors")
        if vectors is not None and part.exclude is not None:
            raise ValueError("these vectors leave ids out: search all of them (nearest without vectors=)")
        block = check_ids(ids, self.V) if ids is not None else np.asarray(vectors, dtype=np.float64)
        if ids is None and (block.ndim != 2 or block.shape[1] != self.D):
            raise ShapeError(f"query vectors have shape {block.shape}, expected (n, D) with D={self.D}")
        if len(block) > part.n:
            raise ValueError(f"{len(block)} queries asked for, {part.n} planned: a block of the planned queries, at most")
        if ids is None:
            _within_plan(check_vectors(block, self.D), part.norms)
        return (part, block, None) if ids is not None else (part, None, block)


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two blocks of queries (ids (n,) or vectors (n, D)), or two Nones, are the same."""
    return (a is None) == (b is None) and (a is None or (a.shape == b.shape and np.array_equal(a, b)))


def _within_plan(block: np.ndarray, planned: np.ndarray) -> None:
    """Refuse a block of query vectors (n, D) whose lengths the plan did not cover.

    The plan (its GEMM dtype, its range checks) was made for the planned
    queries' lengths ``planned`` (N,): a block's nonzero lengths must lie
    within theirs, or the search would follow a plan made for other numbers.
    Raises ``ValueError`` naming the vector and both ranges.
    """
    lengths = vector_norms(block)  # (n,)
    live = planned[planned > 0]
    low, high = (live.min(), live.max()) if live.size else (0.0, 0.0)
    outside = np.flatnonzero((lengths > 0) & ((lengths < low) | (lengths > high)))
    if outside.size:
        i = int(outside[0])
        raise ValueError(f"query vector {i} of this block has length {lengths[i]:.6g}, outside the planned queries' "
                         f"lengths [{low:.6g}, {high:.6g}]: make a Search with these vectors")


class ArrayTable:
    """A plain (V, D) array seen as a table by the front door: its row lengths, int16 codes and bfloat16 rows cached.

    Parameters
    ----------
    W : array_like, shape (V, D), floating
        The table, kept as given (an ndarray is not copied); never changed.
    norms : np.ndarray, shape (V,), float64, optional
        Its row lengths (``lengths.vector_norms``), if measured already.
    codes : RowCodes, optional
        Its int16 codes (``codes.encode_rows``), if built already.

    Raises
    ------
    ShapeError
        (a ``ValueError``) if W is not 2-D, or the lengths or codes are not W's.
    TypeError
        If W is not of a floating dtype.

    >>> t = ArrayTable(np.eye(2, dtype=np.float32))
    >>> t.norms().tolist(), t.resident().total
    ([1.0, 1.0], 32)
    """

    vocabulary = None

    def __init__(self, W: Any, *, norms: np.ndarray | None = None, codes: RowCodes | None = None) -> None:
        W = np.asarray(W)
        if W.ndim != 2:
            raise ShapeError(f"the table must be (V, D), got shape {W.shape}")
        if not np.issubdtype(W.dtype, np.floating):
            raise TypeError(f"the table must be of a floating dtype, got {W.dtype}")
        if norms is not None and np.shape(norms) != (len(W),):
            raise ShapeError(f"norms have shape {np.shape(norms)}, expected ({len(W)},)")
        if codes is not None and (codes.V, codes.D) != W.shape:
            raise ShapeError(f"codes of a ({codes.V}, {codes.D}) table given for a table of shape {W.shape}")
        self._W, self._norms, self._codes = W, norms, codes
        self._bf16: np.ndarray | None = None

    @property
    def W_E(self) -> np.ndarray:
        """The table (V, D)."""
        return self._W

    def norms(self) -> np.ndarray:
        """Row lengths (V,) float64, measured once (a block of rows at a time) and kept."""
        if self._norms is None:
            self._norms = vector_norms(self._W, block_bytes=NORMS_BLOCK)
        return self._norms

    def codes(self) -> RowCodes:
        """The rows' int16 codes (``codes.encode_rows``), built once and kept."""
        if self._codes is None:
            self._codes = encode_rows(self._W, row_norms=self.norms())
        return self._codes

    def bf16_rows(self) -> np.ndarray:
        """The rows in bfloat16 (``bf16_screen.bf16_rows``), (V, D) uint16, built once and kept."""
        if self._bf16 is None:
            self._bf16 = bf16_rows(self._W)
        return self._bf16

    def bf16_rows_held(self) -> np.ndarray | None:
        """The bfloat16 rows where built already, else None; never builds them."""
        return self._bf16

    def resident(self) -> ResidentCost:
        """Bytes held between searches: the array, its cached lengths, codes and bfloat16 rows."""
        return ResidentCost(table=self._W.nbytes, positions=0, norms=0 if self._norms is None else self._norms.nbytes,
                            codes=0 if self._codes is None else self._codes.nbytes,
                            mapped=file_mapped(self._W),
                            bf16=0 if self._bf16 is None else self._bf16.nbytes)


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (the caller's array, where it is one, stays as it was)."""
    view = a.view()
    view.flags.writeable = False
    return view
