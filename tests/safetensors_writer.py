"""Safetensors files written by hand for the tests, without the safetensors library.

The format (https://github.com/huggingface/safetensors, "Format"): 8 bytes, a
little-endian unsigned 64-bit header length N; N bytes of JSON, an object of
name -> {"dtype", "shape", "data_offsets": [begin, end]} with offsets relative
to the byte buffer after the header; then that byte buffer.

Writing the bytes ourselves keeps the tests independent of the code and the
library under test. A tensor given without data is left as a hole in a sparse
file: the file has its full size but costs no disk, which is how a test builds
a GPT-2-sized checkpoint whose headers are all that is read.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "BOOL": 1}


def f32(*values: float) -> bytes:
    """Little-endian float32 bytes of the values, row after row."""
    return struct.pack(f"<{len(values)}f", *values)


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...], bytes | None]]) -> Path:
    """Write ``name -> (dtype, shape, data or None)`` in order; None leaves zeros unwritten (sparse)."""
    header, placed, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        size = math.prod(shape) * ITEMSIZE[dtype]
        if data is not None and len(data) != size:
            raise ValueError(f"{name}: {len(data)} bytes given, {size} needed")
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        placed.append((offset, data))
        offset += size
    raw = json.dumps(header).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the format allows trailing spaces to align the data
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        start = handle.tell()
        for begin, data in placed:
            if data:
                handle.seek(start + begin)
                handle.write(data)
        handle.truncate(start + offset)
    return path


def write_config(folder: Path, **values: object) -> Path:
    """A config.json with the given keys in ``folder``."""
    path = folder / "config.json"
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def write_index(folder: Path, weight_map: dict[str, str]) -> Path:
    """A ``model.safetensors.index.json`` naming the shard of each tensor."""
    path = folder / "model.safetensors.index.json"
    path.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}), encoding="utf-8")
    return path


def array(a: "np.ndarray") -> tuple[str, tuple[int, ...], bytes]:
    """``(dtype, shape, bytes)`` of a float32/float16/float64 NumPy array, for ``write_safetensors``."""
    import numpy as np

    names = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("float64"): "F64"}
    return names[a.dtype], tuple(a.shape), np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def bf16(values: list[float]) -> bytes:
    """bfloat16 bytes of values bfloat16 holds exactly: the top 16 bits of their float32 bits."""
    return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)
