"""The self-join on bfloat16 products (engine.neighbors.bf16_join) against the per-query float64 oracle, id for id.

``screen="bf16"`` forces it on any CPU: torch's bfloat16 matmul runs in software where
the matrix units are missing, the same arithmetic. Every list must be the per-query
search's of every id (``Search(..., ids=arange(V), screen="float")``), id for id and score
for score, and a float64 full sort's id for id (``full_sort.self_full_sort``, exact on
dyadic tables). The bound it filters with (``precision.bf16_value_margin``) is checked
against bfloat16 products torch computes and float64 scores NumPy computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import bf16_join, capability, every_row
from embedlab.engine.neighbors.cluster import merge_lists
from embedlab.engine.neighbors.every_row import choose_method, join_blocks, pair_scans, step_bars, step_lists
from embedlab.engine.neighbors.plan import plan_self_join
from embedlab.engine.neighbors.precision import bf16_value_margin
from embedlab.engine.neighbors.search import Search
from embedlab.errors import BudgetError
from full_sort import self_full_sort
from searching import search
from strategies import dyadic_tables

torch = pytest.importorskip("torch")


def bf16_lists(W, k, metric, *, memory=2**26, block=None, workers=1):
    """Every row's lists by the bf16 self-join as planned with ``block`` rows a block: (V, K) ids and scores."""
    norms = vector_norms(W)
    plan = plan_self_join(len(W), W.shape[1], k, 4, memory, workers=workers, block=block, screen="bf16")
    blocks = list(join_blocks(W, k, metric, plan, row_norms=norms))
    assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(W)
    return np.concatenate([b[2] for b in blocks]), np.concatenate([b[3] for b in blocks])


def oracle(W, k, metric):
    """The per-query float search of every id (float64 rescored): ids, scores (V, K)."""
    return search(W, None, k, metric, exclude=np.arange(len(W)), screen="float")


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def to_bf16(W):
    """W's entries rounded to bfloat16, as float32: a bf16 checkpoint's table as it is read."""
    return torch.from_numpy(np.ascontiguousarray(W, dtype=np.float32)).bfloat16().float().numpy()


