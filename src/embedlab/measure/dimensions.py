"""The dimension plan of a transformer: the widths D runs through, and where its parameters sit.

D, the model width, runs through the whole model (Vaswani et al. 2017,
section 3): the token table maps one-hot V -> D; attention splits D into h
heads of width d_k (``D / h``, or the config's ``head_dim`` where a family
sets it, as Gemma does; grouped-query attention shares each key/value head
among several query heads, Ainslie et al. 2023); the feed-forward block goes
D -> d_ff -> D (section 3.3); L layers repeat both::

    ids (B, T) -> W_E: V x D -> (B, T, D)
        -> attention: h heads x d_k (Q, K, V; h_kv key/value heads) -> D
        -> feed-forward: D -> d_ff -> D                 (x L layers)
        -> head: D -> V

The parameters by part: ``embedding`` (the token, position and token-type
tables, and a factorised table's Linear E -> D), ``attention``,
``feed_forward``, ``norms``, ``head`` (an untied output head, its bias and
its transform), ``other`` (pooler, classifier). One rule classifies a
parameter by its name (``part_of``), the same for a transformers model
object's ``named_parameters()`` and for a checkpoint's tensor names, since
both follow the family's module names. The widths come from the config
(read through transformers' config class where installed, so a key the file
leaves out takes the family's default), and d_ff, where the config does not
say, from the feed-forward tensors' shapes.

``from_numbers`` is the plan of a model given by its sizes alone, with the
counts of the original Transformer's sublayers (section 3.2-3.3) in the
GPT-2 layout: Q, K, V and output projections D x D with biases, a D -> d_ff
-> D feed-forward with biases, two LayerNorms per layer and a final one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..errors import SizeError

__all__ = ["PARTS", "DimensionPlan", "part_of", "plan_from_parameters", "from_numbers", "config_numbers"]

PARTS = ("embedding", "attention", "feed_forward", "norms", "head", "other")
PART_NAMES = {"embedding": "embedding tables", "attention": "attention", "feed_forward": "feed-forward",
              "norms": "norms", "head": "output head", "other": "other"}

# The config keys of each width, first found wins (families name them differently).
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads")
KV_HEAD_KEYS = ("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num")
HEAD_DIM_KEYS = ("head_dim", "d_kv")  # Gemma, T5: a head width that need not be D / h
D_FF_KEYS = ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "ffn_hidden_size", "encoder_ffn_dim")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers")
DECODER_LAYER_KEYS = ("num_decoder_layers", "decoder_layers")  # encoder-decoder families (T5, BART)

# Name rules, tried in order on the lower-cased name (the first that matches decides).
_HEAD = re.compile(r"(^|\.)(lm_head|lm_predictions|cls\.predictions|generator_lm_head|generator_predictions|"
                   r"predictions|final_logits_bias|project_out)(\.|$)|(^|\.)vocab_")
_EMBEDDING = re.compile(r"embed|wte|wpe|word_embeddings|embedding_hidden_mapping_in|project_in|(^|\.)shared\.")
_NORM = re.compile(r"norm|(^|\.|_)ln(_|\d|\.|$)")
_ATTENTION = re.compile(r"attn|attention|(^|\.)(q|k|v|o|qkv)(_proj|_lin)?\.|query|key|value|relative_attention")
_FEED_FORWARD = re.compile(r"mlp|ffn|feed_forward|intermediate|densereludense|fc1|fc2|fc_in|fc_out|"
                           r"dense_h_to_4h|dense_4h_to_h|gate_proj|up_proj|down_proj|(^|\.)w[123]\.|c_fc|"
                           r"(^|\.)output\.dense")


@dataclass(frozen=True)
class DimensionPlan:
    """The widths through a model and its parameters by part.

    Attributes
    ----------
    D : int
        Model width d_model.
    heads, head_dim, kv_heads, d_ff, layers : int or None
        h, d_k, the key/value heads (h where not grouped), the feed-forward
        width and L; None where neither the config nor the tensors say.
    parts : dict of str -> int, or None
        Parameters of each of ``PARTS`` (each counted once: a tied head is
        the token table, counted under ``embedding``); None where the model's
        parameters are not known (a config read by hand).
    keys : dict of str -> str
        Where each width came from (``{"heads": "num_attention_heads=12", "head_dim": "D / h = 384 / 12"}``).
    source : str
        What was classified: a transformers model object, a checkpoint's
        tensors, or the sizes given with the formulas of ``from_numbers``.
    """

    D: int
    heads: int | None
    head_dim: int | None
    kv_heads: int | None
    d_ff: int | None
    layers: int | None
    parts: dict[str, int] | None
    keys: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def total(self) -> int | None:
        """Every parameter counted in ``parts``; None where they are not known."""
        return None if self.parts is None else sum(self.parts.values())

    def shares(self) -> dict[str, float] | None:
        """Each part's fraction of ``total`` (0.0 for an empty model); None where parts are not known."""
        if self.parts is None:
            return None
        total = self.total or 0
        return {part: (n / total if total else 0.0) for part, n in self.parts.items()}

    def to_dict(self) -> dict[str, Any]:
        """The widths, ``parts`` and ``shares`` (fractions), ``keys`` and ``source``, as JSON-able values."""
        return {"D": self.D, "heads": self.heads, "head_dim": self.head_dim, "kv_heads": self.kv_heads,
                "d_ff": self.d_ff, "layers": self.layers, "parts": self.parts, "total": self.total,
                "shares": self.shares(), "keys": self.keys, "source": self.source}


