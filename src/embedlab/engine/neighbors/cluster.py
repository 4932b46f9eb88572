"""Exact neighbour search on a Dask distributed cluster: blocks of queries sent to its workers.

The room of the wing where a search runs on a cluster: the front door
(``search.Search(..., scheduler=...)``) checks and plans, then opens a
``ScatteredTable`` once for every metric and asks it for blocks. The driver
scatters the table (its row lengths, and its int16 codes where the integer
screen runs) to every worker ONCE (``Client.scatter(..., broadcast=True)``),
then submits one task per block of queries; each task runs the per-query
search (``per_query``) of its block against the whole table, following the
plan the front door made (one worker thread per task, its screen and blocks).
Results come back as tasks finish (``distributed.as_completed``) and are
handed out in query order. Dask does the scheduling; nothing here decides
which worker runs what.

Every row's lists where the front door planned the bf16 self-join
(``every_row``) come from ``pair_steps``: the self-join's steps as tasks. Step
i scores the block pairs (i, j >= i) once on the same bfloat16 products and
certified bound as on one machine and feeds both sides (``every_row.step_lists``),
so the cluster computes the products of the self-join, half those of one
query band per block; one product per pair serves both metrics where the
budget holds both scans (``every_row.joint_plans``). A step's lists are
partial (a later block's rows have seen block i's rows only); the driver
merges them by ``(-score, id)`` into every row's running lists and hands block
j out once steps 0 .. j are in. Steps go out a few per worker thread at a
time, each with the k-th best score its rows are known to reach so far, which
keeps what later steps pool and rescore small. A worker checks and converts
the table to bfloat16 once for all its tasks (``_worker_scans``).

With ``row_shards=S`` the table's rows are cut into S runs of ids as well, and
each task lists one block of queries against one run only: a partial top-k
with ids mapped back to the table's (each shard is a table of its own, planned
on the worker within ``memory``). The partial lists of a block are merged
by ``(-score, id)``, which is exact: every score is the float64 rescored
score (``rescore``), bit for bit the one the whole-table search computes for
that pair, so the merge ranks exactly what one search would. A query's own id
is left out only by the shard that holds it; a shard with fewer than k
candidate rows contributes what it has.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k;
``S`` row shards, ``n`` queries in a block.
"""

from __future__ import annotations

import threading
import weakref
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import numpy as np

from ...errors import MissingExtraError, SchedulerError, ShapeError, SizeError
from .codes import RowCodes
from .defaults import DEFAULT_MEMORY
from .per_query import search_queries
from .plan import BlockPlan, PairPlan, plan_search
from .bf16_join import Bf16SelfJoin
from .every_row import pair_scans, step_bars, step_lists
from .self_join import ListBlock
from .torch_screen import resolve_device

__all__ = ["ScatteredTable", "check_address", "DEFAULT_TIMEOUT", "merge_partial", "merge_lists", "shard_bounds"]

DEFAULT_TIMEOUT = 10.0  # seconds to wait for the scheduler to answer
_BLOCKS_PER_WORKER = 4  # blocks of queries per worker thread, so that a slow worker holds up little


