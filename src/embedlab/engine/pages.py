"""Fresh table-sized arrays in small memory pages: cheaper to fault in while blocks of rows fill them.

NumPy asks Linux for transparent huge pages (2 MiB) for every array of 4 MiB or
more. A (V, D) table is written once, block by block, right after it is made (a
loader widening a checkpoint's rows, ``stretch`` copying a table); with huge
pages the kernel clears 2 MiB ahead of each write, out of the cache, where small
pages are cleared one at a time just before the block writes them. Here a fresh
float32 table of 2 GiB cost 1.6-2.4 s of CPU to fault in with huge pages and
1.3-1.4 s with small ones, and loading the Llama-3-shaped checkpoint took 2.2-2.5 s
against 2.3-2.9 s (measured under load; the machine's THP setting "madvise").
``fresh_table`` asks for small pages (``madvise(MADV_NOHUGEPAGE)``) where it can;
elsewhere it is ``np.empty``.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

import numpy as np

__all__ = ["fresh_table", "file_mapped", "SMALL_PAGES_FROM"]

SMALL_PAGES_FROM = 1 << 22  # bytes: NumPy asks for huge pages from 4 MiB on
MADV_NOHUGEPAGE = 15  # linux/mman.h


def fresh_table(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)``, in small pages where it is at least ``SMALL_PAGES_FROM`` bytes.

    The array owns its memory (``base is None``) and is uninitialised, as ``np.empty``'s.
    Best effort: where ``madvise`` is missing (not Linux) the array is NumPy's as it is.

    >>> fresh_table((2, 3), np.float32).shape
    (2, 3)
    """
    data = np.empty(shape, dtype=dtype)
    if data.nbytes >= SMALL_PAGES_FROM and _madvise is not None:
        start = -data.ctypes.data % mmap.PAGESIZE  # the whole pages inside the array
        span = (data.nbytes - start) // mmap.PAGESIZE * mmap.PAGESIZE
        _madvise(data.ctypes.data + start, span, MADV_NOHUGEPAGE)
    return data


def file_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a file's map (``np.memmap``, or ``np.frombuffer`` over an ``mmap``):
    pages the operating system caches for the file, not memory of its own.

    >>> file_mapped(np.zeros(3))
    False
    """
    if isinstance(array, np.memmap):
        return True
    base: Any = array.base
    while isinstance(base, np.ndarray):
        if isinstance(base, np.memmap):
            return True
        base = base.base
    return isinstance(getattr(base, "obj", base), mmap.mmap)  # np.frombuffer holds a memoryview of the map


def _libc_madvise() -> Any:
    """libc's ``madvise(addr, length, advice)`` where there is one (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return function


_madvise = _libc_madvise()
