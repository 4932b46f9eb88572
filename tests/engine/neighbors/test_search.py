"""The front door of the k nearest (engine.neighbors.search) against the reference and a float64 brute force.

Expected lists come from ``embed.nearest_by_cosine`` / ``embed.nearest_by_dot``
(pure Python, sorted by (-score, id)) or from a NumPy float64 brute force written
here, never from the engine itself.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab import embed
from embedlab.errors import ShapeError, TokenIdError, UnknownTokenError
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import search as front_door
from embedlab.engine.neighbors.defaults import METRICS
from embedlab.engine.neighbors.plan import plan_blocks
from embedlab.engine.neighbors.search import Search
from embedlab.engine.table import EmbeddingTable
from full_sort import full_sort
from searching import search

REFERENCE = {"cosine": embed.nearest_by_cosine, "dot": embed.nearest_by_dot}


def brute_force(W, Q, k, metric, exclude=None):
    """Top-k by (-score, id) from a full float64 score matrix (the obvious way)."""
    W = np.asarray(W, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    S = Q @ W.T  # (N, V)
    if metric == "cosine":
        both = np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1))
        S = np.divide(S, both, out=np.zeros_like(S), where=both > 0)
    if exclude is not None:
        S[np.arange(len(Q)), exclude] = -np.inf
    kth = np.partition(S, S.shape[1] - k, axis=1)[:, S.shape[1] - k]  # (N,) every tie at the k-th is kept
    ids = np.empty((len(S), k), dtype=np.int64)
    for r, row in enumerate(S):
        cand = np.flatnonzero(row >= kth[r])  # ascending ids
        ids[r] = cand[np.lexsort((cand, -row[cand]))[:k]]
    return ids, np.take_along_axis(S, ids, axis=1)


def small_int_table(rng, V, D):
    """Integer entries, duplicated rows and zero rows: exact ties everywhere."""
    W = rng.integers(-3, 4, size=(V, D)).astype(np.float64)
    W[rng.integers(0, V, size=V // 4)] = W[rng.integers(0, V, size=1)]  # a row repeated
    W[rng.integers(0, V, size=max(1, V // 8))] = 0.0  # zero rows
    return W


# -- the reference's meaning, exactly ------------------------------------------------

@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("seed", range(6))
def test_every_query_and_every_k_agrees_with_the_reference(metric, seed):
    rng = np.random.default_rng(seed)
    W = small_int_table(rng, V=int(rng.integers(3, 24)), D=int(rng.integers(1, 5)))
    rows = W.tolist()
    table = EmbeddingTable(W)
    for k in range(1, len(W)):  # k from 1 to V-1
        got = table.nearest(np.arange(len(W)), k, metric).ids
        assert got.tolist() == [REFERENCE[metric](rows, q, k) for q in range(len(W))]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ties_on_random_small_tables_follow_the_reference(data):
    V = data.draw(st.integers(2, 14))
    D = data.draw(st.integers(1, 4))
    # Multiples of 1/4 in [-2, 2]: every product and sum is exact, so ties are exact
    # and no rounding can order them; rows repeat often.
    value = st.integers(-8, 8).map(lambda x: x / 4)
    pool = data.draw(st.lists(st.lists(value, min_size=D, max_size=D), min_size=1, max_size=4))
    rows = data.draw(st.lists(st.sampled_from(pool) | st.lists(value, min_size=D, max_size=D),
                              min_size=V, max_size=V))
    q = data.draw(st.integers(0, V - 1))
    k = data.draw(st.integers(1, V - 1))
    table = EmbeddingTable.from_rows(rows)
    for metric in ("cosine", "dot"):
        assert table.nearest([q], k, metric).ids[0].tolist() == REFERENCE[metric](rows, q, k)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_random_tables_match_a_float64_brute_force(dtype, metric):
    rng = np.random.default_rng(7)
    W = rng.standard_normal((700, 24)).astype(dtype)
    W[rng.integers(0, 700, 20)] *= 6.0  # long rows that climb dot lists
    table = EmbeddingTable(W)
    queries = rng.choice(700, 60, replace=False)
    got = table.nearest(queries, 15, metric, memory=200_000)  # many blocks of rows
    want_ids, want_scores = brute_force(W, W[queries], 15, metric, exclude=queries)
    assert got.ids.tolist() == want_ids.tolist()
    assert np.allclose(got.scores, want_scores, rtol=1e-12, atol=1e-12)


def test_duplicate_rows_rank_by_id_and_only_the_query_id_is_left_out():
    row = [0.3, -1.2, 2.5]
    rows = [[1.0, 0.0, 0.0], row, [0.0, 1.0, 1.0], row, row, [-1.0, 0.5, 0.0], row]
    table = EmbeddingTable.from_rows(rows)
    for metric in ("cosine", "dot"):
        got = table.nearest([3], 4, metric).ids[0].tolist()
        assert got[:3] == [1, 4, 6]  # the other copies, by id; 3 itself is left out
        assert got == REFERENCE[metric](rows, 3, 4)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_more_exact_ties_than_the_pool_holds_are_settled_by_id(metric):
    # 200 copies of one row and 100 of another: every list is a run of exact ties,
    # far more than the engine's candidate pool keeps per query.
    rows = [[1.0, 2.0]] * 200 + [[2.0, 1.0]] * 100 + [[0.0, 0.0]] * 5
    order = np.random.default_rng(0).permutation(len(rows))
    rows = [rows[i] for i in order]
    table = EmbeddingTable.from_rows(rows)
    queries = [0, 1, 2, 150, 304]
    for k in (1, 7, 40):
        got = table.nearest(queries, k, metric, memory=120_000).ids  # small blocks: ties arrive block by block
        assert got.tolist() == [REFERENCE[metric](rows, q, k) for q in queries]


def test_vector_queries_leave_nothing_out():
    rows = [[1.0, 2.0], [2.0, 4.0], [-1.0, 0.0], [1.0, 2.0]]
    table = EmbeddingTable.from_rows(rows)
    got = table.nearest_to_vector(np.array([[1.0, 2.0], [0.0, 0.0]]), 4, "cosine")
    # [1,2] and [2,4] point the same way: equal cosines for ids 0, 1 and 3, listed by id.
    assert got.ids.tolist() == [[0, 1, 3, 2], [0, 1, 2, 3]]
    assert got.scores[0].tolist() == [embed.cosine([1.0, 2.0], rows[i]) for i in (0, 1, 3, 2)]
    assert got.scores[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # a zero query: 0.0 everywhere, smallest ids
    assert table.nearest_to_vector([1.0, 2.0], 4, "dot").ids.tolist() == [[1, 0, 3, 2]]


def test_zero_rows_and_queries_score_zero_without_warnings():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((150, 5))
    W[::7] = 0.0
    table = EmbeddingTable(W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_id = table.nearest(np.arange(150), 149, "cosine", memory=300_000)
        by_vec = table.nearest_to_vector(np.zeros((3, 5)), 5, "cosine")
    assert not np.isnan(by_id.scores).any()
    assert by_id.scores[0].tolist() == [0.0] * 149  # row 0 is a zero row
    assert by_id.ids[0].tolist() == list(range(1, 150))
    assert by_id.ids[1].tolist() == embed.nearest_by_cosine(W.tolist(), 1, 149)
    assert by_vec.ids.tolist() == [[0, 1, 2, 3, 4]] * 3
    assert -1.0 <= by_id.scores.min() and by_id.scores.max() <= 1.0


def test_results_are_fresh_arrays_the_table_cannot_be_changed_through():
    table = EmbeddingTable.from_rows([[1.0, 2.0], [3.0, 4.0], [0.5, 0.0]])
    got = table.nearest([0], 2, "dot")
    got.ids[0, 0] = 2
    got.scores[0, 0] = 99.0
    assert table.W_E.tolist() == [[1.0, 2.0], [3.0, 4.0], [0.5, 0.0]]
    assert table.nearest([0], 2, "dot").ids.tolist() == [[1, 2]]


# -- blocks: same answer for any block size, and the budget holds ---------------------

def test_block_size_and_workers_do_not_change_the_result():
    rng = np.random.default_rng(11)
    W = np.repeat(rng.standard_normal((500, 8)).astype(np.float32), 3, axis=0)  # every row three times
    ids = rng.choice(len(W), 90, replace=False)
    norms = vector_norms(W)
    plans = set()
    results = []
    for memory, workers in [(2**30, 1), (2**30, 2), (400_000, 1), (150_000, 2), (60_000, 1)]:
        plans.add(plan_blocks(len(W), 8, 10, 4, memory, n_queries=90, workers=workers))
        for metric in ("cosine", "dot"):
            results.append((metric, search(W, None, 10, metric, exclude=ids, row_norms=norms,
                                           memory=memory, workers=workers)))
    assert len({(p.queries, p.rows) for p in plans}) >= 4  # the budgets really cut differently
    for metric in ("cosine", "dot"):
        mine = [r for m, r in results if m == metric]
        for ids_, scores_ in mine[1:]:
            assert np.array_equal(ids_, mine[0][0]) and np.array_equal(scores_, mine[0][1])
        want, _ = brute_force(W, W[ids], 10, metric, exclude=ids)
        assert mine[0][0].tolist() == want.tolist()


@pytest.mark.parametrize("workers", [1, 2])
def test_memory_budget_is_respected(workers):
    rng = np.random.default_rng(5)
    V, D, N, k = 20_000, 32, 300, 10
    W = rng.standard_normal((V, D)).astype(np.float32)
    norms = vector_norms(W)
    memory = 2 * 2**20
    plan = plan_blocks(V, D, k, 4, memory, n_queries=N, workers=workers)
    assert plan.rows < V and plan.queries < N  # the table exceeds one block both ways
    outputs = N * k * 16 + N * 64  # ids and scores, and O(N) bookkeeping
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        search(W, None, k, "cosine", exclude=np.arange(N), row_norms=norms, memory=memory, workers=workers)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= memory + outputs, f"peak {peak} bytes over the budget of {memory}"


def test_a_budget_below_one_block_is_refused():
    W = np.ones((100, 16))
    with pytest.raises(ValueError, match="memory=1,000 bytes is too small"):
        search(W, None, 5, "dot", exclude=np.arange(3), memory=1000)
    with pytest.raises(ValueError, match="positive number of bytes"):
        search(W, None, 5, "dot", exclude=np.arange(3), memory=0)


def test_vector_norms_are_float64_and_equal_for_equal_rows():
    X = np.tile(np.array([0.1, 0.7, -0.3], dtype=np.float16), (9, 1))
    got = vector_norms(X)
    assert got.dtype == np.float64 and len(set(got.tolist())) == 1
    assert got[0] == pytest.approx(embed.norm([float(x) for x in X[0]]), rel=1e-15)


# -- bad input: clear errors -----------------------------------------------------------

def test_bad_input_is_refused_with_a_clear_message():
    table = EmbeddingTable.from_rows([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], vocabulary=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"k=0 is out of range"):
        table.nearest(["a"], 0)
    with pytest.raises(ValueError,
                       match=r"k=3 is out of range: expected an int from 1 to 2 \(V-1: the query itself is left out\)"):
        table.nearest(["a"], 3)  # k >= V for a query by id
    with pytest.raises(ValueError, match=r"k=4 is out of range"):
        table.nearest_to_vector([1.0, 0.0], 4)
    with pytest.raises(TypeError):
        table.nearest(["a"], True)
    with pytest.raises(UnknownTokenError, match="'zz' is not in the vocabulary"):
        table.nearest(["a", "zz"], 1)
    with pytest.raises(KeyError):  # the builtin it refines
        table.nearest(["zz"], 1)
    with pytest.raises(ShapeError, match=r"expected \(D,\) or \(N, D\) with D=2"):
        table.nearest_to_vector([1.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="query vector 1 contains NaN"):
        table.nearest_to_vector([[1.0, 0.0], [np.nan, 0.0]], 1)
    with pytest.raises(ValueError, match="unknown metric 'euclid'"):
        table.nearest(["a"], 1, "euclid")
    with pytest.raises(IndexError, match="token id 3 is out of range for V=3"):
        table.nearest([3], 1)


def test_search_checks_its_arrays():
    W = np.eye(3)
    with pytest.raises(ShapeError, match="query vectors have shape"):
        search(W, np.ones((2, 4)), 1, "dot")
    with pytest.raises(TokenIdError, match="token id 3 is out of range for V=3"):
        search(W, None, 1, "dot", exclude=np.array([0, 3]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        search(W, np.array([[np.inf, 0.0, 0.0]]), 1, "cosine")
    with pytest.raises(ValueError, match="row 1 of the table contains NaN"):
        search(np.array([[1.0, 0.0, 0.0], [np.nan, 0.0, 0.0]]), np.ones((1, 3)), 1, "dot")
    with pytest.raises(ValueError, match="workers must be a positive int"):
        search(W, np.ones((1, 3)), 1, "dot", workers=0)


# -- real tables ------------------------------------------------------------------------

@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", ["minilm", "glove"])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_real_tables_match_a_float64_brute_force(name, metric):
    from embedlab import sources

    table = sources.load(name)
    queries = np.sort(np.random.default_rng(0).choice(table.V, 100, replace=False))
    got = table.nearest(queries, 10, metric)
    W = table.W_E
    want_ids, want_scores = brute_force(W, W[queries], 10, metric, exclude=queries)
    assert np.allclose(got.scores, want_scores, rtol=1e-9, atol=1e-9)
    # Same lists, same order; an order may differ only between scores within 1e-9.
    assert all(set(a) == set(b) for a, b in zip(got.ids.tolist(), want_ids.tolist()))
    close = np.abs(np.diff(want_scores, axis=1)) <= 1e-9  # (N, K-1)
    near_tie = np.zeros(want_ids.shape, dtype=bool)
    near_tie[:, :-1] |= close
    near_tie[:, 1:] |= close
    assert ((got.ids == want_ids) | near_tie).all()


# -- values at the edges of the floating-point range (found by a user's review) ----------

def _reference_cosine_order(W, q):
    """Cosines computed with lengths scaled by the largest entry (no under- or overflow), ids by (-score, id)."""
    def length(v):
        top = np.abs(v).max()
        return 0.0 if top == 0 else top * np.sqrt(np.sum((v / top) ** 2))
    scores = np.array([0.0 if length(w) == 0 else float(np.dot(q / length(q), w / length(w))) for w in W])
    return np.lexsort((np.arange(len(W)), -scores)).tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiny_rows_keep_their_direction(dtype):
    W = np.array([[0.0, 1.0, 0.0, 0.0], [1e-39 if dtype == np.float32 else 1e-300, 0.0, 0.0, 0.0],
                  [0.6, 0.8, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids, scores = search(W, np.array([[1.0, 0.0, 0.0, 0.0]]), 4, "cosine")
    assert ids[0].tolist() == [1, 2, 0, 3]
    assert scores[0, 0] == pytest.approx(1.0)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_huge_float32_values_give_real_ids_and_no_warning(metric):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(50, 8)).astype(np.float32)
    W[7] = 3e37
    Q = np.full((1, 8), 1e38, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids, _ = search(W, Q, 5, metric)
    assert ids.max() < 50
    if metric == "dot":
        assert ids[0, 0] == 7
    else:
        assert ids[0].tolist() == _reference_cosine_order(W.astype(np.float64), Q[0].astype(np.float64))[:5]


def test_dot_products_beyond_float64_are_an_error():
    W = np.array([[1e200, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="overflow float64"):
        search(W, np.array([[1e200, 1.0]]), 1, "dot")


def test_norms_of_tiny_and_huge_rows():
    out = vector_norms(np.array([[3e-300, 4e-300], [3e200, 4e200], [0.0, 0.0]]))
    assert out.tolist() == pytest.approx([5e-300, 5e200, 0.0], rel=1e-15)
    assert out[0] > 0 and np.isfinite(out[1])


# -- the front door: one session, checked, screened and planned once ---------------------
# Expected lists come from the reference (embed.nearest_by_*) on tables of exact ties; the counts of
# checks and plans from spies on the functions the session calls, never from the session's own report.

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_both_doors_list_what_the_reference_lists_on_random_tables_with_ties(data):
    V = data.draw(st.integers(2, 16))
    D = data.draw(st.integers(1, 4))
    value = st.integers(-8, 8).map(lambda x: x / 4)  # multiples of 1/4: exact products, exact ties
    pool = data.draw(st.lists(st.lists(value, min_size=D, max_size=D), min_size=1, max_size=3))
    rows = data.draw(st.lists(st.sampled_from(pool) | st.lists(value, min_size=D, max_size=D),
                              min_size=V, max_size=V))
    k = data.draw(st.integers(1, V - 1))
    queries = data.draw(st.lists(st.integers(0, V - 1), min_size=1, max_size=V))
    W = np.array(rows, dtype=np.float64).reshape(V, D)
    for table in (W, EmbeddingTable(W)):  # a plain array and a table: the same lists
        search = Search(table, k, ("cosine", "dot"), ids=queries)
        every = Search(table, k, ("cosine", "dot"), every_row=True)
        for metric in ("cosine", "dot"):
            assert search.nearest(metric).ids.tolist() == [REFERENCE[metric](rows, q, k) for q in queries]
            got = np.concatenate([ids for _, _, ids, _ in every.every_row(metric)])
            assert got.tolist() == [REFERENCE[metric](rows, q, k) for q in range(V)]


def counting(monkeypatch, module, name):
    """Record the calls of ``module.name`` (as the session sees it): (args, kwargs, result) each."""
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append((args, kwargs, result))
        return result

    monkeypatch.setattr(module, name, spy)
    return calls


def test_each_metric_is_planned_once_and_every_search_follows_that_plan(monkeypatch):
    W = np.random.default_rng(0).standard_normal((400, 6))
    planned = counting(monkeypatch, front_door, "plan_search")
    followed = counting(monkeypatch, front_door, "search_queries")
    search = Search(EmbeddingTable(W), 5, ("cosine", "dot"), ids=np.arange(300), memory=2**20)
    assert [kw["q_norms"].shape for _, kw, _ in planned] == [(300,), (300,)]  # one plan per metric, now
    for metric in ("cosine", "dot"):
        for start in range(0, 300, 70):  # a block of the planned queries at a time
            search.nearest(metric, ids=np.arange(start, min(300, start + 70)))
    assert len(planned) == 2  # no search planned again
    assert [args[3] for args, _, _ in followed] == [plan for _, _, plan in planned for _ in range(5)]
    assert [search.plan(m) for m in ("cosine", "dot")] == [plan for _, _, plan in planned]
    assert search.plan("cosine").bytes <= 2**20


def test_every_row_plans_its_self_join_once_per_metric_and_follows_it(monkeypatch):
    W = np.random.default_rng(1).standard_normal((300, 5)) * 1e20  # lengths the int16 screen cannot certify
    pairs = counting(monkeypatch, front_door, "plan_self_join")
    joins = counting(monkeypatch, front_door, "join_blocks")
    search = Search(W, 4, ("cosine", "dot"), every_row=True)
    assert len(pairs) == 2
    for metric in ("cosine", "dot"):
        assert sum(len(ids) for _, _, ids, _ in search.every_row(metric)) == 300
    assert len(pairs) == 2 and [args[3] for args, _, _ in joins] == [plan for _, _, plan in pairs]


def test_k_is_checked_once_per_call(monkeypatch):
    from embedlab.measure.graph import measure_graph
    from embedlab.measure.hubs import measure_hubs
    from embedlab.measure.neighbors import neighbor_lists

    checked = counting(monkeypatch, front_door, "check_k")
    table = EmbeddingTable(np.random.default_rng(2).standard_normal((60, 4)))
    for call in (lambda: table.nearest([1, 2], 3, "dot"), lambda: table.nearest_to_vector([1.0, 0, 0, 0], 3),
                 lambda: neighbor_lists(table, [1, 2], 3), lambda: measure_hubs(table, 3),
                 lambda: measure_hubs(table, 3, queries=20), lambda: list(measure_graph(table, 3).blocks)):
        checked.clear()
        call()
        assert len(checked) == 1
    with pytest.raises(ValueError, match="k=60 is out of range"):
        Search(table, 60, "dot", ids=[0])
    assert Search(table, 60, "dot", vectors=np.ones((1, 4))).nearest("dot").ids.shape == (1, 60)  # V for vectors


def test_the_screen_is_chosen_inside_and_the_codes_built_through_the_tables_cache(monkeypatch):
    from embedlab.engine.neighbors import capability

    pytest.importorskip("numba")
    W = np.random.default_rng(3).standard_normal((500, 8)).astype(np.float32)
    monkeypatch.setattr(capability, "CODED_QUERIES", 100)
    monkeypatch.setattr(capability, "CODES_WORK", 0)  # a tiny table: as if the search were large
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"sse2"}))  # no AVX2: the float GEMM
    table = EmbeddingTable(W)
    assert {Search(table, 5, METRICS, ids=np.arange(200)).plan(m).screen for m in METRICS} == {"float"}
    assert table.resident().codes == 0
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2"}))
    assert capability.coded_queries(8) == 50  # D = 8 is narrow: codes pay from half as many queries
    assert Search(table, 5, "dot", ids=np.arange(49)).plan("dot").screen == "float"  # too few to build codes
    assert table.resident().codes == 0
    search = Search(table, 5, METRICS, ids=np.arange(200))  # enough: built once, in the table's cache
    assert table.resident().codes > 0 and {search.plan(m).screen for m in METRICS} == {"int16"}
    assert Search(table, 5, "dot", ids=[7]).plan("dot").screen == "int16"  # cached: used from then on
    for metric in METRICS:
        assert search.nearest(metric).ids.tolist() == brute_force(W, W[:200], 5, metric, np.arange(200))[0].tolist()


def test_a_budget_too_small_for_any_metric_names_the_largest_minimum_before_any_search(monkeypatch):
    from embedlab.errors import BudgetError

    W = np.random.default_rng(4).standard_normal((3000, 8))
    followed = counting(monkeypatch, front_door, "search_queries")
    minimum = {}
    for metric in METRICS:
        with pytest.raises(BudgetError) as one:
            Search(W, 5, metric, ids=np.arange(40), memory=1000)
        minimum[metric] = one.value.minimum
    with pytest.raises(BudgetError) as both:
        Search(W, 5, METRICS, ids=np.arange(40), memory=1000)
    assert both.value.minimum == max(minimum.values()) and not followed
    search = Search(W, 5, METRICS, ids=np.arange(40), memory=both.value.minimum)  # that one works for both
    assert all(search.plan(m).bytes <= both.value.minimum for m in METRICS)
    with pytest.raises(BudgetError):
        Search(W, 5, METRICS, ids=np.arange(40), memory=both.value.minimum - 1)


def test_blocks_of_the_planned_queries_and_what_was_not_planned():
    rng = np.random.default_rng(5)
    W = rng.standard_normal((80, 4))
    Q = rng.standard_normal((9, 4))
    search = Search(EmbeddingTable(W), 3, METRICS, ids=np.arange(20), vectors=Q)
    whole = search.nearest("dot", ids=search.ids)
    assert whole.ids.tolist() == brute_force(W, W[:20], 3, "dot", np.arange(20))[0].tolist()
    assert search.nearest("dot", ids=search.ids[5:12]).ids.tolist() == whole.ids[5:12].tolist()
    assert (search.nearest("cosine", vectors=search.vectors[2:4]).ids.tolist()
            == brute_force(W, Q[2:4], 3, "cosine")[0].tolist())
    assert search.vector_norms.tolist() == pytest.approx(np.linalg.norm(Q, axis=1).tolist(), rel=1e-15)
    with pytest.raises(ValueError, match="planned ids and vectors"):
        search.nearest("dot")
    with pytest.raises(ValueError, match="21 queries asked for, 20 planned"):
        search.nearest("dot", ids=np.arange(21))
    with pytest.raises(IndexError, match="token id -1 is out of range"):
        search.nearest("dot", ids=[-1])
    with pytest.raises(ValueError, match="not planned"):
        Search(W, 3, "cosine", ids=[0]).nearest("dot")
    with pytest.raises(ValueError, match="give the queries"):
        Search(W, 3)
    with pytest.raises(ValueError, match="not both"):
        Search(W, 3, ids=[0], every_row=True)


def test_memory_reports_the_budget_the_plans_made_and_the_resident_cost():
    from embedlab.engine.neighbors.defaults import DEFAULT_MEMORY

    table = EmbeddingTable(np.random.default_rng(6).standard_normal((100, 4)))
    search = Search(table, 4, ("dot", "cosine"), ids=np.arange(10))
    memory = search.memory()
    assert memory.budget == DEFAULT_MEMORY == 256 * 2**20 and memory.outputs == 10 * 4 * 16
    assert list(memory.plans) == ["dot", "cosine"] and memory.plans["dot"]["bytes"] == search.plan("dot").bytes
    assert memory.resident == table.resident().to_dict() and memory.resident["table"] == 100 * 4 * 8


@pytest.mark.torch
def test_a_device_is_a_place_the_session_runs_in():
    pytest.importorskip("torch")
    W = small_int_table(np.random.default_rng(7), 300, 6)
    on_torch = Search(W, 6, METRICS, ids=np.arange(0, 300, 7), device="cpu")
    here = Search(W, 6, METRICS, ids=np.arange(0, 300, 7))
    assert {(on_torch.plan(m).screen, on_torch.plan(m).workers) for m in METRICS} == {("float", 1)}
    for metric in METRICS:
        assert on_torch.nearest(metric).ids.tolist() == here.nearest(metric).ids.tolist()
        rows = np.concatenate([ids for _, _, ids, _ in Search(W, 6, metric, every_row=True, device="cpu")
                               .every_row(metric)])
        assert rows.tolist() == [REFERENCE[metric](W.tolist(), q, 6) for q in range(300)]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_a_query_longer_than_float64_holds_is_refused_not_answered(metric):
    # Its length, sqrt(1e308**2 + 1e308**2 + 1e308**2 + 5e307**2) ~ 1.80e308, is past float64's largest
    # number (1.797e308): by hand, the cosine's unit vector would be 0 and every score 0.0, a wrong list.
    import math

    big = np.zeros(4)
    big[:] = [1e308, 1e308, -1e308, 5e307]
    assert math.sqrt(3 + 0.25) * 1e308 > np.finfo(np.float64).max
    W = np.arange(80, dtype=np.float64).reshape(20, 4) - 40.0
    with pytest.raises(ValueError, match=r"query vector 0 is too long for float64"):
        Search(W, 3, metric, vectors=big)


def test_a_block_of_vectors_outside_the_planned_lengths_is_refused():
    W = np.random.default_rng(3).standard_normal((30, 4)).astype(np.float32)
    planned = np.ones((5, 4))  # lengths 2.0
    search_ = Search(W, 3, "dot", vectors=planned)
    assert search_.nearest("dot", vectors=planned[:2]).ids.shape == (2, 3)  # a block of the planned queries
    with pytest.raises(ValueError, match=r"query vector 0 of this block has length 1\.41421e\+200, outside"):
        search_.nearest("dot", vectors=np.full((1, 4), 1e200) / np.sqrt(2))
    with pytest.raises(ValueError, match=r"query vector 0 contains NaN"):
        search_.nearest("dot", vectors=np.full((1, 4), np.nan))


def test_a_plain_array_with_a_row_of_subnormal_length_is_refused_naming_the_row():
    # 1e-320 * (1, 2, 3, 4) has length about 5.5e-320, below float64's smallest normal 2.2e-308:
    # EmbeddingTable refuses that row when it is made; a plain array meets the same rule at the door.
    W = np.random.default_rng(4).standard_normal((20, 4))
    W[6] = 1e-320 * np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=r"row 6 of the table is too short for float64"):
        Search(W, 5, "cosine", ids=[0, 1])
    with pytest.raises(ValueError, match=r"row 6 is too short for float64"):
        EmbeddingTable(W)


@pytest.mark.parametrize("n_queries", [1, 2, 15, 16, 40])  # fewer queries than D = 16 (scores scaled), then more (rows)
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_the_float_screen_scaling_scores_or_rows_lists_what_a_float64_full_sort_lists(n_queries, metric):
    rng = np.random.default_rng(n_queries)
    W = rng.integers(-4, 5, size=(900, 16)).astype(np.float32)  # small integers: every float64 score exact
    W[::7] *= 64.0  # long rows, each the same direction as a short one: exact cosine ties between ids
    W[3::11] = W[5]  # duplicated rows: exact ties of both metrics
    W[10] = 0.0  # a zero row: cosine 0.0
    ids = rng.choice(900, n_queries, replace=False)
    # 600 kB: one block of the queries (m of them) against blocks of 225 rows
    got_ids, got_scores = search(W, None, 12, metric, exclude=ids, screen="float", memory=600_000, workers=1)
    want_ids, want_scores = full_sort(W, W[ids], 12, metric, exclude=ids)
    assert got_ids.tolist() == want_ids.tolist()
    assert np.allclose(got_scores, want_scores, rtol=1e-15, atol=0) if metric == "cosine" else (
        np.array_equal(got_scores, want_scores))  # dot: integers, exact


def test_every_rows_memory_describes_the_self_join_that_ran_not_a_per_query_plan():
    screen, method = "bf16", "bf16 self-join"  # forced: it runs on any CPU (software bf16 where the units are missing)
    W = np.random.default_rng(3).standard_normal((300, 16)).astype(np.float32)
    search = Search(W, 4, ("cosine", "dot"), every_row=True, screen=screen, memory=2**26)
    assert [ids.shape for _, _, ids, _ in search.every_row("dot")][0][1] == 4
    plans = search.memory().plans
    for metric in ("cosine", "dot"):
        assert plans[metric]["method"] == method and plans[metric]["screen"] == screen
        assert plans[metric]["why"].startswith(method) and f"asked for (screen={screen})" in plans[metric]["why"]
        assert plans[metric]["queries"] == plans[metric]["rows"]  # block pairs: query blocks are row blocks


def test_the_reason_a_bf16_self_join_was_not_taken_names_what_stopped_it():
    from embedlab.engine.neighbors.every_row import bf16_refusal

    W = np.random.default_rng(4).standard_normal((64, 8)).astype(np.float32)
    norms = vector_norms(W)
    assert bf16_refusal(64, 8, 3, norms, memory=2**26, workers=1, screen="bf16") is None
    assert bf16_refusal(64, 8, 3, norms, memory=2**26, workers=1, screen="float") == "screen=float asked for"
    long = W.copy()
    long[5] *= 1e17  # one row far outside [1e-15, 1e15]: float32 scores would not certify it
    why = bf16_refusal(64, 8, 3, vector_norms(long), memory=2**26, workers=1, screen="bf16")
    assert "outside [1e-15, 1e15]" in why
    assert bf16_refusal(64, 8, 3, norms, memory=1024, workers=1, screen="bf16") == "its plan does not fit the memory budget"
