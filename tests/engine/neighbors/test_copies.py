"""Every row's lists of a table with large groups of identical rows (engine.neighbors.copies), id for id.

Expected lists come from the per-query search of every id (``Search(..., ids=arange(V))``,
which screens the whole table, copies and all: another path) and, for dot products on
integer tables, from a float64 full sort written in ``full_sort`` (exact there). The
groups ``find_copies`` finds are checked against groups written by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors.copies import find_copies
from embedlab.engine.neighbors.search import Search
from full_sort import self_full_sort
from searching import search


def with_copies(V=300, D=6, *, groups=((7, 60),), zero=0, seed=0, integers=True):
    """Random rows (small integers, or normal), each (row, count) of ``groups`` copied over ``count`` other rows,
    and ``zero`` zero rows."""
    rng = np.random.default_rng(seed)
    W = (rng.integers(-3, 4, size=(V, D)) if integers else rng.standard_normal((V, D))).astype(np.float32)
    sources = {row for row, _ in groups}
    free = [i for i in rng.permutation(V) if i not in sources]
    for row, count in groups:
        for i in free[:count]:
            W[i] = W[row]
        free = free[count:]
    W[free[:zero]] = 0.0
    return W


def every_row(W, k, metric, **options):
    """Every row's lists from ``Search(..., every_row=True)``: ids, scores (V, K), the search, the progress told."""
    told = []
    s = Search(W, k, metric, every_row=True, **options)
    blocks = list(s.every_row(metric, progress=told.append))
    assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]] and blocks[-1][1] == len(W)
    return np.concatenate([b[2] for b in blocks]), np.concatenate([b[3] for b in blocks]), s, sum(told)


def test_groups_are_rows_with_the_very_same_bits():
    W = np.zeros((9, 2), dtype=np.float32)
    W[[0, 3, 4, 8]] = [1.0, 2.0]  # a group of four
    W[1] = [2.0, 1.0]  # the same length, other values: no copy
    W[2] = [0.0, 1.0]
    W[5] = [-0.0, 1.0]  # the same values as row 2 but not the same bits: a group of its own kind, not row 2's
    W[6] = [0.0, 1.0]  # row 2's copy
    W[7] = [-0.0, 1.0]  # row 5's copy
    norms = vector_norms(W)
    found = find_copies(W, norms, larger_than=3)
    assert found.keep.tolist() == [0, 1, 2, 5]
    assert found.first.tolist() == [0, 1, 2, 0, 0, 3, 2, 3, 0]
    assert {p: g.tolist() for p, g in found.groups.items()} == {0: [0, 3, 4, 8], 2: [2, 6], 3: [5, 7]}
    assert (found.copies, found.largest) == (5, 4)
    assert find_copies(W, norms, larger_than=4) is None  # no group outgrows a pool of 4
    assert find_copies(np.eye(3), np.ones(3), larger_than=0) is None  # equal lengths, no copies


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("case", ["one group", "three groups and zero rows", "groups as large as the table",
                                  "every row the same", "k beyond the smaller table"])
def test_lists_equal_the_per_query_search_of_every_id(metric, case):
    V, k = 240, 5
    W = {"one group": lambda: with_copies(V, groups=((7, 80),)),
         "three groups and zero rows": lambda: with_copies(V, groups=((7, 40), (100, 30), (3, 25)), zero=30),
         "groups as large as the table": lambda: with_copies(V, groups=((7, 120), (9, 117))),
         "every row the same": lambda: np.tile(np.float32([1.0, -2.0, 0.5]), (V, 1)),
         "k beyond the smaller table": lambda: with_copies(V, groups=((7, 230),))}[case]()
    if case == "k beyond the smaller table":
        k = 20  # more than the smaller table's other rows (9), fewer than the group (231) less a pool (48)
    ids, scores, s, told = every_row(W, k, metric)
    assert s._copies is not None and told == V
    want_ids, want_scores = search(W, None, k, metric, exclude=np.arange(V), screen="float")
    assert ids.tolist() == want_ids.tolist()
    assert scores.tobytes() == want_scores.tobytes()
    if metric == "dot":  # integer rows: float64 computes every dot product exactly
        assert ids.tolist() == self_full_sort(W, k, metric)[0].tolist()


