"""Small GGUF files written for the tests with llama.cpp's own Python library (``gguf.GGUFWriter``).

The writer is the oracle for the layout (dimensions stored fastest first, block
quantisation, alignment): a test writes arrays with it and compares what
embedlab reads with those arrays, or with ``gguf.quants.dequantize`` of the
quantised bytes it wrote. Nothing here comes from embedlab.

``write_gguf(path, tensors, tokens=..., context_length=...)`` takes
``name -> (array, type)``: ``array`` in NumPy order, rows first ((V, D) for
``token_embd.weight``), and ``type`` a ``GGMLQuantizationType`` name ("F32",
"F16", "BF16", "Q8_0", "Q4_0", or "I32" for integers); it quantises with
``gguf.quants.quantize``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

Q = gguf.GGMLQuantizationType
INTEGERS = {"I8": np.int8, "I16": np.int16, "I32": np.int32}


def write_gguf(path: Path, tensors: dict[str, tuple[np.ndarray, str]], *, tokens: Sequence[str] | None = None,
               arch: str = "llama", context_length: int | None = None, extra: dict[str, int] | None = None,
               token_types: Sequence[int] | None = None, big_endian: bool = False,
               alignment: int | None = None) -> Path:
    """Write the tensors (quantised to their types), the token list (with ``token_types``, llama.cpp's
    ``gguf.TokenType`` numbers, where given) and a few metadata keys; ``big_endian`` writes the file in
    big-endian byte order, as llama.cpp's converters do for s390x (the writer swaps the bytes);
    ``alignment`` sets ``general.alignment`` (1: tensors packed at any byte, as a hand-made file may)."""
    writer = gguf.GGUFWriter(str(path), arch, endianess=gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE)
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    if context_length is not None:
        writer.add_context_length(context_length)
    for key, value in (extra or {}).items():
        writer.add_uint32(key, value)
    if tokens is not None:
        writer.add_token_list(list(tokens))
    if token_types is not None:
        writer.add_token_types(list(token_types))
    for name, (array, kind) in tensors.items():
        if kind in INTEGERS:  # stored as NumPy integers, typed by their dtype
            writer.add_tensor(name, np.asarray(array, dtype=INTEGERS[kind]))
            continue
        qtype = Q[kind]
        data = gguf.quants.quantize(np.asarray(array, dtype=np.float32), qtype)
        # F32/F16 are stored as NumPy floats; the block types (and BF16) as raw bytes with their type
        writer.add_tensor(name, data, raw_dtype=None if kind in ("F32", "F16") else qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def stored(array: np.ndarray, kind: str) -> np.ndarray:
    """What the file holds for ``array`` in ``kind``, as float32: quantised, then dequantised by the library."""
    qtype = Q[kind]
    return np.asarray(gguf.quants.dequantize(gguf.quants.quantize(np.asarray(array, dtype=np.float32), qtype),
                                             qtype), dtype=np.float32)
