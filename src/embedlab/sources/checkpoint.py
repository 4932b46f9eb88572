"""Hugging Face style checkpoints: safetensors headers, tensor roles, weight tying.

A checkpoint is a ``.safetensors`` file, a folder holding one or more of them
(``model.safetensors``, or shards listed in ``model.safetensors.index.json``),
and usually a ``config.json``. ``tensor_infos`` reads headers only (names,
shapes, dtypes, where the bytes lie): the 8-byte little-endian header length
and the JSON header of the safetensors format, checked against the file size.
``read_tensor`` reads one tensor through the ``safetensors`` library, and the
tying check compares the raw bytes of the table and the head. Nothing is ever
read with pickle.

Not every tensor of a checkpoint is a parameter: ``buffer_reason`` names the
buffers that models save beside their weights (integer ``position_ids``,
GPT-2's causal mask ``attn.bias``, rotary ``inv_freq``).

The roles of the tensors that matter to embedlab are found by name:

=============  ============================================================
role           names (a suffix after any prefix such as ``model.``)
=============  ============================================================
token table    ``embeddings.word_embeddings.weight``, ``wte.weight``,
               ``embed_tokens.weight``, ``word_embeddings.weight``, ...
positions      ``embeddings.position_embeddings.weight``, ``wpe.weight``, ...
token types    ``embeddings.token_type_embeddings.weight``
output head    ``lm_head.weight``, ``embed_out.weight``, ``output.weight``, ...
=============  ============================================================
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, SourceError, TyingConflictError, brief

__all__ = [
    "TensorInfo", "Roles", "TieVerdict",
    "tensor_infos", "read_config", "read_config_file", "read_tensor", "find_roles", "decide_tying",
    "buffer_reason", "config_ties",
]

TOKEN_NAMES = (
    "embeddings.word_embeddings.weight", "wte.weight", "embed_tokens.weight",
    "word_embeddings.weight", "embed_in.weight", "tok_embeddings.weight",
    "shared.weight", "token_embedding.weight",
)
POSITION_NAMES = ("embeddings.position_embeddings.weight", "wpe.weight", "embed_positions.weight")
TYPE_NAMES = ("embeddings.token_type_embeddings.weight",)
HEAD_NAMES = ("lm_head.weight", "embed_out.weight", "output.weight", "cls.predictions.decoder.weight")

# Bytes per element of each safetensors dtype (the format's own names).
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
    "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8,
    "F8_E4M3": 1, "F8_E5M2": 1,
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2")
# The safetensors library refuses headers above 100 MB; so do we, before reading one.
MAX_HEADER_BYTES = 100_000_000


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a checkpoint, from its header: name, shape, dtype, file.

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
        """Whether the dtype is floating point (integer tensors are buffers, see ``buffer_reason``)."""
        return self.dtype in FLOAT_DTYPES


@dataclass(frozen=True)
class Roles:
    """Names of the tensors that play each role, ``None`` where absent."""

    token: str | None
    positions: str | None
    token_types: str | None
    head: str | None


@dataclass(frozen=True)
class TieVerdict:
    """Whether the output head is the token table, and why.

    Attributes
    ----------
    tied : bool or None
        True when the head is the token table (absent and tied by config, or
        stored twice with identical bytes); False for a different head; None
        when neither the file nor a config says.
    stored_twice : bool
        The head is in the file with the very bytes of the token table:
        tied in meaning, counted once.
    evidence : str
        The facts the verdict rests on.
    conflict : str or None
        A disagreement between the config and the file, reported, never resolved.
    """

    tied: bool | None
    stored_twice: bool
    evidence: str
    conflict: str | None = None


def tensor_infos(path: str | Path) -> dict[str, TensorInfo]:
    """Read the headers of a checkpoint: every tensor's name, shape and dtype.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file, or a folder with ``model.safetensors.index.json``
        (shards) or ``*.safetensors`` files.

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


