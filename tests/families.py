"""Tiny checkpoints of many model families, built with Hugging Face ``transformers`` (the oracle).

Each ``Family`` names a transformers config class, the sizes that make it tiny
(V = 1000, D = 64, two layers), and the head class to build. ``build`` makes
the model from the config alone (no download: seeded random weights), saves it
with ``save_pretrained(safe_serialization=True)`` and reads the truth from the
model object itself:

* ``token``: ``get_input_embeddings().weight`` (V, E) as a NumPy array;
* ``tied``: whether ``get_output_embeddings().weight`` *is* that Parameter;
* ``positions``: the rows of the family's learned position module, or None
  (rotary, ALiBi, relative positions);
* ``token_types``: the rows of the token-type table (0 where there is none);
* ``total``: ``sum(p.numel() for p in model.parameters())``, which PyTorch
  deduplicates, so a tied head is counted once (buffers are not parameters);
* ``head_class``: the class built, as transformers names it.

Nothing here calls embedlab.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

V, D, LAYERS, HEADS, FFN, T_MAX = 1000, 64, 2, 4, 128, 64


@dataclass(frozen=True)
class Family:
    """One family: transformers config class and model class names, config keys, module paths."""

    name: str
    config_class: str
    model_class: str
    settings: dict[str, Any]
    positions: str | None = None  # dotted path of the learned position module in the model object
    token_types: str | None = None  # dotted path of the token-type module
    extra: dict[str, Any] = field(default_factory=dict)


def _decoder(**extra: Any) -> dict[str, Any]:
    """The keys every Llama-like config shares."""
    return {"vocab_size": V, "hidden_size": D, "intermediate_size": FFN, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "num_key_value_heads": 2, "max_position_embeddings": T_MAX, **extra}


def _encoder(**extra: Any) -> dict[str, Any]:
    """The keys every BERT-like config shares."""
    return {"vocab_size": V, "hidden_size": D, "intermediate_size": FFN, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "max_position_embeddings": T_MAX, **extra}


FAMILIES = (
    Family("bert", "BertConfig", "BertForMaskedLM", _encoder(),
           "bert.embeddings.position_embeddings", "bert.embeddings.token_type_embeddings"),
    Family("roberta", "RobertaConfig", "RobertaForMaskedLM", _encoder(max_position_embeddings=T_MAX + 2, type_vocab_size=1),
           "roberta.embeddings.position_embeddings", "roberta.embeddings.token_type_embeddings"),
    Family("distilbert", "DistilBertConfig", "DistilBertForMaskedLM",
           {"vocab_size": V, "dim": D, "hidden_dim": FFN, "n_layers": LAYERS, "n_heads": HEADS,
            "max_position_embeddings": T_MAX}, "distilbert.embeddings.position_embeddings"),
    Family("albert", "AlbertConfig", "AlbertForMaskedLM", _encoder(embedding_size=16),
           "albert.embeddings.position_embeddings", "albert.embeddings.token_type_embeddings"),
    Family("electra", "ElectraConfig", "ElectraForMaskedLM", _encoder(embedding_size=32),
           "electra.embeddings.position_embeddings", "electra.embeddings.token_type_embeddings"),
    Family("deberta-v2", "DebertaV2Config", "DebertaV2ForMaskedLM",
           _encoder(position_biased_input=False, relative_attention=True, max_relative_positions=-1,
                    position_buckets=16, pos_att_type=["p2c", "c2p"], type_vocab_size=0),
           None, None),
    Family("gpt2", "GPT2Config", "GPT2LMHeadModel",
           {"vocab_size": V, "n_embd": D, "n_layer": LAYERS, "n_head": HEADS, "n_positions": T_MAX, "n_inner": FFN,
            "bos_token_id": 0, "eos_token_id": 0},
           "transformer.wpe"),
    Family("opt", "OPTConfig", "OPTForCausalLM",
           {"vocab_size": V, "hidden_size": D, "word_embed_proj_dim": 32, "ffn_dim": FFN, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "max_position_embeddings": T_MAX},
           "model.decoder.embed_positions"),
    Family("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM", _encoder(rotary_pct=0.25)),
    Family("llama", "LlamaConfig", "LlamaForCausalLM", _decoder()),
    Family("llama-tied", "LlamaConfig", "LlamaForCausalLM", _decoder(tie_word_embeddings=True)),
    Family("qwen2", "Qwen2Config", "Qwen2ForCausalLM", _decoder()),
    Family("mistral", "MistralConfig", "MistralForCausalLM", _decoder()),
    Family("gemma", "GemmaConfig", "GemmaForCausalLM", _decoder(head_dim=16)),
    Family("phi3", "Phi3Config", "Phi3ForCausalLM", _decoder(num_key_value_heads=4, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    Family("bloom", "BloomConfig", "BloomForCausalLM", {"vocab_size": V, "hidden_size": D, "n_layer": LAYERS,
                                                       "n_head": HEADS}),
    Family("t5", "T5Config", "T5ForConditionalGeneration",
           {"vocab_size": V, "d_model": D, "d_kv": 16, "d_ff": FFN, "num_layers": LAYERS, "num_heads": HEADS,
            "relative_attention_num_buckets": 8}),
)


@dataclass(frozen=True)
class Truth:
    """What the transformers model object says about one family."""

    family: Family
    path: Path
    head_class: str
    token: Any  # (V, E) float32 NumPy array
    tied: bool
    positions: Any  # (T_rows, D) array or None
    token_types: int
    total: int
    head_rows: int


def build(family: Family, folder: Path, seed: int = 0) -> Truth:
    """Build ``family`` from its config with seeded weights, save it to ``folder``, read the truth."""
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(seed)
    config = getattr(transformers, family.config_class)(**family.settings)
    model = getattr(transformers, family.model_class)(config).eval()
    model.save_pretrained(folder, safe_serialization=True)
    table = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    positions = _module(model, family.positions)
    types = _module(model, family.token_types)
    return Truth(
        family=family, path=Path(folder), head_class=type(model).__name__,
        token=table.detach().numpy().copy(),
        tied=head is not None and head.weight is table,
        positions=None if positions is None else positions.weight.detach().numpy().copy(),
        token_types=0 if types is None else types.weight.shape[0],
        total=sum(p.numel() for p in model.parameters()),
        head_rows=0 if head is None else head.weight.shape[0],
    )


def _module(model: Any, dotted: str | None) -> Any:
    if dotted is None:
        return None
    for part in dotted.split("."):
        model = getattr(model, part)
    return model