def hostile(seed=0, V=300, D=24, *, bf16=False):
    """Random rows with long rows, duplicates, zero rows and near-ties closer than bfloat16 resolves."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((V, D)).astype(np.float32)
    W[rng.integers(0, V, 10)] *= 6.0  # long rows that climb dot lists
    W[40] = W[3]  # a duplicate under another id
    W[41] = W[3]
    W[77] = 0.0  # zero rows
    W[78] = 0.0
    base = W[5].copy()
    for i in range(100, 130):  # 30 rows within 2**-12 of each other: bf16 scores tie, exact scores do not
        W[i] = base + rng.standard_normal(D).astype(np.float32) * 2.0**-12
    return to_bf16(W) if bf16 else W


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("bf16", [False, True], ids=["float32 rows", "bf16 rows"])
@pytest.mark.parametrize("block", [1, 7, 64, 299, None])
def test_equals_the_per_query_search_and_a_full_sort(metric, bf16, block):
    W = hostile(bf16=bf16)
    ids, scores = bf16_lists(W, 9, metric, block=block)
    want_ids, want_scores = oracle(W, 9, metric)
    assert same_bits(ids, want_ids)
    assert same_bits(scores, want_scores)
    full_ids, full_scores = self_full_sort(W, 9, metric)
    assert ids.tolist() == full_ids.tolist()


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(W=dyadic_tables(max_rows=48, max_dim=6, max_pool=3), data=st.data())
def test_dyadic_tables_id_for_id(W, data):
    V = len(W)
    metric = data.draw(st.sampled_from(["cosine", "dot"]))
    k = data.draw(st.integers(1, V - 1))
    block = data.draw(st.integers(1, V))
    norms = vector_norms(W)
    nonzero = norms[norms > 0]
    if nonzero.size and (nonzero.min() < 1e-15 or nonzero.max() > 1e15):
        return  # the front door plans float64 there, never bf16 (test_lengths_outside_float32_keep_the_float_join)
    ids, scores = bf16_lists(W, k, metric, block=block)
    want_ids, want_scores = oracle(W, k, metric)
    assert same_bits(ids, want_ids) and same_bits(scores, want_scores)
    assert ids.tolist() == self_full_sort(W, k, metric)[0].tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_all_rows_equal_are_listed_by_id(metric):
    W = np.tile(np.array([[0.5, -1.0, 2.0]], dtype=np.float32), (70, 1))  # more equal rows than a pool holds
    ids, scores = bf16_lists(W, 5, metric, block=16)
    want = [[j for j in range(7) if j != i][:5] for i in range(70)]
    assert ids.tolist() == want
    assert same_bits(scores, oracle(W, 5, metric)[1])


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_torch_filter_without_numba_gives_the_same_lists(metric, monkeypatch):
    W = hostile(seed=2, V=200, bf16=True)
    want = bf16_lists(W, 6, metric, block=50)
    monkeypatch.setattr(bf16_join, "_kernel", lambda: None)  # the filter in torch's ops
    got = bf16_lists(W, 6, metric, block=50)
    assert same_bits(got[0], want[0]) and same_bits(got[1], want[1])
    assert same_bits(got[0], oracle(W, 6, metric)[0])


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_table_rounded_once_or_per_block_same_lists(metric):
    W = hostile(seed=3, V=256, D=32)
    norms = vector_norms(W)
    big = plan_self_join(256, 32, 5, 4, 2**26, block=64, screen="bf16")
    small = plan_self_join(256, 32, 5, 4, big.bytes - 1, block=64, screen="bf16")
    assert big.whole and not small.whole  # 256 x 32 x 2 bytes fit beside the blocks only in the larger budget
    assert small.bytes == big.bytes - 256 * 32 * 2
    a = np.concatenate([b[2] for b in join_blocks(W, 5, metric, small, row_norms=norms)])
    b = np.concatenate([b[2] for b in join_blocks(W, 5, metric, big, row_norms=norms)])
    assert a.tolist() == b.tolist() == oracle(W, 5, metric)[0].tolist()


def steps_merged(W, k, plans, order, *, known=True):
    """Every row's lists from the self-join's steps run alone in ``order``, merged as the cluster's driver merges
    them (``cluster.merge_lists``), each step given the k-th best its rows reach so far (``known=True``),
    nothing (False), or ``known[metric]`` (V,): the k-th best each row reaches in the end, the tightest bar."""
    norms = vector_norms(W)
    V = len(W)
    edges = pair_scans(W, k, plans, norms)[0].edges
    first = {m: np.empty(V) for m in plans}
    for i in range(len(edges) - 1):
        for m, bars in step_bars(pair_scans(W, k, plans, norms), i).items():
            first[m][edges[i]:edges[i + 1]] = bars
    lists = {m: (np.full((V, k), V), np.full((V, k), -np.inf)) for m in plans}
    for i in order:
        a = edges[i]
        if isinstance(known, dict):
            reach = {m: known[m][a:] for m in plans}
        else:
            reach = {m: lists[m][1][a:, k - 1].copy() if known else np.full(V - a, -np.inf) for m in plans}
        parts = step_lists(pair_scans(W, k, plans, norms), i, {m: first[m][a:] for m in plans}, reach)
        for m, (rows, ids, scores) in parts.items():
            assert np.all(np.diff(rows) > 0) and ids.shape == scores.shape == (len(rows), k)
            merge_lists(*lists[m], rows, ids, scores)
    return {m: (ids, scores + 0.0) for m, (ids, scores) in lists.items()}


@pytest.mark.parametrize("screen", ["bf16", "float"])
@pytest.mark.parametrize("block", [1, 7, 64, 299])
def test_steps_alone_merged_in_any_order_are_the_join(screen, block):
    W = hostile(seed=4, V=150 if block == 1 else 300, D=16)
    k = 9
    plans = {m: plan_self_join(len(W), 16, k, 4, 2**26, block=block, screen=screen) for m in ("cosine", "dot")}
    nb = -(-len(W) // block)
    rng = np.random.default_rng(block)
    final = {m: oracle(W, k, m)[1][:, k - 1] for m in plans}  # (V,) each row's k-th best: the bar at its tightest
    for order, known in ((range(nb), True), (rng.permutation(nb), True), (range(nb - 1, -1, -1), False),
                         (rng.permutation(nb), final)):
        got = steps_merged(W, k, plans, order, known=known)
        for metric in plans:
            want_ids, want_scores = oracle(W, k, metric)
            assert same_bits(got[metric][0], want_ids) and same_bits(got[metric][1], want_scores)


@pytest.mark.parametrize("seed", range(8))
def test_steps_given_the_tightest_bar_keep_every_neighbour(seed):
    """Near-ties closer than bfloat16 resolves, lengths over twelve orders, and one column (every cosine exactly
    +-1, rounded by the screen): each step's bar raised from each row's final k-th best, the tightest a driver
    can know, keeps every neighbour (a bar raised by half the margin drops some of the one-column table's)."""
    rng = np.random.default_rng(seed)
    V, D, k = 120, 24, 3
    if seed >= 6:  # one column: scores tie at +-1 everywhere, the k-th best is one of them
        D, k = 1, 22
        W = rng.standard_normal((V, D)).astype(np.float32) * (10.0 ** rng.uniform(-6, 6, V)).astype(np.float32)[:, None]
    elif seed % 2:
        W = rng.standard_normal(D).astype(np.float32) + rng.standard_normal((V, D)).astype(np.float32) * 2.0**-14
        W[:40] = rng.standard_normal((40, D)).astype(np.float32)
    else:
        W = rng.standard_normal((V, D)).astype(np.float32) * (10.0 ** rng.uniform(-6, 6, V)).astype(np.float32)[:, None]
    block = V if seed == 7 else 7
    plans = {m: plan_self_join(V, D, k, 4, 2**26, block=block, screen="bf16") for m in ("cosine", "dot")}
    final = {m: oracle(W, k, m)[1][:, k - 1] for m in plans}
    got = steps_merged(W, k, plans, rng.permutation(-(-V // block)), known=final)
    for metric in plans:
        want_ids, want_scores = oracle(W, k, metric)
        assert same_bits(got[metric][0], want_ids) and same_bits(got[metric][1], want_scores)


def test_one_step_scores_each_block_pair_once(monkeypatch):
    W = hostile(seed=7, V=200, D=8, bf16=True)
    plans = {m: plan_self_join(200, 8, 5, 4, 2**26, block=50, screen="bf16") for m in ("cosine", "dot")}
    scans = pair_scans(W, 5, plans, vector_norms(W))
    products = []
    real = bf16_join._Products.get

    def get(self, key, compute):
        return real(self, key, lambda: products.append(key) or compute())

    monkeypatch.setattr(bf16_join._Products, "get", get)
    step_lists(scans, 1, {m: np.full(150, -np.inf) for m in plans}, {m: np.full(150, -np.inf) for m in plans})
    # step 1 of 4 blocks: pairs (1, 1), (1, 2), (1, 3) by their first rows, each one product for both metrics
    assert products == [(50, 50), (50, 100), (50, 150)]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_front_door_forced_bf16(metric):
    W = hostile(seed=5, V=400, D=20, bf16=True)
    s = Search(W, 8, metric, every_row=True, screen="bf16")
    ids = np.concatenate([b[2] for b in s.every_row(metric)])
    assert ids.tolist() == oracle(W, 8, metric)[0].tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_on_a_local_cluster(local_cluster, metric):
    distributed = pytest.importorskip("distributed")
    W = hostile(seed=6, V=500, D=12)
    with distributed.Client(local_cluster) as client:
        with Search(W, 7, metric, every_row=True, screen="bf16", scheduler=client, memory=2**22) as s:
            assert s._pairs[metric].screen == "bf16" and s._pairs[metric].block < 500  # several tasks
            blocks = list(s.every_row(metric))
    assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]] and blocks[-1][1] == 500
    ids, scores = np.concatenate([b[2] for b in blocks]), np.concatenate([b[3] for b in blocks])
    want_ids, want_scores = oracle(W, 7, metric)
    assert same_bits(ids, want_ids) and same_bits(scores, want_scores)


# -- the bound ---------------------------------------------------------------------------

@pytest.mark.parametrize("exact", [True, False], ids=["bf16 rows", "float32 rows"])
@pytest.mark.parametrize("D", [3, 64, 1024])
def test_value_margin_bounds_torch_bf16_products(exact, D):
    rng = np.random.default_rng(D)
    W = rng.standard_normal((300, D)).astype(np.float32) * rng.uniform(0.01, 30, (300, 1)).astype(np.float32)
    W[:20] = W[20] + rng.standard_normal((20, D)).astype(np.float32) * 1e-3  # near-parallel rows: scores near |q||w|
    if exact:
        W = to_bf16(W)
    norms = np.linalg.norm(W.astype(np.float64), axis=1)
    B = torch.from_numpy(W).bfloat16()
    S = (B @ B.T).double().numpy()  # what the screen computes for dot, widened exactly
    exact_dot = W.astype(np.float64) @ W.astype(np.float64).T
    reach = np.full(300, norms.max())
    A, r = bf16_value_margin("dot", D, norms, reach, exact_inputs=exact)
    assert np.all(np.abs(S - exact_dot) <= A[:, None] + r * np.abs(S))
    inv = torch.from_numpy((1 / norms).astype(np.float32))
    C = ((B @ B.T).float() * inv[:, None] * inv[None, :]).double().numpy()  # fl32(fl32(S r_i) r_j)
    cos = exact_dot / np.outer(norms, norms)
    A, r = bf16_value_margin("cosine", D, norms, reach, float(norms.min()), exact_inputs=exact)
    assert np.all(np.abs(C - cos) <= A[:, None] + r * np.abs(C))


def test_value_margin_is_tighter_where_scores_are_small():
    A, r = bf16_value_margin("cosine", 4096, np.ones(1), np.ones(1), exact_inputs=True)
    assert A[0] + r * 0.07 < 0.0117 / 10  # bf16_margin's uniform cosine bound is about 0.0117


# -- the choice ----------------------------------------------------------------------------

def test_choose_method_forced_and_auto(monkeypatch):
    bf16_rows = to_bf16(np.random.default_rng(0).standard_normal((1000, 64)))
    float_rows = bf16_rows + np.float32(2.0**-12)  # most entries no longer bfloat16 values
    norms = vector_norms(bf16_rows)
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1, screen="bf16") == "bf16 self-join"
    monkeypatch.setattr(every_row, "fast_bf16", lambda: True)
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1, rows=bf16_rows) == "bf16 self-join"
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1, rows=float_rows) != "bf16 self-join"
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1) != "bf16 self-join"  # rows not given
    monkeypatch.setattr(every_row, "fast_bf16", lambda: False)
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1, rows=bf16_rows) != "bf16 self-join"
    assert choose_method(1000, 64, 10, norms, memory=2**26, workers=1, screen="float") != "bf16 self-join"


