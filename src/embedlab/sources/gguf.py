"""GGUF, llama.cpp's file format: tensor infos, metadata and tables, read with the ``gguf`` library.

A GGUF file is a header of typed key/value metadata (``general.architecture``,
``llama.context_length``, the vocabulary ``tokenizer.ggml.tokens``), a list of
tensor infos (name, dimensions, GGML type, offset) and the tensors' data,
many of them quantised in blocks (Q8_0: 32 weights in 34 bytes). Everything is
read through ``gguf.GGUFReader`` (a memory map: only the tensors used are
touched) and dequantised to float32 with ``gguf.quants.dequantize``; nothing
is read with pickle, nothing is downloaded. The reader trusts the counts a file
declares, so ``gguf_header.check_header`` walks them first against the file's
size, and refuses an impossible one by name. The library (the ``models`` extra)
is imported on first use (``_library``), so a safetensors load never pays its
import; a missing one is a ``MissingExtraError`` naming the extra.

GGUF lists a tensor's dimensions fastest-varying first (ggml's ``ne``): the
token table ``token_embd.weight`` of a model with V tokens of width D is
stored as ``ne = [D, V]``. ``GGUFTensor.shape`` is in NumPy order, rows first
(``(V, D)``), the order ``ReaderTensor.data`` is laid out in.

The names that matter here are llama.cpp's (``gguf.constants.TENSOR_NAMES``):

=============  ==========================
role           tensor
=============  ==========================
token table    ``token_embd.weight``
positions      ``position_embd.weight``
token types    ``token_types.weight``
output head    ``output.weight``
=============  ==========================

llama.cpp ties by absence: a file without ``output.weight`` uses
``token_embd.weight`` as the output head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.bf16_matrix import Bf16Matrix
from ..engine.provenance import Provenance
from ..engine.table import EmbeddingTable
from ..errors import SourceError, brief, needs_extra
from . import gguf_header
from .head import fit_rows, tied_note

__all__ = ["TOKEN", "POSITIONS", "TOKEN_TYPES", "HEAD", "INTEGER_TYPES", "GGUFTensor", "GGUFFile", "TieVerdict",
           "load_gguf", "decide_tying", "block_bytes"]

TOKEN, POSITIONS, TOKEN_TYPES, HEAD = "token_embd.weight", "position_embd.weight", "token_types.weight", "output.weight"
TOKENS_KEY = "tokenizer.ggml.tokens"
TOKEN_TYPES_KEY = "tokenizer.ggml.token_type"
# GGML types that hold integers: such a tensor is no table of weights.
INTEGER_TYPES = frozenset({"I8", "I16", "I32", "I64"})


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor of a GGUF file, from its tensor info.

    Attributes
    ----------
    name : str
        llama.cpp's name (``"token_embd.weight"``).
    shape : tuple of int
        NumPy order, rows first: ``(V, D)`` for the token table (the file's
        ``ne`` reversed).
    type : str
        The GGML type it is stored in (``"F32"``, ``"BF16"``, ``"Q8_0"``).
    numel : int
        Number of weights (an exact int).
    nbytes : int
        Bytes of its data in the file, in its own type (Q8_0: 34 per 32 weights).
    """

    name: str
    shape: tuple[int, ...]
    type: str
    numel: int
    nbytes: int


@dataclass(frozen=True)
class TieVerdict:
    """Whether the output head is the token table, and why (``decide_tying``).

    ``tied`` True when ``output.weight`` is absent or holds the very bytes of
    the token table (``stored_twice``); False for a different head; None
    when the file has a head but no token table to compare it with.
    """

    tied: bool | None
    stored_twice: bool
    evidence: str


