"""A checkpoint's vocabulary from ``tokenizer.json`` (``sources.tokenizer.folder_vocabulary``): each id's string
and the id each string means, as the ``tokenizers`` library itself answers (``id_to_token``, ``get_vocab``),
whether the ids map one to one (read from ``get_vocab`` alone) or not (holes, added tokens over base ones,
repeated strings)."""

import json

import pytest
from tokenizers import Tokenizer

from embedlab.sources.tokenizer import folder_vocabulary


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