def test_lengths_outside_float32_keep_the_float_join():
    W = np.ones((50, 3)) * 1e20  # float32 cannot scale these: float64 scores, never bf16
    W[1] *= 2
    assert choose_method(50, 3, 4, vector_norms(W), memory=2**26, workers=1, screen="bf16") != "bf16 self-join"
    with pytest.raises(ValueError, match="screen='bf16' certifies lengths"):  # the front door refuses it, as for queries
        Search(W, 4, "cosine", every_row=True, screen="bf16")
    ids = np.concatenate([b[2] for b in Search(W, 4, "cosine", every_row=True).every_row("cosine")])
    assert ids.tolist() == self_full_sort(W, 4, "cosine")[0].tolist()


def test_fast_bf16_needs_the_flags(monkeypatch):
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert capability.fast_bf16() is False
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    assert capability.fast_bf16() is torch.backends.mkldnn.is_available()


def test_plan_refuses_bf16_with_float64_scores_and_small_budgets():
    with pytest.raises(ValueError, match="bf16 with 4-byte scores"):
        plan_self_join(100, 8, 3, 8, 2**26, screen="bf16")
    with pytest.raises(BudgetError):
        plan_self_join(100_000, 8, 3, 4, 2**20, screen="bf16")
    plan = plan_self_join(128_256, 4_096, 10, 4, 2**31, workers=2, screen="bf16")
    assert plan.whole and plan.bytes <= 2**31 and plan.pools >= 128_256 * 4_096 * 2  # the bf16 table counted


