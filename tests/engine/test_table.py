"""EmbeddingTable, the array engine (NumPy), against the reference's meanings.

The ``backend`` tests run one case over both backends (the reference and the
array code); the differential tests compare the array code with the reference
module on random tables.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from embedlab import embed
from embedlab.errors import ShapeError, TokenIdError, UnknownTokenError
from embedlab.engine.lengths import rms, vector_norms
from embedlab.engine.table import EmbeddingTable
from embedlab.engine.vocabulary import Vocabulary


def close(a, b, rtol=1e-9, atol=1e-12):
    return np.all(np.abs(np.asarray(a) - np.asarray(b)) <= atol + rtol * np.abs(np.asarray(b)))


# -- one case, every backend -----------------------------------------------------------

def test_lookup_every_backend(backend):
    table = [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    assert backend.lookup(table, [1, 0, 1]) == [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    assert backend.lookup_via_one_hot(table, [1]) == [[2.0, 2.0, 2.0]]


@pytest.mark.parametrize("ids", [[0, 1, -1], [2], [-2]])
def test_out_of_range_ids_every_backend(backend, ids):
    with pytest.raises(IndexError, match="V=2"):
        backend.lookup([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], ids)


@pytest.mark.parametrize("ids", [[True], [0.0], [1.5]])
def test_non_int_ids_every_backend(backend, ids):
    with pytest.raises(TypeError):
        backend.lookup([[1.0], [2.0]], ids)


def test_logits_every_backend(backend):
    assert backend.logits([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], [3.0, 4.0]) == [3.0, 8.0, 7.0]
    with pytest.raises(ValueError, match="3"):
        backend.logits([[1.0, 0.0]], [1.0, 2.0, 3.0])


def test_neighbours_every_backend(backend):
    table = [[1.0, 0.0], [10.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    assert backend.nearest_by_cosine(table, 0, 3) == [1, 2, 3]  # row 2 and the zero row tie at 0
    assert backend.nearest_by_dot(table, 2, 3) == [1, 0, 3]  # rows 0 and 3 tie at 0
    with pytest.raises(ValueError):
        backend.nearest_by_dot(table, 0, 4)
    with pytest.raises(ValueError):
        backend.nearest_by_dot(table, 0, 0)


def test_stretch_every_backend(backend):
    table = [[1.0, 2.0], [3.0, 4.0]]
    assert backend.stretch(table, 0, 2.0) == [[2.0, 4.0], [3.0, 4.0]]
    assert table == [[1.0, 2.0], [3.0, 4.0]]


def test_scaled_lookup_every_backend(backend):
    out = backend.scaled_lookup([[1.0, -2.0], [3.0, 0.5]], [1], 2)
    assert close(out, [[3.0 * math.sqrt(2), 0.5 * math.sqrt(2)]])


# -- differential: NumPy engine vs the reference on random tables ----------------------------

@st.composite
def random_tables(draw):
    vocab = draw(st.integers(2, 30))
    dim = draw(st.integers(2, 8))  # with D = 1 every cosine is +-1: ties only up to rounding
    seed = draw(st.integers(0, 2**32 - 1))
    rows = embed.make_table(vocab, dim, seed)
    for _ in range(draw(st.integers(0, 3))):  # duplicated and zero rows: exact ties
        i, j = draw(st.integers(0, vocab - 1)), draw(st.integers(0, vocab - 1))
        rows[i] = list(rows[j]) if draw(st.booleans()) else [0.0] * dim
    return rows


def _no_rounding_ties(rows, q, score):
    """True unless two different rows score within rounding of each other.

    Exact ties (identical rows, zero rows) are kept: both backends compute them
    identically. Scores that differ only by rounding may be ordered either way
    by two correct backends, so such tables are not a fair differential case.
    """
    scored = [(score(rows[q], r), tuple(r)) for i, r in enumerate(rows) if i != q]
    for a, (s, r) in enumerate(scored):
        for t, u in scored[a + 1:]:
            if r != u and s != t and abs(s - t) <= 1e-9 * max(1.0, abs(s)):
                return False
    return True


@settings(max_examples=150, deadline=None)
@given(random_tables(), st.data())
def test_nearest_agrees_with_reference(rows, data):
    table = EmbeddingTable.from_rows(rows)
    q = data.draw(st.integers(0, len(rows) - 1))
    k = data.draw(st.integers(1, len(rows) - 1))
    assume(_no_rounding_ties(rows, q, embed.cosine) and _no_rounding_ties(rows, q, embed.dot))
    got_cos = table.nearest([q], k, "cosine")
    got_dot = table.nearest([q], k, "dot")
    assert got_cos.ids[0].tolist() == embed.nearest_by_cosine(rows, q, k)
    assert got_dot.ids[0].tolist() == embed.nearest_by_dot(rows, q, k)
    want_cos = [embed.cosine(rows[q], rows[i]) for i in got_cos.ids[0]]
    want_dot = [embed.dot(rows[q], rows[i]) for i in got_dot.ids[0]]
    assert close(got_cos.scores[0], want_cos, atol=1e-12)
    assert close(got_dot.scores[0], want_dot, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(random_tables(), st.data())
def test_values_agree_with_reference(rows, data):
    table = EmbeddingTable.from_rows(rows)
    ids = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=1, max_size=6))
    hidden = rows[ids[0]]
    assert table.lookup(ids).tolist() == embed.lookup(rows, ids)
    assert close(table.lookup_via_one_hot(ids), embed.lookup_via_one_hot(rows, ids))
    assert close(table.logits(hidden), embed.logits(rows, hidden), atol=1e-12)
    assert close(table.scaled_lookup(ids), embed.scaled_lookup(rows, ids, len(rows[0])))
    assert close(table.norms(), [embed.norm(r) for r in rows])
    # A factor near 1e-313 would make the row's length subnormal, which the NumPy table
    # refuses (test_stretch_to_a_subnormal_length_is_refused); the reference keeps it.
    factor = data.draw(st.floats(-4, 4).filter(lambda f: f == 0 or abs(f) > 1e-200))
    assert close(table.stretch(ids[0], factor).W_E, embed.stretch(rows, ids[0], factor))


def test_stretch_to_a_subnormal_length_is_refused():
    table = EmbeddingTable(np.array([[0.3, 0.25], [-0.08, -0.24]]))
    with pytest.raises(ValueError, match="row 0 is too short for float64"):
        table.stretch(0, 2.2e-313)
    assert table.stretch(0, 0.0).W_E.tolist() == [[0.0, 0.0], [-0.08, -0.24]]


# -- the table object -----------------------------------------------------------------------------

def test_table_is_read_only_and_hands_out_copies():
    source = np.array([[1.0, 2.0], [3.0, 4.0]])
    table = EmbeddingTable(source)
    source[0, 0] = 99.0  # the caller's array is not the table
    assert table.W_E[0, 0] == 1.0
    with pytest.raises(ValueError):
        table.W_E[0, 0] = 5.0
    row = table.lookup([0])
    row[0, 0] = 42.0
    assert table.W_E[0, 0] == 1.0
    with pytest.raises(ValueError):
        table.norms()[0] = 0.0


def test_table_shape_checks():
    with pytest.raises(ShapeError):
        EmbeddingTable(np.zeros(3))
    with pytest.raises(ShapeError):
        EmbeddingTable(np.zeros((0, 3)))
    with pytest.raises(TypeError):
        EmbeddingTable(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ShapeError, match="3 tokens.*V=2"):
        EmbeddingTable(np.zeros((2, 3)), vocabulary=["a", "b", "c"])
    with pytest.raises(ShapeError, match="width 2.*D=3"):
        EmbeddingTable(np.zeros((2, 3)), positions=np.zeros((4, 2)))
    with pytest.raises(ShapeError, match="ragged"):
        EmbeddingTable.from_rows([[1.0, 2.0], [3.0]])


def test_lookup_any_shape_and_batch_checked_before_gather():
    table = EmbeddingTable(np.arange(12, dtype=np.float32).reshape(4, 3))
    out = table.lookup(np.array([[0, 3], [1, 1]]))
    assert out.shape == (2, 2, 3)
    assert out[0, 1].tolist() == [9.0, 10.0, 11.0]
    with pytest.raises(TokenIdError, match="token id 4 is out of range for V=4"):
        table.lookup(np.array([[0, 4]]))
    with pytest.raises(TokenIdError, match="-1"):
        table.lookup([-1])
    with pytest.raises(TypeError):
        table.lookup(np.array([0.0]))
    with pytest.raises(TypeError):
        table.lookup(np.array([True]))
    with pytest.raises(TypeError):
        table.lookup([0, True])


def test_token_id_resolution():
    table = EmbeddingTable(np.eye(3), vocabulary=["king", "queen", "1999"])
    assert table.token_id("queen") == 1
    assert table.token_id("1999") == 2  # a token that looks like a number is a token
    assert table.token_id("0") == 0  # not a token, but an id
    assert table.token_id(np.int64(2)) == 2
    with pytest.raises(UnknownTokenError, match="'kin'.*'king'"):
        table.token_id("kin")
    with pytest.raises(KeyError):  # UnknownTokenError is a KeyError
        table.token_id("zzz")
    with pytest.raises(TokenIdError):
        table.token_id("7")
    assert table.tokens([2, 0]) == ["1999", "king"]
    bare = EmbeddingTable(np.eye(3))
    assert bare.token(1) is None and bare.tokens([1]) is None
    with pytest.raises(TypeError, match="no vocabulary"):
        bare.token_id("king")


@pytest.mark.parametrize("metric, reference", [("cosine", embed.nearest_by_cosine), ("dot", embed.nearest_by_dot)])
def test_nearest_reports_progress_per_block_of_queries(metric, reference):
    rows = embed.make_table(300, 8, 5)  # (V, D) lists of floats
    table = EmbeddingTable.from_rows(rows)
    seen = []
    # 64 KiB leaves room for a few dozen queries per block: several reports
    got = table.nearest(np.arange(300), 3, metric, memory=2**16, progress=seen.append)
    assert len(seen) > 1 and all(n > 0 for n in seen) and sum(seen) == 300
    assert got.ids.tolist() == [reference(rows, q, 3) for q in range(300)]


def test_nearest_to_vector_leaves_nothing_out():
    table = EmbeddingTable(np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]]))
    got = table.nearest_to_vector([1.0, 0.0], 3, "cosine")
    assert got.ids.tolist() == [[0, 1, 2]]
    assert close(got.scores, [[1.0, 10 / math.sqrt(101), 0.0]])
    with pytest.raises(ValueError, match="k=4"):
        table.nearest_to_vector([1.0, 0.0], 4)
    with pytest.raises(ShapeError, match="D=2"):
        table.nearest_to_vector([1.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="NaN"):
        table.nearest_to_vector([math.nan, 0.0], 1)
    with pytest.raises(ValueError, match="metric"):
        table.nearest_to_vector([1.0, 0.0], 1, "euclid")


def test_nearest_by_token_strings_carries_tokens():
    table = EmbeddingTable(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), vocabulary=["a", "b", "c"])
    got = table.nearest(["a", "c"], 1, "cosine")
    assert got.ids.tolist() == [[1], [1]]
    assert got.tokens == [["b"], ["b"]]


def test_norms_and_rms_accumulate_in_float64():
    half = EmbeddingTable(np.full((2, 4), 300, dtype=np.float16))
    assert half.norms().tolist() == [600.0, 600.0]  # sqrt(4 * 300^2): the float16 sum would overflow
    assert float(rms(np.array([300, 300, 300, 300], dtype=np.float16))) == 300.0
    assert float(rms(np.array([1000, -1000, 1000, -1000], dtype=np.float16))) == 1000.0
    assert float(rms(np.array([3.0, 4.0]))) == 3.5355339059327378
    assert float(rms(np.array([]))) == 0.0


def test_zero_rows_give_no_nan_and_no_warning():
    table = EmbeddingTable(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = table.nearest_to_vector([0.0, 0.0], 4, "cosine")
    assert got.ids.tolist() == [[0, 1, 2, 3]]
    assert got.scores.tolist() == [[0.0, 0.0, 0.0, 0.0]]


def test_scaled_lookup_factor_is_not_rounded_low():
    # C09: sqrt(3072) in float64, stored as float32; never rounded to fp16/bf16 first.
    ones32 = EmbeddingTable(np.ones((1, 3072), dtype=np.float32))
    assert set(ones32.scaled_lookup([0]).ravel().tolist()) == {55.42562484741211}
    ones16 = EmbeddingTable(np.ones((1, 768), dtype=np.float16))
    out = ones16.scaled_lookup([0])
    assert out.dtype == np.float32
    assert set(out.ravel().tolist()) == {27.712812423706055}


def test_stretch_rejects_bad_factor_and_keeps_vocabulary():
    table = EmbeddingTable(np.eye(2), vocabulary=["a", "b"])
    assert table.stretch("b", 3.0).W_E.tolist() == [[1.0, 0.0], [0.0, 3.0]]
    assert table.stretch("b", 3.0).vocabulary is table.vocabulary
    with pytest.raises(ValueError, match="nan"):
        table.stretch(0, math.nan)


def test_vocabulary_suggestions_and_placeholders():
    vocab = Vocabulary(["king", "kings", "queen", None])
    assert vocab.token(3) == "<id 3>"
    assert vocab.suggest("kingz")[:2] == ["king", "kings"]
    assert Vocabulary(["a", "a"]).id("a") == 0  # the smaller id owns a repeated string


@pytest.mark.parametrize("where", ["matrix", "positions", "token_types"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused_naming_row_and_column(where, bad):
    tables = {"matrix": np.ones((3, 2)), "positions": np.ones((4, 2)), "token_types": np.ones((2, 2))}
    tables[where][1, 0] = bad
    with pytest.raises(ValueError, match=r"row 1, column 0"):
        EmbeddingTable(tables["matrix"], positions=tables["positions"], token_types=tables["token_types"])


def test_stretch_that_overflows_float32_is_refused():
    table = EmbeddingTable(np.ones((3, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="inf"):
        table.stretch(1, 1e39)


def test_huge_ids_are_out_of_range_not_overflow():
    table = EmbeddingTable(np.eye(3))
    with pytest.raises(TokenIdError, match="99999999999999999999999"):
        table.lookup([99999999999999999999999])
    with pytest.raises(TokenIdError):
        table.token_id("99999999999999999999999")
    assert table.token_id("id:2") == 2
    with pytest.raises(TypeError, match="id:x"):
        table.token_id("id:x")


def test_queries_that_only_look_like_numbers_are_strings():
    table = EmbeddingTable(np.eye(3), vocabulary=["a", "b", "c"])
    for text in ("\u00b2", "\uff11", "--5"):
        with pytest.raises(UnknownTokenError):
            table.token_id(text)
    assert table.token_id(" 2 ") == 2


def test_suggestions_ignore_case_and_one_row_tables_say_why():
    table = EmbeddingTable(np.eye(3), vocabulary=["king", "kings", "queen"])
    with pytest.raises(UnknownTokenError, match="'KINGZ'.*'king'"):
        table.token_id("KINGZ")
    with pytest.raises(ValueError, match="one row has no other token"):
        EmbeddingTable(np.ones((1, 2))).nearest([0], 1)


# -- tokens are accepted wherever ids are (one resolver: vocabulary.resolve_ids) -----

def _named_table():
    # V=4, D=2, rows by hand; id = position in the vocabulary list
    return EmbeddingTable([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, -1.0]], vocabulary=["king", "queen", "7", "a"])


def test_lookup_takes_tokens_ids_and_id_prefix_in_any_shape():
    t = _named_table()
    assert t.lookup(["king"]).tolist() == [[1.0, 0.0]]
    assert t.lookup([["queen", 0], ["7", "id:3"]]).tolist() == [[[0.0, 2.0], [1.0, 0.0]], [[3.0, 3.0], [0.0, -1.0]]]
    assert t.lookup(np.array(["a", "king"])).tolist() == [[0.0, -1.0], [1.0, 0.0]]
    assert t.lookup("queen").tolist() == [0.0, 2.0]


def test_every_id_taking_method_resolves_tokens():
    t = _named_table()
    assert t.lookup_via_one_hot(["queen"]).tolist() == [[0.0, 2.0]]
    assert t.scaled_lookup(["queen"]).tolist() == [[0.0, 2.0 * math.sqrt(2)]]
    assert t.stretch("a", 2.0).W_E[3].tolist() == [0.0, -2.0]
    assert t.nearest("king", 1, "dot").ids.tolist() == [[2]]  # king . rows = [_, 0, 3, 0]
    assert t.tokens(["queen", 0]) == ["queen", "king"]


def test_a_bad_token_in_a_batch_is_the_resolver_error_and_nothing_is_written():
    t = _named_table()
    out = np.zeros((2, 2))
    with pytest.raises(UnknownTokenError, match="'kingz'.*'king'"):
        t.lookup(["king", "kingz"], out=out)
    with pytest.raises(TokenIdError, match="token id 4 is out of range for V=4"):
        t.lookup(["king", "id:4"], out=out)
    with pytest.raises(TypeError):
        t.lookup(["king", 1.0])
    assert out.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_a_table_without_vocabulary_takes_digit_strings_as_ids():
    bare = EmbeddingTable(np.eye(3))
    assert bare.lookup(["2", "id:0"]).tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    with pytest.raises(TypeError, match="no vocabulary"):
        bare.lookup(["king"])


# -- lengths over the cores, and lengths handed to the table (load lean) ---------------------------------------------

def _rows_of_every_kind(dtype) -> np.ndarray:
    """Random rows of many scales, a zero row and, in float64, rows whose sums of squares leave float64's range."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((211, 37)) * 10.0 ** rng.integers(-3, 4, size=(211, 1))  # (V, D)
    W[17] = 0.0
    if dtype == np.float64:
        W[40] *= 1e-170  # squares underflow: measured again, scaled
        W[90] *= 1e170  # squares overflow
    return W.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("block_bytes", [8 * 37, 8 * 37 * 5, 2**20])
