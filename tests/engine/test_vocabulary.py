"""The vocabulary and the one token resolver (embedlab.engine.vocabulary), standard library only.

Expected ids are read off the hand-made vocabularies (their positions), never
from embedlab's own output.
"""

from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

import pytest

from embedlab.engine import vocabulary as vocabulary_module
from embedlab.engine.vocabulary import Vocabulary, resolve_id, resolve_ids, respellings
from embedlab.errors import TokenIdError, UnknownTokenError

WORDS = ["king", "queen", "1999", "kings"]  # id = position in this list; "1999" is a token, "2" is not
VOCAB = Vocabulary(WORDS)
V = len(WORDS)


def test_tokens_ids_and_id_prefix_resolve_by_the_meanings_of_design_md():
    assert resolve_ids(["queen", 0, "1999", "id:2", " 3 ", "2"], V, VOCAB) == [
        WORDS.index("queen"), 0, WORDS.index("1999"), 2, 3, 2]


def test_a_digit_string_that_is_a_token_is_the_token_and_id_N_is_always_the_id():
    vocab = Vocabulary(["a", "b", "0"])  # the token "0" has id 2
    assert resolve_id("0", 3, vocab) == 2
    assert resolve_id("id:0", 3, vocab) == 0


def test_numpy_integers_are_ids():
    np = pytest.importorskip("numpy")
    assert resolve_ids([np.int64(3), np.int32(1), np.uint8(0)], V, VOCAB) == [3, 1, 0]


def test_a_list_of_plain_ints_is_checked_at_once_and_its_first_bad_id_named():
    assert resolve_ids([3, 0, 3, 1], V, VOCAB) == [3, 0, 3, 1]  # positions in WORDS
    with pytest.raises(TokenIdError, match=f"token id -2 is out of range for V={V}"):
        resolve_ids([1, -2, 9], V, VOCAB)  # the first of the two bad ids, as a query at a time names it
    with pytest.raises(TypeError, match="True"):
        resolve_ids([1, True], V, VOCAB)  # a bool among ints is no id
    ids = [0, 1]
    assert resolve_ids(ids, V, VOCAB) is not ids  # a new list: the caller's is never handed back


@pytest.mark.parametrize("bad", [-1, V, 10**30, "-1", "id:-1", str(V)])
def test_ids_outside_the_vocabulary_are_refused_naming_the_id_and_V(bad):
    with pytest.raises(TokenIdError) as caught:
        resolve_id(bad, V, VOCAB, parameter="probe")
    number = int(str(bad).removeprefix("id:"))
    assert str(caught.value) == f"token id {number} is out of range for V={V}"
    assert caught.value.parameter == "probe" and caught.value.value == number
    assert caught.value.expected == "a token id in [0, 4)"
    assert isinstance(caught.value, IndexError)


@pytest.mark.parametrize("bad", [True, False, 1.0, 2.5, None, b"king", ["king"]])
def test_bools_floats_and_other_types_are_type_errors(bad):
    with pytest.raises(TypeError, match="token ids must be ints or token strings"):
        resolve_id(bad, V, VOCAB)


def test_numpy_bools_and_floats_are_type_errors():
    np = pytest.importorskip("numpy")
    for bad in (np.bool_(True), np.float64(1.0)):
        with pytest.raises(TypeError):
            resolve_id(bad, V, VOCAB)


@pytest.mark.parametrize("bad", ["id:x", "id:", "id:1.0", "id:\u00b2"])
def test_id_prefix_needs_an_ascii_integer(bad):
    with pytest.raises(TypeError, match="expected id:N"):
        resolve_id(bad, V, VOCAB)


def test_an_unknown_token_is_one_error_class_with_suggestions_and_the_parameter():
    with pytest.raises(UnknownTokenError, match=r"'kingz' is not in the vocabulary \(V = 4\); close entries: "
                                                rf"'king' \(id:{WORDS.index('king')}\), 'kings' "
                                                rf"\(id:{WORDS.index('kings')}\); give a token id as id:N$") as caught:
        resolve_ids(["king", "kingz"], V, VOCAB, parameter="queries")
    assert caught.value.parameter == "queries"
    assert isinstance(caught.value, KeyError)


