"""Neighbour lists side by side: the measurement behind ``embedlab neighbors``.

For each query, its k nearest tokens by cosine and by dot product, each listed
row with its score and its length. The lengths are what make the two lists
differ: ``dot(q, w) = |q| |w| cos(q, w)``, so under the dot product a long row
climbs the list whatever its direction, while cosine divides length out.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from ..engine.footprint import SearchMemory, metric_plans, search_memory
from ..engine.lengths import vector_norms
from ..errors import ChoiceError
from ..engine.search import DEFAULT_MEMORY, METRICS, Neighbors
from ..engine.table import EmbeddingTable
from .defaults import fit_default

__all__ = ["Listed", "QueryLists", "NeighborsResult", "neighbor_lists", "repeat_notes", "DEFAULT_K"]

DEFAULT_K = 10  # rows per list when k is not given (V - 1 on a smaller table)


@dataclass(frozen=True)
class Listed:
    """One row of a neighbour list.

    Attributes
    ----------
    id : int
        Token id.
    token : str or None
        Its string, where the table has a vocabulary.
    score : float
        Cosine similarity or dot product with the query.
    norm : float
        Euclidean length of the row.
    """

    id: int
    token: str | None
    score: float
    norm: float


@dataclass(frozen=True)
class QueryLists:
    """The lists of one query.

    Attributes
    ----------
    query : str
        The query as given (a token, an id) or ``"vector i"`` for row i of ``vectors``.
    id : int or None
        Its token id; ``None`` for a vector (which leaves nothing out).
    token : str or None
        Its token string, where the table has a vocabulary.
    norm : float
        Length of the query vector.
    lists : dict of str to list of Listed
        Per metric, the k rows best first (equal scores by the smaller id).
    """

    query: str
    id: int | None
    token: str | None
    norm: float
    lists: dict[str, list[Listed]]


@dataclass(frozen=True)
class NeighborsResult:
    """What ``neighbor_lists`` found.

    Attributes
    ----------
    k : int
        Rows per list.
    metrics : list of str
        The metrics listed, in order.
    queries : list of QueryLists
        One per query: tokens and ids first, then vectors.
    median_norm, max_norm : float
        Lengths of the table's rows, to read the listed norms against.
    source : dict or None
        The table's provenance.
    notes : tuple of str
        What was adjusted without being asked (a default k shrunk to fit the
        table), and which queries are repeated tokens (``Vocabulary.repeat_note``).
    memory : SearchMemory or None
        The working-memory budget, each metric's plan (of the searches by id,
        or by vector where there are none) and the table's resident cost.
    """

    k: int
    metrics: list[str]
    queries: list[QueryLists]
    median_norm: float
    max_norm: float
    source: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    memory: SearchMemory | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-able dict, scores and norms at full precision."""
        return asdict(self)