def test_lengths_over_the_cores_equal_one_thread_bit_for_bit(dtype, block_bytes):
    W = _rows_of_every_kind(dtype)
    one = vector_norms(W, block_bytes=block_bytes, parallel=False)  # (V,)
    assert np.array_equal(vector_norms(W, block_bytes=block_bytes).view(np.int64), one.view(np.int64))
    assert np.array_equal(vector_norms(W, block_bytes=2**30, parallel=False).view(np.int64), one.view(np.int64))
    for n, row in zip(one, W.astype(np.float64).tolist()):  # each length by hand: math.fsum of squares, scaled
        top = max(abs(x) for x in row)
        exact = top * math.sqrt(math.fsum((x / top) ** 2 for x in row)) if top else 0.0
        assert math.isclose(n, exact, rel_tol=1e-14, abs_tol=0.0)


def test_lengths_handed_to_the_table_are_kept_and_skip_nothing_they_do_not_show():
    W = _rows_of_every_kind(np.float32)
    W.flags.writeable = False
    lengths = vector_norms(W)
    table = EmbeddingTable(W, norms=lengths)
    assert table.W_E is W  # a frozen array is kept as it is, not copied
    assert np.array_equal(table.norms().view(np.int64), lengths.view(np.int64)) and not table.norms().flags.writeable
    assert table.resident().norms == 8 * len(W)
    bad = np.array(W)
    bad[150, 3] = np.nan
    with pytest.raises(ValueError, match=r"holds nan at row 150, column 3"):
        EmbeddingTable(bad, norms=vector_norms(bad))


