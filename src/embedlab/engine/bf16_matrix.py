"""A bf16 checkpoint's table kept as its bfloat16 bits, widened to float32 a block at a time as it is read.

A bfloat16 is the top half of a float32's bits, so a bf16 table stands for a
float32 table exactly: entry ``(v, d)`` is the float32 whose bits are
``bits[v, d] << 16``. Widening the whole table costs twice its memory and a
pass that writes every value; a search of a few queries reads each row once
and needs none of that. ``Bf16Matrix`` is the float32 (V, D) table such a
search reads: rows selected from it (``matrix[key]``) come back widened, a
fresh float32 array each time; ``widen_into`` widens a run of rows into a
buffer the caller reuses; ``widened`` makes the whole float32 table, on every
core, for the code that needs one array (``EmbeddingTable.W_E`` does it once,
on first use). Every value read through it is the value the widened table
holds, bit for bit.

Glossary: ``V`` vocabulary size, ``D`` model width.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..errors import ShapeError
from .lengths import LENGTHS_BLOCK_BYTES, lengths_from_sums
from .pages import file_mapped, fresh_table
from .row_blocks import map_row_blocks
from .sum_of_squares import compiled, sums_of_squares

__all__ = ["Bf16Matrix", "widen_bf16", "block_lengths"]

WIDEN_BLOCK_BYTES = 1 << 20  # bytes of bits widened at a time by ``widened`` (2 MiB of float32 out)


def widen_bf16(bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """bfloat16 bit patterns (any shape) uint16 -> the float32 values they are, same shape, exact.

    Each value becomes the top 16 bits of a float32, zeros below (the
    definition of bfloat16: Google's brain floating point, IEEE 754 binary32
    cut to its top half). ``out`` (same shape, float32, C-contiguous) is
    written in place where given; else a fresh array is returned.

    Raises ``TypeError`` for bits that are not uint16, ``ValueError`` for an
    ``out`` of another shape or dtype.

    >>> widen_bf16(np.array([0x3F80, 0xC000, 0x0000, 0x7F80], dtype=np.uint16)).tolist()
    [1.0, -2.0, 0.0, inf]
    """
    if bits.dtype != np.uint16:
        raise TypeError(f"bfloat16 bits must be uint16, got dtype {bits.dtype}")
    if out is None:
        out = np.empty(bits.shape, dtype=np.float32)
    elif out.shape != bits.shape or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {bits.shape}, "
                         f"got {out.dtype} {out.shape}")
    np.left_shift(bits, 16, out=out.view(np.uint32), dtype=np.uint32)
    return out


def block_lengths(bits: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """The Euclidean lengths of a block of bfloat16 rows: bits (b, D) uint16 -> (b,) float64.

    Bit-identical to ``lengths.vector_norms`` of the widened rows (a row's length depends on that row
    alone): the same sums of squares (``sum_of_squares``, whose compiled loop widens the bits as it reads
    them; where the loop is not compiled, the rows are widened into ``buf``, float32, C-contiguous, at
    least (b, D), and summed there) and the same rows measured again (``lengths.lengths_from_sums``, from
    the widened rows). A loader measures each block as it reads it.
    """
    out = np.empty(len(bits), dtype=np.float64)  # (b,)
    if compiled():
        sums_of_squares(bits, out=out, bf16=True)
    else:
        sums_of_squares(widen_bf16(bits, out=buf[:len(bits)]), out=out)  # (b, D) float32 in cache
    lengths_from_sums(out, lambda odd: widen_bf16(np.asarray(bits[odd])))
    return out


class Bf16Matrix:
    """The float32 table (V, D) a bf16 checkpoint holds, kept as its bits: 2 bytes an entry, widened as read.

    Parameters
    ----------
    bits : np.ndarray, shape (V, D), uint16
        The bfloat16 bit patterns, row-major; kept as given (made read-only:
        the caller hands them over, as a loader hands over the file's map or
        a fresh array it read); a non-contiguous array is copied.

    Attributes
    ----------
    bits : np.ndarray, shape (V, D), uint16
        The bit patterns, read-only.
    shape : tuple of int
        (V, D).
    dtype : np.dtype
        float32: the dtype of every row it gives.
    nbytes : int
        Bytes held: ``2 V D`` (the float32 table it stands for is twice that).

    Raises
    ------
    TypeError
        If ``bits`` is not a uint16 array.
    ShapeError
        If it is not 2-D with at least one row and column.
    """

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(self, bits: np.ndarray) -> None:
        if not isinstance(bits, np.ndarray) or bits.dtype != np.uint16:
            raise TypeError(f"bfloat16 bits must be a uint16 array, got {getattr(bits, 'dtype', type(bits).__name__)}")
        if bits.ndim != 2 or 0 in bits.shape:
            raise ShapeError(f"bfloat16 bits must be 2-D with at least one row and column, got shape {bits.shape}")
        bits = np.ascontiguousarray(bits)
        bits.flags.writeable = False
        self.bits = bits
        self.shape: tuple[int, int] = bits.shape

    @property
    def nbytes(self) -> int:
        return self.bits.nbytes

    @property
    def mapped(self) -> bool:
        """Whether the bits are a view of a file's map (``tensor_data.map_tensor``), not memory of their own."""
        return file_mapped(self.bits)

    @property
    def size(self) -> int:
        return self.bits.size

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Bf16Matrix(V={self.shape[0]}, D={self.shape[1]})"

    def __getitem__(self, key: Any) -> np.ndarray:
        """The entries ``key`` selects, as NumPy indexes the (V, D) table, widened: a fresh float32 array."""
        return widen_bf16(np.asarray(self.bits[key]))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The whole float32 table (``widened``), in ``dtype`` where given: for code that needs one array."""
        out = self.widened()
        return out if dtype is None or np.dtype(dtype) == out.dtype else out.astype(dtype)

    def widen_into(self, rows: slice, out: np.ndarray) -> np.ndarray:
        """Rows ``rows`` (a slice of s rows) widened into ``out`` (s, D) float32, C-contiguous; returns ``out``."""
        return widen_bf16(self.bits[rows], out=out)

    def lengths(self, *, parallel: bool = True) -> np.ndarray:
        """Every row's Euclidean length, (V,) float64, bit-identical to ``lengths.vector_norms`` of the widened table.

        One pass over the bits on every core, a block of ``LENGTHS_BLOCK_BYTES`` of bits at a time
        (``block_lengths``: summed as the bits are read where the loop is compiled, else widened into a float32
        buffer of its thread's and measured in the core's cache). Holds one float32 block per thread (allocated
        either way) beside the result.
        """
        V, D = self.shape
        out = np.empty(V, dtype=np.float64)  # (V,)
        step = max(1, LENGTHS_BLOCK_BYTES // (2 * D))  # rows of a block
        held = threading.local()  # each thread's float32 block, this call only

        def measure(a: int, b: int) -> None:
            buf = getattr(held, "rows", None)
            if buf is None:
                buf = held.rows = np.empty((min(step, V), D), dtype=np.float32)
            out[a:b] = block_lengths(self.bits[a:b], buf)

        map_row_blocks(measure, V, step, parallel=parallel)
        return out

    def widened(self, *, parallel: bool = True) -> np.ndarray:
        """The whole table as a fresh, read-only float32 array (V, D), widened a block at a time on every core.

        Holds ``4 V D`` bytes beside the bits (small pages: ``pages.fresh_table``).
        """
        out = fresh_table(self.shape, np.float32)
        step = max(1, WIDEN_BLOCK_BYTES // (2 * self.shape[1]))
        map_row_blocks(lambda a, b: widen_bf16(self.bits[a:b], out=out[a:b]), self.shape[0], step, parallel=parallel)
        out.flags.writeable = False
        return out
