"""Neighbour lists side by side (embedlab.measure.neighbors), checked against the reference."""

from __future__ import annotations

import numpy as np
import pytest

from embedlab import embed
from embedlab.errors import ShapeError, UnknownTokenError
from embedlab.measure.neighbors import neighbor_lists
from embedlab.engine.table import EmbeddingTable

T = [[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]]


def table():
    return EmbeddingTable.from_rows(T, vocabulary=["a", "b", "c"])


def test_lists_side_by_side_with_scores_and_norms():
    r = neighbor_lists(table(), ["c", "0"], 2)
    assert r.metrics == ["cosine", "dot"] and r.k == 2
    c, zero = r.queries
    assert (c.query, c.id, c.token, c.norm) == ("c", 2, "c", 1.0)
    assert [(x.token, x.id) for x in c.lists["cosine"]] == [("b", 1), ("a", 0)]
    assert [x.score for x in c.lists["cosine"]] == [embed.cosine(T[2], T[1]), 0.0]
    assert [(x.id, x.score) for x in c.lists["dot"]] == [(1, 1.0), (0, 0.0)]
    assert [x.norm for x in c.lists["dot"]] == [embed.norm(T[1]), 1.0]
    assert (zero.query, zero.id, zero.token) == ("0", 0, "a")  # a string of digits that is not a token: an id
    assert [x.id for x in zero.lists["cosine"]] == embed.nearest_by_cosine(T, 0, 2)
    assert [x.id for x in zero.lists["dot"]] == embed.nearest_by_dot(T, 0, 2)
    assert r.median_norm == pytest.approx(1.0) and r.max_norm == pytest.approx(101 ** 0.5)


def test_vectors_leave_nothing_out_and_come_after_the_tokens():
    r = neighbor_lists(table(), ["a"], 2, ["dot"], vectors=np.array([[0.0, 2.0], [0.0, 0.0]]))
    assert [q.query for q in r.queries] == ["a", "vector 0", "vector 1"]
    assert r.metrics == ["dot"] and list(r.queries[1].lists) == ["dot"]
    assert [x.id for x in r.queries[1].lists["dot"]] == [1, 2]  # rows 1 and 2 tie at 2.0: smaller id
    assert r.queries[1].norm == 2.0 and r.queries[1].id is None
    assert [x.score for x in r.queries[2].lists["dot"]] == [0.0, 0.0]
    every = neighbor_lists(table(), [], 3, vectors=[1.0, 0.0])  # k = V: a vector leaves nothing out
    assert [x.id for x in every.queries[0].lists["cosine"]] == [0, 1, 2]


def test_a_seed_table_without_vocabulary():
    rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
    r = neighbor_lists(EmbeddingTable.from_rows(rows), [137], 5)
    q = r.queries[0]
    assert q.token is None and all(x.token is None for x in q.lists["cosine"])
    assert [x.id for x in q.lists["cosine"]] == embed.nearest_by_cosine(rows, 137, 5)
    assert [x.id for x in q.lists["dot"]] == embed.nearest_by_dot(rows, 137, 5)


@pytest.mark.parametrize("call, error, message", [
    (lambda t: neighbor_lists(t, [], 1), ValueError, "at least one query"),
    (lambda t: neighbor_lists(t, ["a"], 1, ["euclid"]), ValueError, "unknown metric 'euclid'"),
    (lambda t: neighbor_lists(t, ["a"], 1, []), ValueError, r"metrics \[\]: expected one or both of cosine, dot"),
    (lambda t: neighbor_lists(t, ["zz"], 1), UnknownTokenError, "'zz' is not in the vocabulary"),
    (lambda t: neighbor_lists(t, ["a"], 3), ValueError, "k=3 is out of range"),
    (lambda t: neighbor_lists(t, [], 1, vectors=[1.0, 2.0, 3.0]), ShapeError, "with D=2"),
    (lambda t: neighbor_lists(t, [], 1, vectors=[np.nan, 2.0]), ValueError, "NaN"),
])
def test_bad_queries(call, error, message):
    with pytest.raises(error, match=message):
        call(table())


def test_a_default_k_shrinks_to_fit_a_small_table_and_says_so():
    r = neighbor_lists(table(), ["a"])  # V=3: the default 10 does not fit, V - 1 = 2 does
    assert r.k == 2 and r.notes == ("k = 2: the default 10 shrunk to V - 1",)
    assert [x.id for x in r.queries[0].lists["cosine"]] == embed.nearest_by_cosine(T, 0, 2)
    vectors_only = neighbor_lists(table(), [], vectors=[1.0, 0.0])  # a vector leaves nothing out: k up to V
    assert vectors_only.k == 3 and vectors_only.notes == ("k = 3: the default 10 shrunk to V",)


def test_a_given_k_is_never_changed_only_refused():
    with pytest.raises(ValueError, match="k=10 is out of range"):
        neighbor_lists(table(), ["a"], 10)
    assert neighbor_lists(table(), ["a"], 1).notes == ()