def test_lengths_that_are_not_the_rows_are_refused():
    W = _rows_of_every_kind(np.float32)
    with pytest.raises(ShapeError, match=r"shape \(211,\)"):
        EmbeddingTable(W, norms=vector_norms(W)[:-1])
    with pytest.raises(ShapeError, match="float64"):
        EmbeddingTable(W, norms=vector_norms(W).astype(np.float32))
    wrong = vector_norms(W)
    wrong[-1] *= 2
    with pytest.raises(ValueError, match=r"norms\[210\]"):
        EmbeddingTable(W, norms=wrong)


@pytest.mark.parametrize("shape", [(2048,), (3, 2048)])  # one vector in blocks; a batch as before
def test_logits_widened_a_block_at_a_time_equal_the_whole_table_widened_bit_for_bit(shape):
    rng = np.random.default_rng(2)
    W = rng.standard_normal((1000, 2048)).astype(np.float32)  # (V, D): blocks of 128 rows (2 MiB widened), the last short
    h = rng.standard_normal(shape)  # float64: the product runs in float64
    whole = h @ W.astype(np.float64).T  # (V,) or (N, V), the formula before blocks
    got = EmbeddingTable(W).logits(h)
    assert got.dtype == np.float64 and np.array_equal(got.view(np.int64), whole.view(np.int64))


def test_logits_that_overflow_name_the_token_without_a_warning():
    W = np.ones((300, 2048), dtype=np.float32)  # (V, D): three blocks of 128 rows
    W[170] = 1e38
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="token 170"):
            EmbeddingTable(W).logits(np.full(2048, 1e300))


def test_a_stretched_table_keeps_its_copy_and_its_lengths_are_those_of_its_rows():
    W = np.random.default_rng(4).standard_normal((700, 3000)).astype(np.float32)  # (V, D): copied in many blocks
    table = EmbeddingTable(W)
    stretched = table.stretch(321, 2.5)
    expected = np.array(W)
    expected[321] = W[321].astype(np.float64) * 2.5
    assert np.array_equal(stretched.W_E, expected) and not stretched.W_E.flags.writeable
    assert np.array_equal(table.W_E, W) and not np.shares_memory(stretched.W_E, table.W_E)
    fresh = vector_norms(expected, parallel=False)  # (V,) measured from scratch
    assert np.array_equal(stretched.norms().view(np.int64), fresh.view(np.int64))