def test_a_token_on_a_table_without_vocabulary_is_a_type_error_but_a_number_is_an_id():
    assert resolve_ids(["3", "id:1", 2], V) == [3, 1, 2]
    with pytest.raises(TypeError, match="no vocabulary: query 'king' must be a token id"):
        resolve_id("king", V)


def test_a_single_string_is_one_query_not_its_characters():
    assert resolve_ids("queen", V, VOCAB) == [1]
    assert resolve_ids("", V, Vocabulary(["", "x"])) == [0]


def test_the_queries_are_not_changed():
    queries = ["king", 2]
    resolve_ids(queries, V, VOCAB)
    assert queries == ["king", 2]


def test_the_resolver_module_imports_only_the_standard_library():
    tree = ast.parse(Path(vocabulary_module.__file__).read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}


# -- repeated token strings -----------------------------------------------------------

def test_a_repeated_string_means_its_first_id_unless_the_source_says_otherwise():
    tokens = ["<s>", "<unk>", "x", "<unk>", "<s>"]
    assert Vocabulary(tokens).id("<unk>") == 1
    told = Vocabulary(tokens, owners={"<unk>": 3, "<s>": 4}, rule="the last copy")
    assert (told.id("<unk>"), told.id("<s>"), told.id("x")) == (3, 4, 2)
    assert [told.token(i) for i in range(5)] == tokens  # every id keeps its own string
    assert resolve_ids(["id:1", "id:0", "<unk>"], 5, told) == [1, 0, 3]


def test_repeats_list_every_id_holding_the_string():
    vocab = Vocabulary(["a", "b", "a", None, "a", None])
    assert vocab.repeats("a") == (0, 2, 4)
    assert vocab.repeats("b") == () and vocab.repeats("zz") == ()


def test_the_repeat_note_names_the_ids_the_meaning_and_the_rule():
    vocab = Vocabulary(["a", "b", "a", "a"], owners={"a": 3}, rule="the last copy, as X reads it")
    expected = ("token 'a' is repeated: ids 0, 2 and 3 hold it; 'a' means id 3 (the last copy, as X reads it); "
                "id:0, id:2 reach the others")
    assert vocab.repeat_note(0) == vocab.repeat_note(3) == expected
    assert vocab.repeat_note(1) is None


def test_an_owner_that_does_not_hold_its_string_is_refused():
    from embedlab.errors import ChoiceError

    with pytest.raises(ChoiceError, match="token 'a' the id 1, which holds 'b'") as caught:
        Vocabulary(["a", "b", "a"], owners={"a": 1})
    assert isinstance(caught.value, ValueError) and caught.value.parameter == "owners"
    with pytest.raises(ValueError, match="the id 7, which holds None"):
        Vocabulary(["a", "b"], owners={"a": 7})


def test_an_unknown_token_names_v_as_the_range_errors_do():
    """``V = 1,500``, spaced and separated as ``--sample``'s "to V = 512", not ``V=1500``."""
    from embedlab.errors import UnknownTokenError

    vocab = Vocabulary([f"t{i}" for i in range(1500)])
    with pytest.raises(UnknownTokenError) as caught:
        vocab.id("nowhere")
    assert "is not in the vocabulary (V = 1,500)" in str(caught.value)
    assert caught.value.expected.startswith("a token of the vocabulary (V = 1,500)")


@pytest.mark.parametrize("seed", range(5))
def test_index_and_repeats_by_hand(seed):
    """Random vocabularies with repeated strings and ids without one: the smallest id (or the owner), by hand."""
    rng = random.Random(seed)
    tokens = [rng.choice([None, "a", "b", "c", "d", "e", "f"]) if rng.random() < 0.5 else f"t{i}" for i in range(60)]
    holders = {t: [i for i, s in enumerate(tokens) if s == t] for t in set(tokens) - {None}}
    owners = {t: ids[-1] for t, ids in holders.items() if len(ids) > 1 and rng.random() < 0.5}
    vocab = Vocabulary(tokens, owners=owners)
    assert vocab.token_to_index == {t: owners.get(t, ids[0]) for t, ids in holders.items()}
    for t, ids in holders.items():
        assert vocab.repeats(t) == (tuple(ids) if len(ids) > 1 else ())
    unique = Vocabulary([f"u{i}" for i in range(10)] + [None])
    assert unique.repeats("u3") == () and unique.token_to_index["u9"] == 9 and None not in unique.token_to_index


