"""The input rule of a family against the family's own embedding module (transformers).

Tiny models are built offline from transformers configs (V = 100, D = 16),
saved with ``save_pretrained`` beside a word-level tokenizer.json built here,
and ``embedlab.encode`` must give the very vectors the family's module gives
for the same ids: ``model.embeddings(...)`` for BERT and RoBERTa (after the
LayerNorm, dropout off with ``eval()``), OPT's ``embed_tokens`` +
``embed_positions(attention_mask)``, Gemma's scaled ``embed_tokens``.
"""

from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")
tokenizers = pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import embedlab  # noqa: E402
from embedlab import sources  # noqa: E402
from embedlab.sources.family_rules import rule_from_config  # noqa: E402

pytestmark = pytest.mark.torch

WORDS = ["w%d" % i for i in range(90)]


def _save(model, folder, special):
    """Save a model and a tokenizer.json: words w0..w89 at ids 10.., ``special`` = (bos, eos, pad) ids."""
    model.save_pretrained(folder, safe_serialization=True)
    bos, eos, pad = special
    vocab = {"<s>": bos, "</s>": eos, "<pad>": pad, "<unk>": 3, **{w: 10 + i for i, w in enumerate(WORDS)}}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", bos), ("</s>", eos)])
    tk.enable_padding(pad_id=pad, pad_token="<pad>")
    tk.save(str(folder / "tokenizer.json"))
    return tk


def _ids(result):
    B, T, _ = result.shape
    ids = [[0] * T for _ in range(B)]
    for r in result.rows:
        ids[r.sequence][r.position] = r.id
    return torch.tensor(ids)


def _output(result, name):
    """The shown vectors of one component, (B, T, show)."""
    B, T, _ = result.shape
    out = np.zeros((B, T, len(result.rows[0].vectors[name]["first"])))
    for r in result.rows:
        out[r.sequence, r.position] = r.vectors[name]["first"]
    return out


TEXTS = ["w1 w2 w3 w1", "w4"]  # the second is padded: padding must not shift positions


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_bert_and_roberta_match_the_embeddings_module_after_layer_norm(tmp_path, family):
    torch.manual_seed(0)
    config_class, model_class = ((transformers.BertConfig, transformers.BertModel) if family == "bert" else
                                 (transformers.RobertaConfig, transformers.RobertaModel))
    config = config_class(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=32, max_position_embeddings=12, type_vocab_size=2, pad_token_id=1,
                          layer_norm_eps=1e-5)
    model = model_class(config).eval()
    with torch.no_grad():  # a LayerNorm that is not the identity, so that it is seen to be applied
        model.embeddings.LayerNorm.weight.uniform_(0.5, 1.5)
        model.embeddings.LayerNorm.bias.uniform_(-0.5, 0.5)
    _save(model, tmp_path, special=(0, 2, 1))
    result = embedlab.encode(str(tmp_path), TEXTS, show=16)
    ids = _ids(result)
    with torch.no_grad():
        expected = model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids)).numpy()  # (B, T, D)
    assert result.components[-1] == "layer_norm"
    np.testing.assert_allclose(_output(result, "layer_norm"), expected, atol=2e-5, rtol=1e-5)
    offset = 2 if family == "roberta" else 0  # RobertaEmbeddings: positions from padding_idx + 1
    assert result.position_offset == offset
    assert result.usable_positions == 12 - offset


def test_opt_matches_embed_tokens_plus_embed_positions(tmp_path):
    torch.manual_seed(0)
    config = transformers.OPTConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, ffn_dim=32,
                                    num_attention_heads=2, max_position_embeddings=10, pad_token_id=1,
                                    word_embed_proj_dim=16)
    model = transformers.OPTModel(config).eval()
    assert model.decoder.embed_positions.offset == 2  # transformers' OPTLearnedPositionalEmbedding
    _save(model, tmp_path, special=(2, 2, 1))
    result = embedlab.encode(str(tmp_path), TEXTS, show=16)
    ids = _ids(result)
    mask = (ids != 1).long()
    with torch.no_grad():
        expected = (model.decoder.embed_tokens(ids) + model.decoder.embed_positions(mask)).numpy()
    np.testing.assert_allclose(_output(result, "input"), expected, atol=1e-6)
    assert result.position_offset == 2 and result.T_max == 12 and result.usable_positions == 10


