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
output head    the name transformers gives the family's output embeddings
               (``hf.output_head``: ``lm_head.decoder.weight`` for RoBERTa),
               then ``lm_head.weight``, ``embed_out.weight``, ``output.weight``, ...
=============  ============================================================

A tensor named by the user (``--tensor``) names the table asked for (the
token table, or with ``table="head"`` the head); a tensor that is the head by
name stays the head, so the tie is still decided between the two tables.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import SourceError, TyingConflictError, brief, install_hint
from . import config_limits, files, hf
from .safetensors import TensorInfo, same_bytes

__all__ = [
    "Roles", "TieVerdict", "read_config", "read_config_file", "find_roles", "head_names",
    "shard_roles", "named_in", "decide_tying", "buffer_reason", "config_ties",
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
    """Names of the tensors that play each role, ``None`` where absent.

    ``head`` is a head stored apart from the token table (None when the file
    holds none); ``token`` is None only for a head named with no token table
    beside it (``find_roles``).
    """

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
    """The ``config.json`` of a checkpoint folder (or beside a file), or ``None`` where there is none.

    Raises ``SourceError`` as ``read_config_file`` does, and for a ``config.json``
    that is there but is not a regular file (a folder, a FIFO, a broken link).
    """
    path = Path(path)
    config = (path if path.is_dir() else path.parent) / "config.json"
    if not files.present(config, "config file"):
        return None
    return read_config_file(config)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A model configuration file (a Hugging Face ``config.json``) as a dict, its values checked.

    The file is read as ``sources.files`` reads any file a stranger wrote (a regular
    file of at most ``files.CONFIG_CAP`` bytes, JSON of a sane depth), and the values
    that readers use are checked once, here (``config_limits.check``): integers
    within 2^40, token ids within 2^31 - 1, LayerNorm and RMSNorm eps finite and
    positive, and sizes within what embedlab builds (10^9 layers refused).

    Parameters
    ----------
    path : str or Path
        The JSON file itself, or a folder holding ``config.json``.

    Raises
    ------
    SourceError
        If the name is empty, the file is missing or not a regular file, is larger
        than the cap, is not UTF-8 JSON, nests too deep, or does not hold a JSON
        object (names the file).
    ConfigError
        (a ``SourceError``) for a value out of range or a size beyond its kind's
        maximum (``config_limits.check``), naming the key and the value.
    """
    if isinstance(path, str) and not path.strip():  # Path("") is the current folder: never meant
        raise SourceError(f"empty config file name {path!r}: expected a config.json or its folder")
    config = Path(path)
    if config.is_dir():
        config = config / "config.json"
    data = files.read_json(config, "config file", files.CONFIG_CAP)
    if not isinstance(data, dict):
        raise SourceError(f"{config} must hold a JSON object, got {type(data).__name__}")
    config_limits.check(data, str(config))  # before anything reads or builds what the file declares
    return data


def find_roles(infos: dict[str, TensorInfo], tensor: str | None = None, *, table: str = "input",
               head_names: tuple[str, ...] = HEAD_NAMES) -> Roles:
    """Name the token table, position table, token-type table and output head.

    Parameters
    ----------
    infos : dict of str -> TensorInfo
        From ``safetensors.tensor_infos``.
    tensor : str, optional
        The name of the table asked for (``table``), overriding the search by
        name: the token table's for ``"input"``, the head's for ``"head"``. A
        tensor that is the output head by name (``lm_head.weight``) is the
        head whichever table was asked for: naming the head never makes it
        the token table, so the tie is still decided between the two.
    table : {"input", "head"}
        The table ``tensor`` names.
    head_names : tuple of str
        The output head's names, in priority order (a suffix after any
        prefix): the family's own from transformers first where known
        (``hf.output_head``), else ``HEAD_NAMES``.

    Returns
    -------
    Roles
        ``head`` is None when the file holds no separate head (it is absent,
        or is the very tensor of the token table). ``token`` is None only when
        ``tensor`` names the head and no token table lies beside it.

    Raises
    ------
    SourceError
        If ``tensor`` is not in the file or not 2-D, or no token table is found
        (the message lists the 2-D tensors to choose from with ``--tensor``:
        all of a few, else the nearest names and how many there are), or
        ``tensor`` names the token table as the head while the file holds
        another head.

    A checkpoint whose only 2-D tensor has no known name (a lone table saved
    as ``weight``) has that tensor as its token table: there is nothing else
    it could be.
    """
    if tensor is not None:
        _check_tensor(infos, tensor)
    named_head = _by_name(infos, head_names)
    positions, types = _by_name(infos, POSITION_NAMES), _by_name(infos, TYPE_NAMES)
    if tensor is not None and (table == "head" or tensor == named_head):
        token = _by_name(infos, TOKEN_NAMES) or _only_matrix(infos, besides=tensor)
        if token != tensor:
            return Roles(token=token, positions=positions, token_types=types, head=tensor)
        if named_head not in (None, tensor):
            raise SourceError(f"tensor {tensor!r} is the token table (the input), not the output head: the head "
                              f"of this checkpoint is {named_head!r}", parameter="tensor", value=tensor,
                              expected=f"the output head's tensor, {named_head!r} (or leave the tensor out)")
        return Roles(token=token, positions=positions, token_types=types, head=None)  # the head is the input table
    if tensor is not None:
        token = tensor
    else:
        token = _by_name(infos, TOKEN_NAMES) or _only_matrix(infos)
        if token is None:
            raise SourceError(
                "no token-embedding table found by name; choose one with tensor= (--tensor) among "
                f"the 2-D tensors: {_matrices(infos)}"
            )
    return Roles(token=token, positions=positions, token_types=types,
                 head=named_head if named_head != token else None)


def head_names(family: hf.OutputHead | None) -> tuple[str, ...]:
    """The names an output head is looked for under, in priority order: the family's own
    (``family.name``, from the model transformers builds) first, then ``HEAD_NAMES``, the names
    kept by hand, which stand alone without transformers or for a class with no head.

    >>> head_names(None) == HEAD_NAMES
    True
    >>> head_names(hf.OutputHead("RobertaForMaskedLM", "lm_head.decoder.weight"))[:2]
    ('lm_head.decoder.weight', 'lm_head.weight')
    """
    if family is None or family.name is None:
        return HEAD_NAMES
    return (family.name, *(n for n in HEAD_NAMES if n != family.name))


def shard_roles(roles: Roles, elsewhere: Mapping[str, str], *, file: Path, table: str, tensor: str | None,
                head_names: tuple[str, ...] = HEAD_NAMES) -> Roles:
    """The roles in one shard of a sharded checkpoint, whose other tensors lie in other shards (``elsewhere``:
    name -> shard file, ``safetensors.other_shards``).

    A shard that holds the output head and no token table (transformers often saves ``lm_head.weight``
    last, alone) is the head, never the token table: with ``table="head"`` it is read as the head; for the
    token table, the error names the shard that holds it and the folder to pass. A shard that holds the
    token table while the head lies in another is refused for ``table="head"`` the same way. Roles found
    otherwise are returned as they are.

    Raises
    ------
    SourceError
        For the table asked for lying in another shard: the message names that shard and the folder.
    """
    if tensor is not None or not elsewhere:
        return roles
    token_there, head_there = named_in(elsewhere, TOKEN_NAMES), named_in(elsewhere, head_names)
    lone_head = roles.head is None and roles.token is not None and named_in({roles.token: ""}, head_names)
    if lone_head and token_there is not None:
        if table == "head":
            return replace(roles, token=None, head=roles.token)
        raise SourceError(f"{file.name} holds only the output head ({roles.token}) of a sharded checkpoint: its "
                          f"token table ({token_there}) is in another shard, {elsewhere[token_there]}; pass the "
                          f"folder {file.parent} to read the model, or table='head' (--table head) to read the head "
                          "this file holds")
    if table == "head" and roles.head is None and head_there is not None:
        raise SourceError(f"{file.name} holds the token table ({roles.token}) of a sharded checkpoint, not its output "
                          f"head: the head ({head_there}) is in another shard, {elsewhere[head_there]}; pass the "
                          f"folder {file.parent} (or that shard) to read the head")
    return roles


def decide_tying(infos: dict[str, TensorInfo], roles: Roles, config: dict[str, Any] | None,
                 elsewhere: Mapping[str, str] | None = None) -> TieVerdict:
    """Decide whether the output head is the token table (weight tying).

    The rules: head absent and the config ties (``config_ties``: the key, else
    the family's default in transformers) -> tied; head present with bytes
    identical to the table -> stored twice, tied in meaning; head present and
    different -> untied. A config that says tied while the head differs is a
    conflict, reported in the verdict, never silently resolved; a config
    that says nothing (the family's default unknown) is never a conflict.

    For one shard of a sharded checkpoint (``elsewhere``: the tensors of the
    other shards, name -> shard file), a head or token table in another shard
    is a table of its own: untied (unless the config says tied: the bytes of
    the other shard are not compared, so it cannot be told).

    Raises
    ------
    TyingConflictError
        If the config says untied but the checkpoint holds no output head: the
        model's head is missing (the message names ``lm_head.weight``).
    """
    says = config_ties(config)
    apart = _apart(roles, elsewhere or {}, says)
    if apart is not None:
        return apart
    if roles.token is None:
        if roles.head is None:
            raise SourceError("no token table and no output head to decide tying for")
        return TieVerdict(None, False, f"no token table found beside {roles.head}: whether it is tied cannot be told")
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


def _apart(roles: Roles, elsewhere: Mapping[str, str], says: tuple[bool | None, str] | None) -> TieVerdict | None:
    """The verdict for a shard whose other table (the head, or the token table) lies in another shard; None
    where neither does."""
    if roles.token is None and roles.head is not None:
        here, other = roles.head, named_in(elsewhere, TOKEN_NAMES)
    elif roles.head is None and roles.token is not None:
        here, other = roles.token, named_in(elsewhere, HEAD_NAMES)
    else:
        return None
    if other is None:
        return None
    config = f"; config: {says[1]}" if says else ""
    evidence = f"{here} here, {other} in another shard, {elsewhere[other]}"
    if says and says[0]:
        return TieVerdict(None, False, f"{evidence}: whether they hold the same bytes is not compared{config}")
    return TieVerdict(False, False, f"{evidence}: a separate output head{config}")


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


def named_in(names: Mapping[str, Any], wanted: tuple[str, ...]) -> str | None:
    """The first of ``names`` matching a name of ``wanted`` in priority order (as ``_by_name``, by name alone:
    a shard index gives names, not shapes); the shortest wins.

    >>> named_in({"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}, TOKEN_NAMES)
    'model.embed_tokens.weight'
    """
    for name in wanted:
        hits = [n for n in names if n == name or n.endswith("." + name)]
        if hits:
            return min(hits, key=len)
    return None


def _only_matrix(infos: dict[str, TensorInfo], besides: str | None = None) -> str | None:
    """The name of the one 2-D tensor (``besides`` left out), or None when there are none or several."""
    names = [n for n, i in infos.items() if len(i.shape) == 2 and n != besides]
    return names[0] if len(names) == 1 else None


def _check_tensor(infos: dict[str, TensorInfo], tensor: str) -> None:
    """A tensor named by the user: in the file and 2-D, else ``SourceError`` listing the 2-D tensors."""
    if tensor not in infos:
        raise SourceError(f"tensor {brief(tensor)} is not in the checkpoint; 2-D tensors: {_matrices(infos, tensor)}",
                          parameter="tensor", value=tensor, expected=f"a 2-D tensor: {_matrices(infos, tensor)}")
    if len(infos[tensor].shape) != 2:
        raise SourceError(f"tensor {tensor!r} has shape {infos[tensor].shape}, expected a 2-D (V, D) table")


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