def part_of(name: str, roles: Mapping[str, str | None] | None = None) -> str:
    """The part of ``PARTS`` a parameter belongs to, by its name (and the tables' roles where known).

    ``roles`` maps "token", "position", "token_type" and "head" to tensor
    names (``checkpoint.Roles``); a name found there decides first.

    >>> part_of("model.layers.0.self_attn.q_proj.weight")
    'attention'
    >>> part_of("bert.encoder.layer.0.attention.output.LayerNorm.weight")
    'norms'
    >>> part_of("bert.encoder.layer.0.output.dense.weight")
    'feed_forward'
    >>> part_of("transformer.h.0.mlp.c_fc.weight"), part_of("lm_head.weight"), part_of("bert.pooler.dense.weight")
    ('feed_forward', 'head', 'other')
    """
    roles = roles or {}
    if name in (roles.get("token"), roles.get("position"), roles.get("token_type")):
        return "embedding"
    if name == roles.get("head"):
        return "head"
    low = name.lower()
    if _HEAD.search(low):
        return "head"
    if _NORM.search(low.rsplit(".", 1)[0] if "." in low else low):
        return "norms"
    if _EMBEDDING.search(low):
        return "embedding"
    if _ATTENTION.search(low):
        return "attention"
    if _FEED_FORWARD.search(low):
        return "feed_forward"
    return "other"


def plan_from_parameters(parameters: Iterable[tuple[str, tuple[int, ...]]], D: int, *,
                         config: Mapping[str, Any] | None = None, roles: Mapping[str, str | None] | None = None,
                         source: str = "") -> DimensionPlan:
    """The plan of a model from its parameters' names and shapes, and its config.

    Parameters
    ----------
    parameters : iterable of (str, tuple of int)
        Every parameter once (a tied head not repeated): a model's
        ``named_parameters()`` shapes, or a checkpoint's float tensors.
    D : int
        The model width (the blocks', not a factorised table's E).
    config : mapping, optional
        The config's values (``config_numbers`` reads the widths from it).
    roles : mapping, optional
        Role -> tensor name, as ``part_of`` takes.
    source : str
        What the parameters are, for the output.

    Returns
    -------
    DimensionPlan
        d_ff, where the config does not give it, is the one width other than
        D that the feed-forward matrices have (None if they have several).
    """
    parts = dict.fromkeys(PARTS, 0)
    ff_widths: set[int] = set()
    for name, shape in parameters:
        part = part_of(name, roles)
        numel = 1
        for n in shape:
            numel *= int(n)
        parts[part] += numel
        if part == "feed_forward" and len(shape) == 2 and D in shape:
            ff_widths.update(int(n) for n in shape if n != D)
    numbers, keys = config_numbers(config or {}, D)
    if numbers["d_ff"] is None and len(ff_widths) == 1:
        numbers["d_ff"] = ff_widths.pop()
        keys["d_ff"] = "the feed-forward matrices' width"
    return DimensionPlan(D=D, parts=parts, keys=keys, source=source, **numbers)