def read_config(path: str | Path) -> dict[str, Any] | None:
    """The ``config.json`` of a checkpoint folder (or beside a file), or ``None``.

    Raises ``SourceError`` if the file exists but is not a JSON object.
    """
    path = Path(path)
    config = (path if path.is_dir() else path.parent) / "config.json"
    if not config.is_file():
        return None
    return read_config_file(config)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A model configuration file (a Hugging Face ``config.json``) as a dict.

    Parameters
    ----------
    path : str or Path
        The JSON file itself, or a folder holding ``config.json``.

    Raises
    ------
    SourceError
        If the name is empty, the file is missing, is not UTF-8 JSON, or does
        not hold a JSON object (names the file).
    """
    if isinstance(path, str) and not path.strip():  # Path("") is the current folder: never meant
        raise SourceError(f"empty config file name {path!r}: expected a config.json or its folder")
    config = Path(path)
    if config.is_dir():
        config = config / "config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError(f"no such config file: {config}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"cannot read {config}: {exc}") from None
    if not isinstance(data, dict):
        raise SourceError(f"{config} must hold a JSON object, got {type(data).__name__}")
    return data


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


def _read_bf16(info: TensorInfo) -> Any:
    import numpy as np

    if info.span is None:
        raise SourceError(f"tensor {info.name!r} in {info.path}: no byte span to read bfloat16 from")
    start, end = info.span
    try:
        with open(info.path, "rb") as handle:
            handle.seek(start)
            raw = np.frombuffer(handle.read(end - start), dtype="<u2")  # (numel,)
    except OSError as exc:
        raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None
    widened = (raw.astype(np.uint32) << 16).view(np.float32)  # bfloat16 bits on top, zeros below
    return widened.reshape(info.shape)


def find_roles(infos: dict[str, TensorInfo], tensor: str | None = None) -> Roles:
    """Name the token table, position table, token-type table and output head.

    Parameters
    ----------
    infos : dict of str -> TensorInfo
        From ``tensor_infos``.
    tensor : str, optional
        The token table's name, overriding the search by name.

    Raises
    ------
    SourceError
        If ``tensor`` is not in the file or not 2-D, or no token table is found
        (the message lists the 2-D tensors to choose from with ``--tensor``:
        all of a few, else the nearest names and how many there are).

    A checkpoint whose only 2-D tensor has no known name (a lone table saved
    as ``weight``) has that tensor as its token table: there is nothing else
    it could be.
    """
    if tensor is not None:
        if tensor not in infos:
            raise SourceError(f"tensor {brief(tensor)} is not in the checkpoint; 2-D tensors: {_matrices(infos, tensor)}",
                              parameter="tensor", value=tensor, expected=f"a 2-D tensor: {_matrices(infos, tensor)}")
        if len(infos[tensor].shape) != 2:
            raise SourceError(f"tensor {tensor!r} has shape {infos[tensor].shape}, expected a 2-D (V, D) table")
        token = tensor
    else:
        token = _by_name(infos, TOKEN_NAMES) or _only_matrix(infos)
        if token is None:
            raise SourceError(
                "no token-embedding table found by name; choose one with tensor= (--tensor) among "
                f"the 2-D tensors: {_matrices(infos)}"
            )
    head = _by_name(infos, HEAD_NAMES)
    return Roles(
        token=token,
        positions=_by_name(infos, POSITION_NAMES),
        token_types=_by_name(infos, TYPE_NAMES),
        head=head if head != token else None,
    )


def decide_tying(infos: dict[str, TensorInfo], roles: Roles, config: dict[str, Any] | None) -> TieVerdict:
    """Decide whether the output head is the token table (weight tying).

    The rules: head absent and the config ties (``tie_word_embeddings``, true
    when absent, as in Hugging Face) -> tied; head present with bytes identical
    to the table -> stored twice, tied in meaning; head present and different
    -> untied. A config that says tied while the head differs is a conflict,
    reported in the verdict, never silently resolved.

    Raises
    ------
    TyingConflictError
        If the config says untied but the file holds no output head: the
        model's head is missing (the message names ``lm_head.weight``).
    """
    if roles.token is None:
        raise SourceError("no token table to decide tying for")
    says = config_ties(config)
    if roles.head is None:
        if says is None:
            return TieVerdict(None, False, "no output head in the file and no config.json")
        if says[0]:
            return TieVerdict(True, False, f"no output head in the file; config: {says[1]}")
        raise TyingConflictError(
            f"config says untied ({says[1]}) but the file has no output head "
            f"(lm_head.weight or another head name): the head's weights are missing"
        )
    table, head = infos[roles.token], infos[roles.head]
    same = table.shape == head.shape and table.dtype == head.dtype and _same_bytes(table, head)
    if same:
        note = f"{roles.head} is stored with the very bytes of {roles.token}: stored twice, tied in meaning"
        conflict = None if says is None or says[0] else f"config says untied ({says[1]}) but the head equals the table"
        return TieVerdict(True, True, note, conflict)
    note = f"{roles.head} {head.shape} differs from {roles.token} {table.shape}: a separate output head"
    conflict = f"config says tied ({says[1]}) but the file holds a different {roles.head}" if says and says[0] else None
    return TieVerdict(False, False, note, conflict)


def buffer_reason(info: TensorInfo) -> str | None:
    """Why a saved tensor is a buffer rather than a parameter, or ``None`` for a parameter.

    Models save some non-trainable state beside their weights; counting it as
    parameters inflates the total (GPT-2's twelve causal masks alone are
    12,582,912 floats). Buffers are: any tensor of an integer or bool dtype
    (``embeddings.position_ids``, I64), ``position_ids`` and ``token_type_ids``
    whatever their dtype, GPT-2's causal mask ``attn.bias`` of shape
    (1, 1, T_max, T_max) and its scalar ``attn.masked_bias``, and rotary
    frequencies ``inv_freq``. Quantized checkpoints that pack weights into
    integer tensors are out of scope: their weights would read as buffers.

    >>> buffer_reason(TensorInfo("embeddings.position_ids", (1, 512), "I64", Path("m.safetensors")))
    'integer dtype I64'
    >>> buffer_reason(TensorInfo("h.0.attn.c_attn.bias", (2304,), "F32", Path("m.safetensors"))) is None
    True
    """
    last = info.name.rsplit(".", 1)[-1]
    if not info.is_float:
        return f"integer dtype {info.dtype}"
    if last in ("position_ids", "token_type_ids"):
        return f"saved {last}"
    if info.name.endswith(".attn.bias") and len(info.shape) == 4 and info.shape[:2] == (1, 1):
        return f"causal mask {info.shape}"
    if info.name.endswith(".attn.masked_bias"):
        return "mask fill value"
    if last == "inv_freq":
        return "rotary frequencies"
    return None


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
        files = [path / name for name in dict.fromkeys(weight_map.values())]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SourceError(f"shards named in {index} are missing: {', '.join(missing)}")
        return files
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


def _open(file: Path) -> Any:
    try:
        from safetensors import safe_open
    except ImportError:
        raise MissingExtraError.for_module("safetensors", "safetensors checkpoints", ("models",)) from None
    try:
        return safe_open(str(file), framework="numpy")
    except Exception as exc:  # SafetensorError, OSError: a truncated or malformed file
        raise SourceError(f"cannot read the safetensors header of {file}: {exc}") from None


def _by_name(infos: dict[str, TensorInfo], names: tuple[str, ...]) -> str | None:
    """The first 2-D tensor matching a name in priority order; the shortest name wins."""
    for wanted in names:
        hits = [n for n, i in infos.items() if len(i.shape) == 2 and (n == wanted or n.endswith("." + wanted))]
        if hits:
            return min(hits, key=len)
    return None


def _only_matrix(infos: dict[str, TensorInfo]) -> str | None:
    """The name of the one 2-D tensor, or None when there are none or several."""
    names = [n for n, i in infos.items() if len(i.shape) == 2]
    return names[0] if len(names) == 1 else None


LISTED = 8  # 2-D tensors a message lists whole; beyond, the nearest few and the count


def _matrices(infos: dict[str, TensorInfo], near: str = "embeddings.weight") -> str:
    """The 2-D tensors with their shapes, for a message: all of up to LISTED, else the names
    nearest ``near`` (difflib) and how many there are."""
    names = [n for n, i in infos.items() if len(i.shape) == 2]
    if not names:
        return "(none)"
    shown = names if len(names) <= LISTED else difflib.get_close_matches(near, names, n=5, cutoff=0.0)
    listed = ", ".join(f"{n} {list(infos[n].shape)}" for n in shown)
    return listed if len(shown) == len(names) else f"{listed} (the nearest of {len(names):,})"


def config_ties(config: dict[str, Any] | None) -> tuple[bool, str] | None:
    """What a config says about tying: (tied, the key and value it rests on), or ``None`` without a config.

    ``tie_word_embeddings`` absent means true, as in Hugging Face. Raises
    ``SourceError`` if its value is not a JSON boolean.

    >>> config_ties({"vocab_size": 8})
    (True, 'tie_word_embeddings absent, which means true')
    """
    if config is None:
        return None
    if "tie_word_embeddings" in config:
        value = config["tie_word_embeddings"]
        if not isinstance(value, bool):
            raise SourceError(f"config tie_word_embeddings must be true or false, got {value!r}")
        return value, f"tie_word_embeddings={str(value).lower()}"
    return True, "tie_word_embeddings absent, which means true"


def _same_bytes(a: TensorInfo, b: TensorInfo) -> bool:
    # Bytes, not values: -0.0 and 0.0 differ, and a NaN equals itself.
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
