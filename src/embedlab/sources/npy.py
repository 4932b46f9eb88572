"""``.npy`` tables and query vectors, read with NumPy without pickle (memory-mapped where possible).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SourceError, UnsafeFormatError
from ..engine.provenance import Provenance
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import Vocabulary
from . import files
from .word_vectors import GENSIM_RULE, read_words

__all__ = ["NPY_MAGIC", "load_npy", "load_vectors", "read_npy"]


NPY_MAGIC = b"\x93NUMPY"  # the first 6 bytes of every .npy file
MAX_BYTES = 2**63 - 1  # NumPy counts sizes and strides in a signed 64-bit intp
FLOATS = ("float16", "float32", "float64")  # the float dtypes a table may hold: no longdouble, no complex


def load_npy(path: str | Path, *, words: str | Path | None = None) -> EmbeddingTable:
    """A (V, D) ``.npy`` table, memory-mapped read-only, without pickle.

    ``words`` is a word list, one token per line in row order
    (``word_vectors.read_words``). A word on several lines keeps every row
    and means its first one, as in word-vector files (gensim keeps the first
    copy): the rows are the data, so none is dropped and nothing is refused,
    and ``id:N`` reaches each copy. No tokenizer lies beside a bare table to
    choose otherwise, and a list exported from one whose vocabulary repeats a
    string (CamemBERT's repeats ``<s>``, ``</s>`` and ``<unk>``) would
    otherwise not load at all. The vocabulary records the repeats, so
    ``neighbors`` and the report say so where a repeated word is asked for.

    Raises ``SourceError`` for a file that is not a regular file, is empty,
    is not a ``.npy`` file, is truncated, is not a 2-D float16/32/64 array
    (float128 and complex are refused) or whose row count differs from the
    word list's length (no truncation, no padding);
    ``UnsafeFormatError`` for an object array (only pickle can read one).
    """
    path = Path(path)
    matrix = read_npy(path, "a (V, D) float table written by numpy.save", mmap=True)
    if matrix.ndim != 2 or not _is_float(matrix.dtype):
        raise SourceError(f"{path} holds an array of dtype {matrix.dtype} and shape {matrix.shape}, expected a 2-D "
                          f"float (V, D) table ({', '.join(FLOATS)})")
    vocab = None
    if words is not None:
        tokens = read_words(words)
        if len(tokens) != matrix.shape[0]:
            raise SourceError(f"{path} has {matrix.shape[0]} rows but {words} has {len(tokens)} words")
        vocab = Vocabulary(tokens, rule=GENSIM_RULE)
    prov = Provenance("npy", path=str(path), dtype=str(matrix.dtype), tie_evidence="a bare table: no output head")
    return EmbeddingTable(matrix, vocabulary=vocab, provenance=prov)


def load_vectors(path: str | Path) -> np.ndarray:
    """Query vectors from a ``.npy`` file, read without pickle: (D,) or (N, D) -> (N, D), float64.

    Raises ``SourceError`` for an empty file name, a file that is not a
    regular file, cannot be read, is empty, is not a ``.npy`` file, is
    truncated or is not a 1-D or 2-D array of integers or float16/32/64;
    ``UnsafeFormatError`` for an object array.
    """
    if isinstance(path, str) and not path.strip():
        raise SourceError(f"empty file name {path!r}: query vectors must be a .npy file")
    if not os.path.lexists(path):
        raise SourceError(f"no such file: {str(path)!r} (query vectors must be a .npy file)")
    array = read_npy(Path(path), "(D,) or (N, D) query vectors written by numpy.save", mmap=False)
    numeric = _is_float(array.dtype) or array.dtype.kind in "iu"
    if array.ndim not in (1, 2) or not numeric:
        raise SourceError(f"{path} holds an array of dtype {array.dtype} and shape {array.shape}, expected (D,) or "
                          f"(N, D) numbers (integers or {', '.join(FLOATS)})")
    if array.size == 0:
        raise SourceError(f"{path} holds no vectors: shape {array.shape}")
    vectors = np.atleast_2d(array).astype(np.float64)  # (N, D)
    return vectors


def read_npy(path: Path, expected: str, *, mmap: bool) -> np.ndarray:
    """A ``.npy`` array read without pickle, or one ``SourceError`` that says what is wrong with the file.

    NumPy's own errors mislead here: an empty file is an ``EOFError``, and a
    file without the .npy magic is taken for a pickle ("contains pickled
    data"). So the file is checked first, in order: not empty, the magic
    bytes, a header NumPy can parse, no negative dimension and no size past
    what NumPy can index (2^63 - 1 bytes), no Python objects
    (``UnsafeFormatError``: only pickle reads those), as many data bytes as the
    header declares. Only a regular file is opened (``files.open_regular``).
    ``expected`` says what the file should hold, for the messages.
    """
    try:
        with files.open_regular(path, ".npy file") as handle:  # never a FIFO or a device: NumPy would wait or read on
            shape, _, dtype = _npy_header(handle, path, expected)
            offset = handle.tell()  # where the data starts
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if any(n < 0 for n in shape):
        raise SourceError(f"{path} has a damaged .npy header: it declares shape {shape}, a negative dimension; "
                          f"expected {expected}")
    if math.prod(shape) * dtype.itemsize > MAX_BYTES or any(n > MAX_BYTES for n in shape):
        raise SourceError(f"{path} has a damaged .npy header: it declares a {dtype} array of shape {shape}, larger "
                          f"than any array can be (2^63 - 1 bytes, or a dimension of more); expected {expected}")
    if dtype.hasobject:
        raise UnsafeFormatError(f"{path} holds Python objects (dtype {dtype}), which only pickle can read, and pickle "
                                f"can run code when loaded: embedlab reads .npy files without pickle; expected {expected}")
    declared = math.prod(shape) * dtype.itemsize
    if size - offset < declared:
        raise SourceError(f"{path} is truncated: its header declares a {dtype} array of shape {shape}, {declared} bytes "
                          f"of data, but the file holds {size - offset}")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise SourceError(f"cannot read {path} as a .npy array: {exc}") from None


def _is_float(dtype: np.dtype) -> bool:
    """float16, float32 or float64, in either byte order: not float128 (longdouble), which no JSON or BLAS takes."""
    return dtype.kind == "f" and dtype.itemsize in (2, 4, 8)


def _npy_header(handle: Any, path: Path, expected: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) from the header of an open .npy file, leaving it at the data."""
    magic = handle.read(len(NPY_MAGIC))
    if not magic:
        raise SourceError(f"{path} is empty (0 bytes): expected {expected}")
    if magic != NPY_MAGIC:
        raise SourceError(f"{path} is not a .npy file: it does not start with the .npy magic bytes \\x93NUMPY; "
                          f"expected {expected}")
    handle.seek(0)
    try:
        version = np.lib.format.read_magic(handle)
        # Versions 2.0 and 3.0 share the 4-byte header length; 3.0 only allows UTF-8 field names.
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        return read(handle)
    except (ValueError, EOFError) as exc:  # an unknown version, a header cut short or not a dict
        raise SourceError(f"{path} has a truncated or damaged .npy header ({exc}): expected {expected}") from None