def config_numbers(config: Mapping[str, Any], D: int) -> tuple[dict[str, int | None], dict[str, str]]:
    """heads, head_dim, kv_heads, d_ff and layers from a config's keys, and where each came from.

    A nested ``text_config`` (multimodal families) is read first. head_dim
    is the config's where given, else D / h when h divides D; kv_heads is h
    where the config names no grouping; layers counts an encoder-decoder
    model's decoder layers too.

    >>> numbers, keys = config_numbers({"num_attention_heads": 12, "num_hidden_layers": 6}, 384)
    >>> numbers["head_dim"], keys["head_dim"], numbers["kv_heads"]
    (32, 'D / h = 384 / 12', 12)
    """
    text = config.get("text_config")
    merged = {**config, **text} if isinstance(text, Mapping) else dict(config)
    numbers: dict[str, int | None] = {}
    keys: dict[str, str] = {}
    for what, names in (("heads", HEAD_KEYS), ("kv_heads", KV_HEAD_KEYS), ("head_dim", HEAD_DIM_KEYS),
                        ("d_ff", D_FF_KEYS), ("layers", LAYER_KEYS)):
        key = next((k for k in names if _positive_int(merged.get(k))), None)
        numbers[what] = None if key is None else int(merged[key])
        if key is not None:
            keys[what] = f"{key}={merged[key]}"
    decoder = next((k for k in DECODER_LAYER_KEYS if _positive_int(merged.get(k))), None)
    if decoder is not None and numbers["layers"] is not None and merged.get("is_encoder_decoder", True):
        numbers["layers"] += int(merged[decoder])
        keys["layers"] = f"{keys['layers']} (encoder) + {decoder}={merged[decoder]} (decoder)"
    heads = numbers["heads"]
    if numbers["head_dim"] is None and heads and D % heads == 0:
        numbers["head_dim"], keys["head_dim"] = D // heads, f"D / h = {D} / {heads}"
    if numbers["kv_heads"] is None and heads:
        numbers["kv_heads"], keys["kv_heads"] = heads, "h (no grouped key/value heads)"
    return numbers, keys


def from_numbers(D: int, *, heads: int, layers: int, d_ff: int | None = None, tables: int = 0,
                 head: int = 0) -> DimensionPlan:
    """The plan of a Transformer given by its sizes, counted in the GPT-2 layout.

    Per layer (Vaswani et al. 2017, sections 3.2.2 and 3.3; Radford et al.
    2019): attention ``4 * D * D + 4 * D`` (W_Q, W_K, W_V, W_O, each D x D as
    h heads of d_k = D / h, with biases), feed-forward ``2 * D * d_ff + d_ff
    + D`` (with biases), norms ``2 * 2 * D`` (two LayerNorms, weight and
    bias); then one final LayerNorm, ``2 * D``.

    Parameters
    ----------
    D : int
        Model width, >= 1, divisible by ``heads``.
    heads, layers : int
        h >= 1 and L >= 1.
    d_ff : int, optional
        Feed-forward width, >= 1; default 4 * D (section 3.3: 2048 for D = 512).
    tables, head : int
        The embedding tables' and the untied head's parameters (``params.Breakdown``), >= 0.

    Raises
    ------
    SizeError
        For a size below its minimum, not an int, or h not dividing D.

    >>> p = from_numbers(768, heads=12, layers=12, tables=50257 * 768 + 1024 * 768)
    >>> p.total, p.head_dim, p.d_ff  # GPT-2 small: 124,439,808 parameters
    (124439808, 64, 3072)
    """
    for name, value, low in (("D", D, 1), ("heads", heads, 1), ("layers", layers, 1), ("tables", tables, 0),
                             ("head", head, 0)) + ((("d_ff", d_ff, 1),) if d_ff is not None else ()):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SizeError(f"{name} must be an int >= {low}, got {value!r}", parameter=name, value=value,
                            expected=f"an int >= {low}")
    if D % heads:
        raise SizeError(f"heads={heads} does not divide D={D}: each head is d_k = D / h wide", parameter="heads",
                        value=heads, expected=f"a divisor of D={D}")
    width = 4 * D if d_ff is None else d_ff
    parts = {"embedding": tables, "attention": layers * (4 * D * D + 4 * D),
             "feed_forward": layers * (2 * D * width + width + D), "norms": layers * 4 * D + 2 * D,
             "head": head, "other": 0}
    keys = {"heads": f"h={heads} (given)", "head_dim": f"D / h = {D} / {heads}", "kv_heads": "h (not grouped)",
            "d_ff": f"d_ff={width} (given)" if d_ff is not None else f"4 * D = {width} (Vaswani et al. 2017)",
            "layers": f"L={layers} (given)"}
    return DimensionPlan(D=D, heads=heads, head_dim=D // heads, kv_heads=heads, d_ff=width, layers=layers,
                         parts=parts, keys=keys, source="the sizes given, counted in the GPT-2 layout")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
