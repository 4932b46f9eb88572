"""k-occurrence (embedlab.measure.hubs) against hand counts and a brute-force second count."""

from __future__ import annotations

import numpy as np
import pytest

from embedlab import embed
from embedlab.measure.hubs import measure_hubs
from embedlab.engine.table import EmbeddingTable

# By hand, k = 1. Dot: queries 0, 1 and 3 pick the long row 2; query 2 picks row 3 (5.5 > 5).
# Cosine: query 0 -> 3 (0.995), 1 -> 2 (0.707), 2 -> 3 (0.774), 3 -> 0 (0.995).
HAND = [[1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [1.0, 0.1]]


def rank_average(x):
    """Ranks 1..n, ties sharing their average rank (the definition Spearman uses)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):
        same = x == value
        ranks[same] = ranks[same].mean()
    return ranks


def spearman(x, y):
    """Pearson correlation of average ranks: a second implementation of Spearman's rho."""
    return float(np.corrcoef(rank_average(x), rank_average(y))[0, 1])


def test_hand_counted_table():
    r = measure_hubs(EmbeddingTable.from_rows(HAND), 1, top=2)
    assert r.k_occurrence["dot"].tolist() == [0, 0, 3, 1]
    assert r.k_occurrence["cosine"].tolist() == [1, 0, 1, 2]
    dot, cos = r.metrics["dot"], r.metrics["cosine"]
    assert [(h.id, h.lists["dot"], h.norm_rank) for h in dot.top] == [(2, 3, 1), (3, 1, 2)]
    assert [(h.id, h.lists["cosine"]) for h in cos.top] == [(3, 2), (0, 1)]  # 0 and 2 tie at 1: smaller id
    assert [h.id for h in r.longest] == [2, 3]  # norms 7.07 and 1.005
    assert r.longest[0].norm == pytest.approx(embed.norm(HAND[2]))
    assert [h.norm_rank for h in r.metrics["cosine"].top] == [2, 3]  # rows 0 and 1 tie at norm 1: id 0 ranks 3
    assert dot.longest_rows_lists == 4 and cos.longest_rows_lists == 3
    assert dot.never_listed == 2 and cos.never_listed == 1
    assert dot.spearman_norm == pytest.approx(1.0)
    assert cos.spearman_norm == pytest.approx(spearman([1, 1, 50 ** 0.5, 1.01 ** 0.5], [1, 0, 1, 2]))
    assert r.n_queries == 4 and r.seed is None and r.even_share == 1.0


def test_counts_match_a_brute_force_and_long_rows_hijack_dot_lists():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((400, 16))
    long_rows = [5, 77, 300]
    W[long_rows] *= 8.0
    r = measure_hubs(EmbeddingTable(W), 5, top=3, memory=500_000)
    for metric in ("cosine", "dot"):
        S = W @ W.T
        if metric == "cosine":
            n = np.linalg.norm(W, axis=1)
            S = S / np.outer(n, n)
        np.fill_diagonal(S, -np.inf)
        lists = np.argsort(-S, axis=1, kind="stable")[:, :5]  # (V, 5)
        want = np.bincount(lists.ravel(), minlength=400)
        assert r.k_occurrence[metric].tolist() == want.tolist()
        assert r.metrics[metric].longest_rows_lists == np.isin(lists, long_rows).any(axis=1).sum()
        norms = np.linalg.norm(W, axis=1)
        assert r.metrics[metric].spearman_norm == pytest.approx(spearman(norms, want), abs=1e-12)
    assert sorted(h.id for h in r.metrics["dot"].top) == long_rows
    assert [h.id for h in r.longest] == sorted(long_rows, key=lambda i: -np.linalg.norm(W[i]))
    assert r.metrics["dot"].longest_rows_lists > 5 * r.metrics["cosine"].longest_rows_lists
    assert r.metrics["dot"].spearman_norm > r.metrics["cosine"].spearman_norm


def test_sampled_queries_are_reproducible():
    W = np.random.default_rng(4).standard_normal((300, 8))
    a = measure_hubs(EmbeddingTable(W), 4, queries=50, seed=9)
    b = measure_hubs(EmbeddingTable(W), 4, queries=50, seed=9)
    assert a.n_queries == 50 and a.seed == 9 and a.even_share == pytest.approx(4 * 50 / 300)
    assert all(a.k_occurrence[m].sum() == 50 * 4 for m in ("dot", "cosine"))
    assert all(np.array_equal(a.k_occurrence[m], b.k_occurrence[m]) for m in ("dot", "cosine"))
    sample = np.sort(np.random.default_rng(9).choice(300, size=50, replace=False))
    full = EmbeddingTable(W).nearest(sample, 4, "dot").ids
    assert a.k_occurrence["dot"].tolist() == np.bincount(full.ravel(), minlength=300).tolist()


def test_constant_counts_have_no_correlation_or_skewness():
    r = measure_hubs(EmbeddingTable.from_rows([[1.0, 0.0], [0.0, 2.0]]), 1)
    assert r.k_occurrence["dot"].tolist() == [1, 1]
    assert r.metrics["dot"].spearman_norm is None and r.metrics["dot"].skewness is None


def test_progress_counts_every_query_of_both_metrics():
    seen = []
    measure_hubs(EmbeddingTable(np.random.default_rng(0).standard_normal((60, 4))), 3, progress=seen.append)
    assert sum(seen) == 2 * 60


def test_sampled_hubs_search_through_the_front_door_with_its_progress_hook(monkeypatch):
    from embedlab.engine.neighbors.search import Search

    calls = []
    nearest = Search.nearest

    def recording(self, metric, **kwargs):
        calls.append((metric, self.k, kwargs.get("progress")))
        return nearest(self, metric, **kwargs)

    monkeypatch.setattr(Search, "nearest", recording)
    seen = []
    r = measure_hubs(EmbeddingTable.from_rows(HAND), 1, queries=4, progress=seen.append)
    assert [(m, k) for m, k, _ in calls] == [("dot", 1), ("cosine", 1)]
    assert all(hook == seen.append for _, _, hook in calls)
    assert r.k_occurrence["dot"].tolist() == [0, 0, 3, 1]  # the hand counts above
    assert sum(seen) == 2 * 4


@pytest.mark.parametrize("method", ["self-join", "per-query"])
def test_hubs_over_every_token_scan_the_whole_table_with_its_progress_hook(method, monkeypatch):
    monkeypatch.setattr("embedlab.engine.neighbors.search.choose_method", lambda *args, **kwargs: method)
    seen = []
    r = measure_hubs(EmbeddingTable.from_rows(HAND), 1, progress=seen.append)
    assert r.k_occurrence["dot"].tolist() == [0, 0, 3, 1]  # the hand counts above
    assert sum(seen) == 2 * 4


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k=0 is out of range"),
    ({"k": 4}, "k=4 is out of range"),
    ({"queries": 0}, "queries must be 'all' or a number from 1 to V=4"),
    ({"queries": 5}, "queries must be 'all' or a number from 1 to V=4"),
    ({"top": 0}, "top must be an int >= 1"),
])
def test_bad_settings_are_refused(kwargs, message):
    settings = {"k": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        measure_hubs(EmbeddingTable.from_rows(HAND), settings.pop("k"), **settings)


@pytest.mark.data
@pytest.mark.slow
def test_minilm_sample():
    from embedlab import sources

    table = sources.load("minilm")
    r = measure_hubs(table, 10, queries=2000, seed=0)
    for metric in ("dot", "cosine"):
        m = r.metrics[metric]
        assert r.k_occurrence[metric].sum() == 2000 * 10
        assert m.max_lists == r.k_occurrence[metric].max() and m.top[0].lists[metric] == m.max_lists
        assert -1.0 <= m.spearman_norm <= 1.0
    assert r.metrics["dot"].spearman_norm > r.metrics["cosine"].spearman_norm


def test_default_k_and_top_shrink_to_fit_a_small_table_and_say_so():
    r = measure_hubs(EmbeddingTable.from_rows(HAND))  # V=4: k 10 -> V - 1 = 3, top 10 -> V = 4
    assert (r.k, len(r.longest), len(r.metrics["dot"].top)) == (3, 4, 4)
    assert r.notes == ("k = 3: the default 10 shrunk to V - 1", "top = 4: the default 10 shrunk to V")
    # k = V - 1: every list holds every other row, so each row enters the V - 1 lists of the others
    assert r.k_occurrence["dot"].tolist() == [3, 3, 3, 3]


def test_given_k_and_top_are_never_changed_only_refused():
    with pytest.raises(ValueError, match="k=4"):
        measure_hubs(EmbeddingTable.from_rows(HAND), 4)
    r = measure_hubs(EmbeddingTable.from_rows(HAND), 1, top=2)
    assert r.notes == () and len(r.longest) == 2
