"""A config's declared sizes are checked before anything is built: absurd ones refused in one line, real ones counted.

Sources of the expected values: the published shapes of Llama 3.1 405B
(meta-llama/Llama-3.1-405B config.json: V=128,256, D=16,384, 126 layers,
128 heads of 128, 8 key/value heads, feed-forward 53,248, untied) and its
total worked out by hand below; transformers' own config classes for the
families whose defaults must pass.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
import time

import pytest

from embedlab.cli import main
from embedlab.errors import ConfigError, ConfigSizeError
from embedlab.measure import model_params
from embedlab.sources import checkpoint, config_limits
from safetensors_writer import write_config

LLAMA_405B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "hidden_size": 16384,
    "intermediate_size": 53248, "num_hidden_layers": 126, "num_attention_heads": 128, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "rope_theta": 500000.0, "tie_word_embeddings": False,
}


def llama_405b_total() -> int:
    """Llama 3.1 405B's parameters, by hand: two (V, D) tables and 126 blocks of attention (grouped
    key/value heads), SwiGLU feed-forward (three D x d_ff matrices) and two RMSNorms, and the final norm."""
    V, D, L, d_ff, kv = 128256, 16384, 126, 53248, 8 * 128
    block = D * D + 2 * D * kv + D * D + 3 * D * d_ff + 2 * D
    return 2 * V * D + L * block + D


def test_doctests() -> None:
    assert doctest.testmod(config_limits).failed == 0


# -- refused, naming the key, the value and the maximum ----------------------------------------

@pytest.mark.parametrize("key, value, maximum", [
    ("num_hidden_layers", 10**9, "512"), ("n_layer", 513, "512"), ("encoder_layers", 100_000, "512"),
    ("num_local_experts", 10**6, "65,536"), ("num_attention_heads", 10**5, "1,024"), ("n_head", 2**20, "1,024"),
    ("hidden_size", 2**20, "65,536"), ("intermediate_size", 2**30, "262,144"), ("vocab_size", 10**12, "4,194,304"),
    ("max_position_embeddings", 2**40, "67,108,864"), ("num_hidden_layers", 1e9, "512"),
])
def test_a_size_beyond_its_maximum_is_refused_by_key_and_value(capsys, tmp_path, key, value, maximum):
    config = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 128, key: value}
    path = write_config(tmp_path, **config)
    code = main(["params", "--config", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("embedlab params: error: ")
    assert f"{key}={value}" in err and f"at most {maximum} " in err
    with pytest.raises(ConfigSizeError) as info:  # the library says the same, and it is a ConfigError
        model_params.from_config(config)
    assert isinstance(info.value, ConfigError) and (info.value.parameter, info.value.value) == (f"config.{key}", value)


@pytest.mark.parametrize("config, key", [
    ({"model_type": "llava", "text_config": {"model_type": "llama", "num_hidden_layers": 10**9}},
     "text_config.num_hidden_layers"),
    ({"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "original_max_position_embeddings": 2**40}},
     "rope_scaling.original_max_position_embeddings"),
    ({"model_type": "swin", "depths": [2, 2, 10**7, 2]}, "depths"),
    ({"model_type": "dbrx", "ffn_config": {"moe_num_experts": 10**8}}, "ffn_config.moe_num_experts"),
])
def test_nested_objects_and_lists_are_checked_too(config, key):
    with pytest.raises(ConfigSizeError, match=key.replace(".", r"\.")):
        config_limits.check(config)


def test_a_checkpoint_folder_config_is_checked_as_it_is_read(tmp_path):
    write_config(tmp_path, model_type="gpt2", n_layer=10**6)
    with pytest.raises(ConfigSizeError, match=r"config\.json: n_layer=1000000 "):
        checkpoint.read_config(tmp_path)


def test_sizes_that_name_nothing_here_pass():
    config_limits.check({"model_type": "llama", "rope_theta": 10**9, "eos_token_id": [1, 2], "layer_norm_eps": 1e-5,
                         "vision_feature_layer": -2, "use_cache": True, "torch_dtype": "bfloat16"})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_ten_to_the_nine_layers_answer_at_once_in_little_memory(tmp_path):
    """The case from the issue: 120 s and past 2.4 GB before; now refused before transformers is imported."""
    path = write_config(tmp_path, **dict(LLAMA_405B, num_hidden_layers=10**9))
    # The child's own peak, KiB: VmHWM, which exec starts afresh (ru_maxrss would keep a large pytest's own size).
    code = ("import sys; from embedlab.cli import main; code = main(['params', '--config', sys.argv[1]]); "
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')), "
            "file=sys.stderr); sys.exit(code)")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    message, peak_kib = done.stderr.splitlines()
    assert done.returncode == 1 and done.stdout == ""
    assert "num_hidden_layers=1000000000" in message and "at most 512" in message
    assert int(peak_kib) < 200 * 1024  # no torch, no transformers, no layers
    assert took < 60


# -- a real model of the largest kind still counts, exactly and quickly ------------------------

def test_llama_405b_counts_exactly_in_seconds(tmp_path):
    pytest.importorskip("transformers")
    model_params.from_config({"model_type": "llama", "vocab_size": 8, "hidden_size": 8, "num_hidden_layers": 1,
                              "num_attention_heads": 2, "intermediate_size": 8})  # transformers imported once
    start = time.monotonic()
    count = model_params.from_config(write_config(tmp_path, **LLAMA_405B))
    took = time.monotonic() - start
    assert count.breakdown.total == llama_405b_total() == 405_853_388_800
    assert count.built == "LlamaForCausalLM"
    assert took < 20  # about 0.3 s on a quiet machine; the bound leaves room for a loaded one


def test_a_build_past_the_module_bound_is_stopped_and_named(monkeypatch, capsys, tmp_path):
    """Switch Transformers build a module per expert of each layer: sizes each within bounds multiply. The bound is
    lowered here so that the test builds little; the real one leaves room for Switch-C."""
    pytest.importorskip("transformers")
    monkeypatch.setattr(config_limits, "MODULES", config_limits.Limit("modules and parameters", 200, "a test's"))
    config = {"model_type": "switch_transformers", "vocab_size": 64, "d_model": 16, "d_ff": 16, "d_kv": 4,
              "num_heads": 4, "num_layers": 4, "num_decoder_layers": 4, "num_experts": 64}
    path = write_config(tmp_path, **config)
    assert main(["params", "--config", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "more than 200 modules and parameters" in err  # not a count by hand instead
    with pytest.raises(ConfigSizeError):
        model_params.from_config(config)
    monkeypatch.undo()
    assert model_params.from_config(config).built  # within the real bound it builds


@pytest.mark.slow
def test_every_family_default_config_of_transformers_passes():
    """No family's defaults in transformers are refused: the maxima leave room for every model it knows."""
    transformers = pytest.importorskip("transformers")
    refused = []
    for name, config_class in transformers.CONFIG_MAPPING.items():
        try:
            defaults = config_class().to_dict()
        except Exception:  # a family whose config cannot be made without arguments
            continue
        try:
            config_limits.check(defaults, name)
        except ConfigSizeError as exc:
            refused.append(str(exc))
    assert refused == []


def test_the_limits_leave_room_for_the_models_their_comments_name():
    largest = {"layers": 126, "experts": 16384, "attention heads": 128, "width": 20480,
               "feed-forward width": 81920, "vocabulary": 901629, "positions": 10485760}
    assert {limit.what for limit in config_limits.LIMITS} == set(largest)
    for limit in config_limits.LIMITS:
        assert limit.maximum >= 2 * largest[limit.what], limit
    assert config_limits.MODULES.maximum > 87004  # Switch-C's registrations


def test_a_model_past_the_bound_leaves_torch_without_hooks(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(config_limits, "MODULES", config_limits.Limit("modules and parameters", 50, "a test's"))
    from torch.nn.modules import module as torch_module

    before = (len(torch_module._global_module_registration_hooks),
              len(torch_module._global_parameter_registration_hooks))
    with pytest.raises(ConfigSizeError):
        with config_limits.bounded_build("x"):
            torch.nn.ModuleList(torch.nn.Identity() for _ in range(51))
    assert (len(torch_module._global_module_registration_hooks),
            len(torch_module._global_parameter_registration_hooks)) == before
