"""Write safetensors files by hand, independently of the safetensors library.

The format: an 8-byte little-endian header length, a JSON header mapping each
tensor name to its dtype, shape and [begin, end) byte offsets in the data
section, then the raw little-endian bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

NUMPY_TO_SAFETENSORS = {"float32": "F32", "float16": "F16", "float64": "F64", "int64": "I64", "int32": "I32"}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], *, raw: dict[str, tuple[str, list[int], bytes]] | None = None) -> Path:
    """Write ``tensors`` (and ``raw`` entries given as (dtype, shape, bytes)) to ``path``."""
    entries: list[tuple[str, str, list[int], bytes]] = [
        (name, NUMPY_TO_SAFETENSORS[str(a.dtype)], list(a.shape), np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())
        for name, a in tensors.items()
    ]
    entries += [(name, dtype, shape, data) for name, (dtype, shape, data) in (raw or {}).items()]
    header, offset = {}, 0
    for name, dtype, shape, data in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(e[3] for e in entries))
    return path


def bf16_bytes(values: list[float]) -> bytes:
    """bfloat16 bytes of values that bfloat16 holds exactly: the top 16 bits of float32."""
    as_u32 = np.array(values, dtype=np.float32).view(np.uint32)
    return (as_u32 >> 16).astype("<u2").tobytes()
