"""Hubs: rows that turn up in many neighbour lists (k-occurrence).

Take every token (or a sample) as a query, find its k nearest tokens, and count
for each row how many of those lists it appears in: its k-occurrence N_k. In a
high-dimensional table a few rows, the hubs, appear in far more lists than the
k * N / V of an even share, and many appear in none (Radovanovic, Nanopoulos and
Ivanovic, "Hubs in space", JMLR 11, 2010). Under the dot product a long row
scores high against every query whatever its direction, so length alone makes
hubs; cosine divides length out. The measurement shows it: the Spearman
correlation between row length and dot k-occurrence, and how many lists the
longest rows enter under each metric.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import numpy as np
from scipy.stats import skew, spearmanr

from ..deprecation import renamed
from ..errors import MissingExtraError, SizeError
from ..engine.neighbors.defaults import DEFAULT_K, METRICS
from ..engine.neighbors.search import Search, SearchMemory
from ..engine.table import EmbeddingTable
from .defaults import DEFAULT_TOP, fit_default

__all__ = ["Hub", "MetricHubs", "HubsResult", "measure_hubs", "DEFAULT_K", "DEFAULT_TOP"]


@dataclass(frozen=True)
class Hub:
    """One row with its k-occurrence under each metric and its length.

    Attributes
    ----------
    id : int
        Token id.
    token : str or None
        Its string, where the table has a vocabulary.
    lists : dict of str to int
        k-occurrence: how many of the N lists it appears in, per metric.
    norm : float
        Euclidean length of the row.
    norm_rank : int
        1 for the longest row of the table, V for the shortest (ties by id).
    """

    id: int
    token: str | None
    lists: dict[str, int]
    norm: float
    norm_rank: int


@dataclass(frozen=True)
class MetricHubs:
    """The k-occurrence of every row under one metric, summarised.

    Attributes
    ----------
    metric : str
        ``"dot"`` or ``"cosine"``.
    top : list of Hub
        The rows in the most lists, most first (equal counts by id).
    max_lists : int
        The largest k-occurrence; an even share would be ``k * N / V``.
    skewness : float or None
        Skewness of the k-occurrence over all V rows, the usual measure of
        hubness (0 for a symmetric spread); ``None`` when every row has the same count.
    never_listed : int
        Rows that appear in no list (anti-hubs).
    spearman_norm : float or None
        Spearman rank correlation between row length and k-occurrence over
        all V rows (``scipy.stats.spearmanr``); ``None`` when either is constant.
    longest_rows_lists : int
        Lists (queries) that hold at least one of the longest rows.
    seconds : float
        Wall time of the N searches, in seconds.
    """

    metric: str
    top: list[Hub]
    max_lists: int
    skewness: float | None
    never_listed: int
    spearman_norm: float | None
    longest_rows_lists: int
    seconds: float


@dataclass(frozen=True)
class HubsResult:
    """What ``measure_hubs`` found.

    Attributes
    ----------
    V, D, k : int
        Table shape and neighbours per list.
    n_queries : int
        N, the lists counted (V when every token is a query).
    even_share : float
        ``k * N / V``: the k-occurrence every row would have if lists were
        spread evenly (the mean k-occurrence).
    seed : int or None
        The seed that sampled the queries; ``None`` when every token is one.
    metrics : dict of str to MetricHubs
        ``"dot"`` and ``"cosine"``.
    longest : list of Hub
        The longest rows, longest first, with their k-occurrence under both metrics.
    source : dict or None
        The table's provenance.
    notes : tuple of str
        What was adjusted without being asked: a default k or top shrunk to fit the table.
    k_occurrence : dict of str to np.ndarray
        Per metric, shape (V,), int64: the count of every row (not rendered).
    memory : SearchMemory or None
        The working-memory budget, each metric's plan and the table's resident cost.
    """

    V: int
    D: int
    k: int
    n_queries: int
    even_share: float
    seed: int | None
    metrics: dict[str, MetricHubs]
    longest: list[Hub]
    source: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    k_occurrence: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    memory: SearchMemory | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``k_occurrence`` (the per-row counts, (V,) each) as a JSON-able dict."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "k_occurrence"}
        out["metrics"] = {name: asdict(m) for name, m in self.metrics.items()}
        out["longest"] = [asdict(h) for h in self.longest]
        out["memory"] = None if self.memory is None else asdict(self.memory)
        return out


@renamed(n_queries="queries")
def measure_hubs(
    table: EmbeddingTable,
    k: int | None = None,
    *,
    queries: int | None = None,
    seed: int = 0,
    top: int | None = None,
    memory: int | None = None,
    progress: Callable[[int], None] | None = None,
    scheduler: Any = None,
    device: str | None = None,
) -> HubsResult:
    """Count how many neighbour lists every row enters, under dot and cosine.

    Parameters
    ----------
    table : EmbeddingTable
        The (V, D) table.
    k : int, optional
        Neighbours per list, ``1 <= k <= V - 1``; each query leaves itself out.
        Default ``DEFAULT_K`` (10), shrunk to ``V - 1`` on a smaller table, with a note.
    queries : int, optional
        N tokens sampled without replacement (``numpy.random.default_rng(seed)``)
        as queries; ``None`` takes every token (``n_queries=``, its old name, still works, with a
        ``DeprecationWarning``).
    seed : int
        Seed of the sample; unused when every token is a query.
    top : int, optional
        How many hubs, and how many of the longest rows, to report. Default
        ``DEFAULT_TOP`` (10), shrunk to ``V`` on a smaller table, with a note.
    memory : int, optional
        Working memory budget of each search, in bytes (default
        ``engine.neighbors.defaults.DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of queries done after each block of queries,
        2 * N in all (both metrics); handed to the front door's search
        (``engine.neighbors.search.Search``: ``nearest`` for a sample,
        ``every_row`` when every token is a query; the same lists).
    scheduler : str or distributed.Client, optional
        A Dask scheduler's address (``"tcp://host:8786"``) or client: the
        searches run on its workers (the table sent once for both metrics),
        ``memory`` bytes per task. The counts are the same. ``None``
        (default): in this process.
    device : str, optional
        A torch device for the searches' screens, here or on the workers;
        the counts are the same.

    Returns
    -------
    HubsResult

    Raises
    ------
    ValueError
        For k outside ``[1, V - 1]``, N outside ``[1, V]`` or top < 1.
    MissingExtraError
        (an ``ImportError``) for dask.distributed with a scheduler (the ``cluster`` extra), or torch with a
        device. SciPy (the ``models`` extra) is imported with this module: ``embedlab.hubs`` turns its
        absence into a ``MissingExtraError`` too.
    SchedulerError
        (a ``ConnectionError``) when the scheduler does not answer.

    >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [1.0, 0.1]])
    >>> r = measure_hubs(t, 1)
    >>> r.metrics["dot"].top[0].id, r.metrics["dot"].top[0].lists["dot"]  # the long row 2
    (2, 3)
    """
    V = table.V
    k, k_notes = fit_default(k, DEFAULT_K, V - 1, "k", "V - 1")
    top, top_notes = fit_default(top, DEFAULT_TOP, V, "top", "V")
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise SizeError(f"top must be an int >= 1, got {top!r}", parameter="top", value=top, expected="an int >= 1")
    every = queries is None  # every token a query: the whole table's lists; else N sampled
    queries = _queries(V, queries, seed)  # (N,) the query ids
    # Checked, screened and planned once for both metrics: a budget too small is refused before any search.
    search = Search(table, k, METRICS, ids=None if every else queries, every_row=every, memory=memory,
                    device=device, scheduler=scheduler)
    norms = table.norms()  # (V,)
    counts: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    lists: dict[str, np.ndarray] = {}
    with search:
        for metric in ("dot", "cosine"):
            start = time.perf_counter()
            if every:
                ids = np.concatenate([block for _, _, block, _ in search.every_row(metric, progress=progress)])
            else:
                ids = search.nearest(metric, progress=progress).ids  # (N, K)
            seconds[metric] = time.perf_counter() - start
            lists[metric] = ids
            counts[metric] = np.bincount(ids.ravel(), minlength=V)  # (V,)
    rank = np.empty(V, dtype=np.int64)
    rank[np.lexsort((np.arange(V), -norms))] = np.arange(1, V + 1)  # 1 = longest, ties by id

    def hub(i: int) -> Hub:
        return Hub(id=int(i), token=table.token(int(i)) if table.vocabulary is not None else None,
                   lists={m: int(counts[m][i]) for m in counts}, norm=float(norms[i]), norm_rank=int(rank[i]))

    longest = np.argsort(rank)[:top]  # (top,) ids of the longest rows
    summaries = {}
    for metric in METRICS:
        c = counts[metric]
        summaries[metric] = MetricHubs(
            metric=metric,
            top=[hub(i) for i in np.lexsort((np.arange(V), -c))[:top]],
            max_lists=int(c.max()),
            skewness=None if c.min() == c.max() else float(skew(c)),
            never_listed=int((c == 0).sum()),
            spearman_norm=None if c.min() == c.max() or norms.min() == norms.max()
            else float(spearmanr(norms, c).statistic),
            longest_rows_lists=int(np.isin(lists[metric], longest).any(axis=1).sum()),
            seconds=seconds[metric],
        )
    return HubsResult(
        V=V, D=table.D, k=k, n_queries=len(queries), even_share=k * len(queries) / V,
        seed=None if every else seed,
        metrics=summaries, longest=[hub(i) for i in longest], source=table.provenance.to_dict(),
        notes=k_notes + top_notes, k_occurrence=counts,
        memory=search.memory(),
    )


def _queries(V: int, queries: int | None, seed: int) -> np.ndarray:
    """Every id, or ``queries`` ids sampled without replacement, ascending."""
    if queries is None:
        return np.arange(V, dtype=np.int64)
    if isinstance(queries, bool) or not isinstance(queries, (int, np.integer)) or not 1 <= queries <= V:
        raise SizeError(f"queries must be 'all' or a number from 1 to V={V}, got {queries!r}",
                        parameter="queries", value=queries, expected=f"'all' or a number from 1 to V={V}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SizeError(f"seed must be a whole number >= 0, got {seed!r}", parameter="seed", value=seed,
                        expected="a whole number >= 0")
    return np.sort(np.random.default_rng(seed).choice(V, size=int(queries), replace=False))
