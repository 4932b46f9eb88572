"""C24: learned positions read from row 0 where the family starts them later.

A RoBERTa-style checkpoint (model_type roberta, pad_token_id 1,
max_position_embeddings 6) numbers positions from padding_idx + 1 = 2. The
expected values are the case's own, by hand: ids [0, 4, 5, 2] read position
rows [2, 3, 4, 5], so the first column of the sums is token id + 1000 * row
+ 0.5 (the one token-type row). The checkpoint and its tokenizer are written
here, with no LayerNorm (none saved), so encode shows the plain sum.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
tokenizers = pytest.importorskip("tokenizers")

import embedlab  # noqa: E402
from embedlab import cli  # noqa: E402
from embedlab.errors import ContextLengthError  # noqa: E402

from safetensors_writer import array, write_config, write_safetensors  # noqa: E402

VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "c": 6, "d": 7}


@pytest.fixture
def roberta(tmp_path):
    folder = tmp_path / "roberta"
    folder.mkdir()
    tokens = np.array([[i, 100 + i] for i in range(8)], dtype=np.float32)  # (8, 2) row i = [i, 100 + i]
    positions = np.array([[1000 * p, 0] for p in range(6)], dtype=np.float32)  # (6, 2) row p = [1000 p, 0]
    positions[1] = 0  # the padding row
    types = np.array([[0.5, 0.5]], dtype=np.float32)  # (1, 2)
    write_safetensors(folder / "model.safetensors", {
        "embeddings.word_embeddings.weight": array(tokens),
        "embeddings.position_embeddings.weight": array(positions),
        "embeddings.token_type_embeddings.weight": array(types),
    })
    write_config(folder, model_type="roberta", pad_token_id=1, max_position_embeddings=6, vocab_size=8,
                 hidden_size=2, type_vocab_size=1, num_attention_heads=1)
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(VOCAB, unk_token="<unk>"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tk.save(str(folder / "tokenizer.json"))
    return folder


def test_a_b_reads_position_rows_from_two(roberta):
    result = embedlab.encode(str(roberta), "a b", show=2)
    assert [r.id for r in result.rows] == [0, 4, 5, 2]
    assert [r.position_id for r in result.rows] == [2, 3, 4, 5]
    assert [r.vectors["input"]["first"][0] for r in result.rows] == [2000.5, 3004.5, 4005.5, 5002.5]
    assert result.position_offset == 2 and result.usable_positions == 4 and result.T_max == 6


def test_a_b_c_is_refused_naming_the_four_tokens_that_fit_and_the_offset(roberta):
    with pytest.raises(ContextLengthError) as caught:
        embedlab.encode(str(roberta), "a b c")  # 5 tokens: position row 6 would be needed
    message = str(caught.value)
    assert "5 tokens" in message and "4 positions" in message and "offset 2" in message
    assert caught.value.value == 5 and caught.value.expected.startswith("at most 4 tokens")


def test_the_command_shows_the_rows_and_refuses_the_long_text(roberta, capsys):
    assert cli.main(["encode", "--model", str(roberta), "a b"]) == 0
    out = capsys.readouterr().out
    assert "pos id" in out and "positions start at row 2" in out
    assert cli.main(["encode", "--model", str(roberta), "a b c"]) != 0
    err = capsys.readouterr().err
    assert "4 positions" in err and "offset 2" in err


def test_positions_measures_the_rows_tokens_use(roberta):
    result = embedlab.positions(str(roberta))
    assert result.T_max == 4 and result.position_offset == 2  # rows 2..5 of the 6
    assert any("rows 0-1" in note for note in result.notes)
