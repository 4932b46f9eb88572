"""The memory plan of a neighbour search: block sizes and workers that fit a budget.

``search`` cuts its work into blocks of queries (n) x blocks of vocabulary rows
(v), runs blocks of queries on ``workers`` threads, and pools and rescores
candidates a batch at a time. ``plan_blocks`` picks those sizes so that the
working memory of every worker together stays under ``memory`` bytes, counting
each part (``plan_bytes``) in bytes; the outputs (N, K) are not counted.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SizeError
from .pool import pool_slots

__all__ = ["BlockPlan", "plan_blocks", "plan_bytes", "PairPlan", "plan_self_join"]

# Preferred score block (queries x rows), measured on 2 cores: big enough
# that per-block overhead is small, small enough to stay in the L3 cache.
_PREFERRED_QUERIES = 1024
_PREFERRED_ROWS = 8192
# Rows spread over the table that set each query's first bar: 1/32 of V, at most 2048
# (it costs a GEMM of its own; a larger sample gained nothing measurable).
_SAMPLE_ROWS = 2048


@dataclass(frozen=True)
class BlockPlan:
    """How ``search`` cuts its work to stay within a memory budget.

    Attributes
    ----------
    queries : int
        Queries per block, n.
    rows : int
        Vocabulary rows per block, v.
    sample : int
        Rows spread over the table that set each query's first bar.
    batch : int
        Survivors of the filter pooled at once.
    rescore : int
        Candidates rescored in float64 at once.
    workers : int
        Threads running blocks of queries at once.
    bytes : int
        The most working memory the search needs at a time, in bytes.
    """

    queries: int
    rows: int
    sample: int
    batch: int
    rescore: int
    workers: int
    bytes: int

def plan_blocks(V: int, D: int, k: int, itemsize: int, memory: int, *,
                n_queries: int | None = None, workers: int = 1) -> BlockPlan:
    """Block sizes for ``search`` whose working memory fits in ``memory`` bytes.

    Starts from 1024 queries (fewer, so that every worker gets a block) x
    8192 rows, and halves whichever part needs the most memory until all
    workers together fit. Counted per worker: the score block and its mask,
    or the sample that sets the first bar (at most one block, with a
    partition copy); one block of scaled rows; per query, its float64 and
    scaled copies and its pool; one batch of survivors being pooled (however
    many entries of a block pass the filter, they are pooled a batch at a
    time); one batch of candidates being rescored in float64. Not counted:
    the outputs (N, K).

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    memory : int
        The budget in bytes.
    n_queries : int, optional
        N; a block never holds more queries than there are.
    workers : int
        Threads running blocks of queries at once; each needs its own
        working memory, and there are never more than blocks of queries.

    Raises
    ------
    ValueError
        If even one query against K + 1 rows does not fit.

    >>> plan = plan_blocks(30522, 384, 10, 4, 256 * 2**20, n_queries=1000, workers=2)
    >>> plan.queries, plan.rows, plan.workers, plan.bytes <= 256 * 2**20
    (500, 8192, 2, True)
    """
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory <= 0:
        raise ValueError(f"memory must be a positive number of bytes, got {memory!r}")
    min_rows = min(V, k + 1)
    N = n_queries or _PREFERRED_QUERIES
    workers = max(1, min(workers, N))
    n = max(1, min(_PREFERRED_QUERIES, -(-N // workers)))  # give every worker a block
    v = max(min_rows, min(V, _PREFERRED_ROWS))
    batch = rescore = 8192
    while True:
        workers = min(workers, -(-N // n))  # no more workers than blocks
        parts = plan_bytes(n, v, D, k, itemsize, batch, rescore)
        need = workers * sum(parts.values())
        if need <= memory:
            sample = min(v, max(min_rows, 4 * k, min(_SAMPLE_ROWS, V // 32)))
            return BlockPlan(queries=n, rows=v, sample=sample, batch=batch,
                             rescore=rescore, workers=workers, bytes=need)
        largest = max(parts, key=parts.get)
        if largest == "rescore" and rescore > 1:
            rescore //= 2
        elif largest == "pool" and batch > 1:
            batch //= 2
        elif n > 1 and (n * 4 >= v or v == min_rows):
            n //= 2
        elif v > min_rows:
            v = max(min_rows, v // 2)
        elif batch > 1 or rescore > 1:
            batch, rescore = max(1, batch // 2), max(1, rescore // 2)
        elif workers > 1:
            workers -= 1
        else:
            raise SizeError(f"memory={memory} bytes is too small: one query against {v} rows needs {need} bytes",
                            parameter="memory", value=memory, expected=f"at least {need} bytes for one query "
                            f"against {v} rows")


def plan_bytes(n: int, v: int, D: int, k: int, itemsize: int, batch: int, rescore: int) -> dict[str, int]:
    """Working memory of one worker with blocks (n, v), in bytes, by part (see ``plan_blocks``)."""
    P = pool_slots(k)
    sample = n * v * 2 * itemsize  # the first bar: scores of at most v rows and a partition copy
    scan = n * v * (itemsize + 1) + 8 * v  # the score block and its mask; one query's survivors
    return {
        "block": max(sample, scan) + v * D * (itemsize + 8),  # and one block of scaled rows
        "queries": n * (D * (16 + itemsize) + P * 16 * 3 + 128),  # copies, pool, results
        "pool": (batch + min(batch, n) * P) * 120,  # survivors and the pools they join, sorted
        "rescore": rescore * (2 * D * 8 + 96),  # the gathered float64 rows and query rows
    }


@dataclass(frozen=True)
class PairPlan:
    """How ``self_join`` cuts the whole table's scan (every row a query) to stay within a memory budget.

    Attributes
    ----------
    block : int
        Rows per block, b: query blocks and row blocks are the same blocks, so
        a block pair's scores serve both sides.
    batch : int
        Survivors of the filter pooled at once.
    rescore : int
        Candidates rescored in float64 at once.
    workers : int
        Threads scoring block pairs at once.
    bytes : int
        The most working memory the scan needs at a time, in bytes: the
        pools of all V queries (``pools``) and every worker's block pair.
    pools : int
        Of ``bytes``, what stays for the whole scan: every query's candidate
        pool, bar and margin, waiting survivors, and the rows' inverse lengths, O(V K).
    """

    block: int
    batch: int
    rescore: int
    workers: int
    bytes: int
    pools: int


_PREFERRED_PAIR_BLOCK = 2048  # a 2048 x 2048 float32 score block is 16 MiB (measured: larger gained nothing)


def plan_self_join(V: int, D: int, k: int, itemsize: int, memory: int, *, workers: int = 1,
                   block: int | None = None) -> PairPlan:
    """Block size for ``self_join`` whose working memory fits in ``memory`` bytes.

    Counted: for the whole scan, every query's pool (``pool_slots(k)`` ids
    and scores, 16 bytes each), its bar and margin, and the inverse lengths
    (8 bytes each per row), and the transposed survivors waiting to be merged
    into the pools (about one per row, 24 bytes); per worker, one score block (b, b) with its
    mask, the two blocks of rows as the GEMM sees them, and one batch of
    survivors; once, one batch of candidates being rescored and the
    block's results. Not counted: the (b, K) results handed out.

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    memory : int
        The budget in bytes.
    workers : int
        Threads scoring block pairs at once.
    block : int, optional
        Rows per block, instead of the largest that fits up to 2048.

    Raises
    ------
    SizeError
        (a ``ValueError``) if the pools and one block of ``min(V, K + 1)``
        rows do not fit; the message names the smallest budget that does.

    >>> plan = plan_self_join(30522, 384, 10, 4, 256 * 2**20, workers=2)
    >>> plan.block, plan.bytes <= 256 * 2**20
    (2048, True)
    """
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory <= 0:
        raise ValueError(f"memory must be a positive number of bytes, got {memory!r}")
    P = pool_slots(k)
    pools = V * (P * 16 + 3 * 8 + 24)  # pool slots; bar, margin, inverse length; about one waiting survivor
    b = max(1, min(V, block or _PREFERRED_PAIR_BLOCK))
    batch = rescore = 8192
    min_b = min(V, k + 1) if block is None else b
    while True:
        w = max(1, min(workers, -(-V // b)))
        parts = {
            "blocks": w * (b * b * (itemsize + 1) + 2 * b * D * itemsize),  # score block, mask, two blocks of rows
            "batch": w * batch * 120,  # survivors being pooled, sorted
            "rescore": rescore * (2 * D * 8 + 96),  # gathered float64 rows and query rows
            "lists": b * (P * 16 + D * 8 + 16 * k),  # one block's pools gathered, its float64 rows, its lists
        }
        need = pools + sum(parts.values())
        if need <= memory:
            return PairPlan(block=b, batch=batch, rescore=rescore, workers=w, bytes=need, pools=pools)
        largest = max(parts, key=parts.get)
        if largest == "rescore" and rescore > 1:
            rescore //= 2
        elif largest == "batch" and batch > 1:
            batch //= 2
        elif b > max(min_b, 512):
            b //= 2
        elif w > 1:
            workers = w - 1
        elif b > min_b:
            b = max(min_b, b // 2)
        elif batch > 1 or rescore > 1:
            batch, rescore = max(1, batch // 2), max(1, rescore // 2)
        else:
            raise SizeError(f"memory={memory} bytes is too small for the whole table's scan: the pools of its "
                            f"V={V} queries and one block of {b} rows need {need} bytes", parameter="memory",
                            value=memory, expected=f"at least {need} bytes for V={V} pools and one block of {b} rows")
