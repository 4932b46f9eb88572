"""What a model config may declare: values no model has are refused, sizes are bounded, builds capped.

``check`` is the one check a config passes where it is read: ``check_values``
(integers within 2^40, token ids within 2^31 - 1, normalisation eps finite and
positive) and the largest sizes of each kind (``LIMITS``).

A ``config.json`` is written by strangers, and what it declares is built:
transformers makes one module per layer (and per expert, in families that
keep experts apart) even on the meta device, a few milliseconds each, and
some config classes make a list as long as the layers as soon as they read
the file. 10^9 layers was minutes and gigabytes before a number came out.
So every size a config declares is checked here (``check``), before
transformers (or anything else) sees it, against a maximum that leaves room
for the largest real model of its kind (the comment beside each constant
names it). Sizes are found by the key's name, in the config and in every
nested object (``text_config``, ``rope_scaling``, ``ffn_config``): the names
transformers' families use for each kind (``num_hidden_layers``, ``n_layer``,
``encoder_layers``, ...; any key ending in ``layers``, ``experts`` or
``heads``). A list of numbers under such a key (Swin's ``depths``) is
checked number by number.

Sizes within their maxima can still multiply: Switch Transformers build a
module for each expert of each sparse layer. ``bounded_build`` stops any
build that registers more modules and parameters than ``MODULES`` allows,
whatever keys made them.

>>> check({"model_type": "llama", "num_hidden_layers": 126, "hidden_size": 16384})
>>> check({"num_hidden_layers": 10**9}, "config.json")
Traceback (most recent call last):
...
embedlab.errors.ConfigSizeError: config.json: num_hidden_layers=1000000000 declares more layers than embedlab builds: expected at most 512 (4 times Llama 3.1 405B's 126)
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import ConfigError, ConfigSizeError, brief

__all__ = ["Limit", "LIMITS", "MODULES", "MAX_CONFIG_INT", "MAX_TOKEN_ID", "check", "check_values", "kind", "bounded_build"]


@dataclass(frozen=True)
class Limit:
    """The largest value a kind of size may take, and the real model it leaves room for.

    Attributes
    ----------
    what : str
        The kind, plural: "layers", "attention heads".
    maximum : int
        The largest value accepted.
    room : str
        The largest real model of this kind, for messages ("4 times Llama 3.1 405B's 126").
    """

    what: str
    maximum: int
    room: str


# Building is linear in the layers (about 5-30 ms a layer on meta, by family): 512 keeps the slowest
# family under ~15 s. Llama 3.1 405B has 126 layers, the most of any model on the Hub; each stack of
# DeepNet's 1,000-layer Transformer (500 + 500, Wang et al. 2022) fits too.
LAYERS = Limit("layers", 512, "4 times Llama 3.1 405B's 126")
# Doge (SmallDoge/Doge-320M) declares 16,384 experts (rows of one product-key table), the most on the Hub;
# Switch-C (google/switch-c-2048) 2,048 experts per layer, each a module of its own.
EXPERTS = Limit("experts", 65_536, "4 times Doge's 16,384")
# Llama 3.1 405B, DeepSeek-V3 and Megatron-Turing NLG 530B have 128 attention heads.
HEADS = Limit("attention heads", 1_024, "8 times Llama 3.1 405B's 128")
# Megatron-Turing NLG 530B is 20,480 wide; Llama 3.1 405B 16,384.
WIDTH = Limit("width", 65_536, "3 times Megatron-Turing NLG 530B's 20,480")
# Megatron-Turing NLG 530B's feed-forward is 81,920 wide (4 x 20,480); Llama 3.1 405B's 53,248.
FEED_FORWARD = Limit("feed-forward width", 262_144, "3 times Megatron-Turing NLG 530B's 81,920")
# XLM-V (facebook/xlm-v-base) has 901,629 tokens, Gemma 3 262,208.
VOCABULARY = Limit("vocabulary", 4_194_304, "4 times XLM-V's 901,629")
# Llama 4 Scout declares 10,485,760 positions (max_position_embeddings).
POSITIONS = Limit("positions", 67_108_864, "6 times Llama 4 Scout's 10,485,760")
# Modules and parameters one build registers: Switch-C registers 87,004 (62,108 modules, 24,896
# parameters: an expert of its own for each of 2,048 in each of 30 layers, about 15 s to build), the
# most of any model on the Hub; Llama 3.1 405B 2,781.
MODULES = Limit("modules and parameters", 131_072, "1.5 times Switch-C's 87,004")

LIMITS = (LAYERS, EXPERTS, HEADS, WIDTH, FEED_FORWARD, VOCABULARY, POSITIONS)

# Key names of each kind that no suffix rule below catches (the last part of the key, lower case).
_NAMED = {
    LAYERS: ("num_hidden_groups", "inner_group_num", "depths"),  # ALBERT's groups of layers, Swin's stages
    HEADS: ("n_head_kv", "multi_query_group_num"),
    WIDTH: ("hidden_size", "n_embd", "n_embed", "d_model", "dim", "embed_dim", "emb_dim", "embedding_size",
            "word_embed_proj_dim", "head_dim", "d_head", "d_kv", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
            "qk_nope_head_dim", "v_head_dim", "rotary_dim", "projection_dim"),
    FEED_FORWARD: ("n_inner", "d_ff", "hidden_dim", "d_inner", "inner_dim"),
    VOCABULARY: ("n_vocab",),
    POSITIONS: ("n_ctx", "max_seq_len", "max_seq_length", "max_sequence_length", "seq_length", "sliding_window"),
}
_BY_NAME = {name: limit for limit, names in _NAMED.items() for name in names}


def check(config: dict[str, Any], where: str = "config") -> None:
    """Refuse a config that holds a value no model has (``check_values``) or declares a size beyond its
    kind's maximum (``LIMITS``).

    Parameters
    ----------
    config : dict
        A parsed ``config.json``; nested objects are checked too.
    where : str
        The file's name, for messages.

    Raises
    ------
    ConfigSizeError
        (a ``ConfigError``, a ``SourceError``, a ``ValueError``) naming the key (dotted when
        nested: ``text_config.num_hidden_layers``), its value and the maximum.

    >>> check({"num_layers": 15, "num_experts": 2048})  # Switch-C
    >>> check({"n_layer": 64, "text_config": {"num_attention_heads": 4096}})
    Traceback (most recent call last):
    ...
    embedlab.errors.ConfigSizeError: config: text_config.num_attention_heads=4096 declares more attention heads than embedlab builds: expected at most 1,024 (8 times Llama 3.1 405B's 128)
    """
    check_values(config, where)
    for key, value in _sizes(config):
        limit = kind(key.rsplit(".", 1)[-1])
        if limit is not None and value > limit.maximum:
            raise ConfigSizeError(f"{where}: {key}={brief(value)} declares more {limit.what} than embedlab builds: "
                              f"expected at most {limit.maximum:,} ({limit.room})", parameter=f"config.{key}",
                              value=value, expected=f"at most {limit.maximum:,}")


# Every integer of a config lies within this: sizes, ids and limits of real models are far below
# (V ~ 2^18, T_max ~ 2^24), and what lies beyond overflows the C integers libraries convert them to.
MAX_CONFIG_INT = 2**40
# A token id (pad_token_id, eos_token_id, ...) fits in 32 bits: the tokenizers library keeps ids as u32.
MAX_TOKEN_ID = 2**31 - 1


def check_values(config: dict[str, Any], where: str = "config") -> None:
    """Refuse a config value that no model has, once, where the config is read.

    * every integer (nested objects and lists included) within
      ``|value| <= MAX_CONFIG_INT`` (2^40);
    * a token id (a key ending ``_token_id``, or a list under one ending
      ``_token_ids`` or ``_token_id``) at most ``MAX_TOKEN_ID`` (2^31 - 1); negative
      ids are left alone (``-1`` means "none" in some configs);
    * a normalisation eps (a key ending ``_eps`` or ``_epsilon``), where not null,
      a finite number greater than 0: a negative one makes LayerNorm take the
      square root of a negative number (NaN vectors).

    Raises
    ------
    ConfigError
        Naming the key (dotted, with list positions) and its value.

    >>> check_values({"text_config": {"pad_token_id": 10**15}}, "config.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    embedlab.errors.ConfigError: config.json: text_config.pad_token_id=1000000000000000 is out of range: ...
    >>> check_values({"layer_norm_eps": -1.0}, "config.json")
    Traceback (most recent call last):
    ...
    embedlab.errors.ConfigError: config.json: layer_norm_eps=-1.0 must be a finite number greater than 0
    """
    stack: list[tuple[str, Any]] = [(key, value) for key, value in config.items()]
    while stack:  # iterative: the JSON parser has already bounded the depth, but a walk needs no recursion
        key, value = stack.pop()
        last = key.rsplit(".", 1)[-1].split("[", 1)[0]
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
        if last.endswith(("_eps", "_epsilon")) and not isinstance(value, (dict, list)) and value is not None:
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or value <= 0):
                raise ConfigError(f"{where}: {key}={brief(value)} must be a finite number greater than 0")
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if last.endswith(("_token_id", "_token_ids")) and value > MAX_TOKEN_ID:
            raise ConfigError(f"{where}: {key}={brief(value)} is out of range: a token id is at most "
                              f"{MAX_TOKEN_ID:,} (2^31 - 1)")
        if abs(value) > MAX_CONFIG_INT:
            raise ConfigError(f"{where}: {key}={brief(value)} is out of any sane range: a config's integers lie "
                              f"within +-{MAX_CONFIG_INT:,} (2^40)")


@contextlib.contextmanager
def bounded_build(where: str = "config") -> Iterator[None]:
    """Stop a build of torch modules inside the block once it has registered ``MODULES.maximum`` modules
    and parameters (torch's global registration hooks count them; they are removed on leaving).

    Raises
    ------
    ConfigSizeError
        From inside the build, naming the count and the maximum; the caller
        lets it through in place of transformers' own errors.
    """
    from torch.nn.modules import module as torch_module  # only a build from a config needs torch

    count = 0

    def counted(*_: Any) -> None:
        nonlocal count
        count += 1
        if count > MODULES.maximum:
            raise ConfigSizeError(f"{where}: the model it declares registers more than {MODULES.maximum:,} "
                              f"{MODULES.what} ({MODULES.room}): its layers and experts multiply beyond "
                              "what embedlab builds", parameter="config.modules", value=count,
                              expected=f"at most {MODULES.maximum:,} {MODULES.what}")

    hooks = (torch_module.register_module_module_registration_hook(counted),
             torch_module.register_module_parameter_registration_hook(counted))
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


def kind(name: str) -> Limit | None:
    """The kind of size a config key names (its last part), or None for a key that is no size here.

    >>> kind("num_hidden_layers").what, kind("n_head").what, kind("max_position_embeddings").what
    ('layers', 'attention heads', 'positions')
    >>> kind("layer_norm_eps") is None
    True
    """
    name = name.lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.endswith(("layers", "_layer")):
        return LAYERS
    if name.endswith("experts"):
        return EXPERTS
    if name.endswith(("heads", "_head")):
        return HEADS
    if name.endswith("vocab_size"):
        return VOCABULARY
    if "intermediate" in name or "ffn" in name:
        return FEED_FORWARD
    if "position" in name:
        return POSITIONS
    return None


def _sizes(config: dict[str, Any]) -> Iterator[tuple[str, int | float]]:
    """(dotted key, number) for every number in the config and its nested objects, and every number of a
    list of numbers; walked with a stack, not recursion, so that no depth of nesting can overflow it."""
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        prefix, obj = stack.pop()
        for key, value in obj.items():
            path = f"{prefix}{key}"
            if isinstance(value, dict):
                stack.append((f"{path}.", value))
            elif _number(value):
                yield path, value
            elif isinstance(value, list):
                yield from ((path, v) for v in value if _number(v))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
