"""Where blocks of queries run: in this thread, or on worker threads with a one-thread GEMM each.

``worker_count`` resolves the front door's ``workers`` argument (``search.Search``; one per
available core by default, or 1 without ``threadpoolctl``); ``block_runner``
is the ``map`` that runs a function over blocks of queries (``per_query``) or
block pairs (``self_join``) on them. The
result never depends on the number of workers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

__all__ = ["worker_count", "block_runner"]


def worker_count(workers: int | None) -> int:
    """Threads to run blocks of queries on: ``workers`` checked, or one per available core.

    ``None`` means one per core this process may run on, or 1 where
    ``threadpoolctl`` is missing. Raises ``ValueError`` for anything but a
    positive int (a bool included).

    >>> worker_count(3)
    3
    """
    if workers is None:
        if importlib.util.find_spec("threadpoolctl") is None:
            return 1  # without it each thread's GEMM would start BLAS threads of its own
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    return int(workers)


@contextlib.contextmanager
def block_runner(workers: int) -> Iterator[Callable]:
    """``map`` over blocks of queries: here, or on ``workers`` threads with a one-thread GEMM each.

    An error in one block cancels the blocks not yet started and is raised.

    >>> with block_runner(1) as run:
    ...     list(run(len, ["ab", "c"]))
    [2, 1]
    """
    if workers == 1:
        yield map
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as threads:
        try:
            yield threads.map
        except BaseException:
            threads.shutdown(cancel_futures=True)  # an error in one block: do not start the rest
            raise