def test_bf16_exact():
    W = to_bf16(np.random.default_rng(0).standard_normal((5000, 7)))
    assert bf16_join.bf16_exact(W)
    W[4999, 6] = np.nextafter(W[4999, 6], np.float32(9))  # one float32 step: not a bfloat16
    assert not bf16_join.bf16_exact(W)
    assert not bf16_join.bf16_exact(np.array([[1.0 + 2**-30]]))  # float64 beyond float32


# -- both metrics from one product per pair ----------------------------------------------

def test_joint_scan_equals_each_metric_alone_in_any_order():
    W = hostile(seed=8, V=350, D=16, bf16=True)
    search = Search(W, 6, every_row=True, screen="bf16", memory=2**26)
    assert search._joint is not None  # both metrics fit one scan
    seen = []
    got = {m: np.concatenate([b[2] for b in search.every_row(m, progress=seen.append)]) for m in ("dot", "cosine")}
    assert sum(seen) == 2 * 350  # the held metric's blocks are counted when handed out
    again = np.concatenate([b[2] for b in search.every_row("dot")])  # asked again: the scan runs again
    for m in ("cosine", "dot"):
        assert got[m].tolist() == oracle(W, 6, m)[0].tolist()
    assert again.tolist() == got["dot"].tolist()


def test_joint_scan_counts_its_memory_and_is_skipped_where_it_does_not_fit():
    W = hostile(seed=9, V=300, D=16)
    alone = {m: plan_self_join(300, 16, 5, 4, 2**26, screen="bf16") for m in ("cosine", "dot")}
    need = every_row.joint_plans(alone, 300, 16, 5, 2**26)["dot"].bytes
    table = 300 * 16 * 2
    assert need == alone["dot"].bytes + alone["dot"].pools - table + 16 * 300 * 5
    assert every_row.joint_plans(alone, 300, 16, 5, need - 1) is None
    assert every_row.joint_plans({"dot": alone["dot"]}, 300, 16, 5, 2**26) is None  # one metric: nothing to share
    search = Search(W, 5, every_row=True, screen="bf16", memory=2**18)
    assert search._joint is None or search._pairs["dot"].bytes <= 2**18
    assert np.concatenate([b[2] for b in search.every_row("cosine")]).tolist() == oracle(W, 5, "cosine")[0].tolist()


