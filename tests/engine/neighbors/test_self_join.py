"""The self-join (engine.neighbors.self_join) and every row's lists (``Search.every_row``) against a float64 full sort.

The lists must be the per-query search's of every id (``Search(..., ids=arange(V))``)
id for id and score for score; both are checked against a NumPy float64 full sort
(``full_sort.self_full_sort``), and against the reference on the handed cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab import embed
from embedlab.errors import SizeError
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors.defaults import DEFAULT_MEMORY
from embedlab.engine.neighbors.every_row import choose_method
from embedlab.engine.neighbors.plan import plan_self_join
from embedlab.engine.neighbors.precision import gemm_dtype
from embedlab.engine.neighbors.search import Search
from embedlab.engine.neighbors.self_join import self_join
from full_sort import self_full_sort
from searching import search
from strategies import dyadic_tables


def planned(W, k, metric, *, memory=DEFAULT_MEMORY, workers=1, block=None):
    """(the self-join's plan, the rows' lengths) as the front door makes them, ``block`` rows a block if given."""
    norms = vector_norms(W)
    itemsize = np.dtype(gemm_dtype(W.dtype, metric, norms, norms)).itemsize
    return plan_self_join(len(W), W.shape[1], k, itemsize, memory, workers=workers, block=block), norms


def joined(W, k, metric, *, progress=None, **options):
    """The self-join's blocks, checked to come in order and cover every row, joined: (V, K) ids and scores."""
    plan, norms = planned(W, k, metric, **options)
    blocks = list(self_join(W, k, metric, plan, row_norms=norms, progress=progress))
    assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(W)
    return np.concatenate([b[2] for b in blocks]), np.concatenate([b[3] for b in blocks])


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(W=dyadic_tables(max_rows=48, max_dim=6, max_pool=3), data=st.data())
def test_equals_search_id_for_id_and_a_float64_full_sort(W, data):
    V = len(W)
    metric = data.draw(st.sampled_from(["cosine", "dot"]))
    k = data.draw(st.integers(1, V - 1))
    block = data.draw(st.integers(1, V))  # small blocks: many block pairs, the transpose fed often
    workers = data.draw(st.sampled_from([1, 2]))
    ids, scores = joined(W, k, metric, block=block, workers=workers)
    want_ids, want_scores = search(W, None, k, metric, exclude=np.arange(V), screen="float")
    assert same_bits(ids, want_ids)
    assert same_bits(scores, want_scores)  # score for score, -0.0 included
    full_ids, full_scores = self_full_sort(W, k, metric)
    assert ids.tolist() == full_ids.tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_random_table_with_long_rows_in_many_block_pairs(metric, block):
    rng = np.random.default_rng(5)
    W = rng.standard_normal((150, 12)).astype(np.float32)
    W[rng.integers(0, 150, 8)] *= 7.0  # long rows that climb dot lists
    W[40] = W[3]  # a duplicate under another id
    W[77] = 0.0  # a zero row
    ids, scores = joined(W, 9, metric, block=block)
    full_ids, full_scores = self_full_sort(W, 9, metric)
    assert ids.tolist() == full_ids.tolist()
    assert np.allclose(scores, full_scores, rtol=1e-12, atol=1e-12)


def test_more_equal_rows_than_a_pool_holds_are_settled_by_id():
    W = np.zeros((90, 3))
    W[:, 0] = 1.0  # 90 equal rows: every score ties, far more than 2k + 8 pool slots
    W[60] = [0.0, 2.0, 0.0]
    for metric in ("cosine", "dot"):
        ids, scores = joined(W, 5, metric, block=16)
        for q in range(90):
            assert ids[q].tolist() == REF[metric](W.tolist(), q, 5)


REF = {"cosine": embed.nearest_by_cosine, "dot": embed.nearest_by_dot}


