"""A safetensors tensor's data read in blocks over the cores into the one array it becomes.

F64, F32 and F16 tensors are read as they are; BF16, which has no NumPy
dtype, is widened to float32 (a bfloat16 is the top half of a float32's bits,
so every value is kept exactly). The tensor is cut into blocks of whole rows
(about ``BLOCK_BYTES`` of the file each); one thread per core
(``engine.row_blocks``) reads a block with ``os.preadv`` straight into its
place in the output, or, for BF16, into a scratch block that it widens into
its place. The load never holds more than the output plus one scratch block
per thread: no full-size intermediate, no copy afterwards (the output is a
fresh array that only the caller holds, which ``storage.readonly_matrix``
keeps as it is once made read-only).

A table a loader keeps as the file holds it (F64, F32 and F16 with
``read_data(..., mapped=True)``; a BF16 table kept as its bits,
``read_bf16_bits``) is not read at all where the file can be mapped: the
array is the file's own bytes, mapped read-only (``map_tensor``: the pages
the operating system already caches, no copy, no fresh memory to fault in),
and only the pass that measures the rows' lengths reads them. Where it cannot
be mapped (a span not aligned to the dtype, a file system that refuses maps)
it is read into a fresh array as above. A mapped file is checked to hold the
whole span when it is mapped; one cut short while mapped ends the process
(the kernel's SIGBUS), and one rewritten in place shows its new bytes through
the map, under lengths measured from the old ones, as with any map.

A (V, D) table's row lengths can be measured in the same pass
(``read_data(..., lengths=True)``): each block's, while it is in the core's
cache, with ``lengths.vector_norms`` itself, so they are bit-identical to
``vector_norms`` of the whole table (a row's length depends on that row
alone) and its scan is saved. All finite, they also show that the table
holds no NaN or infinity (``EmbeddingTable(norms=...)``).

Every size was checked against the file when its header was read
(``safetensors._tensor_info``); a file that shrank since is refused as
truncated, naming the tensor.
"""

from __future__ import annotations

import mmap
import os
import threading
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from ..engine.bf16_matrix import block_lengths, widen_bf16
from ..engine.lengths import LENGTHS_BLOCK_BYTES, norms_bytes, vector_norms
from ..engine.pages import fresh_table
from ..engine.row_blocks import CORES, map_row_blocks, row_edges
from ..errors import SourceError, brief
from . import files

if TYPE_CHECKING:  # safetensors reads headers without NumPy and imports this module only to read data
    from .safetensors import TensorInfo

__all__ = ["read_data", "read_bf16_bits", "map_tensor", "block_threads", "scratch_bytes", "READ_DTYPES", "BLOCK_BYTES"]

# The file's dtype -> the dtype of the array it becomes (safetensors is little-endian).
READ_DTYPES = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<f4")}
DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}  # bytes per value in the file
# Bytes of the file per block: a block (and, where its lengths are summed in NumPy, its copies) stay in a core's cache,
# and 2 GB of table make a few thousand blocks, a few ms of handing them to threads (measured).
BLOCK_BYTES = 1 << 19


