"""The reference module, checked the way an outside grader checks it.

Expected values are worked out by hand on tiny tables, re-derived from the
rules in the issue, or computed by a second implementation written here
(``_naive_*``), never taken from embed.py's own output.
"""

from __future__ import annotations

import copy
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab import embed

# -- strategies: random tables like the grader's -------------------------------

# Entries are 0 or at least 1e-100 in size: the naive second implementations below
# square entries directly, which underflows below ~1e-154 (where embed rescales;
# those lengths are checked against hand values in tests/cases/test_c10 and test_c12).
finite = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False).map(
    lambda x: 0.0 if abs(x) < 1e-100 else x)


@st.composite
def tables(draw, min_vocab=1, max_vocab=12, max_dim=6):
    vocab = draw(st.integers(min_vocab, max_vocab))
    dim = draw(st.integers(1, max_dim))
    return [[draw(finite) for _ in range(dim)] for _ in range(vocab)]


def _close(a, b, rtol=1e-9, atol=1e-12):
    return abs(a - b) <= atol + rtol * abs(b)


def _naive_cosine(a, b):
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return max(-1.0, min(1.0, sum(x * y for x, y in zip(a, b)) / (na * nb)))  # the contract clips rounding


def _naive_nearest(table, q, k, score):
    """Rank by repeated selection of the best remaining id (no sort by tuple)."""
    left = [i for i in range(len(table)) if i != q]
    out = []
    for _ in range(k):
        best = left[0]
        for i in left[1:]:
            if score(table[q], table[i]) > score(table[q], table[best]):
                best = i  # strictly better only: the smaller id keeps a tie
        out.append(best)
        left.remove(best)
    return out


# -- constants and the table -----------------------------------------------------

def test_constants_are_the_lab_settings():
    assert (embed.VOCAB, embed.DIM, embed.SEED) == (512, 64, 20260917)


def test_make_table_fills_row_by_row_from_one_rng():
    rng = random.Random(7)
    expected = [[rng.random() - 0.5 for _ in range(3)] for _ in range(4)]
    assert embed.make_table(4, 3, 7) == expected


def test_make_table_same_seed_same_table_other_seed_other_table():
    assert embed.make_table(5, 4, 1) == embed.make_table(5, 4, 1)
    assert embed.make_table(5, 4, 1) != embed.make_table(5, 4, 2)


def test_make_table_seed_table_shape_and_range():
    table = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
    assert embed.shape(table) == (512, 64)
    assert all(-0.5 <= x < 0.5 for row in table for x in row)
    assert all(isinstance(x, float) for x in table[0])


@pytest.mark.parametrize("vocab, dim, error", [(-1, 2, ValueError), (2, -3, ValueError),
                                               (2.0, 2, TypeError), (True, 2, TypeError)])
def test_make_table_bad_sizes(vocab, dim, error):
    with pytest.raises(error):
        embed.make_table(vocab, dim, 0)


def test_shape():
    assert embed.shape([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) == (2, 3)
    assert embed.shape([]) == (0, 0)


def test_shape_ragged_names_the_row():
    with pytest.raises(ValueError, match="row 2 has 1"):
        embed.shape([[1.0, 2.0], [3.0, 4.0], [5.0]])


def test_param_count():
    assert embed.param_count(512, 64) == 32768
    assert embed.param_count(30522, 384) == 11720448  # minilm's word table
    assert isinstance(embed.param_count(3, 4), int)


# -- lookup and the one-hot product ------------------------------------------------

def test_lookup_returns_rows_in_order_with_repeats():
    table = [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]
    assert embed.lookup(table, [2, 0, 2]) == [[3.0, 3.0, 3.0], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0]]


def test_lookup_returns_copies():
    table = [[1.0, 2.0], [3.0, 4.0]]
    out = embed.lookup(table, [0, 0])
    out[0][0] = 99.0
    assert table == [[1.0, 2.0], [3.0, 4.0]]
    assert out[1] == [1.0, 2.0]
    assert out[0] is not out[1]


@pytest.mark.parametrize("bad", [-1, 2, 100, -3])
def test_lookup_out_of_range_names_id_and_vocab(bad):
    with pytest.raises(IndexError, match=rf"{bad}.*V=2"):
        embed.lookup([[1.0], [2.0]], [0, bad])