def test_the_default_k_on_a_big_enough_table_is_10_without_a_note():
    rows = embed.make_table(20, 3, 1)
    r = neighbor_lists(EmbeddingTable.from_rows(rows), [4])
    assert r.k == 10 and r.notes == ()
    assert [x.id for x in r.queries[0].lists["dot"]] == embed.nearest_by_dot(rows, 4, 10)


@pytest.mark.parametrize("kind", ["ids", "vectors"])
def test_a_streams_searches_run_whole_rounds_of_blocks_and_hand_out_blocks_of_the_size_asked(monkeypatch, kind):
    from embedlab.engine.neighbors.search import Search
    from embedlab.measure import neighbors as module
    from full_sort import full_sort

    rng = np.random.default_rng(4)
    W = rng.standard_normal((500, 24)).astype(np.float32)  # (V, D)
    t = EmbeddingTable(W)
    ids = rng.choice(500, 90, replace=False).tolist()
    vectors = rng.standard_normal((90, 24)) if kind == "vectors" else None
    searched = []
    real = Search.nearest

    def recording(self, metric, **options):
        searched.append(len(options["ids"] if kind == "ids" else options["vectors"]))
        return real(self, metric, **options)

    monkeypatch.setattr(Search, "nearest", recording)
    monkeypatch.setattr(module, "BLOCK_ENTRIES", 7 * 5)  # 7 queries a block of lists (K = 5)
    monkeypatch.setattr(module, "SEARCH_ENTRIES", 41 * 8)  # at most 41 queries a search (K = 5 counts as 8)
    memory = 2**17  # small blocks of queries: a round (a block on each worker) of fewer than 7 queries
    plan = Search(t, 5, "dot", ids=ids if kind == "ids" else None, vectors=vectors, memory=memory).plan("dot", kind)
    round_ = plan.queries * plan.workers
    assert 41 % round_  # so that the rounding shows
    stream = module.neighbor_stream(t, ids if kind == "ids" else (), 5, ["dot"], vectors=vectors, memory=memory)
    blocks = list(stream.blocks)
    assert [len(b) for b in blocks] == [7] * 12 + [6]  # the blocks asked for, whatever the searches were
    step = 41 // round_ * round_  # as many whole rounds as 41 queries hold: 40
    assert step == 40 and searched == [40, 40, 10]
    queries = np.asarray(W[ids], dtype=np.float64) if kind == "ids" else vectors  # (90, D)
    want, _ = full_sort(W, queries, 5, "dot", exclude=np.array(ids) if kind == "ids" else None)  # (90, K)
    assert [[x.id for x in q.lists["dot"]] for b in blocks for q in b] == want.tolist()  # the float64 full sort's


def test_every_field_of_a_stream_s_lists_across_blocks_searches_ids_and_vectors(monkeypatch):
    # Blocks of 4 queries cut across searches of 9 (the two are not multiples): each list's tokens and lengths,
    # and each query's token and length, are the table's, read off the vocabulary and summed by hand in float64.
    from full_sort import full_sort

    from embedlab.measure import neighbors as module

    rng = np.random.default_rng(11)
    W = rng.standard_normal((60, 6)).astype(np.float32)  # (V, D)
    words = [f"w{i}" for i in range(60)]
    t = EmbeddingTable(W, vocabulary=words)
    ids = rng.choice(60, 11, replace=False).tolist()
    vectors = rng.standard_normal((6, 6))  # (N, D)
    monkeypatch.setattr(module, "BLOCK_ENTRIES", 4 * 3)  # 4 queries a block of lists (K = 3)
    monkeypatch.setattr(module, "_search_step", lambda search, queries, size: 9)
    stream = module.neighbor_stream(t, ids, 3, ["cosine", "dot"], vectors=vectors)
    got = [q for block in stream.blocks for q in block]
    assert [len(b) for b in [got[i:i + 4] for i in range(0, 17, 4)]] == [4, 4, 4, 4, 1]
    W64 = W.astype(np.float64)
    length = [float(np.sqrt(sum(x * x for x in row))) for row in W64.tolist()]  # by hand, per row
    for metric in ("cosine", "dot"):
        by_id, _ = full_sort(W, W64[ids], 3, metric, exclude=np.array(ids))  # (11, K)
        by_vector, _ = full_sort(W, vectors, 3, metric)  # (6, K)
        assert [[x.id for x in q.lists[metric]] for q in got] == by_id.tolist() + by_vector.tolist()
        for q in got:
            assert [x.token for x in q.lists[metric]] == [words[x.id] for x in q.lists[metric]]
            assert [x.norm for x in q.lists[metric]] == pytest.approx([length[x.id] for x in q.lists[metric]],
                                                                      rel=1e-15)
    assert [(q.query, q.id, q.token) for q in got] == (
        [(str(i), i, words[i]) for i in ids] + [(f"vector {n}", None, None) for n in range(6)])
    assert [q.norm for q in got] == pytest.approx([length[i] for i in ids]
                                                  + [float(np.sqrt((v * v).sum())) for v in vectors], rel=1e-15)


