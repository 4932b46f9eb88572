"""A family's rules for its input, read: position offset, token scale and embedding LayerNorm.

``engine.input_rule`` holds the arithmetic (``InputRule``); this module reads a
checkpoint's rule, which its tables alone do not say.

Read from the family's own code where transformers is installed: the model
is built from ``config.json`` on PyTorch's meta device (no weights, no
memory), and its modules say the rule:

* a learned position embedding with an ``offset`` (OPT's
  ``OPTLearnedPositionalEmbedding``, BART's): positions start at that row;
* an embeddings module with ``create_position_ids_from_input_ids`` (RoBERTa
  and its kin): that very function is run on probe ids, and its first
  position is the offset (padding_idx + 1);
* an input embedding with an ``embed_scale`` (Gemma's
  ``GemmaTextScaledWordEmbedding``, BART with ``scale_embedding``): a copy
  of that class with one row of ones, in the checkpoint's dtype, returns
  the factor as the model computes it (Gemma casts sqrt(D) to bfloat16:
  55.5 for D = 3072).

Without transformers (or for a family it does not know) a short table by
hand stands in, and the rule's notes say it is a fallback. The LayerNorm is
read from the checkpoint's ``embeddings.LayerNorm.weight``/``bias`` (BLOOM:
``word_embeddings_layernorm``) with the config's ``layer_norm_eps`` (BLOOM:
``layer_norm_epsilon``), else the family's default as transformers sets it
(1e-12 without transformers).

A factorised table (ALBERT, ELECTRA, OPT with ``word_embed_proj_dim``) is E
wide where the blocks are D wide: the family widens the embedding module's
output with a Linear E -> D outside that module (and OPT adds its D-wide
positions after it). transformers' model names that Linear (the one Linear
E -> D in the model); its weight and bias are read from the checkpoint, so
the rule ends where the first block begins. A checkpoint that does not save
it gets a note saying the step is left out.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from ..engine.input_rule import InputProjection, InputRule, LayerNorm, round_to_stored
from ..engine.table import EmbeddingTable
from . import checkpoint, config_limits, hf, safetensors

__all__ = ["read_input_rule", "rule_from_config"]

LAYER_NORMS = (("embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"),  # BERT family
               ("word_embeddings_layernorm.weight", "word_embeddings_layernorm.bias"))  # BLOOM
EPS_KEYS = ("layer_norm_eps", "layer_norm_epsilon")  # BERT family, BLOOM
# The fallback by hand, for a family transformers cannot build here.
PAD_COUNTED = ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "roberta-prelayernorm",
               "xmod", "mpnet")  # positions from padding_idx + 1, padding skipped
OFFSET_TWO = ("opt",)  # OPTLearnedPositionalEmbedding.offset, padding skipped
SQRT_D = ("gemma", "gemma2", "gemma3_text")  # GemmaTextScaledWordEmbedding: sqrt(D) in the weights' dtype
PROJECTED = {"albert": ("encoder.embedding_hidden_mapping_in", None), "electra": ("embeddings_project", None),
             "opt": ("decoder.project_in", "decoder.embed_positions")}  # the Linear E -> D, positions after it
HEAD_SCALED = ("t5", "mt5", "umt5")  # tied head reads h * D**-0.5 (T5ForConditionalGeneration.forward)
TORCH_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}


def read_input_rule(table: EmbeddingTable) -> InputRule:
    """The input rule of the checkpoint a table was read from; the plain rule for any other table.

    Parameters
    ----------
    table : EmbeddingTable
        As ``sources.load`` returns it; its provenance names the checkpoint.

    Returns
    -------
    InputRule

    Raises
    ------
    SourceError
        For a config.json that is not a JSON object.
    """
    prov = table.provenance
    if prov.path is None or prov.source not in ("safetensors", "minilm"):
        return InputRule()
    config = checkpoint.read_config(prov.path)
    if config is None:
        return InputRule(notes=("no config.json: positions from row 0, no scale, no LayerNorm",))
    rule, names = _rule(config, table.D, prov.dtype)
    layer_norm = _layer_norm(prov.path, config, table.D)
    projection = None if names is None else _projection(prov.path, table.D, *names[:2])
    notes = rule.notes if names is None else (*rule.notes, _projection_note(rule.family, table.D, names, projection))
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    # T_max: a multimodal config (Qwen2-VL, LLaVA) keeps its language model's in text_config
    pad, limit = config.get("pad_token_id"), config.get("max_position_embeddings", text.get("max_position_embeddings"))
    return InputRule(**{**rule.__dict__, "layer_norm": layer_norm, "projection": projection, "notes": notes,
                        "pad_token_id": pad if _whole(pad, 0) else None,
                        "max_context_length": limit if _whole(limit, 1) else None})


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def rule_from_config(config: dict[str, Any], D: int, stored_dtype: str | None = None) -> InputRule:
    """Position offset and token scale of a config's family (no LayerNorm: that is in the weights).

    transformers' own classes first; the table by hand where it cannot
    build the family, with a note saying so.

    >>> rule_from_config({"model_type": "opt"}, 16).position_offset
    2
    """
    return _rule(config, D, stored_dtype)[0]


def _rule(config: dict[str, Any], D: int, stored_dtype: str | None) -> tuple[InputRule, tuple[str, str | None, str] | None]:
    """``rule_from_config``, and the names of a factorised table's Linear E -> D and of the positions added
    after it (None where the table is as wide as the blocks)."""
    family = config.get("model_type")
    try:
        with hf.quiet():
            rule, names = _from_transformers(config, D, stored_dtype)
    except Exception as exc:  # not installed, or a family it cannot build: the fallback says why
        reason = f"{type(exc).__name__}: {hf._reason(exc, 120)}" if str(exc) else type(exc).__name__
        rule = _by_hand(family, config, D, stored_dtype, reason)
        names = _projection_by_hand(family, config, D)
    if family in HEAD_SCALED and config.get("tie_word_embeddings", True):
        head = (f"the tied head scales the last hidden vector by D^-0.5 = {D ** -0.5:.6g} before it "
                "(T5ForConditionalGeneration; noted by hand): the input embedding is not scaled")
        rule = InputRule(**{**rule.__dict__, "notes": (*rule.notes, head)})
    return rule, names


# -- from transformers ---------------------------------------------------------

def _from_transformers(config: dict[str, Any], D: int, stored_dtype: str | None
                       ) -> tuple[InputRule, tuple[str, str | None, str] | None]:
    import torch
    from transformers import AutoConfig, AutoModel

    settings = {k: v for k, v in config.items() if k not in ("model_type", "transformers_version")}
    cfg = AutoConfig.for_model(config["model_type"], **settings)
    with torch.device("meta"), config_limits.bounded_build():
        model = AutoModel.from_config(cfg)  # shapes only: nothing allocated
    offset, skip, notes, learned = 0, False, [], None
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Embedding) and isinstance(getattr(module, "offset", None), int):
            offset, skip, learned = module.offset, "attention_mask" in _forward_parameters(module), (name, module)
            notes.append(f"positions start at row {offset}: transformers {type(module).__name__}.offset")
            break
        if callable(getattr(module, "create_position_ids_from_input_ids", None)) and module.padding_idx is not None:
            pad = int(module.padding_idx)
            probe = module.create_position_ids_from_input_ids(torch.tensor([[pad + 1, pad, pad + 1]]), pad)
            offset, skip = int(probe[0, 0]), int(probe[0, 2]) == int(probe[0, 0]) + 1
            notes.append(f"positions start at row {offset} (padding_idx + 1): transformers "
                         f"{type(module).__name__}.create_position_ids_from_input_ids")
            break
    else:
        notes.append(f"positions from row 0: transformers {type(model).__name__} adds no offset")
    scale, scale_text = _scale_from_module(model.get_input_embeddings(), D, stored_dtype)
    if scale is not None:
        notes.append(f"token vectors times {scale_text}: transformers {type(model.get_input_embeddings()).__name__}")
    names, widening = _widening(model, learned)
    notes.extend(widening)
    return InputRule(family=config["model_type"], position_offset=offset, skip_padding=skip, scale=scale,
                     scale_text=scale_text, scale_dtype=_rounding(stored_dtype) if scale is not None else None,
                     notes=tuple(notes)), names


def _scale_from_module(embedding: Any, D: int, stored_dtype: str | None) -> tuple[float | None, str | None]:
    """The factor a scaled input embedding applies, run in the stored dtype on a one-row copy of its class."""
    import torch

    factor = getattr(embedding, "scalar_embed_scale", getattr(embedding, "embed_scale", None))
    if factor is None:
        return None, None
    factor = float(factor)
    if factor == 1.0:
        return None, None
    dtype = getattr(torch, TORCH_DTYPES.get(stored_dtype or "F32", "float32"))
    one_row = type(embedding)(1, 1, None, embed_scale=factor).to(dtype)  # the family's forward, 1 token, D = 1
    with torch.no_grad():
        one_row.weight.fill_(1.0)
        computed = float(one_row(torch.tensor([[0]]))[0, 0, 0])
    return computed, _scale_words(factor, computed, D, stored_dtype)


def _widening(model: Any, learned: tuple[str, Any] | None) -> tuple[tuple[str, str | None, str] | None, list[str]]:
    """The Linear E -> D after a factorised embedding module, as transformers' model names it.

    Returns ``(linear_name, positions_name, source)``, where ``positions_name`` is
    the offset position table (OPT's, from ``learned``) when it is D wide and
    so added after the Linear, and a note where the model widens the table in
    a step that is not one Linear; ``(None, [])`` for a table as wide as the
    blocks.
    """
    import torch

    E = model.get_input_embeddings().embedding_dim
    D = getattr(model.config, "hidden_size", None)
    if not isinstance(D, int) or D == E:
        return None, []
    found = [name for name, m in model.named_modules()
             if isinstance(m, torch.nn.Linear) and (m.in_features, m.out_features) == (E, D)]
    if not found:
        return None, [f"the token table is E={E} wide and the blocks D={D}: transformers {type(model).__name__} "
                      "widens it in a step embedlab does not find, and leaves out"]
    after = learned[0] if learned is not None and learned[1].embedding_dim == D else None
    return (found[0], after, f"transformers {type(model).__name__}"), []


def _forward_parameters(module: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(module.forward).parameters)


# -- by hand (fallback) --------------------------------------------------------

def _by_hand(family: Any, config: dict[str, Any], D: int, stored_dtype: str | None, reason: str) -> InputRule:
    why = f"read by hand (fallback: transformers could not build {family!r}: {reason})"
    if family in PAD_COUNTED:
        pad = config.get("pad_token_id", 1)
        return InputRule(family=family, position_offset=int(pad) + 1, skip_padding=True,
                         notes=(f"positions start at row {int(pad) + 1} (padding_idx + 1), {why}",))
    if family in OFFSET_TWO:
        return InputRule(family=family, position_offset=2, skip_padding=True,
                         notes=(f"positions start at row 2, {why}",))
    if family in SQRT_D:
        computed = float(round_to_stored(np.array([np.float32(math.sqrt(D))]), _rounding(stored_dtype) or "F32")[0])
        text = _scale_words(math.sqrt(D), computed, D, stored_dtype)
        return InputRule(family=family, scale=computed, scale_text=text, scale_dtype=_rounding(stored_dtype),
                         notes=(f"token vectors times {text}, {why}",))
    return InputRule(family=family if isinstance(family, str) else None,
                     notes=(f"positions from row 0, no scale: {why}",) if family else ())


def _projection_by_hand(family: Any, config: dict[str, Any], D: int) -> tuple[str, str | None, str] | None:
    """``PROJECTED``'s names for a factorised family whose config says E != D (fallback by hand)."""
    width = config.get("hidden_size")
    if not isinstance(width, int) or width == D or family not in PROJECTED:
        return None
    return (*PROJECTED[family], "hand (fallback)")


# -- helpers -----------------------------------------------------------------

def _projection(path: str, E: int, linear: str, positions: str | None) -> InputProjection | None:
    """The Linear E -> D (and the D-wide positions after it) the checkpoint saves; None where it saves no weight."""
    infos = safetensors.tensor_infos(path)

    def tensor(wanted: str, ok: Any) -> np.ndarray | None:
        hits = [n for n, i in infos.items() if (n == wanted or n.endswith("." + wanted)) and ok(i.shape)]
        return np.asarray(safetensors.read_tensor(infos[min(hits, key=len)])) if hits else None

    weight = tensor(f"{linear}.weight", lambda shape: len(shape) == 2 and shape[1] == E)  # (D, E)
    if weight is None:
        return None
    D = weight.shape[0]
    bias = tensor(f"{linear}.bias", lambda shape: shape == (D,))
    table = None if positions is None else tensor(f"{positions}.weight", lambda shape: len(shape) == 2
                                                  and shape[1] == D)  # (T_max, D)
    return InputProjection(linear, weight, bias, table, positions if table is not None else None)


def _projection_note(family: Any, E: int, names: tuple[str, str | None, str], found: InputProjection | None) -> str:
    """What the rule does after the embedding module of a factorised table, in one line."""
    linear, positions, source = names
    if found is None:
        return (f"left out: {linear} (named by {source}), the Linear E={E} -> D the first block reads the "
                f"embeddings through; this checkpoint saves no {linear}.weight, so compose and encode stop at the "
                f"E={E} vectors")
    D = found.weight.shape[0]
    text = (f"projected: {linear} (named by {source}), the Linear E={E} -> D={D} the model applies before its "
            "first block")
    if positions is not None and found.positions is None:
        return text + f"; left out: the positions {positions} (no D={D}-wide table saved)"
    return text + (f"; the positions ({positions}, D={D} wide) are added after it" if found.positions is not None
                   else "")

def _layer_norm(path: str, config: dict[str, Any], D: int) -> LayerNorm | None:
    """The first embedding LayerNorm of ``LAYER_NORMS`` the checkpoint saves, D wide; None without one."""
    infos = safetensors.tensor_infos(path)
    for names in LAYER_NORMS:
        found = []
        for wanted in names:
            hits = [n for n, i in infos.items() if (n == wanted or n.endswith("." + wanted)) and i.shape == (D,)]
            if hits:
                found.append(np.asarray(safetensors.read_tensor(infos[min(hits, key=len)]), dtype=np.float64))
        if len(found) == 2:
            return LayerNorm(found[0], found[1], _eps(config))
    return None


def _eps(config: dict[str, Any]) -> float:
    """The LayerNorm eps a config saves, else its family's default in transformers, else BertConfig's 1e-12."""
    for key in EPS_KEYS:
        if config.get(key) is not None:  # checked finite and positive where the config was read
            return float(config[key])
    try:
        from transformers import AutoConfig

        with hf.quiet():
            defaults = AutoConfig.for_model(config["model_type"])
    except Exception:  # not installed, or a family it does not know
        return 1e-12
    return float(next((getattr(defaults, k) for k in EPS_KEYS if hasattr(defaults, k)), 1e-12))


def _rounding(stored_dtype: str | None) -> str | None:
    """The 16-bit dtype a family's scaled vectors are rounded to, or None for float32 and wider."""
    return stored_dtype if stored_dtype in ("BF16", "F16") else None


def _scale_words(factor: float, computed: float, D: int, stored_dtype: str | None) -> str:
    exact = math.isclose(factor, math.sqrt(D), rel_tol=1e-9)
    name = f"sqrt(D) = sqrt({D}) = {factor:.10g}" if exact else f"{factor:.10g}"
    if stored_dtype in ("BF16", "F16") and computed != float(np.float32(factor)):
        return f"{name}, which the model computes in {stored_dtype} as {computed:.10g}"
    return name
