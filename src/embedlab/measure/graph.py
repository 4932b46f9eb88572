"""The neighbour graph: every token's k nearest tokens, by cosine and by dot, as blocks of lists.

The k-nearest-neighbour graph of the table: an edge from each token to each
of its k nearest other tokens (the query itself left out; equal scores by
the smaller id; ``engine.search``'s rule). V K edges per metric: too many to
hold for a large vocabulary at once, so ``measure_graph`` hands them out as
they are found, a block of query rows at a time (``GraphBlock``), for a
writer to stream (``report.parquet``).

Where the blocks come from is a parameter (``scan``): by default the exact
scan of every row in this process (``engine.table_scan.scan_rows``); any other
source of ``(start, stop, ids, scores)`` blocks per metric, in order, feeds
the same writer.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..errors import ChoiceError
from ..engine.footprint import metric_plans
from ..engine.search import DEFAULT_MEMORY, METRICS, check_k
from ..engine.table import EmbeddingTable
from ..engine.table_scan import int16_runs, scan_rows
from .defaults import fit_default

__all__ = ["GraphBlock", "NeighbourGraph", "measure_graph", "DEFAULT_K"]

DEFAULT_K = 10  # neighbours per token when k is not given (V - 1 on a smaller table)

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
    """

    V: int
    D: int
    k: int
    metrics: tuple[str, ...]
    source: dict[str, Any] | None
    blocks: Iterator[GraphBlock] = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()

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
    memory: int = DEFAULT_MEMORY,
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
    memory : int
        Working memory budget of the scan, in bytes.
    progress : callable, optional
        Called with the number of query rows done after each block, V per metric.
    scan : callable, optional
        ``scan(W, k, metric, row_norms=..., memory=..., progress=...)`` ->
        blocks ``(start, stop, ids, scores)`` in query order; default
        ``engine.table_scan.scan_rows`` (exact, in this process).
    scheduler : str or distributed.Client, optional
        A Dask scheduler's address (``"tcp://host:8786"``) or client: blocks
        of query rows run on its workers (``engine.cluster.ClusterScan``; the
        table is sent once for every metric, ``memory`` bytes per task). The
        lists are the same. Not with ``scan``.
    device : str, optional
        A torch device for the screens (``search.search``), in this process
        or on the workers; the lists are the same. Not with ``scan``.

    Returns
    -------
    NeighbourGraph
        Checked and ready; the scan runs as its ``blocks`` are read.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for an unknown or repeated metric, or none.
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
    if not metrics or len(set(metrics)) != len(metrics) or not set(metrics) <= set(METRICS):
        raise ChoiceError(f"metrics {list(metrics)!r}: expected one or both of {', '.join(METRICS)}, each once",
                          parameter="metric", value=",".join(map(str, metrics)),
                          expected=f"one or both of {', '.join(METRICS)}, each once")
    k, notes = fit_default(k, DEFAULT_K, table.V - 1, "k", "V - 1")
    check_k(k, table.V - 1, "V-1 (the query itself is left out)")
    if scan is not None and (scheduler is not None or device is not None):
        raise ValueError("measure_graph: give scan, or scheduler/device, not both")
    if scan is None:  # a budget too small for any metric's search is refused now, naming the largest minimum
        metric_plans(table, k, metrics, memory, ids=np.arange(table.V), device=device,
                     workers=1 if scheduler is not None else None)
    if scheduler is not None:
        blocks = _cluster_blocks(table, k, metrics, memory, progress, scheduler, device)
    else:
        if device is not None:
            scan = _device_scan(device)
        elif scan is None:
            codes = table.codes() if int16_runs(table.norms()) else None  # built once, for both metrics

            def scan(W, k, metric, **kw):
                return scan_rows(W, k, metric, codes=codes, **kw)

        blocks = _blocks(table, k, metrics, memory, progress, scan)
    return NeighbourGraph(V=table.V, D=table.D, k=k, metrics=metrics, source=table.provenance.to_dict(),
                          notes=notes, blocks=blocks)


def _blocks(table, k, metrics, memory, progress, scan) -> Iterator[GraphBlock]:
    norms = table.norms()  # (V,)
    for metric in metrics:
        for start, stop, ids, scores in scan(table.W_E, k, metric, row_norms=norms, memory=memory,
                                             progress=progress):
            yield GraphBlock(metric, int(start), int(stop), ids, scores)


def _cluster_blocks(table, k, metrics, memory, progress, scheduler, device) -> Iterator[GraphBlock]:
    """Every metric's blocks from a Dask cluster, the table scattered once (``engine.cluster``)."""
    from ..engine.cluster import ClusterScan

    queries = np.arange(table.V, dtype=np.int64)  # (V,) every token, each leaving itself out
    codes = None if device is not None else table.screen_codes(table.V)  # as the in-process search would
    with ClusterScan(scheduler, table.W_E, row_norms=table.norms(), codes=codes) as cluster:
        for metric in metrics:
            for start, stop, ids, scores in cluster.blocks(queries, k, metric, memory=memory, device=device,
                                                           progress=progress):
                yield GraphBlock(metric, int(start), int(stop), ids, scores)


_DEVICE_BLOCK = 4096  # query rows per search on a torch device: one row group of the file each


def _device_scan(device: str) -> Scan:
    """A ``scan`` whose screens run with torch on ``device``: ``search.search`` on runs of query rows."""
    from ..engine.search import search

    def scan(W, k, metric, *, row_norms, memory, progress):
        V = len(W)
        for start in range(0, V, _DEVICE_BLOCK):
            stop = min(V, start + _DEVICE_BLOCK)
            ids, scores = search(W, None, k, metric, exclude=np.arange(start, stop, dtype=np.int64),
                                 row_norms=row_norms, memory=memory, device=device)
            if progress is not None:
                progress(stop - start)
            yield start, stop, ids, scores

    return scan
