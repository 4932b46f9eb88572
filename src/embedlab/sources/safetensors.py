"""The safetensors file format: headers read by hand, one tensor read at a time.

A safetensors file is 8 bytes, a little-endian u64 N; N bytes of JSON, an
object of name -> {dtype, shape, data_offsets}; then the tensors' data.
``tensor_infos`` reads the headers only (names, shapes, dtypes, where the
bytes lie) of a ``.safetensors`` file or of a folder holding one or more
(``model.safetensors``, or shards listed in ``model.safetensors.index.json``),
checked against the file size. ``read_tensor`` reads one tensor (floats in
blocks over the cores, ``tensor_data``; BF16 widened to float32; other dtypes
through the ``safetensors`` library), and
``same_bytes`` compares two tensors' raw bytes in the file. Nothing is ever
read with pickle.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, SourceError, brief
from . import files

__all__ = ["TensorInfo", "tensor_infos", "read_tensor", "same_bytes", "other_shards"]

# Bytes per element of each safetensors dtype (the format's own names).
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8,
    "F8_E4M3": 1, "F8_E5M2": 1,
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
# The safetensors library refuses headers above 100 MB; so do we, before reading one.
MAX_HEADER_BYTES = 100_000_000
INDEX = "model.safetensors.index.json"  # the shard index of a sharded checkpoint folder
ENTRY_KEYS = ("dtype", "shape", "data_offsets")  # what every tensor's header entry holds
BLOCK_READ = ("F64", "F32", "F16", "BF16")  # read by ``tensor_data`` (BF16 widened to float32), the rest by the library


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
        missing or lies outside the folder (after symlinks), a file is not a
        regular file, or a header is truncated or malformed: the message names
        the file and the value that is wrong (a declared length, a dtype, an
        offset, the index's entry).
    """
    path = Path(path)
    infos: dict[str, TensorInfo] = {}
    for file in _safetensors_files(path):
        infos.update(_read_header(file))
    return infos


def read_tensor(info: TensorInfo) -> Any:
    """The data of one tensor as a NumPy array (only that tensor is read).

    F64, F32, F16 and BF16 tensors are read in blocks over the cores into a
    fresh array only the caller holds (``tensor_data.read_data``); BF16 has
    no NumPy dtype, so its values are widened to float32 on the way (a
    bfloat16 is the top half of a float32's bits, so every value is kept
    exactly). Other dtypes are read through the ``safetensors`` library.

    Raises
    ------
    SourceError
        If the file cannot be read or ends before the tensor's data does.
    """
    if info.span is not None and info.dtype in BLOCK_READ:
        from . import tensor_data  # NumPy: headers are read without it (params --model FILE.safetensors)

        return tensor_data.read_data(info)[0]
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
        with files.open_regular(a.path, "checkpoint file") as fa, files.open_regular(b.path, "checkpoint file") as fb:
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


def other_shards(file: str | Path) -> dict[str, str]:
    """For a ``.safetensors`` file that is one shard of a sharded checkpoint (the ``model.safetensors.index.json``
    beside it lists it): the tensors the index puts in the other shards, name -> shard file name.

    ``{}`` for a folder, a lone file, a file the index beside it does not list, or an index that cannot be
    read (a file named by the user is read as it is: a broken index beside it is the folder's fault, said
    when the folder is read). Only the index is read, never another shard.
    """
    path = Path(file)
    index = path.parent / INDEX
    try:
        if not stat.S_ISREG(files.existing(path, "checkpoint").st_mode) or not files.present(index, "shard index"):
            return {}
        data = files.read_json(index, "shard index", files.CONFIG_CAP)
    except SourceError:
        return {}
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or path.name not in weight_map.values():
        return {}
    return {name: shard for name, shard in weight_map.items()
            if isinstance(name, str) and isinstance(shard, str) and shard != path.name}


# -- helpers -----------------------------------------------------------------

def _safetensors_files(path: Path) -> list[Path]:
    if stat.S_ISREG(files.existing(path, "checkpoint").st_mode):
        return [path]
    index = path / INDEX
    if files.present(index, "shard index"):
        return _shards(path, index)
    if files.present(path / "model.safetensors", "checkpoint file"):
        # What transformers loads: another copy beside it (Mistral's consolidated.safetensors) is not the model.
        return [path / "model.safetensors"]
    found = sorted(path.glob("*.safetensors"))
    if not found:
        raise SourceError(f"no .safetensors file in {path}")
    return found