@pytest.mark.parametrize("bad", [True, False, 1.0, "1", None])
def test_lookup_non_int_ids(bad):
    with pytest.raises(TypeError):
        embed.lookup([[1.0], [2.0]], [bad])


def test_lookup_empty_table_has_no_valid_id():
    with pytest.raises(IndexError, match="V=0"):
        embed.lookup([], [0])


def test_one_hot_width_is_vocab():
    assert embed.one_hot(0, 3) == [1.0, 0.0, 0.0]
    assert embed.one_hot(2, 5) == [0.0, 0.0, 1.0, 0.0, 0.0]
    with pytest.raises(IndexError):
        embed.one_hot(5, 5)
    with pytest.raises(IndexError):
        embed.one_hot(-1, 5)


def test_row_times_matrix_by_hand():
    # [1, 2] @ [[1, 2, 3], [4, 5, 6]] = [1+8, 2+10, 3+12]
    assert embed.row_times_matrix([1.0, 2.0], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]) == [9.0, 12.0, 15.0]


def test_row_times_matrix_wrong_length():
    with pytest.raises(ValueError, match="length 3.*expected 2"):
        embed.row_times_matrix([1.0, 0.0, 0.0], [[1.0], [2.0]])


@settings(max_examples=60, deadline=None)
@given(tables(), st.data())
def test_lookup_equals_lookup_via_one_hot(table, data):
    ids = data.draw(st.lists(st.integers(0, len(table) - 1), min_size=1, max_size=5))
    assert embed.lookup_via_one_hot(table, ids) == embed.lookup(table, ids)


def test_one_hot_mults_counts_v_times_d_per_token():
    assert embed.one_hot_mults(512, 64, 1) == 512 * 64
    assert embed.one_hot_mults(10, 3, 7) == 210
    assert embed.one_hot_mults(10, 3, 0) == 0


# -- tied head and parameter counts -----------------------------------------------------

def test_logits_by_hand():
    table = [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]
    assert embed.logits(table, [3.0, 4.0]) == [3.0, 8.0, 7.0]


def test_logits_read_the_table_passed_in():
    table = [[1.0, 0.0], [0.0, 1.0]]
    first = embed.logits(table, [1.0, 2.0])
    table[0][0] = 5.0  # the caller's own edit of its table shows in the next scores
    assert first == [1.0, 2.0]
    assert embed.logits(table, [1.0, 2.0]) == [5.0, 2.0]


def test_logits_wrong_hidden_length_names_both():
    with pytest.raises(ValueError, match="length 3.*D=2"):
        embed.logits([[1.0, 0.0]], [1.0, 2.0, 3.0])


@settings(max_examples=40, deadline=None)
@given(tables(), st.data())
def test_logits_match_a_second_implementation(table, data):
    hidden = data.draw(st.lists(finite, min_size=len(table[0]), max_size=len(table[0])))
    expected = [math.fsum(w * h for w, h in zip(row, hidden)) for row in table]
    got = embed.logits(table, hidden)
    assert len(got) == len(table)
    assert all(_close(g, e, atol=1e-9) for g, e in zip(got, expected))


def test_tied_and_untied_counts():
    assert embed.tied_params(512, 64) == 32768
    assert embed.untied_params(512, 64) == 65536


def test_vocab_growth_seed_numbers():
    assert embed.vocab_growth(512, 64, 2) == {
        "vocab": 512, "bigger_vocab": 1024, "dim": 64,
        "tied": 32768, "bigger_tied": 65536,
        "untied": 65536, "bigger_untied": 131072,
        "saved": 32768,
    }


def test_vocab_growth_integral_float_factor_and_bad_factors():
    assert embed.vocab_growth(10, 3, 3.0)["bigger_vocab"] == 30
    with pytest.raises(ValueError, match="1.5"):
        embed.vocab_growth(10, 3, 1.5)
    with pytest.raises(ValueError):
        embed.vocab_growth(10, 3, 0)
    with pytest.raises(TypeError):
        embed.vocab_growth(10, 3, "2")


# -- dot, norm, cosine, rms --------------------------------------------------------------

