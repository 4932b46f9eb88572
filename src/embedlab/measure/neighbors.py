"""Neighbour lists side by side: the measurement behind ``embedlab neighbors``.

For each query, its k nearest tokens by cosine and by dot product, each listed
row with its score and its length. The lengths are what make the two lists
differ: ``dot(q, w) = |q| |w| cos(q, w)``, so under the dot product a long row
climbs the list whatever its direction, while cosine divides length out.

Many queries (a (10^6, D) ``.npy`` of vectors) make more lists than fit in
memory as Python objects, though the search itself keeps to its budget:
``neighbor_stream`` hands the lists out a block of queries at a time
(``NeighborsStream``), for a renderer to write each block as it comes;
``neighbor_lists`` gathers them into one ``NeighborsResult``.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..engine.neighbors.defaults import DEFAULT_K, METRICS
from ..engine.neighbors.search import Neighbors, Search, SearchMemory
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import resolve_ids, respellings
from .defaults import fit_default

__all__ = ["Listed", "QueryLists", "NeighborsResult", "NeighborsStream", "neighbor_lists", "neighbor_stream",
           "repeat_notes", "spelling_notes", "DEFAULT_K", "BLOCK_ENTRIES"]
# List entries (queries x K) per metric in one block of a stream. A block's lists live as Python objects, about
# 250 bytes an entry (measured with tracemalloc on minilm): 8 MiB a block with both metrics, whatever N is,
# beside the search's own budget; its text is written a query at a time. K = 10: 1,638 queries a block.
BLOCK_ENTRIES = 2**14
# List entries (queries x K) per metric at most in one search of a stream: its ids and scores, 16 bytes an entry
# (4 MiB a metric), and its tokens' references. A search runs whole rounds of its plan's blocks of queries (one
# block per worker); a stream's block of lists is cut from such a search (``_search_step``).
SEARCH_ENTRIES = 2**18


@dataclass(frozen=True, init=False)
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

    def __init__(self, id: int, token: str | None, score: float, norm: float) -> None:
        # A frozen dataclass's own __init__ sets each field through object.__setattr__ (about 1.5 us a row;
        # 10,000 queries list 100,000 rows): the fields go straight into the instance's dict (about 0.7 us).
        fields = self.__dict__
        fields["id"], fields["token"], fields["score"], fields["norm"] = id, token, score, norm


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

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-able dict: one item of ``NeighborsResult.to_dict()["queries"]``."""
        return asdict(self)


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
        table), which queries were found only as the table's tokenizer spells
        them (``spelling_notes``), and which are repeated tokens
        (``Vocabulary.repeat_note``).
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
    memory: int | None = None,
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
    memory : int, optional
        Working memory budget of each search, in bytes (default
        ``engine.neighbors.defaults.DEFAULT_MEMORY``, 256 MiB).
    device : str, optional
        A torch device for the searches' screens; the lists do not change.

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
    stream = neighbor_stream(table, queries, k, metrics, vectors=vectors, memory=memory, device=device)
    return stream.result([query for block in stream.blocks for query in block])


@dataclass(frozen=True)
class NeighborsStream:
    """The lists of ``neighbor_lists``, handed out a block of queries at a time (``neighbor_stream``).

    Attributes
    ----------
    k, metrics, median_norm, max_norm, source, notes
        As ``NeighborsResult``.
    n_queries : int
        Queries in all: tokens and ids first, then vectors.
    blocks : iterator of list of QueryLists
        The queries' lists in order, at most ``block`` queries a list; an
        iterator (read once). Every check on the queries is made before the
        first block is handed out, so an error comes before any list.
    memory : callable
        ``memory()``: the ``SearchMemory`` as it stands (read it after the
        blocks: the searches may build the table's integer codes).
    block : int
        Queries per block.
    """

    k: int
    metrics: list[str]
    n_queries: int
    median_norm: float
    max_norm: float
    source: dict[str, Any] | None
    notes: tuple[str, ...]
    blocks: Iterator[list[QueryLists]] = field(repr=False, compare=False)
    memory: Callable[[], SearchMemory] = field(repr=False, compare=False)
    block: int

    def result(self, queries: list[QueryLists]) -> NeighborsResult:
        """A ``NeighborsResult`` of ``queries`` (every block, or none for the fields alone), ``memory`` as it stands."""
        return NeighborsResult(k=self.k, metrics=self.metrics, queries=queries, median_norm=self.median_norm,
                               max_norm=self.max_norm, source=self.source, notes=self.notes, memory=self.memory())

    def to_dict(self) -> dict[str, Any]:
        """``NeighborsResult.to_dict()`` with no queries, ``memory`` as it stands (``formats.to_json_chunks``)."""
        return self.result([]).to_dict()

    def query_dicts(self) -> Iterator[dict[str, Any]]:
        """Each query's ``to_dict()``, in order, as the blocks come (reads ``blocks``, emptying each)."""
        for block in self.blocks:
            block.reverse()
            while block:  # each query's lists freed once given out: a block is not held beside the next
                yield block.pop().to_dict()