class ScatteredTable:
    """A table scattered to a Dask cluster's workers, ready for exact neighbour searches.

    Parameters
    ----------
    scheduler : str or distributed.Client
        The scheduler's address (``"tcp://host:8786"``), or a client the
        caller opened. A client made here from an address is closed by
        ``close`` (or on leaving ``with``); a client passed in is never closed.
    W : np.ndarray, shape (V, D), floating
        The table; never changed. Sent to every worker once.
    row_norms : np.ndarray, shape (V,), float64
        ``vector_norms(W)``.
    codes : RowCodes, optional
        The table's integer codes (``codes.encode_rows``), sent too, for the
        plans whose screen is ``"int16"``.
    timeout : float
        Seconds to wait for the scheduler (default ``DEFAULT_TIMEOUT``).

    Raises
    ------
    MissingExtraError
        (an ``ImportError``) without ``dask.distributed`` (the ``cluster`` extra).
    SchedulerError
        (a ``ConnectionError``) when the scheduler does not answer within
        ``timeout`` seconds; names the address.
    ShapeError
        If W is not 2-D or the lengths or codes are not those of W.
    """

    def __init__(self, scheduler: Any, W: np.ndarray, *, row_norms: np.ndarray, codes: RowCodes | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        distributed = _distributed()
        if np.ndim(W) != 2:
            raise ShapeError(f"the table must be (V, D), got shape {np.shape(W)}")
        self.V, self.D = W.shape
        self.row_norms = np.asarray(row_norms)
        if self.row_norms.shape != (self.V,):
            raise ShapeError(f"row_norms has shape {self.row_norms.shape}, expected ({self.V},)")
        if codes is not None and (codes.V, codes.D) != (self.V, self.D):
            raise ShapeError(f"codes of a ({codes.V}, {codes.D}) table given for a table of shape {W.shape}")
        self._as_completed = distributed.as_completed
        self._owned = not isinstance(scheduler, distributed.Client)
        self.client = _connect(distributed, scheduler, timeout) if self._owned else scheduler
        try:
            # Once, to every worker: each task then names the data instead of carrying it.
            self._W, self._norms, self._codes = (None if x is None else self.client.scatter(x, broadcast=True,
                                                                                            hash=False)
                                                 for x in (W, self.row_norms, codes))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "ScatteredTable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the scattered table; close the client if this object opened it."""
        client, self.client = getattr(self, "client", None), None
        if client is None:
            return
        if self._owned:
            client.close()
        else:  # the caller's client stays open; only our data leaves its workers
            scattered = [getattr(self, name, None) for name in ("_W", "_norms", "_codes")]
            if getattr(self, "_W", None) is not None and client.status == "running":
                # what the steps' tasks made of the table (``_worker_scans``): a worker in this process
                # would otherwise keep it as long as the caller keeps the array
                client.run(_forget, self._W.key)
            client.cancel([f for f in scattered if f is not None])

    @property
    def threads(self) -> int:
        """Worker threads in the cluster now (at least 1)."""
        return max(1, sum(w["nthreads"] for w in self.client.scheduler_info()["workers"].values()))

    def search(self, queries: np.ndarray, k: int, metric: str, plan: BlockPlan,
               **options: Any) -> tuple[np.ndarray, np.ndarray]:
        """The whole result of ``blocks``: ids (N, K) int64, scores (N, K) float64."""
        ids = np.empty((len(queries), k), dtype=np.int64)
        scores = np.empty((len(queries), k))
        for start, stop, block_ids, block_scores in self.blocks(queries, k, metric, plan, **options):
            ids[start:stop], scores[start:stop] = block_ids, block_scores
        return ids, scores

    def blocks(self, queries: np.ndarray, k: int, metric: str, plan: BlockPlan, *, memory: int = DEFAULT_MEMORY,
               block: int | None = None, row_shards: int = 1, device: str | None = None,
               progress: Callable[[int], None] | None = None) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """Exact top-k of queries by id, computed by the cluster, in blocks in query order.

        Parameters
        ----------
        queries : np.ndarray, shape (N,), int64
            Token ids, checked by the front door (``checks``); each query
            leaves out exactly its own id.
        k : int
            ``1 <= k <= V - 1``, checked.
        metric : {"cosine", "dot"}
        plan : BlockPlan
            The plan of these queries on one worker thread (``plan.plan_search``
            with ``workers=1``), which each task follows on the whole table.
        memory : int
            Working memory of each task of a row shard (planned on the worker
            for its shard), in bytes.
        block : int, optional
            Queries per task; by default about N / (4 * worker threads), at most 1024.
        row_shards : int
            S runs of rows (``shard_bounds``); each task scans one, and its
            partial top-k are merged exactly (``merge_partial``). 1: whole table.
        device : str, optional
            A torch device name, resolved on each worker; ``plan`` is then the float screen's.
        progress : callable, optional
            Called with the number of queries in each block as it completes.

        Yields
        ------
        start, stop : int
            The block is ``queries[start:stop]``; blocks come in order and cover N.
        ids : np.ndarray, shape (stop - start, K), int64
            Best first, equal scores by the smaller id.
        scores : np.ndarray, shape (stop - start, K), float64

        Raises
        ------
        ValueError
            Once closed; ``SizeError`` for row_shards outside ``[1, V]`` or
            block < 1, before any task is sent.
        """
        if self.client is None:
            raise ValueError("this ScatteredTable is closed")
        self._check(row_shards, block)
        N = len(queries)
        block = block or max(1, min(1024, -(-N // (_BLOCKS_PER_WORKER * self.threads))))
        starts = range(0, N, block)
        bounds = shard_bounds(self.V, row_shards)
        futures = {}  # future -> (block number, shard number)
        for b, start in enumerate(starts):
            ids = queries[start:start + block]
            for s, (r0, r1) in enumerate(bounds):
                if row_shards == 1:
                    future = self.client.submit(_block_task, self._W, self._norms, self._codes, ids, k=k,
                                                metric=metric, plan=plan, device=device, pure=False)
                else:
                    future = self.client.submit(_shard_task, self._W, self._norms, ids, r0, r1, k=k, metric=metric,
                                                memory=memory, device=device, pure=False)
                futures[future] = (b, s)
        parts: dict[int, list] = {}  # block number -> its partial results by shard
        done: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        following = 0  # the next block to hand out
        try:
            for future in self._as_completed(list(futures), loop=self.client.loop):
                b, s = futures.pop(future)
                parts.setdefault(b, [None] * len(bounds))[s] = future.result()
                if all(p is not None for p in parts[b]):
                    done[b] = merge_partial(parts.pop(b), k, self.V)
                    if progress is not None:
                        progress(min(N, starts[b] + block) - starts[b])
                while following in done:  # hand out in query order
                    ids_b, scores_b = done.pop(following)
                    start = starts[following]
                    following += 1
                    yield start, start + len(ids_b), ids_b, scores_b
        finally:
            if futures:  # an error, or the caller stopped early: do not leave work running
                self.client.cancel(list(futures))

    def pair_steps(self, k: int, plans: dict[str, PairPlan], *,
                   progress: Callable[[int], None] | None = None) -> Iterator[dict[str, ListBlock]]:
        """Every row's exact top-k under each metric of ``plans``, from the self-join's steps as tasks, in row order.

        The self-join's symmetric block pairs (``every_row.step_lists``):
        first one task per block of ``plan.block`` rows for its first bars
        (``step_bars``), then one task per step i, the block pairs (i, j >= i)
        scored once and both sides fed, so half the products of one query
        band per block. A step's lists are partial (block i's rows over rows
        [a, V), each later row over block i's); they are merged here by
        ``(-score, id)`` into every row's running lists (``merge_lists``), and
        block j is handed out once steps 0 .. j are in: the lists of
        ``every_row.join_blocks``, id for id and score for score.

        At most two steps per worker thread (counted when the scan starts)
        are sent at a time, the next as one comes back; each step is sent
        with the exact k-th best score its rows are known to reach by then,
        so later steps pool few rows (``SelfJoin.begin_step``). All metrics
        of ``plans`` come from one product per block pair (the bf16 scans
        share it). Each worker checks and converts the table to bfloat16
        once, for all its tasks (``_worker_scans``). This process holds every
        row's running lists, 16 V K bytes per metric, and each block's first
        bars, 8 V bytes per metric; ``plans``' memory is a task's, on a worker.

        Parameters
        ----------
        k : int
            ``1 <= k <= V - 1``, checked by the front door.
        plans : dict of metric -> PairPlan
            The self-join's plan per metric on one worker thread
            (``plan.plan_self_join(..., workers=1)``), all with the same block.
        progress : callable, optional
            Called with the rows of each block as it is handed out.

        Yields
        ------
        dict of metric -> (start, stop, ids (n, K) int64, scores (n, K) float64)
            Block by block, from 0 to V.

        Raises
        ------
        ValueError
            Once closed, or for plans with different blocks.
        FloatingPointError
            Where fewer than k rows got a finite score (a table out of range), as in this process.
        """
        if self.client is None:
            raise ValueError("this ScatteredTable is closed")
        blocks = {p.block for p in plans.values()}
        if len(blocks) != 1:
            raise ValueError(f"the plans' blocks differ ({sorted(blocks)}): one scan's steps need one block")
        V, block = self.V, blocks.pop()
        edges = list(range(0, V, block)) + [V]
        nb = len(edges) - 1
        first = {m: np.empty(V) for m in plans}  # (V,) each row's first bar
        tasks = {self.client.submit(_bars_task, self._W, self._norms, i, k=k, plans=plans,
                                    table_key=self._W.key, pure=False): i
                 for i in range(nb)}
        try:
            for future in self._as_completed(list(tasks), loop=self.client.loop):
                i = tasks.pop(future)
                for m, bars in future.result().items():
                    first[m][edges[i]:edges[i + 1]] = bars
        finally:
            if tasks:
                self.client.cancel(list(tasks))
        lists = {m: (np.full((V, k), V, dtype=np.int64), np.full((V, k), -np.inf)) for m in plans}  # running
        running = self._as_completed([], loop=self.client.loop)
        steps: dict[Any, int] = {}  # future -> its step

        def send(i: int) -> None:
            a = edges[i]
            known = {m: lists[m][1][a:, k - 1].copy() for m in plans}  # (V - a,) -inf where < k are known
            future = self.client.submit(_step_task, self._W, self._norms, i, {m: first[m][a:] for m in plans}, known,
                                        k=k, plans=plans, table_key=self._W.key, pure=False)
            steps[future] = i
            running.add(future)

        sent = min(nb, 2 * self.threads)
        for i in range(sent):
            send(i)
        done: set[int] = set()
        following = 0  # the next block to hand out
        try:
            for future in running:
                i = steps.pop(future)
                for m, (rows, ids, scores) in future.result().items():
                    merge_lists(*lists[m], rows, ids, scores)
                done.add(i)
                if sent < nb:
                    send(sent)
                    sent += 1
                while following in done:  # steps 0 .. following are in: its block's lists are complete
                    a, b = edges[following], edges[following + 1]
                    out = {}
                    for m, (ids, scores) in lists.items():
                        if b > a and ids[a:b].max() >= V:
                            raise FloatingPointError("fewer than k rows got a finite score; the table's values are "
                                                     "out of range")
                        out[m] = (a, b, ids[a:b].copy(), scores[a:b] + 0.0)
                    following += 1
                    if progress is not None:
                        progress(b - a)
                    yield out
        finally:
            if steps:  # an error, or the caller stopped early: do not leave work running
                self.client.cancel(list(steps))

    def _check(self, row_shards: int, block: int | None) -> None:
        """This room's own options, checked before any task is sent."""
        if isinstance(row_shards, bool) or not isinstance(row_shards, (int, np.integer)) or not 1 <= row_shards <= self.V:
            raise SizeError(f"row_shards={row_shards!r}: expected an int from 1 to V={self.V}",
                            parameter="row_shards", value=row_shards, expected=f"an int from 1 to V={self.V}")
        if block is not None and (isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1):
            raise SizeError(f"block={block!r}: expected an int >= 1", parameter="block", value=block,
                            expected="an int >= 1")


def shard_bounds(V: int, row_shards: int) -> list[tuple[int, int]]:
    """S runs of row ids ``[r0, r1)`` covering ``[0, V)``, as equal as can be.

    >>> shard_bounds(10, 3)
    [(0, 3), (3, 6), (6, 10)]
    """
    edges = [V * s // row_shards for s in range(row_shards + 1)]
    return list(zip(edges[:-1], edges[1:]))


def merge_partial(parts: list[tuple[np.ndarray, np.ndarray]], k: int, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge partial top-k lists of the same queries into the top-k, by ``(-score, id)``.

    Parameters
    ----------
    parts : list of (ids, scores)
        Each ids (n, k_s) int64 (id V marks an empty slot), scores (n, k_s)
        float64 (-inf in an empty slot); together they hold every candidate
        of the exact top-k, with exact (float64 rescored) scores.
    k : int
        Neighbours per query; the parts hold at least k real entries per query.
    V : int
        The table's rows; ids equal to V are empty slots.

    Returns
    -------
    ids : np.ndarray, shape (n, K), int64
    scores : np.ndarray, shape (n, K), float64

    >>> a = (np.array([[3, 1]]), np.array([0.5, 0.2])[None])
    >>> b = (np.array([[2, 4]]), np.array([0.5, 0.1])[None])
    >>> merge_partial([a, b], 3, 5)[0].tolist()
    [[2, 3, 1]]
    """
    if len(parts) == 1 and parts[0][0].shape[1] == k:
        return parts[0]
    ids, scores = _top_k(np.concatenate([p[0] for p in parts], axis=1),
                         np.concatenate([p[1] for p in parts], axis=1), k)
    if ids.size and ids.max() >= V:  # an empty slot reached the top k: a part held too few rows
        raise ValueError(f"the partial lists hold fewer than k={k} rows for some query")
    return ids, scores


def merge_lists(ids: np.ndarray, scores: np.ndarray, rows: np.ndarray, part_ids: np.ndarray,
                part_scores: np.ndarray) -> None:
    """Merge partial lists into running ones, in place, by ``(-score, id)``: the top-k of their union.

    ``ids`` (V, K) int64 and ``scores`` (V, K) float64 are every row's lists
    so far (id V and -inf in an empty slot); ``rows`` (h,) int64, distinct,
    and ``part_ids``, ``part_scores`` (h, K) those rows' lists from other
    candidates (``every_row.step_lists``; no candidate in both).

    >>> ids, scores = np.array([[3, 5]]), np.array([[0.5, -np.inf]])
    >>> merge_lists(ids, scores, np.array([0]), np.array([[2, 4]]), np.array([[0.5, 0.1]]))
    >>> ids.tolist(), scores.tolist()
    ([[2, 3]], [[0.5, 0.5]])
    """
    if rows.size:
        ids[rows], scores[rows] = _top_k(np.concatenate([ids[rows], part_ids], axis=1),
                                         np.concatenate([scores[rows], part_scores], axis=1), ids.shape[1])


def _top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first k of ids, scores (n, L) by score descending, then the smaller id -> (n, K) each."""
    order = np.lexsort((ids, -scores), axis=-1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)


# -- what runs on a worker -----------------------------------------------------------
# Module-level functions, so that workers import them by name (embedlab is installed there).

def _block_task(W, row_norms, codes, ids, *, k, metric, plan, device):
    """One block of queries (n,) ids against the whole table, as ``plan`` says -> ids, scores (n, K)."""
    return search_queries(W, k, metric, plan, row_norms=row_norms, exclude=ids, codes=codes,
                          device=None if device is None else resolve_device(device))


def _bars_task(W, row_norms, i, *, k, plans, table_key):
    """The first bars of block i's rows, per metric (``every_row.step_bars``) -> {metric: (n,) float64}."""
    return step_bars(_worker_scans(W, k, plans, row_norms, table_key), i)


def _step_task(W, row_norms, i, first, known, *, k, plans, table_key):
    """Step i of the self-join (``every_row.step_lists``) -> {metric: (rows, ids, scores)}, partial lists."""
    return step_lists(_worker_scans(W, k, plans, row_norms, table_key), i, first, known)


# The bfloat16 inputs of a scan of each scattered table on this worker (its check, its bfloat16 table), made
# by the first task and read by the next: keyed by the scattered table's key (a new key for each scatter, so
# a table changed and scattered again is never read stale), dropped when the table leaves the worker or
# when its ScatteredTable closes (``_forget``).
_PREPARED: dict[str, SimpleNamespace] = {}
_PREPARED_LOCK = threading.Lock()


def _worker_scans(W, k, plans, row_norms, key):
    """``every_row.pair_scans`` on this worker, sharing the bfloat16 inputs made by its first task on the table
    scattered as ``key``."""
    with _PREPARED_LOCK:  # one task makes them, the others wait for them
        share = _PREPARED.get(key)
        if share is None:
            scans = pair_scans(W, k, plans, row_norms)
            lead = next((s for s in scans if isinstance(s, Bf16SelfJoin)), None)
            if lead is not None:
                _PREPARED[key] = SimpleNamespace(exact_inputs=lead.exact_inputs, table=lead.table)
                weakref.finalize(W, _PREPARED.pop, key, None)
            return scans
    return pair_scans(W, k, plans, row_norms, share=share)


def _forget(key, dask_worker=None):
    """Drop what ``_worker_scans`` keeps of the table scattered as ``key`` (run on every worker by ``close``)."""
    with _PREPARED_LOCK:
        _PREPARED.pop(key, None)


def _shard_task(W, row_norms, ids, r0, r1, *, k, metric, memory, device):
    """One block of queries (n,) ids against rows [r0, r1) -> partial ids, scores (n, K), global ids.

    A query whose own id is in the shard leaves it out (at most v - 1 rows to
    list); the others are searched by vector and leave nothing out. Each is a
    search of the shard as a table of its own, planned here within ``memory``
    bytes on this worker thread, the float screen (the shard has no codes).
    Scores are the float64 rescored scores: the same bits the whole-table
    search computes for each pair. Slots past what the shard holds get id V
    and score -inf.
    """
    V = len(W)
    shard, shard_norms = W[r0:r1], row_norms[r0:r1]  # views: (v, D), (v,)
    torch_device = None if device is None else resolve_device(device)
    out_ids = np.full((len(ids), k), V, dtype=np.int64)
    out_scores = np.full((len(ids), k), -np.inf)
    inside = (ids >= r0) & (ids < r1)  # (n,)
    for mask, room in ((inside, r1 - r0 - 1), (~inside, r1 - r0)):
        k_s = min(k, room)
        if k_s < 1 or not mask.any():
            continue
        by_id = mask is inside
        query = dict(exclude=ids[mask] - r0) if by_id else dict(vectors=np.asarray(W[ids[mask]], dtype=np.float64))
        q_norms = row_norms[ids[mask]]  # (m,) the queries are rows of the table
        plan = plan_search(r1 - r0, W.shape[1], k_s, metric, memory, q_norms=q_norms, row_norms=shard_norms,
                           table_dtype=W.dtype, by_id=by_id, screen="float")
        got, sc = search_queries(shard, k_s, metric, plan, row_norms=shard_norms, device=torch_device, **query)
        out_ids[mask, :k_s], out_scores[mask, :k_s] = got + r0, sc
    return out_ids, out_scores


# -- connecting ------------------------------------------------------------------------

def _distributed():
    """``dask.distributed``, or a MissingExtraError naming the ``cluster`` extra."""
    try:
        import distributed
    except ImportError:
        raise MissingExtraError.for_module("distributed", "scans on a Dask cluster (--scheduler)",
                                           ("cluster",)) from None
    return distributed


def _connect(distributed, address: Any, timeout: float):
    """A new client of the scheduler at ``address``; SchedulerError if it does not answer in time.

    The address is checked first (``check_address``): a malformed one is
    refused at once, before a ``distributed.Client`` exists, so no half-built
    client is left behind to time out when it is collected.
    """
    check_address(address)
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        timed_out = isinstance(exc, TimeoutError) or "timed out" in str(exc).lower()
        why = f"within {timeout:g} s" if timed_out else f"({type(exc).__name__}: {exc})"
        raise SchedulerError(f"cannot reach the Dask scheduler at {address} {why}; start one with 'dask scheduler' "
                             f"and its workers with 'dask worker {address}'", parameter="scheduler",
                             value=address) from None


def check_address(address: Any) -> None:
    """Refuse a scheduler address Dask cannot parse, without connecting.

    An address is ``[scheme://]host:port`` with a scheme Dask knows (``tcp``
    when none is given; ``tls``, ``ws``, ``wss``, ``ucx``) and a port from 1
    to 65535, or an ``inproc://`` address. Parsed with
    ``distributed.comm.parse_address`` and
    ``distributed.comm.addressing.parse_host_port``.

    Raises
    ------
    SchedulerError
        (a ``ConnectionError``) naming the address and what is wrong with it.

    >>> check_address("tcp://127.0.0.1:8786")
    """
    expected = "an address such as tcp://host:8786"
    if not isinstance(address, str) or not address.strip():
        raise SchedulerError(f"scheduler must be an address such as 'tcp://host:8786' or a distributed.Client, "
                             f"got {address!r}", parameter="scheduler", value=address, expected=expected)
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme != "inproc":
            host, port = parse_host_port(location)
            if not host:
                raise ValueError(f"no host in address {location!r}")
            if not 1 <= port <= 65535:
                raise ValueError(f"port {port} is outside 1 to 65535")
    except (ValueError, TypeError) as exc:
        raise SchedulerError(f"scheduler address {address!r} is not valid ({exc}): expected {expected}",
                             parameter="scheduler", value=address, expected=f"{expected} ({exc})") from None
