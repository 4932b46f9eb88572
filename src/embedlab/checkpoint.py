"""Hugging Face style checkpoints: safetensors headers, tensor roles, weight tying.

A checkpoint is a ``.safetensors`` file, a folder holding one or more of them
(``model.safetensors``, or shards listed in ``model.safetensors.index.json``),
and usually a ``config.json``. Everything here reads headers only (names,
shapes, dtypes) through the ``safetensors`` library, except ``read_tensor`` and
the tying check, which read the one or two tensors they need. Nothing is ever
read with pickle.

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

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MissingExtraError, SourceError, TyingConflictError

__all__ = [
    "TensorInfo", "Roles", "TieVerdict",
    "tensor_infos", "read_config", "read_tensor", "find_roles", "decide_tying",
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


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a checkpoint, from its header: name, shape, dtype, file."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    path: Path

    @property
    def numel(self) -> int:
        """Number of elements (an exact int)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_float(self) -> bool:
        """Whether the dtype is floating point (a parameter rather than an integer buffer)."""
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
        In file order.

    Raises
    ------
    SourceError
        If the path holds no safetensors file, a shard named by the index is
        missing, or a header is truncated or malformed (names the file).
    """
    path = Path(path)
    infos: dict[str, TensorInfo] = {}
    for file in _safetensors_files(path):
        with _open(file) as handle:
            for name in handle.keys():
                part = handle.get_slice(name)
                infos[name] = TensorInfo(name, tuple(int(s) for s in part.get_shape()), part.get_dtype(), file)
    return infos


def read_config(path: str | Path) -> dict[str, Any] | None:
    """The ``config.json`` of a checkpoint folder (or beside a file), or ``None``.

    Raises ``SourceError`` if the file exists but is not a JSON object.
    """
    path = Path(path)
    config = (path if path.is_dir() else path.parent) / "config.json"
    if not config.is_file():
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"cannot read {config}: {exc}") from None
    if not isinstance(data, dict):
        raise SourceError(f"{config} must hold a JSON object, got {type(data).__name__}")
    return data


def read_tensor(info: TensorInfo) -> Any:
    """The data of one tensor as a NumPy array (only that tensor is read).

    BF16 has no NumPy dtype: it is read through PyTorch (the ``torch`` extra)
    and returned as float32, which holds every bfloat16 value exactly.

    Raises
    ------
    SourceError
        If the file cannot be read.
    MissingExtraError
        For a BF16 tensor when PyTorch is not installed.
    """
    if info.dtype == "BF16":
        try:
            import torch  # noqa: F401  (only to read bfloat16)
        except ImportError:
            raise MissingExtraError(
                f"tensor {info.name!r} in {info.path} is bfloat16, which NumPy cannot hold: "
                "install PyTorch to read it (pip install 'embedlab[torch]')"
            ) from None
        with _open(info.path, framework="pt") as handle:
            return handle.get_tensor(info.name).float().numpy()
    with _open(info.path) as handle:
        try:
            return handle.get_tensor(info.name)
        except Exception as exc:  # safetensors raises its own error types
            raise SourceError(f"cannot read tensor {info.name!r} from {info.path}: {exc}") from None


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
        (the message lists the 2-D tensors to choose from with ``--tensor``).
    """
    if tensor is not None:
        if tensor not in infos:
            raise SourceError(f"tensor {tensor!r} is not in the checkpoint; 2-D tensors: {_matrices(infos)}")
        if len(infos[tensor].shape) != 2:
            raise SourceError(f"tensor {tensor!r} has shape {infos[tensor].shape}, expected a 2-D (V, D) table")
        token = tensor
    else:
        token = _by_name(infos, TOKEN_NAMES)
        if token is None:
            raise SourceError(
                "no token-embedding table found by name; choose one with --tensor among "
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
    says = _config_ties(config)
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


def _open(file: Path, framework: str = "numpy") -> Any:
    try:
        from safetensors import safe_open
    except ImportError:
        raise MissingExtraError("reading safetensors needs the models extra: pip install 'embedlab[models]'") from None
    try:
        return safe_open(str(file), framework=framework)
    except Exception as exc:  # SafetensorError, OSError: a truncated or malformed file
        raise SourceError(f"cannot read the safetensors header of {file}: {exc}") from None


def _by_name(infos: dict[str, TensorInfo], names: tuple[str, ...]) -> str | None:
    """The first 2-D tensor matching a name in priority order; the shortest name wins."""
    for wanted in names:
        hits = [n for n, i in infos.items() if len(i.shape) == 2 and (n == wanted or n.endswith("." + wanted))]
        if hits:
            return min(hits, key=len)
    return None


def _matrices(infos: dict[str, TensorInfo]) -> str:
    names = [f"{n} {list(i.shape)}" for n, i in infos.items() if len(i.shape) == 2]
    return ", ".join(names) if names else "(none)"


def _config_ties(config: dict[str, Any] | None) -> tuple[bool, str] | None:
    """(ties, which key said so) from a config; None without a config."""
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
    return read_tensor(a).tobytes() == read_tensor(b).tobytes()