# -- the table's cached bfloat16 rows: one copy ----------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("bf16", [False, True], ids=["float32 rows", "bf16 rows"])
def test_the_join_reads_the_tables_cached_rows_as_they_are(metric, bf16, monkeypatch):
    from embedlab.engine.neighbors.bf16_screen import bf16_rows

    W = hostile(seed=7, V=260, D=24, bf16=bf16)
    rows = bf16_rows(W)
    norms = vector_norms(W)
    plan = plan_self_join(260, 24, 6, 4, 2**26, block=64, screen="bf16")
    want = [np.concatenate([b[i] for b in join_blocks(W, 6, metric, plan, row_norms=norms)]) for i in (2, 3)]
    monkeypatch.setattr(bf16_join.Bf16SelfJoin, "_convert", lambda *a: pytest.fail("rows converted again"))
    monkeypatch.setattr(bf16_join, "bf16_exact", lambda *a: pytest.fail("the rows' exact flag was not used"))
    scan = bf16_join.Bf16SelfJoin(W, 6, metric, norms, plan, rows=rows)
    assert scan.table.data_ptr() == rows.ctypes.data and scan.exact_inputs is bf16  # the same memory: one copy
    got = [np.concatenate([b[i] for b in join_blocks(W, 6, metric, plan, row_norms=norms, bf16=rows)]) for i in (2, 3)]
    assert same_bits(got[0], want[0]) and same_bits(got[1], want[1])
    assert got[0].tolist() == self_full_sort(W, 6, metric)[0].tolist()


def test_the_front_door_hands_the_join_the_tables_rows(monkeypatch):
    from embedlab.engine.table import EmbeddingTable

    W = hostile(seed=8, V=300, D=20, bf16=True)
    table = EmbeddingTable(W)
    table.bf16_rows()  # built by an earlier bf16 search: the table holds them
    monkeypatch.setattr(bf16_join.Bf16SelfJoin, "_convert", lambda *a: pytest.fail("rows converted again"))
    for metric in ("cosine", "dot"):
        s = Search(table, 5, metric, every_row=True, screen="bf16")
        ids = np.concatenate([b[2] for b in s.every_row(metric)])
        assert ids.tolist() == self_full_sort(W, 5, metric)[0].tolist()
    both = Search(table, 5, ("cosine", "dot"), every_row=True, screen="bf16")  # one product for both metrics
    assert [b[2].tolist() for b in both.every_row("dot")] == [b[2].tolist() for b in Search(
        table, 5, "dot", every_row=True, screen="bf16").every_row("dot")]


def test_float64_rows_are_rounded_to_bfloat16_once_not_through_float32():
    # 1 + 2**-8 + 2**-40 lies just above the midpoint between bfloat16's 1 and 1 + 2**-7: rounded once it goes up;
    # through float32 it first lands on the midpoint 1 + 2**-8, which ties to even, down to 1 (two roundings).
    W = np.array([[1 + 2**-8 + 2**-40, 1.0], [1.0, 2.0], [3.0, 1.0]])
    norms = np.linalg.norm(W, axis=1)
    plan = plan_self_join(3, 2, 1, 4, 2**26, screen="bf16")  # bf16 screens score in float32
    scan = bf16_join.Bf16SelfJoin(W, 1, "dot", norms, plan)
    assert scan._convert(slice(0, 1)).float()[0, 0].item() == 1 + 2**-7