def read_data(info: TensorInfo, *, lengths: bool = False, parallel: bool = True,
              mapped: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The tensor's data as a fresh, writable, C-contiguous array, or its file's read-only map, and its rows' lengths.

    Parameters
    ----------
    info : TensorInfo
        A tensor of dtype F64, F32, F16 (kept) or BF16 (widened to float32)
        whose ``span`` is known.
    lengths : bool
        Measure each row's Euclidean length (``lengths.vector_norms``) while
        its block is in cache; only for a 2-D tensor with at least one column.
    parallel : bool
        False reads every block on this thread, in order (what the tests
        compare the threaded read with).
    mapped : bool
        True maps an F64, F32 or F16 tensor read-only from its file where it
        can be (``map_tensor``) instead of reading it: nothing is copied, and
        the lengths (where asked) are the only pass over it. BF16, widened,
        is always read.

    Returns
    -------
    data : np.ndarray, shape ``info.shape``, float64, float32 or float16
        Memory only the caller holds (``data.base is None``), or, mapped, a
        read-only view of the file's map (C-contiguous).
    norms : np.ndarray, shape (V,), float64, or None
        The row lengths, or None where not asked.

    Raises
    ------
    SourceError
        If the dtype is not one of ``READ_DTYPES``, the span is unknown, the
        file is not a regular file, cannot be read or ends before the
        tensor's data does when it is read or mapped (truncated, naming the
        tensor, where its data ends and where the file now ends).
    ValueError
        If ``lengths`` is asked of a tensor that is not 2-D with a column.
    """
    if info.dtype not in READ_DTYPES or info.span is None:
        raise SourceError(f"tensor {info.name!r} in {info.path}: cannot read {info.dtype} data by blocks"
                          + ("" if info.span is not None else " (no byte span)"))
    if lengths and (len(info.shape) != 2 or info.shape[1] < 1):
        raise ValueError(f"row lengths need a 2-D tensor with a column, {info.name!r} has shape {info.shape}")
    rows = info.shape[0] if info.shape else 1
    width = info.numel // rows if rows else 0  # values per row
    norms = np.empty(rows, dtype=np.float64) if lengths else None  # (V,)
    if not info.numel:
        return fresh_table(info.shape, READ_DTYPES[info.dtype]), norms
    step = _rows_per_block(info)
    try:
        with files.open_regular(info.path, "checkpoint file") as handle:
            data = map_tensor(handle, info) if mapped and info.dtype != "BF16" else None
            if data is not None:  # the file's own bytes: only the lengths read them, a block at a time in cache
                flat = data.reshape(rows, width)  # (rows, width) a view of the map
                if norms is not None:
                    map_row_blocks(lambda a, b: _measure_rows(flat, a, b, norms), rows, step, parallel=parallel)
                return data, norms
            data = fresh_table(info.shape, READ_DTYPES[info.dtype])  # the one array it becomes, in small pages
            flat = data.reshape(rows, width)  # (rows, width) a view of data
            map_row_blocks(lambda a, b: _read_rows(handle, info, flat, a, b, norms), rows, step, parallel=parallel)
    except OSError as exc:
        raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None
    return data, norms


def read_bf16_bits(info: TensorInfo, *, parallel: bool = True, mapped: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A BF16 (V, D) tensor's bits as a read-only uint16 array, kept as they are, and its rows' lengths.

    What ``read_data(info, lengths=True)`` reads, without widening the table
    (2 bytes an entry, half the float32 table). The bits are the file's own
    bytes, mapped read-only (``map_tensor``), where the file can be mapped
    and ``mapped``; else each block's bits are read straight into their place
    in a fresh array. Each block is widened into a scratch block per thread,
    in the core's cache, only to measure its lengths with
    ``lengths.vector_norms`` (bit-identical to ``vector_norms`` of the widened
    table). ``engine.bf16_matrix.Bf16Matrix`` reads the table from the bits.

    Parameters
    ----------
    info : TensorInfo
        A 2-D BF16 tensor with a row and a column and a known ``span``.
    parallel : bool
        False measures (and reads) every block on this thread, in order.
    mapped : bool
        False always reads the bits into a fresh array (what the tests
        compare the map with).

    Returns
    -------
    bits : np.ndarray, shape (V, D), uint16, read-only
        A view of the file's map (``bits.base`` is the ``mmap``), or memory
        only the caller holds (``bits.base is None``) where it was read.
    norms : np.ndarray, shape (V,), float64

    Raises
    ------
    SourceError
        As ``read_data``: also when the file is shorter than the tensor's span
        when it is mapped (truncated, naming the tensor).
    ValueError
        If the tensor is not BF16, or not 2-D with a row and a column.
    """
    if info.dtype != "BF16" or len(info.shape) != 2 or not info.shape[0] or not info.shape[1]:
        raise ValueError(f"bfloat16 bits need a 2-D BF16 tensor with a row and a column, {info.name!r} is "
                         f"{info.dtype} of shape {info.shape}")
    if info.span is None:
        raise SourceError(f"tensor {info.name!r} in {info.path}: cannot read {info.dtype} data by blocks (no byte span)")
    rows, width = info.shape
    norms = np.empty(rows, dtype=np.float64)  # (V,)
    step = _rows_per_block(info)
    scratch = threading.local()  # each thread's float32 block, reused: a fresh one per block would fault it in
    held: np.ndarray | None = None

    def read(a: int, b: int) -> None:
        if held is None:  # not mapped: the block's bits read into their place
            _pread_into(handle, info, bits[a:b], info.span[0] + 2 * a * width)  # type: ignore[index]
        buf = getattr(scratch, "rows", None)
        if buf is None:  # no more rows than a block holds: a table shorter than one block gets a buffer its size
            buf = scratch.rows = np.empty((min(step, rows), width), dtype=np.float32)
        norms[a:b] = block_lengths(bits[a:b], buf)  # widened in cache, measured there

    try:
        with files.open_regular(info.path, "checkpoint file") as handle:
            held = map_tensor(handle, info) if mapped else None
            bits = held if held is not None else fresh_table((rows, width), np.uint16)
            map_row_blocks(read, rows, step, parallel=parallel)
    except OSError as exc:
        raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None
    bits.flags.writeable = False
    return bits, norms


