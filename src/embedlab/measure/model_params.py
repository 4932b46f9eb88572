"""The parameters of a published model, counted from its config.json or its safetensors checkpoint.

Two ways in, one ``params.Count`` out (``params.from_numbers`` is the third,
sizes given by hand):

* ``from_config(path)``: a Hugging Face ``config.json`` alone: with
  transformers, the model it describes built on the meta device and counted
  exactly; without, the tables from the common keys (which key gives V, D
  and T_max, the position kind the config implies), the total unknown;
* ``from_checkpoint(path)``: every tensor of a safetensors checkpoint, read
  from its headers, buffers set apart, tying decided from the file.

Only headers are read (and, for the tie check, the raw bytes of the table and
the head): neither NumPy nor the safetensors library is needed.

>>> c = from_config({"vocab_size": 8, "hidden_size": 4, "tie_word_embeddings": False})
>>> c.breakdown.token, c.breakdown.head, c.positions
(32, 32, 'none')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError, ConfigSizeError, SourceError, install_hint
from ..sources import checkpoint, config_limits, hf, safetensors
from . import dimensions
from .params import Breakdown, Buffer, Count

__all__ = ["from_config", "from_checkpoint"]

# safetensors dtype -> the dtype a checkpoint's bytes are shown in by default.
FILE_DTYPES = {"F32": "fp32", "F16": "fp16", "BF16": "bf16", "I8": "int8"}

WIDTH_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
# A factorised token table is narrower than the model (ALBERT's embedding_size, OPT's word_embed_proj_dim).
TABLE_WIDTH_KEYS = ("embedding_size", "word_embed_proj_dim")
LIMIT_KEYS = ("max_position_embeddings", "n_positions")
ROTARY_KEYS = ("rope_theta", "rotary_dim", "rotary_pct", "rotary_emb_base", "partial_rotary_factor", "rope_scaling",
               "rope_parameters")  # rope_parameters: where transformers 5 saves rope_theta and the scaling
# Families whose configs may name no rotary key at all (LLaMA 1 has none) but rotate all the same.
ROTARY_FAMILIES = frozenset({"llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "gpt_neox", "gptj",
                             "phi", "phi3", "stablelm", "olmo", "falcon"})
ALIBI_FAMILIES = frozenset({"bloom", "mpt"})


def from_config(config: str | Path | dict[str, Any], *, dtype: str = "fp32") -> Count:
    """Count the parameters of the model a Hugging Face ``config.json`` describes.

    With transformers installed and a ``model_type`` it knows, the model is
    built as transformers builds it, on the meta device (no memory, no
    weights; ``sources.hf.count_config``): the class ``architectures`` names,
    else the family's usual head (a multimodal family's generation class, as
    transformers' image-text-to-text Auto class maps it), and ``Count.built``
    says which, ``Count.reader`` through which Auto class. A multimodal
    config's position keys are read from its ``text_config``. Every
    table, the tie, output biases and the exact total come from that model.

    Otherwise the common keys are read by hand: ``vocab_size``; the token
    table's width under ``embedding_size`` or ``word_embed_proj_dim`` (a
    factorised table), else ``hidden_size``, ``n_embd``, ``d_model`` or
    ``dim``; the position limit ``max_position_embeddings`` or
    ``n_positions``; ``type_vocab_size``; the position kind
    (``position_embedding_type``, rotary keys, ALiBi, else learned when a
    limit is given); and the tie (``checkpoint.config_ties``: the key, else
    the family's default, which without transformers is unknown: ``tied``
    None, never a guess). ``other`` is None: the total is unknown and the
    family's rules are not checked, as ``Count.reader`` says.

    Parameters
    ----------
    config : str, Path or dict
        The JSON file, a folder holding ``config.json``, or the parsed object.
    dtype : str
        What bytes are counted in.

    Raises
    ------
    ConfigError
        (a ``SourceError``, a ``ValueError``) for a config without
        ``vocab_size`` or a width, or with a size that is not a positive int;
        it names the key and value.
    ConfigSizeError
        (a ``ConfigError``) for a size beyond its kind's maximum
        (``sources.config_limits``: more than 512 layers, say), checked
        before anything is built, or a model of more modules than a build
        may make; it names the key, the value and the maximum.
    SourceError
        For a missing or unreadable file.

    >>> c = from_config({"vocab_size": 50257, "n_embd": 768, "n_positions": 1024})
    >>> c.breakdown.token, c.breakdown.position, c.keys["D"]
    (38597376, 786432, 'n_embd=768')
    """
    path = None
    if isinstance(config, dict):
        config_limits.check(config)  # a file's sizes are checked as it is read
    else:
        path = str(config)
        config = checkpoint.read_config_file(config)
    where = path or "config"
    family = config.get("model_type")
    if isinstance(family, str) and hf.available():
        try:
            counted = hf.count_config(config, where)
        except ConfigSizeError:  # a model too big to build is too big to count by hand
            raise
        except ConfigError as exc:
            return _by_hand(config, path, where, dtype, f"by hand: {exc}")
        return _from_model(counted, config, path, dtype)
    why = ("no model_type" if not isinstance(family, str)
           else f"transformers is not installed: {install_hint(('hf',))}")
    return _by_hand(config, path, where, dtype, f"by hand ({why}): common keys only; the total is unknown "
                                                "and the family's rules were not checked")


def _from_model(m: Any, config: dict[str, Any], path: str | None, dtype: str) -> Count:
    """A Count of the model transformers built (``hf.ModelCount``)."""
    says = checkpoint.config_ties(config) or (None, "")  # never None for a dict
    evidence = f"{m.built}: " + ("no output head" if m.tied is None else
                                 "the head is the token table" if m.tied else "a separate output head")
    evidence += f" (config: {says[1]})"
    if m.tied is not None and says[0] is not None and says[0] != m.tied:  # T5Config: tied whatever the file says
        evidence += (f"; transformers builds {m.built} {'tied' if m.tied else 'untied'} whatever the config's key "
                     f"says, so it is counted so here; a checkpoint that saves "
                     f"{'its own output head' if m.tied else 'no separate head'} is counted as saved by "
                     "params --model")
    tied = says[0] if m.tied is None else m.tied  # a model without a head keeps what the config says
    kind, why = _position_kind(config)
    if m.position:
        kind, why = "learned", f"{m.tensors['position']} ({m.T_max}, {m.position // m.T_max})"
    elif kind == "learned":
        kind, why = "none", f"{m.built} has no learned position table (relative positions)"
    limit = m.T_max or _context_limit(config)
    breakdown = Breakdown(m.V, m.D, token=m.token, position=m.position, token_type=m.token_type, head=m.head,
                          other=sum(m.other), tied=tied, dtype=dtype, other_tensors=m.other,
                          vocab_bias=m.vocab_bias)
    keys = {"V": f"{m.tensors['token']} ({m.V}, {m.D})", "positions": why, "tied": says[1]}
    reader = f"{m.library}: {m.built} built from the config on the meta device" + "".join(f"; {n}" for n in m.notes)
    plan = dimensions.plan_from_parameters(m.parameters, _model_width(m.config, m.D), config=m.config,
                                           roles=m.tensors, source=f"the {m.built} transformers built")
    return Count(breakdown, "config", path, kind, limit, m.type_vocab, keys, evidence, built=m.built, reader=reader,
                 plan=plan)


def _by_hand(config: dict[str, Any], path: str | None, where: str, dtype: str, reader: str) -> Count:
    """The tables from the common keys alone: ``other`` unknown."""
    V, v_key = _config_size(config, ("vocab_size",), where, "vocabulary size V")
    D, d_key = _config_size(config, TABLE_WIDTH_KEYS + WIDTH_KEYS, where, "model width D")
    positions, why = _position_kind(config)
    T_max, limit_key = _config_size(config, LIMIT_KEYS, where, None)
    type_vocab, type_key = _config_size(config, ("type_vocab_size",), where, None, minimum=0)
    tied, tie_key = checkpoint.config_ties(config) or (True, "")  # never None for a dict
    keys = {"V": v_key, "D": d_key, "positions": why}
    keys.update({k: v for k, v in (("T_max", limit_key), ("type_vocab", type_key)) if v})
    keys["tied"] = tie_key
    position = T_max * D if positions == "learned" and T_max else 0
    breakdown = Breakdown(V, D, token=V * D, position=position, token_type=(type_vocab or 0) * D,
                          head=0 if tied in (True, None) else V * D, other=None, tied=tied, dtype=dtype)
    numbers, widths = dimensions.config_numbers(config, _model_width(config, D))
    plan = dimensions.DimensionPlan(D=_model_width(config, D), parts=None, keys=widths,
                                    source="the config's keys, read by hand", **numbers)
    return Count(breakdown, "config", path, positions, T_max, type_vocab or 0, keys, f"config: {tie_key}",
                 reader=reader, plan=plan)


def from_checkpoint(path: str | Path, *, tensor: str | None = None, dtype: str | None = None) -> Count:
    """Count every parameter of a safetensors checkpoint from its headers.

    Each tensor's shape comes from the file headers (never its data); integer
    tensors and known buffers (``checkpoint.buffer_reason``) are set apart as
    ``Count.buffers``. The token, position and type tables and the head are
    found by name (``checkpoint.find_roles``); everything else is ``other``.
    Tying (``checkpoint.decide_tying``): no head and the config ties -> tied;
    a head with the very bytes of the table -> stored twice, tied in meaning,
    counted once (the only data read: the two tensors, compared byte for
    byte); a different head -> untied and counted. A config that disagrees
    with the file is reported in ``Count.conflict``.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file or a checkpoint folder (shards included).
    tensor : str, optional
        The token table's name, instead of finding it by name.
    dtype : str, optional
        What bytes are counted in; default the token table's dtype in the
        file (fp32 for a dtype without a name here).

    Raises
    ------
    SourceError
        For a missing, truncated or malformed file, a token table that is
        not a float parameter, or none beside a head named by ``tensor``.
    TyingConflictError
        When the config says untied but the file holds no output head
        (the message names ``lm_head.weight``).
    """
    infos = safetensors.tensor_infos(path)
    roles = checkpoint.find_roles(infos, tensor)
    if roles.token is None:  # tensor= named the output head, and no token table lies beside it
        raise SourceError(f"{path}: no token-embedding table beside the output head {roles.head!r}: nothing to count "
                          "it against; name the token table with tensor=")
    config = checkpoint.read_config(path)
    verdict = checkpoint.decide_tying(infos, roles, config)
    table = infos[roles.token]  # type: ignore[index]
    if checkpoint.buffer_reason(table):
        raise SourceError(f"token table {table.name!r} has dtype {table.dtype}: not a float parameter "
                          "(quantized checkpoints are not counted)")
    V, D = table.shape
    counted_head = roles.head if roles.head is not None and not verdict.stored_twice else None
    tensors = {"token": roles.token, "position": roles.positions, "token_type": roles.token_types,
               "head": roles.head}
    tensors = {role: name for role, name in tensors.items() if name is not None}
    buffers = tuple(Buffer(i.name, i.shape, i.dtype, i.numel, i.nbytes, reason) for i in infos.values()
                    if (reason := checkpoint.buffer_reason(i)) is not None)
    kept = {i.name for i in buffers} | set(tensors.values())
    other_tensors = tuple(i.numel for i in infos.values() if i.name not in kept)
    positions, T_max = _checkpoint_positions(infos, roles, config)

    def numel(name: str | None) -> int:
        return infos[name].numel if name is not None else 0

    vocab_bias = sum(i.numel for i in infos.values() if i.name not in kept and i.shape == (V,))  # output biases
    breakdown = Breakdown(V, D, token=table.numel, position=numel(roles.positions),
                          token_type=numel(roles.token_types), head=numel(counted_head),
                          other=sum(other_tensors), tied=verdict.tied,
                          dtype=dtype or FILE_DTYPES.get(table.dtype, "fp32"), other_tensors=other_tensors,
                          vocab_bias=vocab_bias)
    type_vocab = infos[roles.token_types].shape[0] if roles.token_types else 0
    files = tuple(dict.fromkeys(str(i.path) for i in infos.values()))
    left_out = tuple(str(f) for f in sorted(Path(path).glob("*.safetensors")) if str(f) not in files) \
        if Path(path).is_dir() else ()
    settings = (hf.config_defaults(config) or config) if config is not None else {}
    counted = [(i.name, i.shape) for i in infos.values() if i.name not in {b.name for b in buffers}
               and not (verdict.stored_twice and i.name == roles.head)]
    plan = dimensions.plan_from_parameters(counted, _model_width(settings, D), config=settings, roles=tensors,
                                           source="the checkpoint's tensors" + (", its config's widths" if config
                                                                                 else ""))
    return Count(breakdown, "checkpoint", str(path), positions, T_max, type_vocab, {}, verdict.evidence,
                 stored_twice=verdict.stored_twice, conflict=verdict.conflict, tensors=tensors,
                 buffers=buffers, stored_bytes=sum(i.nbytes for i in infos.values()), files=files, plan=plan,
                 left_out=left_out)

# -- helpers -----------------------------------------------------------------

def _model_width(config: dict[str, Any], table_width: int) -> int:
    """The blocks' width D from a config (``WIDTH_KEYS``, nested ``text_config`` first), else the table's."""
    text = config.get("text_config")
    merged = {**config, **text} if isinstance(text, dict) else config
    return next((merged[k] for k in WIDTH_KEYS if isinstance(merged.get(k), int) and not isinstance(merged[k], bool)
                 and merged[k] >= 1), table_width)


def _config_size(config: dict[str, Any], keys: tuple[str, ...], where: str, needed: str | None,
                 minimum: int = 1) -> tuple[int | None, str]:
    """(value, "key=value") of the first key present; (None, "") when none is and none is needed."""
    key = next((k for k in keys if config.get(k) is not None), None)
    if key is None:
        if needed is None:
            return None, ""
        expected = f"the key {keys[0]}" if len(keys) == 1 else f"one of the keys {', '.join(keys)}"
        raise ConfigError(f"{where} has no {needed}: expected {expected}")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: {key} must be an int >= {minimum}, got {value!r}")
    return value, f"{key}={value}"


def _position_kind(config: dict[str, Any]) -> tuple[str, str]:
    """(kind, the key it rests on) from a config, in the order the docstring of from_config gives.

    A multimodal config keeps its language model's keys in ``text_config`` (Qwen2-VL, LLaVA): they
    are read there where the config itself has none, and named so (``text_config.rope_parameters``).
    ``alibi: true`` wins over rotary keys: Falcon has both and rotates only without ALiBi.
    """
    config, named = _language_keys(config)
    stated = config.get("position_embedding_type")
    if stated == "rotary":
        return "rotary", f"{named['position_embedding_type']}=rotary"
    family = config.get("model_type")
    if config.get("alibi") is True:
        return "none", f"{named['alibi']}=true: ALiBi, no position table"
    rotary = next((k for k in ROTARY_KEYS if config.get(k) is not None), None)
    if rotary:
        return "rotary", f"{named[rotary]} present: rotary"
    if family in ALIBI_FAMILIES:
        return "none", f"model_type={family}: ALiBi, no position table"
    if family in ROTARY_FAMILIES:
        return "rotary", f"model_type={family}: rotary"
    limit = next((k for k in LIMIT_KEYS if config.get(k) is not None), None)
    if limit:
        # BERT keeps its learned table even with relative_key attention.
        return "learned", (f"{named[limit]} present" + (f", position_embedding_type={stated}" if stated else "")
                           + ": learned")
    return "none", f"no {' or '.join(LIMIT_KEYS)}: no position table"


def _language_keys(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The config's keys, with those of its ``text_config`` where it has none (a multimodal family's
    language model), and each key's name as found (``"text_config.max_position_embeddings"``).

    >>> _language_keys({"model_type": "qwen2_vl", "text_config": {"max_position_embeddings": 128}})[1]["max_position_embeddings"]
    'text_config.max_position_embeddings'
    """
    named = {key: key for key in config}
    text = config.get("text_config")
    if not isinstance(text, dict):
        return config, named
    named.update({key: f"text_config.{key}" for key in text if key not in config})
    return {**text, **config}, named


def _context_limit(config: dict[str, Any]) -> int | None:
    """T_max a config declares (``LIMIT_KEYS``), its ``text_config``'s where it has none; None if neither."""
    config, _ = _language_keys(config)
    return next((config[k] for k in LIMIT_KEYS if isinstance(config.get(k), int) and not isinstance(config[k], bool)),
                None)


def _checkpoint_positions(infos: dict[str, safetensors.TensorInfo], roles: checkpoint.Roles,
                          config: dict[str, Any] | None) -> tuple[str, int | None]:
    """A learned table in the file wins; otherwise what the config says (rotary or none)."""
    if roles.positions is not None:
        return "learned", infos[roles.positions].shape[0]
    if config is None:
        return "none", None
    kind, _ = _position_kind(config)
    return ("none" if kind == "learned" else kind), _context_limit(config)