# -- typed tokens spelled as the source's tokenizer spells them --------------------------------------------------

def _lower_then_word_start(text):
    """A stand-in for a tokenizer: its normalizer lowercases, its pre-tokenizer writes a word start '▁'."""
    return [(text.lower(), "normalizer"), ("\u2581" + text.lower(), "pre_tokenizer")]


SPELLED = Vocabulary(["King", "queen", "\u2581prince", "12", "\u2581"], spell=_lower_then_word_start)


def test_the_typed_form_wins_then_digits_as_an_id_then_the_tokenizers_spellings_in_order():
    # 'King' as typed (id 0); 'QUEEN' as the normalizer writes it; 'Prince' as the pre-tokenizer does; '12' is
    # a token as typed, '3' no token: the id 3; 'KING' is found in none of its spellings ('king', '▁king').
    assert resolve_ids(["King", "QUEEN", "Prince", "12", "3", "id:4"], 5, SPELLED) == [0, 1, 2, 3, 3, 4]
    with pytest.raises(UnknownTokenError, match=r"nor as its tokenizer spells it \('king', '\u2581king'\)"):
        resolve_id("KING", 5, SPELLED)


def test_a_digit_string_stays_an_id_though_the_tokenizer_would_spell_it_as_a_token():
    vocab = Vocabulary(["a", "\u25811", "b"], spell=_lower_then_word_start)  # '▁1' is a token, '1' is not
    assert resolve_id("1", 3, vocab) == 1 == resolve_id("id:1", 3, vocab)  # the id 1, as without a tokenizer
    assert respellings(["1", "id:1", 2, "a"], vocab) == ()


def test_respellings_name_each_respelled_query_once_in_order():
    found = respellings(["Prince", "King", "QUEEN", "Prince", "nowhere"], SPELLED)
    assert [(r.typed, r.token, r.id, r.speller) for r in found] == [
        ("Prince", "\u2581prince", 2, "pre_tokenizer"), ("QUEEN", "queen", 1, "normalizer")]
    assert found[1].note == "'QUEEN' -> 'queen', id 1: normalised by the tokenizer"


def test_without_a_tokenizer_nothing_is_respelled():
    vocab = Vocabulary(["king", "queen"])
    assert vocab.respell("King") is None and respellings(["King"], vocab) == ()
    with pytest.raises(UnknownTokenError, match=r"close entries: 'king' \(id:0\)"):
        vocab.id("King")


def test_the_note_shows_code_points_where_the_two_forms_look_alike():
    from embedlab.engine.vocabulary import Respelling

    composed, decomposed = "\ud45c", "\u1111\u116d"  # 표 typed, and its NFKD form as ALBERT stores it
    note = Respelling(composed, decomposed, 148, "normalizer").note
    assert note == f"'{composed}' -> '{decomposed}' (U+1111 U+116D), id 148: normalised by the tokenizer"


@pytest.mark.parametrize("K", [0, 1, 2, 7])
def test_token_rows_name_each_id_as_token_does_and_refuse_ids_outside(K):
    rng = random.Random(K)
    tokens = [None if rng.random() < 0.3 else f"t{rng.randrange(50)}" for _ in range(40)]
    v = Vocabulary(tokens)
    rows = [[rng.randrange(40) for _ in range(K)] for _ in range(25)]
    # By hand: the string as stored, "<id N>" where the source has none.
    assert v.token_rows(rows) == [[f"<id {i}>" if tokens[i] is None else tokens[i] for i in row] for row in rows]
    assert v.token_rows([]) == []
    for bad in (40, -1):
        with pytest.raises(TokenIdError, match=f"token id {bad} is out of range for V=40"):
            v.token_rows(rows + [[0] * max(K - 1, 0) + [bad]])


def test_token_rows_take_a_search_s_ids_as_an_array_too():
    # ``found`` itself, not ``found.tolist()``: rows of NumPy ints (the truth of a row of two was asked: ValueError).
    import numpy as np

    v = Vocabulary(["a", None, "c"])
    assert v.token_rows(np.array([[2, 1], [0, 0]])) == [["c", "<id 1>"], ["a", "a"]]
    assert v.token_rows(np.array([[2], [1]])) == [["c"], ["<id 1>"]]
    assert v.token_rows(np.zeros((2, 0), dtype=np.int64)) == [[], []]