def map_tensor(handle: BinaryIO, info: TensorInfo) -> np.ndarray | None:
    """The tensor's data as a read-only view of the open file's map; None where it cannot be mapped.

    F64, F32 and F16 come as the file holds them (little-endian), BF16 as its
    uint16 bits. The map covers the whole pages around the tensor's span
    (``mmap`` maps from a multiple of ``ALLOCATIONGRANULARITY``) and is kept
    as long as the array is (its ``base``). Nothing is read here: the pages
    come in as they are first read, from the operating system's cache where
    it holds them.

    Parameters
    ----------
    handle : BinaryIO
        The checkpoint file, open for reading (``files.open_regular``); the map
        keeps its own descriptor, so the handle may be closed after.
    info : TensorInfo
        A tensor of dtype F64, F32, F16 or BF16 with at least one value and a
        known ``span``.

    Returns
    -------
    np.ndarray, shape ``info.shape``, float64 / float32 / float16 / uint16 (BF16), read-only, or None
        None where the span does not start at a multiple of the value's size
        (the view would be misaligned) or the system refuses to map the file
        (``OSError``): the caller reads the data instead.

    Raises
    ------
    SourceError
        If the file is now shorter than the span's end (truncated, naming the
        tensor): touching a page past a file's end would end the process.
    ValueError
        For a dtype ``tensor_data`` does not read.
    """
    if info.dtype not in DTYPE_SIZES:
        raise ValueError(f"tensor {info.name!r}: cannot map {info.dtype} data")
    start, end = info.span  # type: ignore[misc]
    size = DTYPE_SIZES[info.dtype]
    if start % size or not info.numel:
        return None
    size_now = os.fstat(handle.fileno()).st_size
    if size_now < end:
        raise _truncated(info, size_now)
    base = start - start % mmap.ALLOCATIONGRANULARITY
    try:
        whole = mmap.mmap(handle.fileno(), end - base, access=mmap.ACCESS_READ, offset=base)
    except (OSError, ValueError):  # a file system without maps, or an address space too small
        return None
    dtype = np.dtype("<u2") if info.dtype == "BF16" else READ_DTYPES[info.dtype]
    return np.frombuffer(whole, dtype=dtype, count=info.numel, offset=start - base).reshape(info.shape)


def block_threads(info: TensorInfo) -> int:
    """Threads ``read_data`` reads the tensor on: one per core, at most one per block."""
    rows = info.shape[0] if info.shape else 1
    return max(1, min(CORES, len(row_edges(rows, _rows_per_block(info)))))


def scratch_bytes(info: TensorInfo, *, lengths: bool, bits: bool = False) -> int:
    """Most bytes ``read_data`` (``read_bf16_bits`` where ``bits``) holds beside its output: per thread, a
    BF16 block's file bytes (its float32 widening, kept as bits), and, where the lengths are measured, what
    ``vector_norms`` holds for the block (``lengths.norms_bytes``) and the block's lengths."""
    rows = info.shape[0] if info.shape else 1
    block = min(rows, _rows_per_block(info))  # rows
    width = info.numel // rows if rows else 0
    per_thread = (((4 if bits else 2) * block * width if info.dtype == "BF16" else 0)
                  + (norms_bytes(block, width, LENGTHS_BLOCK_BYTES) + 8 * block if lengths or bits else 0))
    return block_threads(info) * per_thread


def _rows_per_block(info: TensorInfo) -> int:
    """Rows of a block: about ``BLOCK_BYTES`` of the file, at least one row."""
    rows = info.shape[0] if info.shape else 1
    width = info.numel // rows if rows else 0
    return max(1, BLOCK_BYTES // max(1, DTYPE_SIZES[info.dtype] * width))


def _read_rows(handle: BinaryIO, info: TensorInfo, flat: np.ndarray, a: int, b: int, norms: np.ndarray | None) -> None:
    """Rows [a, b) of the tensor into ``flat[a:b]`` (widened where BF16), and their lengths into ``norms[a:b]``."""
    width = flat.shape[1]
    if info.dtype == "BF16":
        raw = np.empty((b - a) * width, dtype="<u2")  # (n,) the block's bfloat16 bits
        _pread_into(handle, info, raw, info.span[0] + 2 * a * width)  # type: ignore[index]
        widen_bf16(raw, out=flat[a:b].reshape(-1))  # in one pass, into its place: the top 16 bits of a float32
    else:
        _pread_into(handle, info, flat[a:b], info.span[0] + a * width * flat.itemsize)  # type: ignore[index]
    if norms is not None:
        _measure_rows(flat, a, b, norms)  # while in cache


def _measure_rows(flat: np.ndarray, a: int, b: int, norms: np.ndarray) -> None:
    """The lengths of rows [a, b) of the table into ``norms[a:b]``: one block, read (or just read) once, in cache."""
    norms[a:b] = vector_norms(flat[a:b], block_bytes=LENGTHS_BLOCK_BYTES, parallel=False)


def _pread_into(handle: BinaryIO, info: TensorInfo, out: np.ndarray, offset: int) -> None:
    """Fill the contiguous array ``out`` with the file's bytes from ``offset`` (reads until full or the file ends)."""
    view = memoryview(out.reshape(-1).view(np.uint8))  # (bytes,) out's own memory
    done = 0
    while done < len(view):
        n = os.preadv(handle.fileno(), [view[done:]], offset + done)  # releases the GIL
        if n == 0:
            raise _truncated(info, os.fstat(handle.fileno()).st_size)  # a block may start past the new end
        done += n


def _truncated(info: TensorInfo, size: int) -> SourceError:
    """The error for a file now ``size`` bytes long, shorter than the tensor's span: it shrank after its
    header was read (``safetensors._tensor_info`` checked the size then)."""
    end = info.span[1]  # type: ignore[index]
    return SourceError(f"{info.path}: truncated: tensor {brief(info.name)} ends at byte {end:,} of the file, but the "
                       f"file now ends at byte {size:,} (it shrank after its header was read)")