def neighbor_lists(
    table: EmbeddingTable,
    queries: Sequence[int | str] = (),
    k: int | None = None,
    metrics: Sequence[str] = METRICS,
    *,
    vectors: Any = None,
    memory: int = DEFAULT_MEMORY,
    device: str | None = None,
) -> NeighborsResult:
    """The k nearest tokens of each query under each metric, with row lengths.

    Parameters
    ----------
    table : EmbeddingTable
    queries : sequence of int or str
        Token ids or token strings (a string of digits that is not a token is
        an id); each leaves out exactly its own id.
    k : int, optional
        Rows per list: ``1 <= k <= V - 1`` (``V`` for vectors only). Default
        ``DEFAULT_K`` (10), shrunk to ``V - 1`` (``V``) on a smaller table, with a note.
    metrics : sequence of {"cosine", "dot"}
    vectors : array_like, shape (D,) or (N, D), optional
        Query vectors; they leave nothing out.
    memory : int
        Working memory budget of each search, in bytes.
    device : str, optional
        A torch device for the searches' screens (``search.search``); the lists do not change.

    Returns
    -------
    NeighborsResult

    Raises
    ------
    ValueError
        No query at all, an unknown metric, k out of range, a vector with NaN.
    TokenIdError, UnknownTokenError, ShapeError
        For a bad query or a vector whose width is not D.

    >>> t = EmbeddingTable([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], vocabulary=["a", "b", "c"])
    >>> r = neighbor_lists(t, ["c"], 1)
    >>> [(m, r.queries[0].lists[m][0].token) for m in r.metrics]
    [('cosine', 'b'), ('dot', 'b')]
    """
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise ChoiceError(f"metrics must be some of {', '.join(METRICS)}, got {metrics!r}", parameter="metrics",
                         value=metrics, expected=f"some of {', '.join(METRICS)}")
    ids = [table.token_id(q) for q in queries]
    Q = None if vectors is None else np.atleast_2d(np.asarray(vectors, dtype=np.float64))  # (N, D)
    if not ids and (Q is None or len(Q) == 0):
        raise ValueError("give at least one query: a token, a token id or a vector")
    limit, limit_name = (table.V - 1, "V - 1") if ids else (table.V, "V")  # a vector leaves no row out
    k, notes = fit_default(k, DEFAULT_K, limit, "k", limit_name)
    notes += repeat_notes(table, ids)
    norms = table.norms()  # (V,)
    # Every search's plan first: a budget too small for any is refused before the first
    # search, naming the smallest budget that all of them fit in.
    if ids and Q is not None:
        metric_plans(table, k, metrics, memory, vectors=Q)
    plans = metric_plans(table, k, metrics, memory, **({"ids": ids} if ids else {"vectors": Q}))
    found: list[QueryLists] = []
    if ids:
        lists = {m: table.nearest(np.array(ids, dtype=np.int64), k, m, memory=memory, device=device) for m in metrics}
        for n, (query, i) in enumerate(zip(queries, ids)):
            token = None if table.vocabulary is None else table.token(i)
            found.append(QueryLists(query=str(query), id=i, token=token, norm=float(norms[i]),
                                    lists={m: _listed(table, lists[m], n, norms) for m in metrics}))
    if Q is not None:
        lists = {m: table.nearest_to_vector(Q, k, m, memory=memory, device=device) for m in metrics}
        for n, q_norm in enumerate(vector_norms(Q)):
            found.append(QueryLists(query=f"vector {n}", id=None, token=None, norm=float(q_norm),
                                    lists={m: _listed(table, lists[m], n, norms) for m in metrics}))
    used = search_memory(memory, plans, len(ids) if ids else len(Q), k, table.resident())
    return NeighborsResult(k=k, metrics=metrics, queries=found, median_norm=float(np.median(norms)),
                           max_norm=float(norms.max()), source=table.provenance.to_dict(), notes=notes, memory=used)


def repeat_notes(table: EmbeddingTable, ids: Sequence[int]) -> tuple[str, ...]:
    """One note per distinct token string among ``ids`` that several ids hold: which id the string means.

    >>> t = EmbeddingTable([[1.0], [2.0], [3.0]], vocabulary=["a", "b", "a"])
    >>> repeat_notes(t, [2, 1])
    ("token 'a' is repeated: ids 0 and 2 hold it; 'a' means id 0 (the first copy); id:2 reaches the other",)
    """
    if table.vocabulary is None:
        return ()
    notes = (table.vocabulary.repeat_note(int(i)) for i in ids)
    return tuple(dict.fromkeys(note for note in notes if note is not None))


def _listed(table: EmbeddingTable, found: Neighbors, n: int, norms: np.ndarray) -> list[Listed]:
    """List n of a search result, each row with its length."""
    ids, scores = found.ids[n], found.scores[n]
    tokens = table.tokens(ids) or [None] * len(ids)
    return [Listed(id=int(i), token=t, score=float(s), norm=float(norms[i])) for i, t, s in zip(ids, tokens, scores)]