def test_handed_cases_c11_c12_zero_rows_and_cosine_is_not_dot():
    # C11: zero rows score 0.0, ties at 0 by the smaller id; no NaN, no warning (warnings are errors here).
    c11 = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    ids, scores = joined(c11, 3, "cosine", block=1)
    assert ids.tolist() == [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]
    assert not np.isnan(scores).any() and scores[1].tolist() == [0.0, 0.0, 0.0]
    # C12: T = [[1,0],[10,1],[0,1]]; the query by id 0 is the vector [1, 0] with itself left out.
    c12 = np.array([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
    cos_ids, cos_scores = joined(c12, 2, "cosine", block=2)
    dot_ids, dot_scores = joined(c12, 2, "dot", block=2)
    assert cos_ids[0].tolist() == [1, 2] and np.isclose(cos_scores[0, 0], 0.9950371902)
    assert dot_ids[0].tolist() == [1, 2] and dot_scores[0].tolist() == [10.0, 0.0]
    assert dot_ids[2].tolist() == [1, 0]  # dot of [0, 1] with row 1 is 1, with row 0 is 0


def test_half_precision_table_c10():
    W = np.array([[300, 300, 300, 300], [1000, -1000, 1000, -1000], [1, 2, 3, 4], [-300, 300, -300, 300]],
                 dtype=np.float16)  # squares overflow float16: lengths must not
    for metric in ("cosine", "dot"):
        ids, _ = joined(W, 3, metric, block=2)
        assert ids.tolist() == [REF[metric](W.astype(np.float64).tolist(), q, 3) for q in range(4)]


def test_memory_budget_counts_the_pools_and_refuses_too_small():
    plan = plan_self_join(400_000, 50, 10, 4, 256 * 2**20, workers=2)
    # every query's pool (2k + 8 ids and scores), bar, margin, inverse length, a waiting survivor
    assert plan.pools == 400_000 * ((2 * 10 + 8) * 16 + 3 * 8 + 24)
    assert plan.bytes <= 256 * 2**20
    with pytest.raises(SizeError, match="too small for the whole table's scan"):
        plan_self_join(400_000, 50, 10, 4, 64 * 2**20)
    W = np.random.default_rng(0).standard_normal((300, 4))
    with pytest.raises(SizeError):
        planned(W, 5, "dot", memory=10_000)
    # a small budget still gives the same lists, in smaller blocks
    ids, _ = joined(W, 5, "dot", memory=150_000)
    assert ids.tolist() == search(W, None, 5, "dot", exclude=np.arange(300))[0].tolist()


@pytest.mark.parametrize("method", ["self-join", "per-query"])
def test_every_row_by_either_way_lists_what_the_per_query_search_lists(method, monkeypatch):
    W = np.random.default_rng(1).standard_normal((200, 6))
    monkeypatch.setattr("embedlab.engine.neighbors.search.choose_method", lambda *args, **kwargs: method)
    search_ = Search(W, 4, "cosine", every_row=True)
    ids = np.concatenate([b[2] for b in search_.every_row("cosine")])
    assert ids.tolist() == search(W, None, 4, "cosine", exclude=np.arange(200))[0].tolist()
    assert ids.tolist() == self_full_sort(W, 4, "cosine")[0].tolist()


def test_one_query_per_row_where_the_pools_do_not_fit_or_the_integer_screen_runs():
    norms = np.linalg.norm(np.random.default_rng(1).standard_normal((200, 6)), axis=1)
    assert choose_method(200, 6, 4, norms, memory=1000, workers=1) == "per-query"
    assert choose_method(200, 6, 4, norms * 1e20, memory=2**30, workers=1) == "self-join"  # int16 cannot certify


def test_bad_input_is_refused_by_the_front_door_before_any_block():
    W = np.eye(3)
    with pytest.raises(ValueError, match="k=3 is out of range"):
        Search(W, 3, "cosine", every_row=True)
    with pytest.raises(ValueError, match="unknown metric"):
        Search(W, 1, "l2", every_row=True)
    with pytest.raises(ValueError, match="NaN or infinity"):
        Search(np.array([[1.0, np.nan], [0.0, 1.0]]), 1, "dot", every_row=True)
    with pytest.raises(ValueError, match="overflow float64"):
        Search(np.array([[1e200, 0.0], [1e200, 1.0]]), 1, "dot", every_row=True)
    with pytest.raises(ValueError, match="every_row=True"):
        Search(W, 1, "dot", ids=[0]).every_row("dot")


def test_progress_counts_every_row_and_the_table_is_not_changed():
    W = np.random.default_rng(2).standard_normal((50, 3))
    before = W.copy()
    seen = []
    joined(W, 2, "dot", block=8, progress=seen.append)
    assert sum(seen) == 50 and len(seen) == 7
    assert np.array_equal(W, before)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_traced_memory_stays_within_the_budget(workers):
    import tracemalloc

    rng = np.random.default_rng(5)
    V, D, k = 6_000, 32, 10
    W = rng.standard_normal((V, D)).astype(np.float32)
    norms = np.linalg.norm(W.astype(np.float64), axis=1)
    memory = 4 * 2**20  # pools of 3 MB and blocks of rows
    plan = plan_self_join(V, D, k, 4, memory, workers=workers)
    assert plan.block < V  # many block pairs
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _, _, ids, scores in self_join(W, k, "cosine", plan, row_norms=norms):
            del ids, scores  # handed out: a writer would stream them away
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    handed_out = plan.block * k * 16 * 2  # the block handed out and the one being made
    assert peak <= memory + handed_out, f"peak {peak} bytes over the budget of {memory}"
