"""Scans of a table's rows in blocks, one thread per core: NumPy releases the GIL while it scans.

A (V, D) table of real size (128,256 x 4,096) is scanned whole several times
before its first search: widened from bfloat16, checked for NaN and infinity,
measured (row lengths). Each scan is a loop over blocks of rows whose work is
a few NumPy calls that release the GIL, so splitting the blocks over the cores
divides its time by their number. ``map_row_blocks(work, rows, step)`` calls
``work(start, stop)`` for every block of at most ``step`` rows and returns the
results in block order; the result never depends on the number of threads.

The threads start on the first call that has more than one block and are
kept (a forked child starts its own). A ``work`` that itself calls ``map_row_blocks`` (a reader measuring the
lengths of the block it just read) runs its inner blocks on its own thread,
never waiting for a thread of the same pool.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

__all__ = ["map_row_blocks", "row_edges", "CORES"]

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
Result = TypeVar("Result")

_threads: ThreadPoolExecutor | None = None  # started on the first scan with more than one block
_start_lock = threading.Lock()
_inside = threading.local()  # .active is True on the pool's own threads


def row_edges(rows: int, step: int) -> list[tuple[int, int]]:
    """The blocks of at most ``step`` rows that cover ``rows`` rows, in order: [(start, stop), ...].

    >>> row_edges(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    """
    step = max(1, int(step))
    return [(start, min(rows, start + step)) for start in range(0, rows, step)]


def map_row_blocks(work: Callable[[int, int], Result], rows: int, step: int, *,
                   parallel: bool = True) -> list[Result]:
    """``[work(start, stop) for each block of at most step rows]``, the blocks run on one thread per core.

    Parameters
    ----------
    work : callable (start, stop) -> result
        Scans rows ``[start, stop)``; called once per block, from any thread.
    rows : int
        Rows to cover (``V``).
    step : int
        Rows per block (at least 1).
    parallel : bool
        False runs every block here, in order (the one-thread scan the tests
        compare with); True spreads them over one thread per core (``CORES``).

    Returns
    -------
    list
        ``work``'s results in block order, whatever order the blocks ran in.

    Raises
    ------
    Exception
        The first error of a block, in block order; blocks not yet started
        are cancelled.

    >>> map_row_blocks(lambda a, b: b - a, 5, 2)
    [2, 2, 1]
    """
    edges = row_edges(rows, step)
    if len(edges) < 2 or not parallel or CORES == 1 or getattr(_inside, "active", False):
        return [work(a, b) for a, b in edges]
    futures = [_pool().submit(work, a, b) for a, b in edges]
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()  # an error in one block: start no more
        raise


def _pool() -> ThreadPoolExecutor:
    global _threads
    with _start_lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(CORES, thread_name_prefix="embedlab-rows", initializer=_mark)
    return _threads


def _mark() -> None:
    _inside.active = True


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool there on first use (never wait on it)."""
    global _threads, _start_lock
    _threads, _start_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
