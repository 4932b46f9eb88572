"""The neighbour graph: every token's k nearest tokens, by cosine and by dot, as blocks of lists.

The k-nearest-neighbour graph of the table: an edge from each token to each
of its k nearest other tokens (the query itself left out; equal scores by
the smaller id; the rule of ``engine.neighbors``). V K edges per metric: too many to
hold for a large vocabulary at once, so ``measure_graph`` hands them out as
they are found, a block of query rows at a time (``GraphBlock``), for a
writer to stream (``report.parquet``).

Where the blocks come from is a parameter (``scan``): by default every row's
exact lists from the front door (``engine.neighbors.search.Search.every_row``:
in this process, on a torch device or on a Dask cluster, as it planned); any
other source of ``(start, stop, ids, scores)`` blocks per metric, in order,
feeds the same writer.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..engine.neighbors.defaults import DEFAULT_K, DEFAULT_MEMORY, METRICS
from ..engine.neighbors.search import BY_ID, Search, SearchMemory, check_k
from ..engine.table import EmbeddingTable
from .defaults import fit_default

__all__ = ["GraphBlock", "NeighbourGraph", "measure_graph", "DEFAULT_K"]

# (W, k, metric, row_norms, memory, progress) -> blocks (start, stop, ids (n, K), scores (n, K)), in order
Scan = Callable[..., Iterable[tuple[int, int, np.ndarray, np.ndarray]]]


@dataclass(frozen=True)
class GraphBlock:
    """The lists of query rows ``[start, stop)`` under one metric.

    Attributes
    ----------
    metric : str
        ``"cosine"`` or ``"dot"``.
    start, stop : int
        The query ids, ``start <= id < stop``.
    ids : np.ndarray, shape (stop - start, K), int64
        Row q - start: the neighbours of token q, nearest first (rank 1).
    scores : np.ndarray, shape (stop - start, K), float64
        Their cosine similarity or dot product.
    """

    metric: str
    start: int
    stop: int
    ids: np.ndarray
    scores: np.ndarray


@dataclass(frozen=True)
class NeighbourGraph:
    """What ``measure_graph`` measures: the graph's shape, and its lists as blocks (read once).

    Attributes
    ----------
    V, D, k : int
        Table shape and neighbours per token.
    metrics : tuple of str
        The metrics, in the order their blocks come.
    source : dict or None
        The table's provenance.
    blocks : iterator of GraphBlock
        Every metric's blocks, in query order, one metric after the other;
        an iterator (consumed once), not rendered by ``to_dict``.
    notes : tuple of str
        What was adjusted without being asked (a default k shrunk to V - 1).
    memory : callable or None
        ``memory()``: the search's ``SearchMemory`` (the budget, each metric's
        plan with the screen it runs and why, the table's resident cost) as it
        stands; read it after the blocks. None for a ``scan`` of the caller's.
    """

    V: int
    D: int
    k: int
    metrics: tuple[str, ...]
    source: dict[str, Any] | None
    blocks: Iterator[GraphBlock] = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()
    memory: Callable[[], SearchMemory] | None = field(default=None, repr=False, compare=False)

    @property
    def edges(self) -> int:
        """Lists entries in all: ``V * k * len(metrics)``."""
        return self.V * self.k * len(self.metrics)

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``blocks``, with ``edges``, as a JSON-able dict."""
        return {"V": self.V, "D": self.D, "k": self.k, "metrics": list(self.metrics), "edges": self.edges,
                "source": self.source, "notes": list(self.notes)}


def measure_graph(
    table: EmbeddingTable,
    k: int | None = None,
    *,
    metrics: Iterable[str] = METRICS,
    memory: int | None = None,
    progress: Callable[[int], None] | None = None,
    scan: Scan | None = None,
    scheduler: Any = None,
    device: str | None = None,
) -> NeighbourGraph:
    """Every token's k nearest other tokens under each metric, handed out as blocks of lists.

    Parameters
    ----------
    table : EmbeddingTable
        The (V, D) table.
    k : int, optional
        Neighbours per token, ``1 <= k <= V - 1``. Default ``DEFAULT_K`` (10),
        shrunk to ``V - 1`` on a smaller table, with a note.
    metrics : str or iterable of {"cosine", "dot"}
        Default both, cosine first; each at most once; a string is one metric.
    memory : int, optional
        Working memory budget of the search, in bytes (default
        ``engine.neighbors.defaults.DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of query rows done after each block, V per metric.
    scan : callable, optional
        ``scan(W, k, metric, row_norms=..., memory=..., progress=...)`` ->
        blocks ``(start, stop, ids, scores)`` in query order, instead of the
        front door's (``engine.neighbors.search.Search.every_row``: exact).
    scheduler : str or distributed.Client, optional
        A Dask scheduler's address (``"tcp://host:8786"``) or client: blocks
        of query rows run on its workers (the table is sent once for every
        metric, ``memory`` bytes per task). The lists are the same. Not with ``scan``.
    device : str, optional
        A torch device for the screens, in this process or on the workers;
        the lists are the same. Not with ``scan``.

    Returns
    -------
    NeighbourGraph
        Checked and ready; the search (or ``scan``) runs as its ``blocks`` are read.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for an unknown or repeated metric, or none (``scan``
        aside: the front door checks them).
    SizeError
        (a ``ValueError``) for k outside ``[1, V - 1]``.
    BudgetError
        (a ``SizeError``) for a ``memory`` too small for one block of any
        metric's search; its ``minimum`` is the largest of theirs.

    >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    >>> g = measure_graph(t, 1, metrics=["dot"])
    >>> [(b.start, b.ids.tolist()) for b in g.blocks]
    [(0, [[2], [2], [0]])]
    """
    metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)  # "cosine" is one metric
    k, notes = fit_default(k, DEFAULT_K, table.V - 1, "k", "V - 1")
    if scan is not None:  # another source of blocks: no search to check k, the metrics or the budget
        if scheduler is not None or device is not None:
            raise ValueError("measure_graph: give scan, or scheduler/device, not both")
        check_k(k, table.V - 1, BY_ID)
        blocks = _scanned(table, k, metrics, DEFAULT_MEMORY if memory is None else memory, progress, scan)
        planned = None
    else:  # checked and planned now (a budget too small for any metric names the largest minimum)
        search = Search(table, k, metrics, every_row=True, memory=memory, device=device, scheduler=scheduler)
        metrics = search.metrics
        blocks = _searched(search, progress)
        planned = search.memory
    return NeighbourGraph(V=table.V, D=table.D, k=k, metrics=metrics, source=table.provenance.to_dict(),
                          notes=notes, blocks=blocks, memory=planned)


def _searched(search: Search, progress: Callable[[int], None] | None) -> Iterator[GraphBlock]:
    """Every metric's blocks from the front door, in order; a cluster is opened once and closed at the end."""
    with search:
        for metric in search.metrics:
            for start, stop, ids, scores in search.every_row(metric, progress=progress):
                yield GraphBlock(metric, int(start), int(stop), ids, scores)


def _scanned(table: EmbeddingTable, k: int, metrics: tuple[str, ...], memory: int,
             progress: Callable[[int], None] | None, scan: Scan) -> Iterator[GraphBlock]:
    norms = table.norms()  # (V,)
    for metric in metrics:
        for start, stop, ids, scores in scan(table.W_E, k, metric, row_norms=norms, memory=memory, progress=progress):
            yield GraphBlock(metric, int(start), int(stop), ids, scores)