def test_dot_norm_by_hand():
    assert embed.dot([1.0, 2.0, 3.0], [4.0, -5.0, 6.0]) == 12.0
    assert embed.norm([3.0, 4.0]) == 5.0
    assert embed.norm([]) == 0.0
    with pytest.raises(ValueError, match="2 and 3"):
        embed.dot([1.0, 2.0], [1.0, 2.0, 3.0])


def test_cosine_by_hand_and_zero_vectors():
    assert embed.cosine([2.0, 0.0], [3.0, 0.0]) == 1.0
    assert embed.cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert embed.cosine([1.0, 1.0], [-1.0, -1.0]) == pytest.approx(-1.0, abs=1e-15)
    assert embed.cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert embed.cosine([0.0, 0.0], [0.0, 0.0]) == 0.0


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6).flatmap(lambda d: st.tuples(st.lists(finite, min_size=d, max_size=d),
                                                     st.lists(finite, min_size=d, max_size=d))),
       st.floats(0.01, 100))
def test_cosine_in_range_and_unchanged_by_positive_scaling(pair, scale):
    a, b = pair
    c = embed.cosine(a, b)
    assert -1.0 <= c <= 1.0
    assert _close(c, _naive_cosine(a, b), rtol=1e-9, atol=1e-12)
    assert _close(embed.cosine([x * scale for x in a], b), c, rtol=1e-9, atol=1e-9)


def test_rms_known_values():
    assert embed.rms([3.0, 4.0]) == 3.5355339059327378  # sqrt(12.5)
    assert embed.rms([1.0, 2.0, 3.0]) == 2.160246899469287  # sqrt(14 / 3)
    assert embed.rms([]) == 0.0


# -- stretch ---------------------------------------------------------------------------------

def test_stretch_returns_a_new_table_and_leaves_input_alone():
    table = [[1.0, 2.0], [3.0, 4.0]]
    before = copy.deepcopy(table)
    out = embed.stretch(table, 0, 2.0)
    assert out == [[2.0, 4.0], [3.0, 4.0]]
    assert table == before
    assert all(new is not old for new, old in zip(out, table))
    out[1][0] = 99.0
    assert table == before


@settings(max_examples=40, deadline=None)
@given(tables(), st.data())
def test_stretch_never_changes_its_input(table, data):
    token = data.draw(st.integers(0, len(table) - 1))
    before = copy.deepcopy(table)
    out = embed.stretch(table, token, data.draw(st.floats(-5, 5)))
    assert table == before
    assert [row for i, row in enumerate(out) if i != token] == [row for i, row in enumerate(table) if i != token]


def test_stretch_bad_id():
    with pytest.raises(IndexError):
        embed.stretch([[1.0]], 1, 2.0)
    with pytest.raises(IndexError):
        embed.stretch([[1.0]], -1, 2.0)


# -- neighbours ---------------------------------------------------------------------------------

T12 = [[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]]


def test_nearest_case_c12_by_hand():
    # query 0 = [1, 0]: cosines 0.995 (row 1), 0 (row 2); dots 10, 0
    assert embed.nearest_by_cosine(T12, 0, 2) == [1, 2]
    assert embed.nearest_by_dot(T12, 0, 2) == [1, 2]
    # query 2 = [0, 1]: cosines 0 (row 0), 0.0995 (row 1); dots 0, 1
    assert embed.nearest_by_cosine(T12, 2, 2) == [1, 0]
    assert embed.nearest_by_dot(T12, 2, 2) == [1, 0]
    # query 1 = [10, 1]: cosine prefers row 0 (0.995) over row 2 (0.0995); dot: 10 vs 1
    assert embed.nearest_by_cosine(T12, 1, 2) == [0, 2]


def test_dot_and_cosine_disagree_when_a_row_is_long():
    # query [1, 1]; row 1 points the same way, row 2 is long but 45 degrees off
    table = [[1.0, 1.0], [0.5, 0.5], [10.0, 0.0]]
    assert embed.nearest_by_cosine(table, 0, 2) == [1, 2]
    assert embed.nearest_by_dot(table, 0, 2) == [2, 1]


