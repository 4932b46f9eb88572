"""Cosine and dot of the same queries from one float32 pass (``float_screen.JointScreen``), through the front door.

Each list is checked against a float64 full sort made here (the tie rule:
``(-score, id)``, the query's own id left out) and against the same search
made for one metric alone.
"""

import numpy as np
import pytest

from embedlab.engine.neighbors.search import Search


def _full_sort(W, q, own, k, metric):
    """The k best ids of one query by a float64 full sort: (-score, id); the own id left out."""
    W64 = W.astype(np.float64)
    scores = W64 @ q  # (V,)
    if metric == "cosine":
        lengths = np.sqrt((W64 * W64).sum(axis=1)) * np.sqrt(q @ q)  # (V,)
        scores = np.divide(scores, lengths, out=np.zeros_like(scores), where=lengths > 0)
    order = sorted((i for i in range(len(W)) if i != own), key=lambda i: (-scores[i], i))
    return order[:k]


def _tied_table(seed):
    """Small integer rows (many exact ties in both metrics), with copies, a zero row and a scaled copy."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-2, 3, size=(1500, 24)).astype(np.float32)  # (V, D)
    W[10] = W[20]  # the same row under two ids
    W[30] = 0.0  # a zero row
    W[40] = 2 * W[3]  # cosine ties 3, dot does not
    return W


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_lists_match_full_sort_and_single_metric(seed):
    W = _tied_table(seed)
    queries = [3, 10, 20, 30, 40, 5, 1499, 0]
    search = Search(W, 9, ids=queries)
    assert search._joint_plan(search._sets["ids"]) is not None  # the joint scan is what runs
    dot, cosine = search.nearest("dot"), search.nearest("cosine")  # dot first: cosine is the held one
    for metric, found in (("cosine", cosine), ("dot", dot)):
        alone = Search(W, 9, metric, ids=queries).nearest(metric)
        assert alone.ids.tolist() == found.ids.tolist()
        assert alone.scores.tolist() == found.scores.tolist()
        for row, (q, own) in enumerate(zip(W[queries].astype(np.float64), queries)):
            if own == 30:  # the zero query: the smallest ids, itself left out
                assert found.ids[row].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
                continue
            assert found.ids[row].tolist() == _full_sort(W, q, own, 9, metric)


def test_joint_vectors_and_asked_twice():
    W = _tied_table(3)
    Q = np.vstack([W[7], 0.5 * W[10], np.zeros(24), W[1] + W[2]]).astype(np.float64)  # (N, D)
    search = Search(W, 5, vectors=Q)
    assert search._joint_plan(search._sets["vectors"]) is not None
    first = search.nearest("cosine")
    dot = search.nearest("dot")
    again = search.nearest("cosine")  # nothing held any more: searched again, the same lists
    assert first.ids.tolist() == again.ids.tolist()
    for row, q in enumerate(Q):
        if not q.any():
            assert first.ids[row].tolist() == [0, 1, 2, 3, 4] == dot.ids[row].tolist()
            continue
        assert first.ids[row].tolist() == _full_sort(W, q, None, 5, "cosine")
        assert dot.ids[row].tolist() == _full_sort(W, q, None, 5, "dot")


def test_no_joint_for_one_metric_or_many_queries():
    W = _tied_table(4)
    one = Search(W, 3, "dot", ids=[1, 2])
    assert one._joint_plan(one._sets["ids"]) is None  # one metric: nothing to share
    wide = Search(W, 3, ids=np.arange(100), workers=1)  # one worker: blocks of at least D = 24 queries
    assert min(100, wide.plan("cosine").queries) >= 24  # cosine scales the rows first there
    assert wide._joint_plan(wide._sets["ids"]) is None


def test_joint_blocks_of_the_planned_ids():
    """As ``measure.neighbors`` asks: a block of ids under each metric in turn; a held list serves its block only."""
    W = _tied_table(5)
    planned = [3, 10, 20, 40, 7, 8]
    search = Search(W, 6, ids=planned)
    for metric, block in [("cosine", [3, 10]), ("dot", [3, 10]), ("cosine", [20, 40]), ("dot", [7, 8]),
                          ("dot", [20, 40]), ("cosine", [3, 10, 20])]:
        found = search.nearest(metric, ids=block)
        alone = Search(W, 6, metric, ids=planned).nearest(metric, ids=block)
        assert found.ids.tolist() == alone.ids.tolist()
        assert found.scores.tolist() == alone.scores.tolist()
        for row, own in enumerate(block):
            assert found.ids[row].tolist() == _full_sort(W, W[own].astype(np.float64), own, 6, metric)
