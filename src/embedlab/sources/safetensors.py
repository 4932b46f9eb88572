"""The safetensors file format: headers read by hand, one tensor read at a time.

A safetensors file is 8 bytes, a little-endian u64 N; N bytes of JSON, an
object of name -> {dtype, shape, data_offsets}; then the tensors' data.
``tensor_infos`` reads the headers only (names, shapes, dtypes, where the
bytes lie) of a ``.safetensors`` file or of a folder holding one or more
(``model.safetensors``, or shards listed in ``model.safetensors.index.json``),
checked against the file size. ``read_tensor`` reads one tensor through the
``safetensors`` library (BF16 by hand, widened to float32), and
``same_bytes`` compares two tensors' raw bytes in the file. Nothing is ever
read with pickle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, SourceError

__all__ = ["TensorInfo", "tensor_infos", "read_tensor", "same_bytes"]

# Bytes per element of each safetensors dtype (the format's own names).
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8,
    "F8_E4M3": 1, "F8_E5M2": 1,
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
# The safetensors library refuses headers above 100 MB; so do we, before reading one.
MAX_HEADER_BYTES = 100_000_000
BF16_BLOCK = 1 << 22  # BF16 values read and widened at a time (8 MiB of the file)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors file, from its header: name, shape, dtype, file.

    ``span`` is where its bytes lie in the file, as (start, end) byte
    offsets from the start of the file; ``None`` when not known.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    path: Path
    span: tuple[int, int] | None = None

    @property
    def numel(self) -> int:
        """Number of elements (an exact int)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of its data in the file (an exact int)."""
        return self.numel * DTYPE_BYTES[self.dtype]

    @property
    def is_float(self) -> bool:
        """Whether the dtype is floating point (integer tensors are buffers, see ``checkpoint.buffer_reason``)."""
        return self.dtype in FLOAT_DTYPES


def tensor_infos(path: str | Path) -> dict[str, TensorInfo]:
    """Read the headers of a safetensors file or folder: every tensor's name, shape and dtype.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file, or a folder: the files transformers loads
        from it (the shards ``model.safetensors.index.json`` lists, else
        ``model.safetensors``; other copies beside them, such as Mistral's
        ``consolidated.safetensors``, are left out), else its ``*.safetensors`` files.

    Returns
    -------
    dict of str -> TensorInfo
        In header order, shard after shard. Only the headers are read, never
        the tensors' data.

    Raises
    ------
    SourceError
        If the path holds no safetensors file, a shard named by the index is
        missing, or a header is truncated or malformed: the message names the
        file and the value that is wrong (a declared length, a dtype, an offset).
    """
    path = Path(path)
    infos: dict[str, TensorInfo] = {}
    for file in _safetensors_files(path):
        infos.update(_read_header(file))
    return infos


def read_tensor(info: TensorInfo) -> Any:
    """The data of one tensor as a NumPy array (only that tensor is read).

    BF16 has no NumPy dtype: its bytes are read at the tensor's span and
    widened to float32 (a bfloat16 is the top half of a float32's bits, so
    every value is kept exactly).

    Raises
    ------
    SourceError
        If the file cannot be read.
    """
    if info.dtype == "BF16":
        return _read_bf16(info)
    with _open(info.path) as handle:
        try:
            return handle.get_tensor(info.name)
        except Exception as exc:  # safetensors raises its own error types
            raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None


def same_bytes(a: TensorInfo, b: TensorInfo) -> bool:
    """Whether two tensors hold the very same bytes, compared a MiB at a time where their spans are known.

    Bytes, not values: -0.0 and 0.0 differ, and a NaN equals itself. Shape
    and dtype are the caller's to compare.

    Raises
    ------
    SourceError
        If either file cannot be read.
    """
    if a.span is None or b.span is None:
        return read_tensor(a).tobytes() == read_tensor(b).tobytes()
    if a.span[1] - a.span[0] != b.span[1] - b.span[0]:
        return False
    chunk = 1 << 20  # compare a MiB at a time: two (V, D) tables never sit in memory at once
    try:
        with open(a.path, "rb") as fa, open(b.path, "rb") as fb:
            fa.seek(a.span[0])
            fb.seek(b.span[0])
            left = a.span[1] - a.span[0]
            while left > 0:
                n = min(chunk, left)
                if fa.read(n) != fb.read(n):
                    return False
                left -= n
    except OSError as exc:
        raise SourceError(f"cannot compare {a.name!r} with {b.name!r}: {exc}") from None
    return True


# -- helpers -----------------------------------------------------------------

def _safetensors_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SourceError(f"no such file or folder: {path}")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SourceError(f"cannot read the shard index {index}: {exc!r}") from None
        files = [path / name for name in sorted(dict.fromkeys(weight_map.values()))]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SourceError(f"shards named in {index} are missing: {', '.join(missing)}")
        return files
    if (path / "model.safetensors").is_file():
        # What transformers loads: another copy beside it (Mistral's consolidated.safetensors) is not the model.
        return [path / "model.safetensors"]
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise SourceError(f"no .safetensors file in {path}")
    return files


def _read_header(file: Path) -> dict[str, TensorInfo]:
    """The tensors a safetensors header declares, checked against the file's size.

    The format: 8 bytes, a little-endian u64 N; N bytes of JSON, an object of
    name -> {dtype, shape, data_offsets: [begin, end]} (offsets relative to
    the data that follows the header), plus an optional ``__metadata__``.
    """
    try:
        with open(file, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise SourceError(f"{file}: truncated safetensors header: {size} bytes, "
                                  "too short for the 8-byte header length")
            length = int.from_bytes(prefix, "little")
            if length > MAX_HEADER_BYTES or length > size - 8:
                raise SourceError(f"{file}: truncated safetensors header: it declares {length} header bytes "
                                  f"but only {size - 8} follow")
            raw = handle.read(length)
    except OSError as exc:
        raise SourceError(f"cannot read {file}: {exc}") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"{file}: the safetensors header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise SourceError(f"{file}: the safetensors header must be a JSON object, got {type(header).__name__}")
    start, data_size = 8 + length, size - 8 - length
    infos = {}
    for name, entry in header.items():
        if name != "__metadata__":
            infos[name] = _tensor_info(file, name, entry, start, data_size)
    return infos


def _tensor_info(file: Path, name: str, entry: Any, start: int, data_size: int) -> TensorInfo:
    try:
        dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
    except (TypeError, KeyError, ValueError):
        raise SourceError(f"{file}: tensor {name!r} has a malformed header entry {entry!r}") from None
    if dtype not in DTYPE_BYTES:
        raise SourceError(f"{file}: tensor {name!r} has unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise SourceError(f"{file}: tensor {name!r} has a bad shape {shape!r}")
    if type(begin) is not int or type(end) is not int or not 0 <= begin <= end:
        raise SourceError(f"{file}: tensor {name!r} has bad data_offsets {[begin, end]!r}")
    info = TensorInfo(name, tuple(shape), dtype, file, (start + begin, start + end))
    if end - begin != info.nbytes:
        raise SourceError(f"{file}: tensor {name!r} {dtype} {info.shape} needs {info.nbytes} bytes, "
                          f"but its data_offsets [{begin}, {end}] hold {end - begin}")
    if end > data_size:
        raise SourceError(f"{file}: truncated: tensor {name!r} ends at data byte {end} "
                          f"but the file holds {data_size} data bytes")
    return info


def _read_bf16(info: TensorInfo) -> Any:
    """A BF16 tensor widened to float32, read a block at a time into the one float32 array it becomes:
    the file's bytes never sit in memory beside a full-size intermediate (a 128k x 4k table peaks at its
    float32 size, not three times that)."""
    import numpy as np

    if info.span is None:
        raise SourceError(f"tensor {info.name!r} in {info.path}: no byte span to read bfloat16 from")
    start = info.span[0]
    out = np.empty(info.numel, dtype=np.uint32)  # (numel,) the float32 bits, filled block by block
    block = BF16_BLOCK
    try:
        with open(info.path, "rb") as handle:
            handle.seek(start)
            for first in range(0, info.numel, block):
                n = min(block, info.numel - first)
                raw = np.frombuffer(handle.read(2 * n), dtype="<u2")  # (n,)
                if raw.size != n:
                    raise SourceError(f"{info.path}: truncated: tensor {info.name!r} ends before its data does")
                part = out[first:first + n]
                part[...] = raw
                part <<= 16  # bfloat16 bits on top, zeros below: every value kept exactly
    except OSError as exc:
        raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None
    return out.view(np.float32).reshape(info.shape)


def _open(file: Path) -> Any:
    try:
        from safetensors import safe_open
    except ImportError:
        raise MissingExtraError.for_module("safetensors", "safetensors checkpoints", ("models",)) from None
    try:
        return safe_open(str(file), framework="numpy")
    except Exception as exc:  # SafetensorError, OSError: a truncated or malformed file
        raise SourceError(f"cannot read the safetensors header of {file}: {exc}") from None
