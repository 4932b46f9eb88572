"""The integer screen (engine.neighbors: codes, int16_screen, int16_kernel) against a float64 full sort and the float screen.

Expected lists come from a float64 full sort written here (every score, then
``np.lexsort`` by (-score, id)) on tables whose scores float64 holds exactly
(multiples of 1/4 scaled by powers of two), from the reference
(``embed.nearest_by_*``), or from the float GEMM screen (``screen="float"``),
which the integer screen must match id for id and bit for bit. No timing here:
speed is claimed in benchmarks/ only.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from embedlab import embed
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import capability, int16_screen
from embedlab.engine.neighbors.codes import code_limit, encode_queries, encode_rows, row_terms
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import ChoiceError, ShapeError
from full_sort import full_sort
from searching import search
from strategies import draw_queries, dyadic_tables

pytest.importorskip("numba")

REFERENCE = {"cosine": embed.nearest_by_cosine, "dot": embed.nearest_by_dot}


def both_screens(W, Q, k, metric, exclude=None, **kwargs):
    """(int16 ids, int16 scores), (float ids, float scores) of one search; W, Q and exclude must not change."""
    before = [None if x is None else np.array(x, copy=True) for x in (W, Q, exclude)]
    coded = search(W, Q, k, metric, exclude=exclude, screen="int16", **kwargs)
    plain = search(W, Q, k, metric, exclude=exclude, screen="float", **kwargs)
    for x, was in zip((W, Q, exclude), before):
        assert x is None or np.array_equal(x, was)  # never mutates its arguments
    return coded, plain


@settings(max_examples=120, deadline=None)
@given(W=dyadic_tables(), data=st.data())
def test_random_tables_match_a_float64_full_sort(W, data):
    metric = data.draw(st.sampled_from(["cosine", "dot"]))
    Q, exclude, k = draw_queries(data, W)
    if Q is not None:
        lengths = vector_norms(Q)
        # screen="int16" certifies lengths in [1e-15, 1e15] only (it refuses others, tested apart): a 2**40 row
        # times 2**8 can leave that range
        assume(bool(np.all((lengths == 0) | ((lengths >= 1e-15) & (lengths <= 1e15)))))
    (ids, scores), (ids_f, scores_f) = both_screens(W, Q, k, metric, exclude)
    want_ids, want_scores = full_sort(W, W[exclude] if Q is None else Q, k, metric, exclude)
    assert ids.tolist() == want_ids.tolist()
    assert np.allclose(scores, want_scores, rtol=1e-12, atol=0.0)
    assert np.array_equal(ids, ids_f) and np.array_equal(scores, scores_f)  # identical to the float screen


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_adversarial_near_ties_are_rescored_exactly(data):
    # Rows that differ from a base row by 2**-20 of an entry: their scores differ by about
    # 1e-6, far inside the codes' error (about 1e-3), so the screen must keep them all and
    # the float64 rescoring order them; the reference (pure Python) orders them the same.
    D = data.draw(st.integers(2, 12))
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(D)
    nudges = rng.integers(-3, 4, size=(40, D)) * 2.0**-20
    W = np.vstack([base + nudges, rng.standard_normal((40, D)), np.zeros((3, D)), base, base])
    q = data.draw(st.integers(0, len(W) - 1))
    k = data.draw(st.integers(1, 30))
    rows = W.tolist()
    for metric in ("cosine", "dot"):
        (ids, _), (ids_f, _) = both_screens(W, None, k, metric, np.array([q]))
        assert ids[0].tolist() == ids_f[0].tolist()  # identical to the float screen, always
        reference = REFERENCE[metric](rows, q, k)
        if ids[0].tolist() != reference:
            # Only where two scores differ in their last bit (cosines of nearly parallel rows, both
            # about 1.0) may the float64 engine and the pure-Python reference order them differently:
            # each rank's score must then agree with the reference's to within a few ulps.
            def score(i):
                a, b = W[q], W[i]
                if metric == "dot":
                    return float(a @ b)
                na, nb = np.linalg.norm(a), np.linalg.norm(b)
                return 0.0 if na == 0 or nb == 0 else float(np.clip(a @ b / (na * nb), -1, 1))
            got = [score(i) for i in ids[0]]
            want = [score(i) for i in reference]
            assert np.allclose(got, want, rtol=4 * 2.0**-52, atol=0.0), (ids[0].tolist(), reference)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_more_exact_ties_than_the_slots_are_settled_by_id(metric):
    # 300 copies of one row: every list is a run of exact ties, far more than the
    # screen's candidate slots (2k + 64), so candidates are settled exactly on the way.
    rows = [[1.0, 2.0]] * 300 + [[2.0, 1.0]] * 100 + [[0.0, 0.0]] * 5
    order = np.random.default_rng(0).permutation(len(rows))
    W = np.array([rows[i] for i in order], dtype=np.float32)
    queries = np.array([0, 1, 2, 150, 404])
    for k in (1, 7, 40):
        (ids, scores), (ids_f, scores_f) = both_screens(W, None, k, metric, queries, memory=120_000)
        assert ids.tolist() == [REFERENCE[metric](W.tolist(), q, k) for q in queries]
        assert np.array_equal(ids, ids_f) and np.array_equal(scores, scores_f)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_random_tables_in_many_blocks_and_workers(dtype, metric):
    rng = np.random.default_rng(7)
    W = rng.standard_normal((2500, 24)).astype(dtype)
    W[rng.integers(0, 2500, 40)] *= 6.0  # long rows that climb dot lists
    W[rng.integers(0, 2500, 40)] = W[3]  # duplicates of one row
    W[rng.integers(0, 2500, 40)] = 0.0
    queries = rng.choice(2500, 90, replace=False)
    codes = encode_rows(W)  # the table's resident codes and lengths: outside the small budget below
    results = [both_screens(W, None, 15, metric, queries, memory=memory, workers=workers, codes=codes,
                            row_norms=vector_norms(W))
               for memory, workers in [(2**28, 1), (2**28, 2), (300_000, 2)]]
    for (ids, scores), (ids_f, scores_f) in results:
        assert np.array_equal(ids, ids_f) and np.array_equal(scores, scores_f)
        assert np.array_equal(ids, results[0][0][0])


# -- the handed cases C10-C12 through the integer screen --------------------------------

def test_c10_float16_table_whose_squares_overflow_float16():
    W = np.array([[300, 300, 300, 300], [1000, -1000, 1000, -1000], [300, 300, 300, 299], [0, 0, 0, 0]],
                 dtype=np.float16)
    for metric in ("cosine", "dot"):
        (ids, scores), (ids_f, scores_f) = both_screens(W, None, 3, metric, np.arange(4))
        assert ids.tolist() == [REFERENCE[metric](W.astype(float).tolist(), q, 3) for q in range(4)]
        assert np.array_equal(scores, scores_f) and np.isfinite(scores).all()


def test_c11_zero_vectors_score_zero_ties_by_id():
    W = np.array([[1, 0], [0, 0], [0, 1], [0, 0]], dtype=np.float32)
    (ids, scores), _ = both_screens(W, np.array([[1.0, 0.0], [0.0, 0.0]]), 4, "cosine")
    assert ids.tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert scores.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    (ids, scores), _ = both_screens(W, None, 3, "cosine", np.array([1, 3]))
    assert ids.tolist() == [[0, 2, 3], [0, 1, 2]] and scores.tolist() == [[0.0] * 3] * 2


def test_c12_cosine_is_not_dot():
    T = np.array([[1, 0], [10, 1], [0, 1]], dtype=np.float32)
    (cos, cos_scores), _ = both_screens(T, np.array([[1.0, 0.0]]), 3, "cosine")
    (dot, dot_scores), _ = both_screens(T, np.array([[1.0, 0.0], [0.0, 1.0]]), 3, "dot")
    assert cos.tolist() == [[0, 1, 2]] and cos_scores[0] == pytest.approx([1, 0.9950371902, 0], abs=1e-10)
    assert dot.tolist() == [[1, 0, 2], [1, 2, 0]] and dot_scores[0].tolist() == [10, 1, 0]
    stretched = T.copy()
    stretched[2] *= 20
    (cos, cos_scores), _ = both_screens(stretched, np.array([[0.0, 1.0]]), 3, "cosine")
    assert cos.tolist() == [[2, 1, 0]] and cos_scores[0] == pytest.approx([1, 0.0995037190, 0], abs=1e-10)


# -- the codes and the bound --------------------------------------------------------------

@pytest.mark.parametrize("D", [1, 7, 50, 384, 4096])
def test_code_limit_keeps_every_integer_dot_product_in_int32(D):
    limit = code_limit(D)
    assert (D + D % 2) * limit**2 < 2**31 and 2 * limit**2 < 2**31
    assert (D + D % 2) * (limit + 1) ** 2 >= 2**31 or limit == 32767


def test_codes_scales_and_residuals_are_exact():
    rng = np.random.default_rng(2)
    W = (rng.standard_normal((40, 13)) * np.logspace(-12, 12, 40)[:, None]).astype(np.float32)
    W[5] = 0.0
    codes = encode_rows(W)
    V, D = W.shape
    slots = codes.packed.transpose(0, 2, 1, 3).reshape(-1, 2 * codes.packed.shape[1])[:V, :D]  # (V, D) unpacked
    rows = np.empty_like(slots)
    rows[codes.ids[:V]] = slots  # back in id order
    assert sorted(codes.ids[:V].tolist()) == list(range(V)) and (codes.ids[V:] == -1).all()
    assert np.abs(rows).max() <= codes.limit
    mantissa, _ = np.frexp(codes.scales[codes.scales > 0])
    assert (mantissa == 0.5).all() and codes.scales[5] == 0.0  # powers of two; 0 for the zero row
    for v in range(V):  # the residual's length, by hand in exact rationals
        from fractions import Fraction

        r2 = sum((Fraction(float(W[v, d])) - Fraction(codes.scales[v]) * int(rows[v, d])) ** 2 for d in range(D))
        assert Fraction(codes.residuals[v]) ** 2 >= r2
        assert codes.residuals[v] <= float(r2) ** 0.5 * (1 + 1e-12) + 1e-300


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_every_rescored_score_lies_inside_its_bound(metric):
    rng = np.random.default_rng(4)
    W = rng.standard_normal((300, 37)) * rng.choice([1e-10, 1.0, 1e10], size=(300, 1))
    W[::17] = W[1] * 3  # parallel rows
    Q = rng.standard_normal((20, 37)) * rng.choice([1e-12, 1.0, 1e12], size=(20, 1))
    codes = encode_rows(W)
    q_norms, w_norms = vector_norms(Q), vector_norms(W)
    queries = encode_queries(Q, q_norms, metric, codes.limit)
    a, b, c = row_terms(codes, w_norms, metric)[:, :300]  # in slot order
    rows = codes.packed.transpose(0, 2, 1, 3).reshape(-1, 2 * codes.packed.shape[1])[:300].astype(np.int64)
    W, w_norms = W[codes.ids[:300]], w_norms[codes.ids[:300]]  # the rows in slot order too
    I = queries.codes[:20].astype(np.int64) @ rows.T  # (20, 300) exact integers
    center = a * I
    err = queries.alpha[:20, None] * b + queries.beta[:20, None] * c
    exact = Q @ W.T
    if metric == "cosine":
        exact = exact / np.outer(q_norms, w_norms)
    units = 1 / queries.scales[:, None] if metric == "dot" else queries.top[:20, None]
    assert (np.abs(exact * units - center) <= err).all()
    assert (err <= 0.01 * np.abs(units) * (np.outer(q_norms, w_norms) if metric == "dot" else 1)).all()


# -- choosing the screen ------------------------------------------------------------------

def test_auto_falls_back_to_the_float_screen_without_the_fast_kernel(monkeypatch):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((500, 8)).astype(np.float32)
    codes = encode_rows(W)
    calls = []
    real = int16_screen.Int16Screen

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(int16_screen, "Int16Screen", spy)
    monkeypatch.setattr("embedlab.engine.neighbors.dispatch.Int16Screen", spy)
    want = search(W, None, 5, "cosine", exclude=np.arange(70), screen="float")
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"sse2", "fma"}))  # no AVX2
    assert not capability.fast_int16() and capability.describe().startswith("float")
    got = search(W, None, 5, "cosine", exclude=np.arange(70), codes=codes)
    assert not calls and np.array_equal(got[0], want[0])
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    got = search(W, None, 5, "cosine", exclude=np.arange(70), codes=codes)
    assert calls and np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert capability.choose_screen("auto", codes_given=False, fits=True) == "float"  # no codes, no screen
    assert capability.choose_screen("auto", codes_given=True, fits=False) == "float"  # lengths out of range


def test_a_table_builds_its_codes_for_many_queries_where_the_kernel_is_fast(monkeypatch):
    W = np.random.default_rng(1).standard_normal((300, 6))
    table = EmbeddingTable(W)
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset())
    monkeypatch.setattr(capability, "CODED_QUERIES", 64)
    monkeypatch.setattr(capability, "CODES_WORK", 0)  # a tiny table: as if the search were large
    table.nearest(np.arange(100), 3, "dot")
    assert table.resident().codes == 0  # no fast kernel: no codes built
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2"}))
    table.nearest(np.arange(10), 3, "dot")
    assert table.resident().codes == 0  # too few queries to pay for them
    got = table.nearest(np.arange(100), 3, "dot")
    assert table.resident().codes == table.codes().nbytes > 0
    assert got.ids.tolist() == [embed.nearest_by_dot(W.tolist(), q, 3) for q in range(100)]


def test_screen_choices_and_their_errors():
    W = np.eye(3)
    with pytest.raises(ChoiceError, match="unknown screen 'int8'"):
        search(W, None, 1, "dot", exclude=np.arange(2), screen="int8")
    with pytest.raises(ValueError, match="certifies lengths from 1e-15 to 1e\\+15"):
        search(W * 1e20, None, 1, "cosine", exclude=np.arange(2), screen="int16")
    with pytest.raises(ShapeError, match="codes of a \\(4, 3\\) table"):
        search(W, None, 1, "dot", exclude=np.arange(2), codes=encode_rows(np.ones((4, 3))), screen="int16")
    # Out of range, "auto" falls back: the same answer as the float screen.
    big = np.array([[1e20, 0.0], [1e20, 1e19], [0.0, 1.0]])
    assert search(big, None, 1, "cosine", exclude=np.arange(3), codes=encode_rows(big))[0].tolist() == [[1], [0], [1]]


def test_cosines_one_ulp_apart_near_one_keep_the_float_screens_order():
    """Found by hypothesis: rows 3 and 34 are both parallel to row 0 to within 2**-20 of an entry; their
    float64 cosines with it (clipped at 1.0) differ in the last bit. Both screens give the same list."""
    rng = np.random.default_rng(24966)
    base = rng.standard_normal(3)
    nudges = rng.integers(-3, 4, size=(40, 3)) * 2.0**-20
    W = np.vstack([base + nudges, rng.standard_normal((40, 3)), np.zeros((3, 3)), base, base])
    (ids, scores), (ids_f, scores_f) = both_screens(W, None, 1, "cosine", np.array([0]))
    assert ids.tolist() == ids_f.tolist() and scores.tolist() == scores_f.tolist()
    assert abs(scores[0, 0] - 1.0) < 1e-14


def test_codes_wait_for_enough_work_to_pay_for_loading_numba(monkeypatch):
    """A process without numba builds codes only for N x V x D >= CODES_WORK; with numba loaded, from the count."""
    pytest.importorskip("numba")  # the integer screen's kernel: without it no codes are built at all
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2"}))
    n = capability.coded_queries(8)
    monkeypatch.setattr(capability, "_numba_loaded", lambda: False)
    assert not capability.builds_codes(n, 8, 16)  # 16 rows: far below the work that pays for numba
    assert capability.builds_codes(n, 8, int(capability.CODES_WORK // (n * 8)) + 1)
    monkeypatch.setattr(capability, "_numba_loaded", lambda: True)
    assert capability.builds_codes(n, 8, 16) and not capability.builds_codes(n - 1, 8, 16)


NO_LLVMLITE_CHILD = """
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
sys.modules["llvmlite"] = None  # numba's files are found, its compiler cannot be imported
import numpy as np
from embedlab.errors import MissingExtraError
from embedlab.engine.neighbors import capability
from embedlab.engine.neighbors.search import Search
W = np.arange(60, dtype=np.float32).reshape(20, 3) % 7
try:
    Search(W, 3, "dot", ids=np.arange(5), screen="int16").nearest("dot")
    print(json.dumps(["listed", capability.numba_present()]))
except MissingExtraError as exc:
    print(json.dumps([str(exc), capability.numba_present()]))
"""


def test_int16_asked_for_where_numbas_compiler_cannot_be_imported_is_refused_at_the_door():
    import json
    import subprocess
    import sys

    pytest.importorskip("numba")
    child = subprocess.run([sys.executable, "-c", NO_LLVMLITE_CHILD, json.dumps(sys.path)], capture_output=True,
                           text=True, check=False, timeout=300)
    assert child.returncode == 0, child.stderr
    said, present = json.loads(child.stdout.strip().splitlines()[-1])
    assert present is False and "numba" in said and "integer screens" in said
