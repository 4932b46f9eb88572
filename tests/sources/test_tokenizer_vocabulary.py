"""A checkpoint's vocabulary from ``tokenizer.json`` (``sources.tokenizer.folder_vocabulary``): each id's string
and the id each string means, as the ``tokenizers`` library itself answers (``id_to_token``, ``get_vocab``),
whether the ids map one to one (read from ``get_vocab`` alone) or not (holes, added tokens over base ones,
repeated strings)."""

import json

import numpy as np
import pytest
from tokenizers import Tokenizer

from embedlab.errors import UnknownTokenError
from embedlab.sources import load
from embedlab.sources.tokenizer import TokenizerSpelling, folder_vocabulary


def _added(i, content, special=True):
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": special}


def _write(folder, vocab, added):
    """A WordLevel tokenizer.json with this base vocabulary (token -> id) and these added tokens."""
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": None, "post_processor": None, "decoder": None,
           "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "a"}}
    (folder / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    return Tokenizer.from_file(str(folder / "tokenizer.json"))


CASES = {
    "one to one, specials at the end": ({"a": 0, "b": 1, "c": 2}, [_added(3, "<s>"), _added(4, "<|reserved_0|>")]),
    "an added token written over a base id (the library gives it a new one)": ({"a": 0, "b": 1, "c": 2}, [_added(1, "X")]),
    "a hole in the base ids (read id by id)": ({"a": 0, "c": 2, "d": 3}, []),
    "an added token repeating a base string (it keeps the base id)": ({"a": 0, "b": 1, "c": 2}, [_added(3, "a", special=False)]),
    "an added token written past a gap (the library closes it)": ({"a": 0, "b": 1}, [_added(5, "<pad>")]),
}


@pytest.mark.parametrize("case", CASES)
def test_vocabulary_is_the_librarys(tmp_path, case):
    vocab, added = CASES[case]
    tokenizer = _write(tmp_path, vocab, added)
    size = 7  # more rows than the tokenizer has ids: padding rows have no string
    found = folder_vocabulary(tmp_path, size)
    expected = [tokenizer.id_to_token(i) for i in range(size)]
    assert list(found.index_to_token) == expected
    for token, i in tokenizer.get_vocab(with_added_tokens=True).items():
        if expected[i] == token:  # the string each id holds means the id get_vocab gives it
            assert found.token_to_index[token] == i
    assert set(found.token_to_index) == {t for t in expected if t is not None}


def test_a_word_vector_table_has_no_tokenizer_to_spell_with(tmp_path):
    np.save(tmp_path / "t.npy", np.eye(3))
    (tmp_path / "words.txt").write_text("king\nqueen\nprince\n", encoding="utf-8")
    table = load(str(tmp_path / "t.npy"), words=str(tmp_path / "words.txt"))
    assert table.vocabulary.spell is None
    with pytest.raises(UnknownTokenError, match=r"token 'King' is not in the vocabulary \(V = 3\); close entries: "
                                                r"'king' \(id:0\); give a token id as id:N"):
        table.token_id("King")


# -- typed tokens spelled as the tokenizer spells them ------------------------------------------------------------

def _bert():
    from tokenizers import models, normalizers, pre_tokenizers

    tk = Tokenizer(models.WordLevel({"[UNK]": 0, "king": 1, "cafe": 2}, unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tk, ["King", "CAFÉ"]


def _byte_level():
    """RoBERTa's way: no normalizer, a byte-level pre-tokenizer that adds a space before the text."""
    from tokenizers import models, pre_tokenizers

    tk = Tokenizer(models.WordLevel({"<unk>": 0, "\u0120king": 1, "\u0120\u00ed\u0133\u013e": 2}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    return tk, ["king", "\ud45c"]


def _prepend():
    """Llama 2's tokenizer.json: the word start written by the normalizer itself, no pre-tokenizer."""
    from tokenizers import models, normalizers

    tk = Tokenizer(models.WordLevel({"<unk>": 0, "\u2581king": 1}, unk_token="<unk>"))
    tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    return tk, ["king"]


@pytest.mark.parametrize("make", [_bert, _byte_level, _prepend], ids=["bert", "byte-level", "prepend"])
def test_a_typed_token_means_the_id_the_tokenizer_encodes_it_to(tmp_path, make):
    tk, typed = make()
    tk.save(str(tmp_path / "tokenizer.json"))
    vocabulary = folder_vocabulary(tmp_path, tk.get_vocab_size())
    for text in typed:
        ids = tk.encode(text, add_special_tokens=False).ids
        assert len(ids) == 1 and ids[0] != 0  # the oracle: one known token
        assert text not in vocabulary.token_to_index and vocabulary.id(text) == ids[0]
        respelled = vocabulary.respell(text)
        normal = text if tk.normalizer is None else tk.normalizer.normalize_str(text)
        assert respelled.speller == ("normalizer" if tk.token_to_id(normal) is not None else "pre_tokenizer")
        assert respelled.token == tk.id_to_token(ids[0])


def test_the_spelling_tries_the_normalizer_then_one_pre_tokenized_piece():
    tk, _ = _bert()
    spell = TokenizerSpelling(tk)
    assert spell("King") == [("king", "normalizer")]  # BertPreTokenizer leaves one word as it is
    assert spell("king") == []  # written as the tokenizer writes it: nothing to try
    assert spell("King Kong") == [("king kong", "normalizer")]  # two pieces: two tokens, no second form
    assert spell("King!") == [("king!", "normalizer")]
    assert tk.pre_tokenizer.pre_tokenize_str("king!") == [("king", (0, 4)), ("!", (4, 5))]