@pytest.mark.parametrize("screen", ["float", "bf16"])
def test_the_screens_and_both_metrics_at_once(screen):
    pytest.importorskip("torch")
    W = with_copies(400, 8, groups=((11, 150), (12, 60)), zero=20, seed=3, integers=False)
    W = (W.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # bfloat16 values
    s = Search(W, 9, ("cosine", "dot"), every_row=True, screen=screen)
    for metric in ("dot", "cosine"):
        got = [b for b in s.every_row(metric)]
        ids, scores = np.concatenate([b[2] for b in got]), np.concatenate([b[3] for b in got])
        want_ids, want_scores = search(W, None, 9, metric, exclude=np.arange(400), screen="float")
        assert ids.tolist() == want_ids.tolist() and scores.tobytes() == want_scores.tobytes()
        memory = s.memory()
        assert "without its 229 copies" in memory.plans[metric]["why"]
        small = (400 - 229) * 8 * 4  # the smaller table's bytes (float32)
        assert memory.resident["table"] == W.nbytes + small and memory.outputs == 400 * 9 * 16


def test_on_a_torch_device():
    pytest.importorskip("torch")
    W = with_copies(200, groups=((5, 90),), zero=10, seed=4)
    for metric in ("cosine", "dot"):
        ids, scores, s, told = every_row(W, 4, metric, device="cpu")
        want_ids, want_scores = search(W, None, 4, metric, exclude=np.arange(200), screen="float")
        assert s._copies is not None and told == 200
        assert ids.tolist() == want_ids.tolist() and scores.tobytes() == want_scores.tobytes()


def test_lengths_float64_cannot_rank_are_refused_as_on_any_table():
    W = np.random.default_rng(0).standard_normal((100, 2))
    W[10:60] = W[0] = [1e160, 1e160]  # a group of 51: the dot product of two of its rows overflows
    with pytest.raises(ValueError, match="overflow"):
        Search(W, 3, "dot", every_row=True)
    with pytest.raises(ValueError, match="overflow"):
        Search(np.full((30, 2), 1e200), 3, "dot", every_row=True)  # every row the same, nothing searched
    with pytest.raises(ValueError, match="screen"):
        Search(np.ones((30, 2)), 3, "dot", every_row=True, screen="bogus")


def test_a_group_no_larger_than_a_pool_is_searched_as_it_is():
    W = with_copies(200, groups=((7, 17),))  # 18 identical rows; k = 5: pools of 18 slots
    ids, _, s, _ = every_row(W, 5, "dot")
    assert s._copies is None
    assert ids.tolist() == self_full_sort(W, 5, "dot")[0].tolist()


def test_what_a_search_by_copies_refuses():
    """(That it closes its smaller table's cluster: test_cluster, the front door's every-row search.)"""
    W = with_copies(100, groups=((7, 40),))
    with Search(W, 3, "dot", every_row=True) as s:
        with pytest.raises(ValueError, match="every_row"):
            s.nearest("dot")
        with pytest.raises(ValueError, match="not planned"):
            s.every_row("cosine")
    same = Search(np.ones((30, 2)), 3, "dot", every_row=True)  # one row, thirty times
    with pytest.raises(ValueError, match="every row of this table is the same row"):
        same.plan("dot")
    plans = same.memory().plans
    assert set(plans) == {"dot"} and plans["dot"]["bytes"] == 0
    assert "every row is the same row (30 copies)" in plans["dot"]["why"]
    assert np.concatenate([b[2] for b in same.every_row("dot")]).tolist() == [
        [j for j in range(4) if j != i][:3] for i in range(30)]