@pytest.mark.parametrize("D, dtype, factor", [(16, torch.float32, 4.0), (3072, torch.bfloat16, 55.5)])
def test_gemma_scales_as_its_module_computes(tmp_path, D, dtype, factor):
    torch.manual_seed(0)
    config = transformers.GemmaConfig(vocab_size=100, hidden_size=D, num_hidden_layers=1, num_attention_heads=1,
                                      num_key_value_heads=1, head_dim=8, intermediate_size=8, pad_token_id=1)
    model = transformers.GemmaModel(config).to(dtype).eval()
    _save(model, tmp_path, special=(0, 2, 1))
    result = embedlab.encode(str(tmp_path), TEXTS, show=D)
    with torch.no_grad():
        expected = model.embed_tokens(_ids(result)).float().numpy()  # (B, T, D) in the model's dtype
    np.testing.assert_array_equal(_output(result, "input"), expected)  # rounded as the model rounds
    rule = rule_from_config(dict(config.to_dict(), model_type="gemma"), D, "BF16" if dtype == torch.bfloat16 else "F32")
    assert rule.scale == factor  # bf16 sqrt(3072) is 55.5, not 55.4256 (C09)
    assert any("sqrt(D)" in note for note in result.notes)
    assert math.isclose(float(torch.tensor(math.sqrt(D)).to(dtype)), factor)


def test_the_hand_fallback_says_it_is_one():
    rule = rule_from_config({"model_type": "roberta", "pad_token_id": 1, "hidden_size": 3}, 3)  # 3 % heads fails
    assert rule.position_offset == 2 and rule.skip_padding
    assert "fallback" in rule.notes[0]


def test_a_table_not_from_a_checkpoint_has_the_plain_rule():
    rule = sources.read_input_rule(embedlab.EmbeddingTable([[1.0, 0.0]]))
    assert (rule.position_offset, rule.scale, rule.layer_norm) == (0, None, None)


def test_t5_says_its_tied_head_scales_by_d_to_the_minus_half():
    rule = rule_from_config({"model_type": "t5", "d_model": 16, "num_heads": 2, "d_kv": 8}, 16)
    assert rule.scale is None  # the input embedding is not scaled
    assert any("D^-0.5 = 0.25" in note for note in rule.notes)
    untied = rule_from_config({"model_type": "t5", "d_model": 16, "tie_word_embeddings": False}, 16)
    assert not any("D^-0.5" in note for note in untied.notes)


def _factorised_opt(tmp_path):
    """An OPT with word_embed_proj_dim E = 8 < D = 16: project_in widens the token vectors, then positions."""
    torch.manual_seed(0)
    config = transformers.OPTConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, ffn_dim=32,
                                    num_attention_heads=2, max_position_embeddings=10, pad_token_id=1,
                                    word_embed_proj_dim=8)
    model = transformers.OPTModel(config).eval()
    _save(model, tmp_path, special=(2, 2, 1))
    return model


def _opt_first_block_input(model, ids):
    """OPTDecoder.forward up to its first layer: project_in(embed_tokens(ids)) + embed_positions(mask)."""
    mask = (ids != 1).long()
    with torch.no_grad():
        return (model.decoder.project_in(model.decoder.embed_tokens(ids)) + model.decoder.embed_positions(mask)).numpy()


def test_factorised_opt_widens_the_tokens_then_adds_its_positions(tmp_path):
    model = _factorised_opt(tmp_path)
    result = embedlab.encode(str(tmp_path), TEXTS, show=16)
    assert result.shape[2] == 16 and result.summands == ["projected", "position"]
    np.testing.assert_allclose(_output(result, "input"), _opt_first_block_input(model, _ids(result)), atol=1e-6)
    assert result.T_max == 12 and result.usable_positions == 10


def test_the_hand_fallback_widens_a_factorised_opt_too(tmp_path, monkeypatch):
    """Without transformers' model (monkeypatched to fail), the table by hand names project_in and positions."""
    from embedlab.sources import family_rules

    model = _factorised_opt(tmp_path)

    def fail(*args, **kwargs):
        raise ImportError("transformers is not installed")

    monkeypatch.setattr(family_rules, "_from_transformers", fail)
    result = embedlab.encode(str(tmp_path), TEXTS, show=16)
    np.testing.assert_allclose(_output(result, "input"), _opt_first_block_input(model, _ids(result)), atol=1e-6)
    assert any("hand (fallback)" in note for note in result.notes)


def test_factorised_opt_positions_are_its_d_wide_table(tmp_path):
    """`positions` and the positions figure measure OPT's decoder.embed_positions though the table is E wide."""
    model = _factorised_opt(tmp_path)
    result = embedlab.positions(str(tmp_path))
    table = model.decoder.embed_positions.weight.detach().numpy()  # (T_max + 2, D)
    assert result.T_max == table.shape[0] - 2 and result.position_offset == 2
    assert any("decoder.embed_positions is D=16 wide" in note for note in result.notes)
    from embedlab.measure.positions import position_maps

    loaded = sources.load(str(tmp_path))
    maps = position_maps(loaded, rule=sources.read_input_rule(loaded))  # what the positions figure draws
    # the same rows as `positions`: the two OPT leaves out (OPTLearnedPositionalEmbedding.offset) are not drawn
    assert (maps.T_max, maps.D) == (table.shape[0] - 2, table.shape[1]) and maps.learned is not None
    assert maps.position_offset == model.decoder.embed_positions.offset == 2