def _shards(folder: Path, index: Path) -> list[Path]:
    """The shards ``model.safetensors.index.json`` lists, each confined to the model's folder.

    The index is ``{"metadata": {...}, "weight_map": {tensor name: shard file name}}``;
    a shard named by an absolute path or one that resolves, after symlinks,
    outside ``folder`` (``../../base/alone.safetensors``, ``/etc/passwd``) is
    refused, naming the entry (``files.inside``).
    """
    data = files.read_json(index, "shard index", files.CONFIG_CAP)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise SourceError(f"the shard index {index} has no weight_map: expected a JSON object of tensor name -> "
                          "shard file name")
    for name, shard in weight_map.items():
        if not isinstance(shard, str):
            raise SourceError(f"the shard index {index} names {brief(shard)} as the shard of {brief(name)}: "
                              "expected a file name")
    shards = [files.inside(folder, name, f"shard named in {index}") for name in sorted(set(weight_map.values()))]
    missing = [str(f) for f in shards if not os.path.lexists(f)]
    if missing:
        raise SourceError(f"shards named in {index} are missing: {', '.join(missing)}")
    return shards


def _read_header(file: Path) -> dict[str, TensorInfo]:
    """The tensors a safetensors header declares, checked against the file's size.

    The format: 8 bytes, a little-endian u64 N; N bytes of JSON, an object of
    name -> {dtype, shape, data_offsets: [begin, end]} (offsets relative to
    the data that follows the header), plus an optional ``__metadata__``
    object of strings. Only a regular file is read (``files.open_regular``).
    """
    try:
        with files.open_regular(file, "checkpoint file") as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise SourceError(f"{file}: truncated safetensors header: {size} bytes, "
                                  "too short for the 8-byte header length")
            length = int.from_bytes(prefix, "little")
            if length > MAX_HEADER_BYTES:  # never echo it: 8 bytes of a file that is no safetensors (a text)
                raise SourceError(f"{file} is not a safetensors file: its first 8 bytes declare a header longer than "
                                  f"{MAX_HEADER_BYTES:,} bytes, the most the format allows")
            if length > size - 8:
                raise SourceError(f"{file}: truncated safetensors header: it declares {length} header bytes "
                                  f"but only {size - 8} follow")
            raw = handle.read(length)
    except OSError as exc:
        raise SourceError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{file}: the safetensors header is not UTF-8 JSON (byte {exc.start:,} of the header "
                          f"is 0x{raw[exc.start]:02x})") from None
    header = files.parse_json(text, f"{file}: the safetensors header")
    if not isinstance(header, dict):
        raise SourceError(f"{file}: the safetensors header must be a JSON object, got {type(header).__name__}")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SourceError(f"{file}: the safetensors __metadata__ must be a JSON object of strings, got "
                          f"{brief(metadata)}")
    start, data_size = 8 + length, size - 8 - length
    infos = {}
    for name, entry in header.items():
        if name != "__metadata__":
            infos[name] = _tensor_info(file, name, entry, start, data_size)
    return infos


def _tensor_info(file: Path, name: str, entry: Any, start: int, data_size: int) -> TensorInfo:
    """One header entry checked field by field: each field's type, then its values against the data."""
    where = f"{file}: tensor {brief(name)}"
    if not isinstance(entry, dict):
        raise SourceError(f"{where} has a malformed header entry {brief(entry)}: expected an object of "
                          f"{', '.join(ENTRY_KEYS)}")
    missing = [key for key in ENTRY_KEYS if key not in entry]
    if missing:
        raise SourceError(f"{where} has a malformed header entry without {', '.join(missing)}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise SourceError(f"{where} has unknown dtype {brief(dtype)}; known: {', '.join(DTYPE_BYTES)}")
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise SourceError(f"{where} has a bad shape {brief(shape)}: expected a list of integers >= 0")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise SourceError(f"{where} has bad data_offsets {brief(offsets)}: expected [begin, end], two integers "
                          "with 0 <= begin <= end")
    begin, end = offsets
    info = TensorInfo(name, tuple(shape), dtype, file, (start + begin, start + end))
    if end - begin != info.nbytes:
        raise SourceError(f"{where} {dtype} {info.shape} needs {info.nbytes:,} bytes, "
                          f"but its data_offsets [{begin}, {end}] hold {end - begin:,}")
    if end > data_size:
        raise SourceError(f"{file}: truncated: tensor {brief(name)} ends at data byte {end:,} "
                          f"but the file holds {data_size:,} data bytes")
    return info


def _open(file: Path) -> Any:
    try:
        from safetensors import safe_open
    except ImportError:
        raise MissingExtraError.for_module("safetensors", "safetensors checkpoints", ("models",)) from None
    try:
        return safe_open(str(file), framework="numpy")
    except Exception as exc:  # SafetensorError, OSError: a truncated or malformed file
        raise SourceError(f"cannot read the safetensors header of {file}: {exc}") from None
