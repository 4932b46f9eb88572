"""The compiled loop that puts the AMX screen's survivors into a candidate pool (``pool_insert``).

The oracle is the pool's rule computed here from all the entries at once: an entry scoring at least its query's
final k-th best less two margins must be kept (in the pool or handed back), and one below the k-th best of what
the pool holds less two margins can be dropped; the slots stay sorted, each entry at most once. The screen's lists
with the loop, and without it (the NumPy way), are checked against a float64 full sort.
"""

from __future__ import annotations

import numpy as np
import pytest

from embedlab.engine.neighbors import amx_screen, pool_insert
from embedlab.engine.neighbors.pool import CandidatePool

pytestmark = pytest.mark.skipif(not pool_insert.compiled(), reason=f"not compiled here: {pool_insert.status()}")


def entries(rng, m, f, ties):
    """f entries (query, id, score) over m queries, many near-ties where ``ties``; ids unique per query."""
    qi = rng.integers(0, m, f)
    ids = np.arange(f, dtype=np.int64)  # every entry its own row
    scores = rng.integers(0, 40, f) / 40.0 if ties else rng.standard_normal(f)
    return qi, ids, scores


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("batches", [1, 7])
def test_the_pool_keeps_every_entry_the_rule_needs_and_only_real_ones(k, ties, batches):
    rng = np.random.default_rng(k * 10 + ties + batches)
    m, f = 13, 3000
    qi, ids, scores = entries(rng, m, f, ties)
    eps = rng.uniform(0.0, 0.05, m)
    pool = CandidatePool(m, k)
    left = []
    for part in np.array_split(np.arange(f), batches):
        back = pool_insert.insert(pool, qi[part], ids[part], scores[part], eps)
        left.extend(part[back].tolist())
    P = pool.ids.shape[1]
    for q in range(m):
        mine = np.flatnonzero(qi == q)
        kth = np.sort(scores[mine])[::-1][k - 1] if mine.size >= k else -np.inf  # the final k-th best, by hand
        need = set(ids[mine[scores[mine] >= kth - 2 * eps[q]]].tolist())
        held = pool.ids[q][pool.ids[q] >= 0]
        kept = set(held.tolist()) | {int(ids[i]) for i in left if qi[i] == q}
        assert need <= kept, f"query {q} lost {sorted(need - kept)[:5]}"
        assert len(held) == len(set(held.tolist())) and set(held.tolist()) <= set(ids[mine].tolist())
        filled = pool.ids[q] >= 0
        assert not np.any(filled[1:] & ~filled[:-1])  # filled slots first
        assert np.all(np.diff(pool.scores[q][filled]) <= 0)  # best first
        assert np.array_equal(pool.scores[q][filled], scores[held])  # each with its own score
        assert np.all(pool.scores[q][~filled] == -np.inf) and held.size <= P
    if ties:
        assert left, "the near-ties never filled a query's slots: the hand-back path went untested"


def test_entries_below_the_floor_and_nan_are_dropped():
    pool = CandidatePool(2, 2)
    back = pool_insert.insert(pool, np.array([0, 0, 0, 1, 1]), np.array([4, 5, 6, 7, 8]),
                              np.array([1.0, 0.9, 0.2, np.nan, 0.5]), np.array([0.1, 0.1]))
    assert back.size == 0
    assert pool.ids[0, :3].tolist() == [4, 5, -1]  # 0.2 < 0.9 - 2 * 0.1: dropped
    assert pool.ids[1, :2].tolist() == [8, -1]  # NaN never passes a floor


def test_bad_arrays_are_refused_by_name():
    pool = CandidatePool(2, 1)
    with pytest.raises(IndexError, match=r"qi must lie in \[0, 2\), got 2"):
        pool_insert.insert(pool, np.array([2]), np.array([0]), np.array([1.0]), np.zeros(2))
    with pytest.raises(ValueError, match="as long as each other"):
        pool_insert.insert(pool, np.array([0, 1]), np.array([0]), np.array([1.0]), np.zeros(2))


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("k", [1, 20])
def test_the_screen_lists_the_same_with_the_numpy_way(monkeypatch, metric, k):
    import functools

    from full_sort import full_sort

    from embedlab.engine.neighbors import capability, dispatch
    from embedlab.engine.neighbors.search import Search

    # The AMX screen whatever the CPU: the kernel where it runs, its NumPy twin elsewhere (else screen="bf16" is
    # torch's screen, which never calls the loop, and the two searches below would agree whatever it does).
    kernel = capability.bf16_kernel()  # the kernel that runs here (AMX, AVX512-BF16), or None
    monkeypatch.setattr(capability, "kernel_runs", lambda: True)
    monkeypatch.setattr(dispatch, "kernel_runs", lambda: True)
    monkeypatch.setattr(dispatch, "AmxScreen",
                        functools.partial(amx_screen.AmxScreen, kernel=kernel, software=kernel is None))
    rng = np.random.default_rng(5)
    W = rng.integers(-3, 4, size=(6000, 16)).astype(np.float32)  # small integers: many exact ties
    W[rng.choice(6000, 300, replace=False)] = W[7]  # 301 equal rows: more exact ties than a query's slots
    ids = np.arange(0, 6000, 61)
    want = full_sort(W.astype(np.float64), W[ids].astype(np.float64), k, metric, ids)[0]
    handed = []
    insert = pool_insert.insert

    def counted(pool, qi, *args):
        back = insert(pool, qi, *args)
        handed.append(back.size)
        return back

    monkeypatch.setattr(amx_screen.pool_insert, "insert", counted)
    compiled = Search(W, k, metric, ids=ids, screen="bf16").nearest(metric).ids
    assert handed and sum(handed) > 0, "the loop never ran, or never handed an entry back to CandidatePool.add"
    monkeypatch.setattr(amx_screen.pool_insert, "insert", lambda *args: None)  # as where it does not compile
    numpy_way = Search(W, k, metric, ids=ids, screen="bf16").nearest(metric).ids
    assert compiled.tolist() == want.tolist() == numpy_way.tolist()


@pytest.mark.parametrize("field, value, message", [
    ("ids", lambda a: a.astype(np.int32), r"ids must be a C-contiguous \(2, 10\) int64 array, got int32 \(2, 10\)"),
    ("scores", lambda a: a.astype(np.float32), r"scores must be .* float64 array, got float32"),
    ("ids", lambda a: np.asfortranarray(a), r"ids must be .*, got int64 \(2, 10\) not C-contiguous"),
    ("scores", lambda a: a[:, :5].copy(), r"scores must be a C-contiguous \(2, 10\) float64 array, got float64 \(2, 5\)"),
])
def test_a_pool_the_loop_cannot_write_is_refused_naming_what_it_is(field, value, message):
    # An int32 pool of ids was taken: the loop wrote 8-byte ids over two slots each (and past the end).
    pool = CandidatePool(2, 1)
    setattr(pool, field, value(getattr(pool, field)))
    before = getattr(pool, field).copy()
    with pytest.raises(ValueError, match=message):
        pool_insert.insert(pool, np.array([0, 1]), np.array([5, 6]), np.array([1.0, 2.0]), np.zeros(2))
    assert np.array_equal(getattr(pool, field), before)  # nothing written