class GGUFFile:
    """A GGUF file opened for reading (memory-mapped by ``gguf.GGUFReader``).

    Parameters
    ----------
    path : str or Path
        The ``.gguf`` file.

    Raises
    ------
    SourceError
        If the file is missing or not a regular file, is not GGUF (bad magic,
        unknown version), or is truncated or malformed: a count, length or
        size the file cannot hold is named with its value
        (``gguf_header.check_header``) before the library reads anything.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # The reader trusts the counts it reads (2^40 array items loop for hours): walk them first.
        gguf_header.check_header(self.path, _types())
        try:
            self._reader = _library().GGUFReader(self.path, "r")
        except (OSError, ValueError, KeyError, IndexError) as exc:  # the reader's words for a bad file
            raise SourceError(f"cannot read {self.path} as GGUF: {exc or type(exc).__name__}") from None
        self._by_name = {t.name: t for t in self._reader.tensors}
        self.tensors = {t.name: _info(t) for t in self._reader.tensors}

    @property
    def architecture(self) -> str | None:
        """``general.architecture`` (``"llama"``), or None when the file does not say."""
        value = self.value("general.architecture")
        return value if isinstance(value, str) else None

    def value(self, key: str) -> Any:
        """A scalar or string metadata value (``"llama.context_length"`` -> 2048); None when absent or an array."""
        field = self._reader.get_field(key)
        if field is None or len(field.types) != 1:
            return None
        if field.types[0] == _library().GGUFValueType.STRING:
            return _text(field.parts[field.data[0]])
        return field.contents()

    def tokens(self, V: int) -> list[str | None] | None:
        """The vocabulary ``tokenizer.ggml.tokens`` in id order, padded with None to V; None when absent.

        Token bytes that are not UTF-8 are shown with U+FFFD rather than refused.

        Raises
        ------
        SourceError
            If the key is not an array of strings, or lists more tokens than the table has rows.
        """
        listed = self.token_list()
        if listed is None:
            return None
        tokens: list[str | None] = list(listed)
        if len(tokens) > V:
            raise SourceError(f"{self.path}: {TOKENS_KEY} lists {len(tokens)} tokens, but {TOKEN} has only V={V} "
                              "rows: the vocabulary and the table do not belong together")
        return tokens + [None] * (V - len(tokens))

    def token_list(self) -> list[str] | None:
        """``tokenizer.ggml.tokens`` as stored, in id order (no padding, no check against a table); None when absent.

        Token bytes that are not UTF-8 are shown with U+FFFD rather than refused.

        Raises ``SourceError`` if the key is not an array of strings.
        """
        field = self._reader.get_field(TOKENS_KEY)
        if field is None:
            return None
        value_type = _library().GGUFValueType
        if field.types != [value_type.ARRAY, value_type.STRING]:
            raise SourceError(f"{self.path}: {TOKENS_KEY} must be an array of strings, got "
                              f"{'/'.join(t.name for t in field.types)}")
        return [_text(field.parts[i]) for i in field.data]  # field.data: where each string lies

    def token_types(self) -> list[str] | None:
        """``tokenizer.ggml.token_type`` in id order, each named as the gguf library's ``gguf.TokenType`` names
        it, lower case (``"normal"``, ``"unknown"``, ``"control"``, ``"user_defined"``, ``"unused"``,
        ``"byte"``; a number the library does not know as ``"type 9"``); None when absent.

        Raises ``SourceError`` if the key is not an array of integers.
        """
        field = self._reader.get_field(TOKEN_TYPES_KEY)
        if field is None:
            return None
        value_type = _library().GGUFValueType
        integers = {value_type.INT8, value_type.INT16, value_type.INT32, value_type.INT64, value_type.UINT8,
                    value_type.UINT16, value_type.UINT32, value_type.UINT64}
        if len(field.types) != 2 or field.types[0] != value_type.ARRAY or field.types[1] not in integers:
            raise SourceError(f"{self.path}: {TOKEN_TYPES_KEY} must be an array of integers, got "
                              f"{'/'.join(t.name for t in field.types)}")
        known = {int(kind): kind.name.lower() for kind in _library().TokenType}
        return [known.get(k, f"type {k}") for k in (int(field.parts[i][0]) for i in field.data)]

    def read(self, name: str) -> np.ndarray:
        """A 2-D tensor as float32 (rows, columns), dequantised by ``gguf.quants.dequantize``; read-only.

        An F32 tensor is the memory map itself (nothing is copied), and so is
        an F64 one, kept as float64 (the library dequantises the float types
        up to F32 only); any other type is dequantised into a fresh array.

        Raises
        ------
        SourceError
            If the tensor is absent, not 2-D, stored as integers, or in a type
            the gguf library cannot dequantise (names the type).
        """
        info = self.matrix_info(name)
        tensor = self._by_name[name]
        data = _native(tensor.data)  # the library's F32 and F16 take the bytes in this machine's order
        try:
            # F64 is read as it is: the gguf library dequantises the float types up to F32 only.
            array = data if info.type == "F64" else _library().quants.dequantize(data, tensor.tensor_type)
        except NotImplementedError:
            raise SourceError(f"tensor {name!r} of {self.path} is stored as {info.type}, which the gguf library "
                              "cannot dequantise") from None
        array = np.asarray(array).reshape(info.shape)
        if array.flags.writeable:
            array.flags.writeable = False  # a fresh array of ours: hand it over read-only, no second copy
        return array

    def table(self, name: str) -> Any:
        """A 2-D tensor as a table keeps it, (rows, columns), read-only: the file's map wherever it can be.

        F64, F32 and F16 are the memory map itself (float64, float32, float16:
        nothing is copied, as a safetensors table of those types); BF16 is its
        bits over the map, widened to float32 as they are read
        (``engine.bf16_matrix.Bf16Matrix``, as a safetensors BF16 table); any
        other type is dequantised into a fresh float32 array (``read``). A
        tensor at an offset its value size does not divide (the format aligns
        them; a hand-made file may not) is copied, aligned, as safetensors
        reads such a span.

        Raises
        ------
        SourceError
            As ``read``.
        """
        info = self.matrix_info(name)
        data = self._by_name[name].data  # the reader's view of the map: F16 as float16, BF16 as its bytes
        if info.type == "F16":
            array = _native(data).reshape(info.shape)  # (rows, columns) float16
        elif info.type == "BF16":
            bits = np.asarray(data).reshape(info.shape[0], -1).view("<u2")  # (rows, columns): 2 bytes a value
            if not bits.flags.aligned:  # a tensor at an odd offset (the format aligns them): a copy, aligned
                bits = np.array(bits)
            return Bf16Matrix(bits.reshape(info.shape))
        else:
            array = self.read(name)
        if not array.flags.aligned:  # F64, F32, F16 at an offset their size does not divide: a copy, aligned
            array = np.array(array)
        if array.flags.writeable:
            array.flags.writeable = False
        return array

    def matrix_info(self, name: str) -> GGUFTensor:
        """The info of a 2-D float or quantised tensor; ``SourceError`` (naming the 2-D tensors) otherwise."""
        if name not in self.tensors:
            matrices = ", ".join(f"{t.name} {list(t.shape)}" for t in self.tensors.values() if len(t.shape) == 2)
            if name == TOKEN:  # the default name, not one the user gave: no flag to blame
                found = f"its 2-D tensors: {matrices} (name the table with --tensor)" if matrices else \
                    "it holds no 2-D tensor to read as a table"
                raise SourceError(f"{Path(self.path).name} has no {TOKEN}, the token table llama.cpp writes; "
                                  f"{found}")
            raise SourceError(f"tensor {brief(name)} is not in {self.path}; 2-D tensors: {matrices or '(none)'}",
                              parameter="tensor", value=name, expected=f"a 2-D tensor: {matrices or '(none)'}")
        info = self.tensors[name]
        if len(info.shape) != 2:
            raise SourceError(f"tensor {name!r} of {self.path} has shape {info.shape}, expected a 2-D (V, D) table")
        if info.type in INTEGER_TYPES:
            raise SourceError(f"tensor {name!r} of {self.path} is stored as {info.type}, expected a float or "
                              "quantised table")
        return info

    def same_bytes(self, a: str, b: str) -> bool:
        """Whether two tensors are stored in the same type and shape with the very same bytes."""
        ta, tb = self._by_name[a], self._by_name[b]
        if ta.tensor_type != tb.tensor_type or self.tensors[a].shape != self.tensors[b].shape:
            return False
        return bool(np.array_equal(ta.data.view(np.uint8), tb.data.view(np.uint8)))


def load_gguf(path: str | Path, *, tensor: str | None = None, table: str = "input") -> EmbeddingTable:
    """Load the token table of a GGUF file, with its vocabulary and position table, or its output head.

    Parameters
    ----------
    path : str or Path
        A ``.gguf`` file.
    tensor : str, optional
        The name of the table asked for: the token table's (default
        ``token_embd.weight``) or, with ``table="head"``, the head's (default
        ``output.weight``). ``output.weight`` is the head whichever table
        was asked for.
    table : {"input", "head"}
        The token table, or the output head: ``output.weight``, or where the
        file has none (llama.cpp then scores with the token table) the token
        table itself, read once, its provenance saying so.

    Returns
    -------
    EmbeddingTable
        W_E (V, D) or the head (V_head, D) as ``GGUFFile.table`` keeps it:
        F32 and F16 the memory map, BF16 its bits over the map (widened to
        float32 as read), other types dequantised to float32 by the gguf
        library; the
        vocabulary from ``tokenizer.ggml.tokens`` (None for ids past its end;
        cut to a head with fewer rows, with a note); for the input table
        ``position_embd.weight`` (T_max, D) and ``token_types.weight`` where
        the file has them. The provenance names the stored type (``"Q8_0"``),
        the tie verdict (``decide_tying``) and the part.

    Raises
    ------
    SourceError
        As ``GGUFFile`` and ``GGUFFile.read``: a missing, malformed or
        truncated file, a table that is absent, not 2-D or integer.
    """
    file = GGUFFile(path)
    head = table == "head" or tensor == HEAD
    token = tensor if tensor is not None and not head else TOKEN
    if tensor is not None and head and tensor == token and HEAD in file.tensors:
        raise SourceError(f"tensor {tensor!r} is the token table (the input), not the output head: the head of "
                          f"{file.path.name} is {HEAD!r}", parameter="tensor", value=tensor,
                          expected=f"the output head's tensor, {HEAD!r} (or leave the tensor out)")
    verdict = decide_tying(file, token)
    prov = Provenance("gguf", path=str(file.path), tied=verdict.tied, tie_evidence=verdict.evidence)
    if head:
        name = tensor or (HEAD if HEAD in file.tensors else token)
        matrix = file.table(name)  # (V_head, D)
        V_token = file.tensors[token].shape[0] if token in file.tensors else len(matrix)
        tokens, notes = fit_rows(file.tokens(max(len(matrix), V_token)), len(matrix), V_token)
        if name == token:
            notes.insert(0, tied_note(token))
        prov = replace(prov, tensor=name, dtype=file.tensors[name].type, part="head", note="; ".join(notes) or None)
        return EmbeddingTable(matrix, vocabulary=tokens, provenance=prov)
    matrix = file.table(token)  # (V, D)
    positions = file.read(POSITIONS) if POSITIONS in file.tensors else None  # (T_max, D)
    types = file.read(TOKEN_TYPES) if TOKEN_TYPES in file.tensors else None  # (type vocabulary, D)
    prov = replace(prov, tensor=token, dtype=file.tensors[token].type)
    return EmbeddingTable(matrix, vocabulary=file.tokens(len(matrix)), positions=positions, token_types=types,
                          provenance=prov)


def decide_tying(file: GGUFFile, token: str = TOKEN) -> TieVerdict:
    """Whether the output head is the token table, from the tensor infos (llama.cpp's rule).

    No ``output.weight`` -> tied (llama.cpp then reads the head from
    ``token_embd.weight``); ``output.weight`` with the very type, shape and
    bytes of the table -> stored twice, tied in meaning; otherwise untied.
    ``token`` is the token table's name; ``output.weight`` named as one is
    the head still, compared with ``token_embd.weight``.
    """
    token = TOKEN if token == HEAD else token
    if HEAD not in file.tensors:
        return TieVerdict(True, False, f"no {HEAD} in the file: llama.cpp uses {token} as the output head")
    if token not in file.tensors:
        return TieVerdict(None, False, f"no {token} beside {HEAD}: whether it is tied cannot be told")
    table, head = file.tensors[token], file.tensors[HEAD]
    if file.same_bytes(token, HEAD):
        return TieVerdict(True, True, f"{HEAD} is stored with the very bytes of {token}: stored twice, tied in meaning")
    return TieVerdict(False, False, f"{HEAD} {head.shape} {head.type} differs from {token} {table.shape} {table.type}: "
                                    "a separate output head")


def block_bytes(kind: str) -> tuple[int, int]:
    """(bytes, weights) of one block of a GGML type, as ``gguf.GGML_QUANT_SIZES`` gives them: a tensor of n
    weights in it takes n * bytes / weights bytes (Q8_0: 34 bytes per 32 weights; F32: 4 per 1).

    Raises ``SourceError`` for a type the gguf library does not know.

    >>> block_bytes("F32"), block_bytes("F16"), block_bytes("Q8_0"), block_bytes("Q4_0")
    ((4, 1), (2, 1), (34, 32), (18, 32))
    """
    lib = _library()
    try:
        block, size = lib.GGML_QUANT_SIZES[lib.GGMLQuantizationType[kind]]
    except KeyError:
        raise SourceError(f"unknown GGML type {brief(kind)}") from None
    return int(size), int(block)


# -- helpers -----------------------------------------------------------------

def _types() -> dict[int, tuple[str, int, int]]:
    """GGML type id -> (name, weights per block, bytes per block), from ``gguf.GGML_QUANT_SIZES``."""
    lib = _library()
    return {int(kind): (kind.name, *lib.GGML_QUANT_SIZES[kind]) for kind in lib.GGMLQuantizationType
            if kind in lib.GGML_QUANT_SIZES}


def _native(data: Any) -> np.ndarray:
    """The reader's view of a tensor with its values in this machine's byte order: the map itself, or, from a
    file of the other order (a big-endian GGUF on a little-endian machine, which the reader views as ``>f4``,
    ``>f2``), a fresh copy. The library's ``dequantize`` reinterprets F32 and F16 bytes in this machine's order,
    and torch takes no other."""
    data = np.asarray(data)
    return data if data.dtype.isnative else data.astype(data.dtype.newbyteorder("="))


def _info(tensor: Any) -> GGUFTensor:
    """A ``ReaderTensor`` as a ``GGUFTensor``: ``ne`` reversed into NumPy order, bytes as stored."""
    shape = tuple(int(n) for n in reversed(tensor.shape.tolist()))  # ne = [D, V] -> (V, D)
    return GGUFTensor(tensor.name, shape, tensor.tensor_type.name, math.prod(shape), int(tensor.n_bytes))


def _text(part: np.ndarray) -> str:
    return bytes(part).decode("utf-8", errors="replace")


def _library() -> Any:
    """The gguf library, imported on first use: only a GGUF file needs it (its import costs ~60 ms).

    Raises ``MissingExtraError`` (an ``ImportError``) naming the extra that installs it.
    """
    with needs_extra("GGUF files"):
        import gguf
    return gguf