@pytest.mark.parametrize("block", [3, None])
def test_a_stream_read_a_query_at_a_time_holds_one_block_of_lists_at_most(block, monkeypatch):
    # Read as the writers read it (query_dicts: each query let go of once given out), a stream's live Listed rows
    # never exceed one block of them: counted each time a new block's lists start (the other metric's included).
    import gc

    from embedlab.measure import neighbors as module

    rng = np.random.default_rng(5)
    t = EmbeddingTable(rng.standard_normal((300, 8)).astype(np.float32), vocabulary=[f"w{i}" for i in range(300)])
    k, made, seen = 4, module._listed, []

    def counting(*args):
        seen.append(sum(type(o) is module.Listed for o in gc.get_objects()))  # type(): no attribute looked up
        return made(*args)

    monkeypatch.setattr(module, "_listed", counting)
    monkeypatch.setattr(module, "BLOCK_ENTRIES", 10 * k)  # 10 queries a block unless block= says otherwise
    stream = module.neighbor_stream(t, list(range(60)), k, ["cosine", "dot"], vectors=rng.standard_normal((40, 8)),
                                    block=block)
    assert sum(1 for _ in stream.query_dicts()) == 100
    size = stream.block
    assert size == (block or 10) and len(seen) == 2 * (100 // size + (100 % size > 0))  # per block, per metric
    assert max(seen) <= size * k + 2 * k  # this block's first metric, and a query or two being handed out


def test_one_token_string_is_one_query_not_its_letters():
    t = EmbeddingTable(np.diag([1.0, 2.0, 3.0, 4.0]), vocabulary=["a", "b", "c", "ab"])
    r = neighbor_lists(t, "ab", 1, ["dot"])
    assert [(q.query, q.id, q.token) for q in r.queries] == [("ab", 3, "ab")]  # "ab" is id 3, as listed above
    assert [x.id for x in r.queries[0].lists["dot"]] == [0]  # every other row scores 0: the smallest id


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was_and_listed_rows_are_frozen_dataclasses(enabled):
    import dataclasses
    import gc

    from embedlab.measure.neighbors import Listed

    t = EmbeddingTable([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], vocabulary=["a", "b", "c"])
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        row = neighbor_lists(t, ["a"], 1, ["dot"]).queries[0].lists["dot"][0]
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert row == Listed(1, "b", 10.0, float(np.hypot(10.0, 1.0)))  # a . b = 1 * 10, |b| by hand
    assert dataclasses.asdict(row) == {"id": 1, "token": "b", "score": 10.0, "norm": float(np.hypot(10.0, 1.0))}
    assert Listed(id=2, token=None, score=0.5, norm=1.0) == Listed(2, None, 0.5, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.id = 2


def test_blocks_made_at_once_share_one_pause_of_the_collector(monkeypatch):
    """Two blocks made at once (threads): the collector stays off while either is made and is on after both, even
    where the first one ends just as the second one starts (read "off", then switched off by the second: it
    stayed off for good). A stand-in ``gc`` records the calls; the first block's end is run at the second's read."""
    from embedlab.measure import neighbors as measure

    class Collector:
        def __init__(self):
            self.on, self.hook = True, None

        def isenabled(self):
            was, hook, self.hook = self.on, self.hook, None
            if hook:
                hook()  # another thread's block ends between this read and what follows it
            return was

        def enable(self):
            self.on = True

        def disable(self):
            self.on = False

    collector = Collector()
    monkeypatch.setattr(measure, "gc", collector)
    first, second = measure._collector_paused(), measure._collector_paused()
    first.__enter__()
    assert not collector.on
    collector.hook = lambda: first.__exit__(None, None, None)
    second.__enter__()
    if collector.hook is not None:  # the read was never made: the first block ends now, the second still going
        collector.hook = None
        first.__exit__(None, None, None)
    assert not collector.on  # the second block is still being made
    second.__exit__(None, None, None)
    assert collector.on  # as it was before both


def test_a_stream_holds_no_block_it_has_handed_out():
    """The first block is searched before the stream is handed out; once read and dropped, nothing keeps it
    (``itertools.chain([first], blocks)`` held it to the end of the stream: two blocks of lists, not one)."""
    import gc
    import weakref

    from embedlab.measure.neighbors import neighbor_stream

    t = EmbeddingTable([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0], [2.0, 2.0]], vocabulary=["a", "b", "c", "d"])
    stream = neighbor_stream(t, ["a", "b", "c", "d"], 1, ["dot"], block=1)
    blocks = iter(stream.blocks)
    first = next(blocks)
    held = weakref.ref(first[0])
    assert [q.lists["dot"][0].id for q in first] == [1]  # a . b = 10, the largest
    del first
    second = next(blocks)
    gc.collect()
    assert held() is None
    assert [q.lists["dot"][0].id for q in second] == [3]  # b . d = 22 > b . a = 10
    assert [[q.lists["dot"][0].id for q in b] for b in blocks] == [[3], [1]]  # c . d = 2 > c . b = 1; d . b = 22