def neighbor_stream(
    table: EmbeddingTable,
    queries: Sequence[int | str] = (),
    k: int | None = None,
    metrics: Sequence[str] = METRICS,
    *,
    vectors: Any = None,
    memory: int | None = None,
    device: str | None = None,
    block: int | None = None,
) -> NeighborsStream:
    """``neighbor_lists``, its lists a block of queries at a time: memory for one block, whatever N is.

    Parameters and errors are ``neighbor_lists``'s, raised here, before any
    list: the tokens, then (by the front door, ``engine.neighbors.search.Search``,
    made once for every block) the metrics, k against ``V - 1`` (``V`` for
    vectors only), every query (vectors' widths and values, lengths float64
    cannot rank), then the budget (``BudgetError``); the first block is
    searched here too.
    ``block`` is the queries per block (default ``BLOCK_ENTRIES // k``, at
    least 1). The lists, the notes and ``memory()`` after the blocks are
    those of ``neighbor_lists``, whatever the block.

    >>> t = EmbeddingTable([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], vocabulary=["a", "b", "c"])
    >>> s = neighbor_stream(t, ["a", "b", "c"], 1, ["dot"], block=2)
    >>> [[q.lists["dot"][0].token for q in b] for b in s.blocks]
    [['b', 'a'], ['b']]
    """
    queries = [queries] if isinstance(queries, str) else queries  # one token string is one query, not its letters
    ids = resolve_ids(queries, table.V, table.vocabulary)  # each query as table.token_id resolves it
    if not ids and (vectors is None or (np.ndim(vectors) == 2 and len(vectors) == 0)):
        raise ValueError("give at least one query: a token, a token id or a vector")
    limit, limit_name = (table.V - 1, "V - 1") if ids else (table.V, "V")  # a vector leaves no row out
    k, notes = fit_default(k, DEFAULT_K, limit, "k", limit_name)
    # Checked, screened and planned once, for every block: the metrics, k, the vectors and every query's
    # length, then the budget (a budget too small for any search is refused before the first one).
    search = Search(table, k, metrics, ids=ids or None, vectors=vectors, memory=memory, device=device)
    notes += spelling_notes(table, queries) + repeat_notes(table, ids)
    norms = table.norms()  # (V,)
    size = max(1, BLOCK_ENTRIES // k) if block is None else block
    blocks = _blocks(table, search, queries, size)
    first = next(blocks, None)  # the first block's search: its errors come before any output
    n_queries = len(ids) + (0 if search.vectors is None else len(search.vectors))
    return NeighborsStream(k=k, metrics=list(search.metrics), n_queries=n_queries,
                           median_norm=float(np.median(norms)), max_norm=float(norms.max()),
                           source=table.provenance.to_dict(), notes=notes,
                           blocks=_handed(first, blocks), memory=search.memory,
                           block=size)


def _handed(first: list[QueryLists] | None, blocks: Iterator[list[QueryLists]]) -> Iterator[list[QueryLists]]:
    """The first block (searched before the stream is handed out), then the others, holding none once handed out.

    (``itertools.chain([first], blocks)`` kept the first block to the end of the stream: its arguments stay in
    it, so a stream held two blocks of lists, not one.)
    """
    held = [first]
    del first
    if held[0] is not None:
        yield held.pop()
    yield from blocks


def _blocks(table: EmbeddingTable, search: Search, queries: Sequence[int | str],
            size: int) -> Iterator[list[QueryLists]]:
    """The lists of ``size`` queries at a time (the last block shorter): the ids first, then the vectors.

    Each metric's search runs over ``_search_step`` queries at once (whole
    rounds of the plan's blocks of queries, so that no round runs a short
    block beside idle workers); its lists become Python objects a block at a
    time as the blocks are handed out.
    """
    lists = _query_lists(table, search, queries, size)
    while True:
        with _collector_paused():
            block = list(itertools.islice(lists, size))
        if not block:
            return
        yield block


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a block of lists is made (back as it was after).

    A block makes about three tracked objects a list entry (``Listed``, the
    lists, ``QueryLists``), none of them in a cycle. With the collector on,
    they set off full collections that walk every object of the process: two
    for 10,000 minilm queries, 0.45 s in all beside 1.2 s of search, once
    transformers and torch are imported (200,000 objects). Paused, the new
    objects are walked once, at the next young collection. The pause also
    spans the searches a block starts (``_query_lists`` searches as it goes):
    they make arrays and a few Python objects, no cycles, so nothing is left
    for a collection meanwhile; cycles other threads make wait until the
    block is made.

    Threads making blocks at once share one pause (``_PAUSE``): the first in
    turns the collector off, noting whether it was on, the last out turns it
    back on if it was; a thread never reads the collector's state while
    another changes it (reading, then disabling, let a thread read "off" just
    before another's block ended and leave it off for good).
    """
    with _PAUSE.lock:
        if not _PAUSE.depth:
            _PAUSE.was = gc.isenabled()
            gc.disable()
        _PAUSE.depth += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.depth -= 1
            if not _PAUSE.depth and _PAUSE.was:
                gc.enable()


class _Pause:
    """``_collector_paused``'s shared state: blocks being made now, whether the collector was on before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.was = False


_PAUSE = _Pause()


def _query_lists(table: EmbeddingTable, search: Search, queries: Sequence[int | str],
                 size: int) -> Iterator[QueryLists]:
    """Each query's lists in order, the ids first, then the vectors, searched ``_search_step`` queries ahead.

    A search's numbers become Python ones a block of ``size`` queries at a time (``_spans``: where ``_blocks``
    cuts the stream), each array read once (``_listed``), not three reads a query; each query's lists are let
    go of here as it is handed out (``_given``), so that a block's lists are not held beside the next.
    """
    norms = table.norms()  # (V,)
    metrics = search.metrics
    if search.ids is not None:
        step = _search_step(search, "ids", size)
        for s0 in range(0, len(search.ids), step):
            chunk = search.ids[s0:s0 + step]  # (n,) a search's worth of the planned ids
            found = {m: search.nearest(m, ids=chunk) for m in metrics}
            for b0, b1 in _spans(s0, len(chunk), size):
                part = chunk[b0:b1].tolist()  # a block of lists' query ids
                tokens = [None] * len(part) if table.vocabulary is None else table.vocabulary.token_rows([part])[0]
                listed = [_given(_listed(found[m], b0, b1, norms)) for m in metrics]
                for n, (i, token, norm, *lists) in enumerate(zip(part, tokens, norms[part].tolist(), *listed)):
                    yield QueryLists(query=str(queries[s0 + b0 + n]), id=i, token=token, norm=norm,
                                     lists=dict(zip(metrics, lists)))
                    del lists  # the next query's lists replace these: only the block's consumer holds them
    if search.vectors is not None:
        before = 0 if search.ids is None else len(search.ids)  # the stream's queries before the vectors
        step = _search_step(search, "vectors", size)
        for s0 in range(0, len(search.vectors), step):
            chunk = search.vectors[s0:s0 + step]  # (n, D) a search's worth of the planned vectors
            found = {m: search.nearest(m, vectors=chunk) for m in metrics}
            chunk_norms = search.vector_norms[s0:s0 + step]  # (n,)
            for b0, b1 in _spans(before + s0, len(chunk), size):
                part = chunk_norms[b0:b1].tolist()  # a block of lists' query lengths
                listed = [_given(_listed(found[m], b0, b1, norms)) for m in metrics]
                for n, (q_norm, *lists) in enumerate(zip(part, *listed)):
                    yield QueryLists(query=f"vector {s0 + b0 + n}", id=None, token=None, norm=q_norm,
                                     lists=dict(zip(metrics, lists)))
                    del lists


def _given(items: list[Any]) -> Iterator[Any]:
    """The items in order, each let go of as it is handed out (the list empties as it is read).

    >>> items = [1, 2, 3]
    >>> given = _given(items)
    >>> next(given), items
    (1, [3, 2])
    """
    items.reverse()
    while items:
        yield items.pop()


def _spans(start: int, n: int, size: int) -> Iterator[tuple[int, int]]:
    """Spans [b0, b1) of a search's n queries, the first of them the stream's query ``start``, cut where the
    stream's blocks of ``size`` queries are cut: no span holds lists of two blocks.

    >>> list(_spans(5, 10, 4))
    [(0, 3), (3, 7), (7, 10)]
    """
    edges = sorted({0, n, *range((-start) % size, n, size)})
    return zip(edges[:-1], edges[1:])


def _search_step(search: Search, queries: str, size: int) -> int:
    """Queries a stream's search takes at once: as many whole rounds of the plans' blocks of queries
    (``plan.queries`` a worker, ``plan.workers`` at once) as ``SEARCH_ENTRIES`` list entries a metric hold
    (counting at least 8 a query: each query's list of tokens), and never fewer than ``size`` (a block of
    lists).

    Searching a block of lists at a time (1,638 queries at K = 10) ran a short block of queries beside idle
    workers once a block, and each search pays its own start (threads, the first bar of a bf16 or int16
    screen): 10,000 minilm queries through ``embedlab.neighbors`` took 2.46 s searched a block of lists at a
    time, 1.99 s in whole rounds (cosine, benchmarks/README.md). A search's own output is small (16 bytes an entry, and its tokens' references);
    the Python objects of the lists are made a block at a time.
    """
    round_ = max(p.queries * p.workers for p in (search.plan(m, queries) for m in search.metrics))
    per_query = max(search.k, 8)  # a query's tokens list costs about as much as 8 entries' references
    return max(size, SEARCH_ENTRIES // per_query // round_ * round_)


def repeat_notes(table: EmbeddingTable, ids: Sequence[int]) -> tuple[str, ...]:
    """One note per distinct token string among ``ids`` that several ids hold: which id the string means.

    >>> t = EmbeddingTable([[1.0], [2.0], [3.0]], vocabulary=["a", "b", "a"])
    >>> repeat_notes(t, [2, 1])
    ("token 'a' is repeated: ids 0 and 2 hold it; 'a' means id 0 (the first copy); id:2 reaches the other",)
    """
    if table.vocabulary is None or not table.vocabulary.any_repeated():
        return ()
    notes = (table.vocabulary.repeat_note(int(i)) for i in ids)
    return tuple(dict.fromkeys(note for note in notes if note is not None))


def spelling_notes(table: EmbeddingTable, queries: Sequence[Any]) -> tuple[str, ...]:
    """One note per typed query found only as the table's tokenizer spells it (``vocabulary.respellings``).

    >>> from embedlab.engine.vocabulary import Vocabulary
    >>> t = EmbeddingTable([[1.0], [2.0]], vocabulary=Vocabulary(["a", "b"], spell=lambda s: [(s.lower(), "normalizer")]))
    >>> spelling_notes(t, ["B", 0])
    ("'B' -> 'b', id 1: normalised by the tokenizer",)
    """
    return tuple(r.note for r in respellings(queries, table.vocabulary))


def _listed(found: Neighbors, start: int, stop: int, norms: np.ndarray) -> list[list[Listed]]:
    """Lists ``start`` to ``stop`` of a search result, each row with its length (its tokens as the search named
    them: the table's); each array made Python numbers once for all of them, in C."""
    rows = found.ids[start:stop]  # (b, K) int64
    ids, scores, lengths = rows.tolist(), found.scores[start:stop].tolist(), norms[rows].tolist()
    tokens = found.tokens[start:stop] if found.tokens is not None else [[None] * rows.shape[1]] * len(ids)
    return [list(map(Listed, *row)) for row in zip(ids, tokens, scores, lengths)]  # id, token, score, norm
