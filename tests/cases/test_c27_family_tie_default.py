"""C27: an absent tie flag means the family's default, as transformers' config class sets it.

Expected: Llama's default in transformers (``LlamaConfig().tie_word_embeddings``),
read from transformers itself; the counts by hand: 32000 x 4096 = 131,072,000
per table, 262,144,000 for both.
"""

import pytest

from embedlab import load, params
from embedlab.sources import hf
from safetensors_writer import f32, write_config, write_safetensors

LLAMA = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096}


@pytest.mark.parametrize("key", [{}, {"tie_word_embeddings": False}], ids=["absent", "false"])
def test_llama_is_untied_by_its_familys_default(key):
    transformers = pytest.importorskip("transformers")
    assert transformers.LlamaConfig().tie_word_embeddings is False  # the oracle
    b = params(config={**LLAMA, **key}).count.breakdown
    assert (b.tied, b.head, b.tables) == (False, 131_072_000, 262_144_000)


def test_without_transformers_an_absent_key_is_no_verdict(monkeypatch):
    monkeypatch.setattr(hf, "available", lambda: False)
    monkeypatch.setattr(hf, "family_ties", lambda model_type: None)
    count = params(config=LLAMA).count
    assert count.breakdown.tied is None
    assert "the family's default decides" in count.tie_evidence
    assert "pip install -c constraints.txt -e '.[hf]'" in count.tie_evidence


def test_a_llama_checkpoint_with_a_different_head_and_no_key_has_no_conflict(tmp_path):
    write_safetensors(tmp_path / "model.safetensors", {
        "model.embed_tokens.weight": ("F32", (3, 2), f32(1, 2, 3, 4, 5, 6)),
        "lm_head.weight": ("F32", (3, 2), f32(6, 5, 4, 3, 2, 1))})
    write_config(tmp_path, model_type="llama", vocab_size=3, hidden_size=2)
    count = params(model=str(tmp_path)).count
    assert (count.breakdown.tied, count.conflict) == (False, None)
    assert load(str(tmp_path)).provenance.tied is False


def test_no_model_type_and_no_key_falls_back_to_the_base_default():
    # The handed case: transformers 4.x's PretrainedConfig sets tie_word_embeddings=True (5.x's base class
    # no longer holds the key; the family classes do), so no family means tied, as C15's empty config.
    assert params(config={"vocab_size": 8, "hidden_size": 4}).count.breakdown.tied is True
