"""Neighbour overlap: do two tables agree about which tokens are alike, without aligning them?

For a token both tables hold, its k nearest by cosine in A and its k nearest in B (each over that table's whole
vocabulary, the query left out: the exact search, ``engine.neighbors.Search``, within its memory budget) share
``|N_A(t) ∩ N_B(t)|`` tokens; the overlap is that count over k, from 0 (no neighbour in common) to 1 (the same
list, in any order). Gonen et al. 2020 ("Simple, interpretable and stable method for detecting words with usage
change across corpora") rank words by it: it needs no rotation between the spaces, so it compares tables of any
width, and one row that moved on its own does not move the others' scores. B's neighbours are read as A's ids
through the rows the two share (``diff.RowMatch``): a neighbour only B has counts as not shared.

Glossary: ``V`` vocabulary size, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.neighbors.search import Search, SearchMemory
from ..errors import SizeError

__all__ = ["NeighborOverlap", "neighbor_overlap", "METRIC"]

METRIC = "cosine"  # the neighbour lists compared: direction, not length (lengths change with training)


@dataclass(frozen=True)
class NeighborOverlap:
    """Each queried token's overlap of its k nearest in A and in B.

    Attributes
    ----------
    k : int
    positions : np.ndarray, shape (N,), int64
        The queries, as positions into the shared rows (``RowMatch.a_ids[positions]`` are A's ids).
    overlap : np.ndarray, shape (N,), float64
        ``|N_A ∩ N_B| / k`` per query, in [0, 1].
    by_row : np.ndarray, shape (n,), float64
        The overlap of every shared row, NaN where the row was not a query.
    every : bool
        True where every shared token was a query; False for a sample (``queries``, ``seed``).
    seed : int
    memory : dict of str -> SearchMemory
        A's and B's search: the budget, the plan, the table's resident cost.
    """

    k: int
    positions: np.ndarray
    overlap: np.ndarray
    by_row: np.ndarray
    every: bool
    seed: int
    memory: dict[str, SearchMemory]

    @property
    def mean(self) -> float:
        return float(self.overlap.mean()) if len(self.overlap) else float("nan")

    def lowest(self, top: int) -> np.ndarray:
        """Indices (into ``positions``) of the ``top`` lowest overlaps, lowest first, the smaller A id first."""
        return np.lexsort((self.positions, self.overlap))[:top]

    def histogram(self) -> list[int]:
        """How many queries have overlap 0/k, 1/k, ..., k/k (k + 1 counts)."""
        return np.bincount(np.rint(self.overlap * self.k).astype(np.int64), minlength=self.k + 1).tolist()


def neighbor_overlap(a: Any, b: Any, a_ids: np.ndarray, b_ids: np.ndarray, k: int, *, queries: int | None = None,
                     seed: int = 0, memory: int | None = None) -> NeighborOverlap:
    """The overlap of every shared token's (or a sample's) k nearest cosine neighbours in A and in B.

    Parameters
    ----------
    a, b : EmbeddingTable
    a_ids, b_ids : np.ndarray, shape (n,), int64
        The shared rows: A's row ``a_ids[j]`` is B's row ``b_ids[j]``.
    k : int
        Neighbours per list, ``1 <= k <= V - 1`` of each table (``Search`` refuses another).
    queries : int, optional
        Sample this many shared tokens (``numpy.random.default_rng(seed)``, without replacement); None: all.
    seed : int
    memory : int, optional
        Working memory of each search, bytes (default ``DEFAULT_MEMORY``).

    Returns
    -------
    NeighborOverlap

    Raises
    ------
    SizeError, BudgetError
        As ``Search``: k out of range, a budget too small; ``SizeError`` for ``queries`` outside [1, n].

    >>> from embedlab.engine.table import EmbeddingTable
    >>> t = EmbeddingTable(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.1]]))
    >>> ids = np.arange(4)
    >>> neighbor_overlap(t, t, ids, ids, 1).overlap.tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    n = len(a_ids)
    if queries is not None and (isinstance(queries, bool) or not isinstance(queries, (int, np.integer))
                                or not 1 <= queries <= n):
        raise SizeError(f"queries={queries!r} must be an int from 1 to the {n:,} shared rows", parameter="queries",
                        value=queries, expected=f"an int from 1 to {n:,} (the shared rows)")
    positions = (np.arange(n, dtype=np.int64) if queries is None
                 else np.sort(np.random.default_rng(seed).choice(n, size=int(queries), replace=False)))
    lists_a, memory_a = _lists(a, a_ids[positions], k, memory)  # (N, K) A's ids
    lists_b, memory_b = _lists(b, b_ids[positions], k, memory)  # (N, K) B's ids
    as_a = np.full(b.V, -1, dtype=np.int64)  # B's id -> A's id of the same token; -1 where A has none
    as_a[b_ids] = a_ids
    mapped = as_a[lists_b]  # (N, K) B's neighbours as A's ids
    shared = np.array([len(np.intersect1d(x, y[y >= 0])) for x, y in zip(lists_a, mapped)], dtype=np.float64)
    by_row = np.full(n, np.nan)  # (n,)
    by_row[positions] = shared / k
    return NeighborOverlap(k=k, positions=positions, overlap=shared / k, by_row=by_row, every=queries is None, seed=seed,
                           memory={"a": memory_a, "b": memory_b})


def _lists(table: Any, ids: np.ndarray, k: int, memory: int | None) -> tuple[np.ndarray, SearchMemory]:
    """The k nearest (cosine) of rows ``ids`` over the whole table (N, K), and what the search used: every row's
    lists where the queries are every row in order (the self-join pays there), else the queries'."""
    every = len(ids) == table.V and bool((ids == np.arange(table.V)).all())
    with Search(table, k, METRIC, ids=None if every else ids, every_row=every, memory=memory) as search:
        if every:
            found = np.concatenate([block for _, _, block, _ in search.every_row(METRIC)])
        else:
            found = search.nearest(METRIC).ids
        return found, search.memory()