def test_nearest_ties_by_smaller_id():
    # rows 1, 2, 3 are the same vector: exact ties, smaller id first
    table = [[1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 1.0]]
    assert embed.nearest_by_cosine(table, 0, 4) == [1, 2, 3, 4]
    assert embed.nearest_by_dot(table, 0, 3) == [1, 2, 3]
    assert embed.nearest_by_cosine(table, 2, 2) == [1, 3]  # the query's twin stays in


def test_nearest_zero_rows_score_zero_without_nan():
    table = [[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]
    assert embed.nearest_by_cosine(table, 0, 3) == [1, 3, 2]
    assert embed.nearest_by_cosine(table, 1, 3) == [0, 2, 3]  # a zero query: all tie at 0


@pytest.mark.parametrize("k", [0, -1, 3, 10])
def test_nearest_k_out_of_range(k):
    with pytest.raises(ValueError, match=f"k={k}"):
        embed.nearest_by_cosine(T12, 0, k)


def test_nearest_bad_query():
    with pytest.raises(IndexError, match="3"):
        embed.nearest_by_dot(T12, 3, 1)
    with pytest.raises(TypeError):
        embed.nearest_by_dot(T12, 1.0, 1)
    with pytest.raises(TypeError):
        embed.nearest_by_dot(T12, 1, 1.0)


@settings(max_examples=60, deadline=None)
@given(tables(min_vocab=2), st.data())
def test_nearest_matches_a_second_implementation(table, data):
    # Duplicate some rows so exact ties occur.
    if data.draw(st.booleans()):
        table = table + [list(table[0])] * data.draw(st.integers(1, 3))
    q = data.draw(st.integers(0, len(table) - 1))
    k = data.draw(st.integers(1, len(table) - 1))
    assert embed.nearest_by_cosine(table, q, k) == _naive_nearest(table, q, k, _naive_cosine)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert embed.nearest_by_dot(table, q, k) == _naive_nearest(table, q, k, dot)


# -- sqrt(d) scaling -------------------------------------------------------------------------------

def test_scaled_lookup_multiplies_by_sqrt_dim():
    assert embed.scaled_lookup([[1.0, -2.0], [3.0, 0.5]], [1], 4) == [[6.0, 1.0]]
    ones = [[1.0] * 3072]
    assert embed.scaled_lookup(ones, [0], 3072)[0][0] == 55.42562584220407  # math.sqrt(3072), C09


def test_scaled_lookup_keeps_direction():
    table = embed.make_table(6, 8, 3)
    plain = embed.lookup(table, [1, 4])
    scaled = embed.scaled_lookup(table, [1, 4], 8)
    assert _close(embed.cosine(*scaled), embed.cosine(*plain), rtol=1e-12, atol=1e-14)
    assert _close(embed.rms(scaled[0]) / embed.rms(plain[0]), math.sqrt(8), rtol=1e-12)


@pytest.mark.parametrize("dim, error", [(0, ValueError), (-4, ValueError), ("4", TypeError), (True, TypeError)])
def test_scaled_lookup_bad_dim(dim, error):
    with pytest.raises(error):
        embed.scaled_lookup([[1.0]], [0], dim)


def test_embed_imports_only_the_standard_library():
    import ast
    import sys

    from pathlib import Path

    tree = ast.parse(Path(embed.__file__).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "embed.py must not import from its package"
            names.add(node.module.split(".")[0])
    assert names <= set(sys.stdlib_module_names)


def test_nan_and_infinity_are_errors_not_rankings():
    nan, inf = math.nan, math.inf
    with pytest.raises(ValueError, match="NaN"):
        embed.cosine([nan, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="NaN"):
        embed.cosine([inf, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        embed.nearest_by_cosine([[1.0, 0.0], [nan, 0.0], [0.0, 1.0]], 0, 2)
    with pytest.raises(ValueError, match="row 1"):
        embed.nearest_by_dot([[1.0, 0.0], [nan, 0.0], [0.0, 1.0]], 0, 2)


@pytest.mark.parametrize("factor, error", [(math.nan, ValueError), (math.inf, ValueError), (1e308, ValueError),
                                           ("2", TypeError), (True, TypeError)])
def test_stretch_bad_factors(factor, error):
    table = [[10.0, 1.0], [1.0, 1.0]]
    with pytest.raises(error):
        embed.stretch(table, 0, factor)
    assert table == [[10.0, 1.0], [1.0, 1.0]]
