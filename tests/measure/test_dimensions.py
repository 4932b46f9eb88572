"""The dimension plan (issue 14, section 1): widths and parameters by part, against hand formulas.

Each expected count is written here from the family's layout as its paper
and transformers' modeling code define it (Q, K, V, O projections with or
without biases, gated or plain feed-forward, LayerNorm with a bias or
RMSNorm without), from the fixture's sizes alone (``families``: D = 64,
h = 4, two layers, d_ff = 128, two key/value heads for the Llama-like
families); the totals are transformers' own ``sum(p.numel())``
(``Truth.total``). Nothing expected comes from embedlab.
"""

from __future__ import annotations

import pytest

from families import D, FFN, HEADS, LAYERS, V

import embedlab
from embedlab.errors import SizeError
from embedlab.measure import dimensions, model_params, params

L, H, F, KV = LAYERS, HEADS, FFN, 2
DK = D // H


def _bert_like(name):
    """BERT-style layers: four D x D projections with biases, D -> d_ff -> D with biases, two LayerNorms."""
    attention = L * (4 * D * D + 4 * D)
    feed_forward = L * (2 * D * F + F + D)
    norms = L * 2 * 2 * D + 2 * D  # two per layer and the embeddings' LayerNorm, weight and bias each
    return {"attention": attention, "feed_forward": feed_forward, "norms": norms}


def _llama_like(q_bias=False):
    """Grouped-query attention without biases (Qwen2: biases on q, k, v), SwiGLU, RMSNorm (weight only)."""
    attention = L * (D * H * DK + 2 * D * KV * DK + H * DK * D + (H * DK + 2 * KV * DK if q_bias else 0))
    return {"attention": attention, "feed_forward": L * 3 * D * F, "norms": (2 * L + 1) * D}


EXPECTED = {"bert": _bert_like("bert"), "llama": _llama_like(), "llama-tied": _llama_like(),
            "mistral": _llama_like(), "qwen2": _llama_like(q_bias=True)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("reader", ["config", "checkpoint"])
def test_parts_match_the_familys_layout(hf_families, name, reader):
    truth = hf_families[name]
    count = (model_params.from_config(truth.path / "config.json") if reader == "config"
             else model_params.from_checkpoint(truth.path))
    plan = count.plan
    for part, n in EXPECTED[name].items():
        assert plan.parts[part] == n, part
    assert (plan.D, plan.heads, plan.head_dim, plan.d_ff, plan.layers) == (D, H, DK, F, L)
    assert plan.kv_heads == (H if name == "bert" else KV)


@pytest.mark.parametrize("reader", ["config", "checkpoint"])
def test_every_family_sums_to_the_total_transformers_counts(hf_families, reader):
    for name, truth in hf_families.items():
        count = (model_params.from_config(truth.path / "config.json") if reader == "config"
                 else model_params.from_checkpoint(truth.path))
        assert count.plan.total == truth.total, name
        assert count.plan.parts["embedding"] >= truth.token.size, name  # the token table is in it, once
        assert abs(sum(count.plan.shares().values()) - 1.0) < 1e-12


def test_a_factorised_table_keeps_the_blocks_width(hf_families):
    """ALBERT: the table is E = 16 wide, the blocks D = 64; the Linear E -> D is an embedding parameter."""
    truth = hf_families["albert"]
    plan = model_params.from_checkpoint(truth.path).plan
    E = truth.token.shape[1]
    assert (plan.D, plan.head_dim) == (D, DK) and E != D
    # ALBERT shares one layer group: attention counted once, not per layer
    assert plan.parts["attention"] == 4 * D * D + 4 * D
    tables = V * E + truth.positions.shape[0] * E + 2 * E  # token, position, token-type tables
    assert plan.parts["embedding"] == tables + E * D + D  # and embedding_hidden_mapping_in (weight, bias)


def test_gemma_head_dim_comes_from_its_config(hf_families):
    plan = model_params.from_config(hf_families["gemma"].path / "config.json").plan
    assert plan.head_dim == hf_families["gemma"].family.settings["head_dim"] == 16
    assert plan.keys["head_dim"] == "head_dim=16"


def test_t5_counts_encoder_and_decoder_layers(hf_families):
    plan = model_params.from_config(hf_families["t5"].path / "config.json").plan
    assert plan.layers == 2 * L and "decoder" in plan.keys["layers"]


def test_gpt2_small_from_numbers_is_the_published_count():
    """GPT-2 small (Radford et al. 2019): 124,439,808 parameters (transformers' GPT2LMHeadModel, tied)."""
    count = params.from_numbers(50257, 768, max_context_length=1024, heads=12, layers=12)
    assert count.breakdown.total == 124_439_808 == count.plan.total
    assert (count.plan.head_dim, count.plan.d_ff) == (64, 3072)


def test_gpt2_from_numbers_matches_transformers_gpt2(hf_families):
    """The fixture's GPT-2 (transformers' own count) from its sizes alone."""
    truth = hf_families["gpt2"]
    count = params.from_numbers(V, D, max_context_length=truth.positions.shape[0], heads=H, layers=L, d_ff=F)  # n_inner=128
    assert count.breakdown.total == truth.total


def test_the_seed_lab_sizes_and_the_api():
    result = embedlab.params(512, 64, heads=4, layers=2)
    plan = result.count.plan
    assert plan.parts["attention"] == 2 * (4 * 64 * 64 + 4 * 64)
    assert plan.parts["feed_forward"] == 2 * (2 * 64 * 256 + 256 + 64)
    assert result.to_dict()["plan"]["head_dim"] == 16


@pytest.mark.parametrize("kwargs, flag", [
    ({"heads": 5, "layers": 2}, "heads"),  # 5 does not divide 64
    ({"heads": 4}, "layers"),
    ({"layers": 2}, "heads"),
    ({"d_ff": 8}, "d_ff"),
    ({"heads": 4, "layers": 2, "other": 7}, "other"),
    ({"heads": 0, "layers": 2}, "heads"),
])
def test_bad_sizes_name_the_parameter(kwargs, flag):
    with pytest.raises(SizeError) as caught:
        params.from_numbers(512, 64, **kwargs)
    assert caught.value.parameter == flag


def test_a_config_read_by_hand_gives_widths_but_no_parts():
    count = model_params.from_config({"vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
                                      "num_hidden_layers": 3, "intermediate_size": 32})
    assert count.plan.parts is None and count.plan.total is None and count.plan.shares() is None
    assert (count.plan.heads, count.plan.head_dim, count.plan.layers, count.plan.d_ff) == (2, 4, 3, 32)


def test_part_names_follow_the_modules():
    part = dimensions.part_of
    assert part("transformer.h.0.attn.c_attn.weight") == "attention"
    assert part("transformer.h.0.ln_1.weight") == "norms"
    assert part("model.layers.0.post_attention_layernorm.weight") == "norms"
    assert part("encoder.block.0.layer.1.DenseReluDense.wi.weight") == "feed_forward"
    assert part("blk.0.attn_q.weight") == "attention" and part("blk.0.ffn_up.weight") == "feed_forward"
    assert part("gpt_neox.embed_out.weight", {"head": "gpt_neox.embed_out.weight"}) == "head"
