"""The header of a GGUF file walked as it declares itself, every count and length checked against the file's size.

``gguf.GGUFReader`` trusts the counts a file declares: an array said to hold 2^40
items is looped over item by item (hours), a string longer than the file is cut
silently, and a tensor count of 2^40 ends in "index 0 is out of bounds". So
before the reader parses a file, ``check_header`` walks the same layout with
``struct`` over a memory map (nothing is allocated by a declared size) and
refuses the first field that cannot be true, naming it and its value.

The layout (llama.cpp ``docs/gguf.md``, versions 2 and 3; all integers in the
file's byte order, little-endian unless the version reads byte-swapped)::

    magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
    kv_count x   (string key | u32 value type | value)
    tensor_count x (string name | u32 n_dims | n_dims x u64 ne | u32 GGML type | u64 offset)
    padding to general.alignment (default 32) | the tensors' data

where a string is a u64 length and that many bytes, and an array value is a u32
item type, a u64 count and the items. A tensor's bytes are ``prod(ne)`` weights
in blocks of its type (``gguf.GGML_QUANT_SIZES``: Q8_0 holds 32 weights in 34
bytes), starting ``offset`` bytes into the data.

Standard library only; the GGML types come from the caller (``sources.gguf``
reads them from the gguf library).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Mapping

from ..errors import SourceError, brief
from . import files

__all__ = ["MAX_DIMS", "check_header"]

MAX_DIMS = 4  # GGML_MAX_DIMS: a ggml tensor has at most 4 dimensions
MAX_NESTING = 8  # arrays of arrays: llama.cpp writes none nested; a deeper file is refused, not recursed into
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT
VERSIONS = (2, 3)  # the versions gguf.GGUFReader reads (version 1 had 32-bit counts)

# GGUF value types (GGUFValueType): id -> (name, bytes of one value; 0 for a string, None for an array)
VALUE_TYPES: dict[int, tuple[str, int | None]] = {
    0: ("UINT8", 1), 1: ("INT8", 1), 2: ("UINT16", 2), 3: ("INT16", 2), 4: ("UINT32", 4), 5: ("INT32", 4),
    6: ("FLOAT32", 4), 7: ("BOOL", 1), 8: ("STRING", 0), 9: ("ARRAY", None), 10: ("UINT64", 8), 11: ("INT64", 8),
    12: ("FLOAT64", 8),
}
STRING, ARRAY, UINT32 = 8, 9, 4
LEAST_KV = 8 + 4 + 1  # an empty key, a value type, a one-byte value
LEAST_TENSOR = 8 + 4 + 4 + 8  # an empty name, n_dims = 0, a type, an offset


def check_header(path: str | Path, types: Mapping[int, tuple[str, int, int]]) -> None:
    """Walk a GGUF file's header and refuse the first declared count or size the file cannot hold.

    Parameters
    ----------
    path : str or Path
        A GGUF file; a regular file (``files.regular_file``).
    types : mapping of int -> (str, int, int)
        GGML type id -> (name, weights per block, bytes per block), as
        ``gguf.GGML_QUANT_SIZES`` gives them (F32: ``("F32", 1, 4)``).

    Raises
    ------
    SourceError
        For a file shorter than its fixed header, without the GGUF magic, of a
        version other than 2 or 3, or with a count, a length, a value type, a
        dimension, a GGML type, an alignment or a tensor's bytes that the
        file cannot hold: the message names the field and its value.
    """
    with files.open_regular(path, "GGUF file") as handle:
        head = handle.read(24)
        if head[:4] != b"GGUF"[:len(head)] or not head:
            raise SourceError(f"{path} is not a GGUF file: it does not start with the magic bytes GGUF")
        if len(head) < 24:
            raise SourceError(f"{path} is truncated: {len(head)} bytes, but a GGUF header takes 24 (magic, version, "
                              "counts)")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _Walk(Path(path), data, types).header()


class _Walk:
    """A cursor over the mapped file that reads each field only once it has checked the bytes are there."""

    def __init__(self, path: Path, data: mmap.mmap, types: Mapping[int, tuple[str, int, int]]) -> None:
        self.path, self.data, self.types, self.pos, self.order = path, data, types, 0, "<"
        self.alignment = DEFAULT_ALIGNMENT

    def header(self) -> None:
        version = struct.unpack_from("<I", self.data, 4)[0]
        if version & 0xFFFF == 0:  # written on a big-endian machine, as gguf.GGUFReader tells it
            self.order, version = ">", struct.unpack_from(">I", self.data, 4)[0]
        if version not in VERSIONS:
            raise SourceError(f"{self.path}: GGUF version {version} is not one the gguf library reads "
                              f"({', '.join(map(str, VERSIONS))})")
        self.pos = 8
        tensors, kvs = self.u64("tensor_count"), self.u64("kv_count")
        if kvs * LEAST_KV > self.left():
            raise SourceError(f"{self.path}: kv_count={kvs:,} declares more metadata keys than the file can hold: "
                              f"each takes at least {LEAST_KV} bytes, and {self.left():,} bytes follow the counts")
        if kvs * LEAST_KV + tensors * LEAST_TENSOR > self.left():
            raise SourceError(f"{self.path}: tensor_count={tensors:,} declares more tensors than the file can hold: "
                              f"each tensor info takes at least {LEAST_TENSOR} bytes, and {self.left():,} bytes "
                              "follow the counts")
        for number in range(1, kvs + 1):
            self.kv(f"metadata key {number} of {kvs:,}")
        infos = [self.tensor_info(f"tensor info {number} of {tensors:,}") for number in range(1, tensors + 1)]
        start = -(-self.pos // self.alignment) * self.alignment  # the data begins at the next aligned byte
        data_size = max(len(self.data) - start, 0)
        for name, type_name, ne, needed, offset in infos:
            if offset + needed > data_size:
                raise SourceError(f"{self.path}: tensor {name} ({type_name}, ne={ne}) needs {needed:,} bytes at data "
                                  f"offset {offset:,}, but the file holds {data_size:,} data bytes")

    # -- the key/value metadata ---------------------------------------------------

    def kv(self, where: str) -> None:
        key = self.string(f"{where}: its name")
        shown = f"metadata {brief(key.decode('utf-8', errors='replace'))}"
        kind = self.u32(f"{shown}: its value type")
        if kind not in VALUE_TYPES:
            raise SourceError(f"{self.path}: {shown} has value type {kind}, which GGUF does not define "
                              f"(0 to {max(VALUE_TYPES)})")
        if key == b"general.alignment" and kind == UINT32:
            alignment = struct.unpack_from(self.order + "I", self.data, self.pos)[0] if self.left() >= 4 else 0
            if alignment == 0 or alignment & (alignment - 1):
                raise SourceError(f"{self.path}: general.alignment={alignment}: expected a power of two")
            self.alignment = alignment
        self.value(shown, kind, 0)

    def value(self, shown: str, kind: int, depth: int) -> None:
        name, width = VALUE_TYPES[kind]
        if width is None:  # an array: item type, count, items
            self.array(shown, depth)
        elif width == 0:  # a string: its length, then its bytes, skipped unread
            length = self.length(f"{shown}: a string value")
            self.pos += length
        else:
            self.skip(width, f"{shown}: a {name} value")

    def array(self, shown: str, depth: int) -> None:
        if depth >= MAX_NESTING:
            raise SourceError(f"{self.path}: {shown} nests arrays {depth + 1} deep; at most {MAX_NESTING}")
        item = self.u32(f"{shown}: an array's item type")
        if item not in VALUE_TYPES:
            raise SourceError(f"{self.path}: {shown} is an array of value type {item}, which GGUF does not define "
                              f"(0 to {max(VALUE_TYPES)})")
        count = self.u64(f"{shown}: an array's length")
        name, width = VALUE_TYPES[item]
        least = 8 if width == 0 else 12 if width is None else width  # a string's length; an array's type and count
        if count * least > self.left():
            raise SourceError(f"{self.path}: {shown} declares an array of {count:,} {name} items, at least "
                              f"{count * least:,} bytes, but {self.left():,} bytes remain in the file")
        if width:  # fixed-size items: skipped at once
            self.pos += count * width
            return
        for _ in range(count):  # strings (262k tokens: a fraction of a second) or nested arrays
            self.value(shown, item, depth + 1)

    # -- the tensor infos -------------------------------------------------------------

    def tensor_info(self, where: str) -> tuple[str, str, list[int], int, int]:
        """(name, GGML type name, ne, bytes, data offset) of one tensor info."""
        name = brief(self.string(f"{where}: its name").decode("utf-8", errors="replace"))
        n_dims = self.u32(f"tensor {name}: n_dims")
        if n_dims > MAX_DIMS:
            raise SourceError(f"{self.path}: tensor {name} declares n_dims={n_dims:,}; a GGML tensor has at most "
                              f"{MAX_DIMS}")
        ne = [self.u64(f"tensor {name}: its dimensions") for _ in range(n_dims)]
        kind = self.u32(f"tensor {name}: its GGML type")
        if kind not in self.types:
            raise SourceError(f"{self.path}: tensor {name} has GGML type {kind}, which the gguf library does not "
                              "know")
        offset = self.u64(f"tensor {name}: its data offset")
        type_name, block, block_bytes = self.types[kind]
        if ne and ne[0] % block:
            raise SourceError(f"{self.path}: tensor {name} has ne={ne}: {type_name} stores blocks of {block} weights, "
                              f"and its first dimension {ne[0]:,} is not a multiple of {block}")
        weights = 1
        for n in ne:
            weights *= n
        return name, type_name, ne, weights * block_bytes // block, offset  # bytes as gguf.GGUFReader counts them

    # -- fields ---------------------------------------------------------------------

    def left(self) -> int:
        return len(self.data) - self.pos

    def skip(self, n: int, what: str) -> None:
        if n > self.left():
            raise SourceError(f"{self.path}: {what} needs {n:,} bytes at byte {self.pos:,}, but {self.left():,} "
                              "remain in the file")
        self.pos += n

    def u32(self, what: str) -> int:
        self.skip(4, what)
        return struct.unpack_from(self.order + "I", self.data, self.pos - 4)[0]

    def u64(self, what: str) -> int:
        self.skip(8, what)
        return struct.unpack_from(self.order + "Q", self.data, self.pos - 8)[0]

    def length(self, what: str) -> int:
        """A string's u64 length, checked against the bytes that remain after it."""
        length = self.u64(f"{what}'s length")
        if length > self.left():
            raise SourceError(f"{self.path}: {what} declares {length:,} bytes, but {self.left():,} bytes remain in "
                              "the file")
        return length

    def string(self, what: str) -> bytes:
        length = self.length(what)
        self.pos += length
        return self.data[self.pos - length:self.pos]
