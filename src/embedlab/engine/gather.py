"""The row gather behind ``EmbeddingTable.lookup``: ``out[i] = W[ids[i]]``, over the cores when large.

The ids are checked before they get here, so the gather skips NumPy's per-id
bounds check (``mode="clip"`` never changes a checked id) and writes straight
into the result. A batch of more than 4 MiB is split over one thread per core
(NumPy releases the GIL while it copies); the threads start on the first such
batch and are kept.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["gather_rows"]

# Above this many bytes of rows a lookup is split over the cores: handing work to
# a thread costs tens of microseconds, which only pays off on large batches (measured).
_GATHER_SPLIT = 4 * 2**20
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
_gather_threads: ThreadPoolExecutor | None = None  # started on the first large lookup


def gather_rows(W: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = W[ids[i]]`` for checked ids (N,) into out (N, D), split over the cores when large.

    Parameters
    ----------
    W : np.ndarray, shape (V, D)
        The table.
    ids : np.ndarray, shape (N,), int64
        Token ids already checked against ``[0, V)``: an unchecked id is
        clipped to the table, never refused.
    out : np.ndarray, shape (N, D)
        C-contiguous, of W's dtype; written in place.

    >>> out = np.empty((2, 1))
    >>> gather_rows(np.array([[1.0], [2.0]]), np.array([1, 0]), out)
    >>> out.tolist()
    [[2.0], [1.0]]
    """
    global _gather_threads
    if out.nbytes <= _GATHER_SPLIT or _CORES == 1:
        W.take(ids, 0, out, "clip")  # the method: np.take's Python wrapper costs a microsecond
        return
    if _gather_threads is None:
        _gather_threads = ThreadPoolExecutor(_CORES - 1, thread_name_prefix="embedlab-lookup")
    edges = np.linspace(0, len(ids), _CORES + 1).astype(int)
    parts = [(ids[a:b], out[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    done = [_gather_threads.submit(np.take, W, part_ids, 0, part_out, "clip") for part_ids, part_out in parts[1:]]
    np.take(W, parts[0][0], axis=0, out=parts[0][1], mode="clip")  # the first share on this thread
    for future in done:
        future.result()
