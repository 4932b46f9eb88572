"""Hugging Face style checkpoints: tensor roles, buffers, config.json, weight tying.

A checkpoint is a ``.safetensors`` file or a folder of them (read by
``safetensors``), usually with a ``config.json``. This module says what its
tensors are: which play the roles that matter to embedlab, which are buffers
rather than parameters, and whether the output head is the token table, from
the config and from the bytes of the table and the head.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SourceError, TyingConflictError, brief, install_hint
from . import config_limits, hf
from .safetensors import TensorInfo, same_bytes

__all__ = [
    "Roles", "TieVerdict", "read_config", "read_config_file", "find_roles", "decide_tying",
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
    ConfigError
        (a ``SourceError``) for a size beyond its kind's maximum
        (``config_limits.check``: 10^9 layers), naming the key and value.
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
    config_limits.check(data, str(config))  # before anything builds what the file declares
    return data


def find_roles(infos: dict[str, TensorInfo], tensor: str | None = None) -> Roles:
    """Name the token table, position table, token-type table and output head.

    Parameters
    ----------
    infos : dict of str -> TensorInfo
        From ``safetensors.tensor_infos``.
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

    The rules: head absent and the config ties (``config_ties``: the key, else
    the family's default in transformers) -> tied; head present with bytes
    identical to the table -> stored twice, tied in meaning; head present and
    different -> untied. A config that says tied while the head differs is a
    conflict, reported in the verdict, never silently resolved; a config
    that says nothing (the family's default unknown) is never a conflict.

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
        if says[0] is None:
            return TieVerdict(None, False, f"no output head in the file; config: {says[1]}")
        if says[0]:
            return TieVerdict(True, False, f"no output head in the file; config: {says[1]}")
        raise TyingConflictError(
            f"config says untied ({says[1]}) but the file has no output head "
            f"(lm_head.weight or another head name): the head's weights are missing",
            parameter="tie_word_embeddings", value=False, expected="an output head in the file (lm_head.weight)"
        )
    table, head = infos[roles.token], infos[roles.head]
    same = table.shape == head.shape and table.dtype == head.dtype and same_bytes(table, head)
    if same:
        note = f"{roles.head} is stored with the very bytes of {roles.token}: stored twice, tied in meaning"
        conflict = f"config says untied ({says[1]}) but the head equals the table" if says and says[0] is False else None
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


def config_ties(config: dict[str, Any] | None) -> tuple[bool | None, str] | None:
    """What a config says about tying: (tied, what it rests on), or ``None`` without a config.

    ``tie_word_embeddings`` (in a nested ``text_config`` first, where a family
    keeps its language model there) decides when present. When absent, the
    family's default decides, as transformers' config class for
    ``model_type`` sets it (``hf.family_ties``: Llama false, GPT-2 true); with
    no ``model_type``, transformers' base default (true). A family whose
    default cannot be read (transformers not installed) gives ``tied`` None,
    never a guess. Raises ``SourceError`` if the value is not a JSON boolean.

    >>> config_ties({"vocab_size": 8})
    (True, "tie_word_embeddings absent, no model_type: transformers' base default, true")
    >>> config_ties({"model_type": "llama", "tie_word_embeddings": False})
    (False, 'tie_word_embeddings=false')
    """
    if config is None:
        return None
    text = config.get("text_config")
    for holder, prefix in ((text, "text_config."), (config, "")):
        if isinstance(holder, dict) and "tie_word_embeddings" in holder:
            value = holder["tie_word_embeddings"]
            if not isinstance(value, bool):
                raise SourceError(f"config {prefix}tie_word_embeddings must be true or false, got {value!r}",
                                  parameter="tie_word_embeddings", value=value, expected="true or false")
            return value, f"{prefix}tie_word_embeddings={str(value).lower()}"
    family = config.get("model_type")
    if not isinstance(family, str):
        return True, "tie_word_embeddings absent, no model_type: transformers' base default, true"
    default = hf.family_ties(family)
    if default is None:
        unknown = ("transformers is not installed: " + install_hint(("hf",)) if not hf.available()
                   else "transformers does not know this family")
        return None, f"tie_word_embeddings absent; the family's default decides (model_type={family}; {unknown})"
    return default, f"tie_word_embeddings absent: model_type={family} defaults to {str(default).lower()} in transformers"


# -- helpers -----------------------------------------------------------------

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
