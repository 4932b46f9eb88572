"""checkpoint: tensor roles, buffers, config.json, tying from the bytes.

Fixtures are written byte by byte (tests/safetensors_writer.py), never with
the safetensors library.
"""

from __future__ import annotations

import doctest
import json

import pytest

from embedlab.sources import config_limits, checkpoint, safetensors
from embedlab.errors import ConfigError, SourceError, TyingConflictError
from safetensors_writer import f32, write_config, write_index, write_safetensors


def test_doctests() -> None:
    assert doctest.testmod(checkpoint).failed == 0


@pytest.mark.parametrize("name, shape, dtype, is_buffer", [
    ("embeddings.position_ids", (1, 512), "I64", True),          # BERT: integer buffer
    ("embeddings.token_type_ids", (1, 512), "I64", True),
    ("h.0.attn.bias", (1, 1, 1024, 1024), "F32", True),          # GPT-2: float causal mask
    ("h.0.attn.masked_bias", (), "F32", True),
    ("model.layers.0.self_attn.rotary_emb.inv_freq", (64,), "F32", True),
    ("h.0.attn.c_attn.bias", (2304,), "F32", False),             # a real bias parameter
    ("h.0.attn.bias", (2304,), "F32", False),                    # same suffix, not a mask's shape
    ("wte.weight", (50257, 768), "BF16", False),
])
def test_buffer_reason(tmp_path, name, shape, dtype, is_buffer):
    info = safetensors.TensorInfo(name, shape, dtype, tmp_path / "m.safetensors")
    assert (checkpoint.buffer_reason(info) is not None) is is_buffer


def _verdict(folder):
    infos = safetensors.tensor_infos(folder)
    return checkpoint.decide_tying(infos, checkpoint.find_roles(infos), checkpoint.read_config(folder))


def test_equal_bytes_across_shards_are_stored_twice(tmp_path):
    write_safetensors(tmp_path / "a.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6)))})
    write_safetensors(tmp_path / "b.safetensors", {"lm_head.weight": ("F32", (3, 2), f32(*range(6)))})
    write_index(tmp_path, {"wte.weight": "a.safetensors", "lm_head.weight": "b.safetensors"})
    verdict = _verdict(tmp_path)
    assert (verdict.tied, verdict.stored_twice, verdict.conflict) == (True, True, None)


def test_bytes_not_values_decide_equality(tmp_path):
    # -0.0 == 0.0 as values, but the bytes differ: a head that differs in its bytes is not the table.
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (1, 2), f32(0.0, 1.0)),
                                                   "lm_head.weight": ("F32", (1, 2), f32(-0.0, 1.0))})
    assert _verdict(tmp_path).tied is False


def test_tables_bigger_than_the_comparison_chunk_differing_in_the_last_byte(tmp_path):
    table = bytes(range(256)) * (3 * 2**20 // 256)  # 3 MiB: three chunks
    head = table[:-1] + b"\x01"
    shape = (len(table) // 4 // 64, 64)
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", shape, table),
                                                   "lm_head.weight": ("F32", shape, head)})
    assert _verdict(tmp_path).tied is False
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", shape, table),
                                                   "lm_head.weight": ("F32", shape, table)})
    assert _verdict(tmp_path).stored_twice is True


def test_same_bytes_in_another_dtype_is_a_different_head(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (1, 2), f32(1, 2)),
                                                   "lm_head.weight": ("I32", (1, 2), f32(1, 2))})
    assert _verdict(tmp_path).tied is False


def test_config_untied_without_a_head_names_lm_head(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6)))})
    write_config(tmp_path, vocab_size=3, n_embd=2, tie_word_embeddings=False)
    with pytest.raises(TyingConflictError, match=r"lm_head\.weight"):
        _verdict(tmp_path)


def test_read_config_file(tmp_path):
    write_config(tmp_path, vocab_size=3)
    assert checkpoint.read_config_file(tmp_path) == {"vocab_size": 3}
    assert checkpoint.read_config_file(tmp_path / "config.json") == {"vocab_size": 3}
    with pytest.raises(SourceError, match=r"no such config file: .*nope\.json"):
        checkpoint.read_config_file(tmp_path / "nope.json")
    with pytest.raises(SourceError, match=r"empty config file name '': expected a config.json or its folder"):
        checkpoint.read_config_file("")
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(SourceError, match=r"must hold a JSON object, got list"):
        checkpoint.read_config_file(tmp_path / "list.json")


# -- config values checked where the config is read ------------------------------------------

def test_real_config_values_pass():
    # Llama 3's config keeps its eos ids in a list and leaves pad_token_id null; GPT-2's eps key is _epsilon
    config_limits.check_values({"model_type": "llama", "bos_token_id": 128000, "eos_token_id": [128001, 128009],
                             "pad_token_id": None, "rms_norm_eps": 1e-5, "max_position_embeddings": 131072,
                             "rope_theta": 500000.0, "rope_scaling": {"original_max_position_embeddings": 8192}})
    config_limits.check_values({"model_type": "gpt2", "layer_norm_epsilon": 1e-5, "n_positions": 1024})
    config_limits.check_values({"pad_token_id": -1, "layer_norm_eps": None})  # -1 and null: "none", left alone


@pytest.mark.parametrize("config, names", [
    ({"pad_token_id": 10**15}, "pad_token_id=1000000000000000"),
    ({"pad_token_id": 2**31}, f"pad_token_id={2**31}"),
    ({"eos_token_id": [2, 2**32]}, f"eos_token_id[1]={2**32}"),
    ({"text_config": {"bos_token_id": 2**40}}, f"text_config.bos_token_id={2**40}"),
    ({"num_hidden_layers": 2**40 + 1}, f"num_hidden_layers={2**40 + 1}"),
    ({"rope_scaling": {"factor": -(2**41)}}, f"rope_scaling.factor={-(2**41)}"),
    ({"layer_norm_eps": -1.0}, "layer_norm_eps=-1.0"),
    ({"layer_norm_eps": 0}, "layer_norm_eps=0"),
    ({"rms_norm_eps": float("nan")}, "rms_norm_eps=nan"),
    ({"layer_norm_epsilon": float("inf")}, "layer_norm_epsilon=inf"),
    ({"layer_norm_eps": "1e-12"}, "layer_norm_eps='1e-12'"),
    ({"layer_norm_eps": True}, "layer_norm_eps=True"),
])
def test_config_values_out_of_range_name_key_and_value(tmp_path, config, names):
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^.*config\.json: ") as err:
        checkpoint.read_config_file(tmp_path)
    assert names in str(err.value)
