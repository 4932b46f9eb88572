"""Exact search on a Dask cluster (engine.neighbors.cluster) against the in-process search, id for id.

The cluster is a ``LocalCluster`` of 2 worker processes (the ``local_cluster`` fixture).
Expected lists come from the front door in this process and from a float64 full
sort written here, never from the cluster's own output. The ``ScatteredTable`` is
asked directly where its own options are tested (row shards, blocks, a client passed
in); ``Search(..., scheduler=...)`` is the way in for everything else.
"""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest

from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors.cluster import ScatteredTable, check_address, merge_partial, shard_bounds
from embedlab.engine.neighbors.search import Search
from embedlab.errors import MissingExtraError, SchedulerError, SizeError
from searching import search

distributed = pytest.importorskip("distributed")


def tied_table(V=600, D=6, seed=0):
    """Integer rows, a row repeated 40 times and zero rows: exact ties everywhere."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-2, 3, size=(V, D)).astype(np.float32)
    W[rng.integers(0, V, size=40)] = W[7]
    W[rng.integers(0, V, size=15)] = 0.0
    return W


def scattered(scheduler, W):
    """The table on the cluster, as the front door scatters it: with its row lengths."""
    return ScatteredTable(scheduler, W, row_norms=vector_norms(W))


def plan(W, queries, k, metric):
    """The plan the front door makes for these queries on a cluster (one thread per task)."""
    return Search(W, k, metric, ids=queries, workers=1).plan(metric)


def full_sort(W, queries, k, metric):
    """Top-k by (-score, id) of every float64 score, each query leaving out its own id; exact on integer tables."""
    W = np.asarray(W, dtype=np.float64)
    S = W[queries] @ W.T  # (N, V)
    if metric == "cosine":
        n = np.linalg.norm(W, axis=1)
        both = np.outer(n[queries], n)
        S = np.divide(S, both, out=np.zeros_like(S), where=both > 0)
    S[np.arange(len(queries)), queries] = -np.inf
    ids = np.arange(len(W))
    return np.array([np.lexsort((ids, -row))[:k] for row in S])


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("row_shards", [1, 2, 7])
def test_cluster_lists_what_the_in_process_search_lists(local_cluster, metric, row_shards):
    W = tied_table()
    queries = np.arange(len(W))
    k = 12  # fewer than the 40 copies of row 7: ties cross the shards' edges
    want_ids, want_scores = search(W, None, k, metric, exclude=queries)
    with scattered(local_cluster.scheduler_address, W) as scan:
        ids, scores = scan.search(queries, k, metric, plan(W, queries, k, metric), row_shards=row_shards, block=70,
                                  memory=2**20)
    assert ids.tolist() == want_ids.tolist()
    assert np.array_equal(scores, want_scores)
    assert ids.tolist() == full_sort(W, queries, k, metric).tolist()


def test_shards_smaller_than_k_and_the_query_alone_in_its_shard(local_cluster):
    W = tied_table(V=40, D=3, seed=1)
    queries = np.array([0, 5, 39, 17, 17])  # unsorted, one twice
    with scattered(local_cluster.scheduler_address, W) as scan:
        for shards, k in ((40, 39), (13, 10), (3, 20)):  # 40 shards: one row each, the query's holds nothing else
            for metric in ("cosine", "dot"):
                ids = scan.search(queries, k, metric, plan(W, queries, k, metric), row_shards=shards)[0]
                assert ids.tolist() == full_sort(W, queries, k, metric).tolist()


def test_blocks_come_in_query_order_with_progress(local_cluster):
    W = tied_table(V=300)
    queries = np.arange(299, -1, -3)
    done = []
    with scattered(local_cluster.scheduler_address, W) as scan:
        blocks = list(scan.blocks(queries, 5, "dot", plan(W, queries, 5, "dot"), block=9, row_shards=2,
                                  progress=done.append))
    assert [b[0] for b in blocks] == list(range(0, len(queries), 9))
    assert [b[1] for b in blocks] == [min(len(queries), s + 9) for s in range(0, len(queries), 9)]
    assert sum(done) == len(queries)
    ids = np.concatenate([b[2] for b in blocks])
    assert ids.tolist() == full_sort(W, queries, 5, "dot").tolist()


def test_a_client_passed_in_stays_open_and_keeps_none_of_our_data(local_cluster):
    W = tied_table(V=100)
    with distributed.Client(local_cluster.scheduler_address, set_as_default=False) as client:
        with Search(W, 3, "cosine", ids=np.arange(10), scheduler=client) as search_:
            ids = search_.nearest("cosine").ids

            assert any(client.has_what().values())  # the table is on the workers
        assert client.status == "running"
        assert client.submit(sum, [1, 2]).result() == 3
        deadline = time.monotonic() + 20
        while any(client.has_what().values()) and time.monotonic() < deadline:  # released asynchronously
            time.sleep(0.05)
        assert not any(client.has_what().values())
    assert ids.tolist() == full_sort(W, np.arange(10), 3, "cosine").tolist()


def test_the_front_door_opens_the_cluster_once_for_every_metric_and_closes_it(local_cluster, monkeypatch):
    from embedlab.engine.neighbors import search as front_door

    W = tied_table(V=200)
    queries = np.arange(0, 200, 2)
    opened = []

    class Counted(ScatteredTable):
        def __init__(self, *args, **kwargs):
            opened.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(front_door, "ScatteredTable", Counted)
    with Search(W, 4, ("cosine", "dot"), ids=queries, scheduler=local_cluster.scheduler_address) as search_:
        assert not opened  # opened at the first search, not before
        found = {m: search_.nearest(m).ids for m in ("cosine", "dot")}
        assert len(opened) == 1 and opened[0].client is not None  # once for both metrics
    assert opened[0].client is None  # closed on leaving
    with Search(W, 4, "dot", every_row=True, scheduler=local_cluster.scheduler_address) as search_:
        assert search_._copies is not None  # 41 identical rows: the table without its copies searched, on the cluster
        rows = np.concatenate([b[2] for b in search_.every_row("dot")])
    assert len(opened) == 2 and opened[1].client is None
    for metric in ("cosine", "dot"):
        assert found[metric].tolist() == full_sort(W, queries, 4, metric).tolist()
    assert rows.tolist() == full_sort(W, np.arange(200), 4, "dot").tolist()


def bf16_valued(W):
    """W's entries rounded to bfloat16 (a bf16 checkpoint's table as it is read): the bf16 self-join's tables."""
    return (np.ascontiguousarray(W, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def test_every_row_on_bf16_products_runs_each_block_pair_once_for_both_metrics(local_cluster):
    rng = np.random.default_rng(4)
    W = bf16_valued(rng.standard_normal((600, 8)))
    W[rng.integers(0, 600, 25)] = W[7]  # ties: 25 copies, fewer than a pool holds (k = 12: 32 slots)
    W[rng.integers(0, 600, 10)] = 0.0
    k = 12
    with distributed.Client(local_cluster.scheduler_address, set_as_default=False) as client:
        with distributed.get_task_stream(client) as stream:
            with Search(W, k, ("cosine", "dot"), every_row=True, screen="bf16", scheduler=client,
                        memory=2**21) as search_:  # blocks of 150 rows, both scans' pools
                assert search_._joint is not None
                block = search_._pairs["dot"].block
                done = []
                got = {m: list(search_.every_row(m, progress=done.append)) for m in ("dot", "cosine")}
    nb = -(-len(W) // block)
    assert nb >= 3  # several steps, each with a transposed side
    names = [task["key"].split("-")[0] for task in stream.data]
    assert names.count("_step_task") == nb and names.count("_bars_task") == nb  # one scan for both metrics
    assert sum(done) == 2 * len(W)
    for metric, blocks in got.items():
        assert [b[0] for b in blocks] == list(range(0, len(W), block))
        ids, scores = np.concatenate([b[2] for b in blocks]), np.concatenate([b[3] for b in blocks])
        want_ids, want_scores = search(W, None, k, metric, exclude=np.arange(len(W)), screen="float")
        assert ids.tolist() == want_ids.tolist() == full_sort(W, np.arange(len(W)), k, metric).tolist()
        assert np.array_equal(scores, want_scores)


def test_pair_steps_stopped_early_leave_no_task_running(local_cluster):
    from embedlab.engine.neighbors.plan import plan_self_join

    W = bf16_valued(tied_table(V=400, D=6, seed=5))
    plans = {"dot": plan_self_join(400, 6, 5, 4, 2**22, workers=1, block=20, screen="bf16")}
    with distributed.Client(local_cluster.scheduler_address, set_as_default=False) as client:
        with ScatteredTable(client, W, row_norms=vector_norms(W)) as scan:
            with pytest.raises(ValueError, match="blocks differ"):
                next(scan.pair_steps(5, {"dot": plans["dot"], "cosine": plan_self_join(
                    400, 6, 5, 4, 2**22, workers=1, block=40, screen="bf16")}))
            cancelled = []
            real = client.cancel
            client.cancel = lambda futures, **kw: cancelled.extend(futures) or real(futures, **kw)
            steps = scan.pair_steps(5, plans)
            start, stop, ids, _ = next(steps)["dot"]
            steps.close()  # the caller stops after the first block
            client.cancel = real
            assert any("_step_task" in f.key for f in cancelled)  # the steps sent and not needed, cancelled
            assert (start, stop) == (0, 20)
            assert ids.tolist() == full_sort(W, np.arange(20), 5, "dot").tolist()
            deadline = time.monotonic() + 20
            while client.processing() and any(client.processing().values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(client.processing().values())  # the steps not needed were cancelled


def test_a_worker_converts_the_table_once_and_lets_it_go_with_the_table(monkeypatch):
    import gc

    from embedlab.engine.neighbors import bf16_join, cluster
    from embedlab.engine.neighbors.plan import plan_self_join

    pytest.importorskip("torch")
    W = bf16_valued(tied_table(V=120, D=6, seed=8))
    plans = {m: plan_self_join(120, 6, 4, 4, 2**22, workers=1, block=40, screen="bf16") for m in ("cosine", "dot")}
    checked = []
    real = bf16_join.bf16_exact
    monkeypatch.setattr(bf16_join, "bf16_exact", lambda *a: checked.append(1) or real(*a))
    first = cluster._worker_scans(W, 4, plans, vector_norms(W), "table-1")
    again = cluster._worker_scans(W, 4, plans, vector_norms(W), "table-1")
    assert len(checked) == 1  # the first task checks; the next reads its answer
    assert first[0].table is again[0].table is again[1].table is not None  # one bfloat16 table on the worker
    other = cluster._worker_scans(W, 4, plans, vector_norms(W), "table-2")  # the table scattered again
    assert len(checked) == 2 and other[0].table is not first[0].table
    cluster._forget("table-2")
    assert "table-2" not in cluster._PREPARED and "table-1" in cluster._PREPARED
    del W, first, again, other
    gc.collect()
    assert "table-1" not in cluster._PREPARED  # gone with the table


def test_a_table_changed_in_place_and_searched_again_on_workers_in_this_process():
    W = bf16_valued(np.random.default_rng(0).standard_normal((300, 8)))
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as in_process:
        with distributed.Client(in_process, set_as_default=False) as client:
            for seed in (1, 2):  # the worker's table is the caller's array: no stale bfloat16 table is read
                with Search(W, 5, "dot", every_row=True, screen="bf16", scheduler=client, memory=2**20) as s:
                    ids = np.concatenate([b[2] for b in s.every_row("dot")])
                assert ids.tolist() == full_sort(W, np.arange(300), 5, "dot").tolist()
                W[:] = bf16_valued(np.random.default_rng(seed).standard_normal((300, 8)))
            assert not client.run(lambda: len(__import__("embedlab.engine.neighbors.cluster",
                                                         fromlist=["x"])._PREPARED)).get(
                next(iter(client.scheduler_info()["workers"])), 0)


def test_bad_arguments_are_refused_before_any_task(local_cluster):
    W = tied_table(V=50)
    with scattered(local_cluster.scheduler_address, W) as scan:
        with pytest.raises(SizeError, match="row_shards=0"):
            scan.search(np.arange(3), 2, "dot", plan(W, np.arange(3), 2, "dot"), row_shards=0)
    address = local_cluster.scheduler_address
    with pytest.raises(SizeError, match="k=50"):
        Search(W, 50, "dot", ids=np.arange(3), scheduler=address)
    with pytest.raises(ValueError, match="unknown metric"):
        Search(W, 2, "l2", ids=np.arange(3), scheduler=address)
    with pytest.raises(IndexError, match="token id 50 is out of range for V=50"):
        Search(W, 2, "dot", ids=np.array([50]), scheduler=address)
    with pytest.raises(ValueError, match="by id"):
        Search(W, 2, "dot", vectors=W[:2], scheduler=address)


def test_an_unreachable_scheduler_names_the_address_and_the_timeout():
    with pytest.raises(SchedulerError, match=r"tcp://127\.0\.0\.1:9 within 0\.5 s") as info:
        ScatteredTable("tcp://127.0.0.1:9", np.eye(3), row_norms=np.ones(3), timeout=0.5)
    assert str(info.value).count("0.5 s") == 1  # the timeout is said once


@pytest.mark.parametrize("address, why", [
    ("nonsense", "missing port number in address 'nonsense'"), ("tcp://host", "missing port number"),
    ("foo://host:8786", "unknown address scheme 'foo'"), ("tcp://host:port", "invalid literal"),
    ("tcp://:8786", "no host"), ("tcp://host:70000", "port 70000 is outside 1 to 65535"), ("", "got ''"),
])
def test_a_malformed_address_is_refused_before_any_client(address, why, monkeypatch):
    distributed = pytest.importorskip("distributed")

    class NoClient:  # no __del__ to run: a test of the address check alone
        def __init__(self, *args, **kwargs):
            raise AssertionError("a Client was made for a malformed address")

    monkeypatch.setattr(distributed, "Client", NoClient)
    with pytest.raises(SchedulerError, match=re.escape(why)) as info:
        ScatteredTable(address, np.eye(3), row_norms=np.ones(3))
    assert info.value.parameter == "scheduler"


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "10.0.0.5:8786", "tls://sched.example:1",
                                     "tcp://[::1]:8786", "ws://host:8787"])
def test_well_formed_addresses_pass(address):
    pytest.importorskip("distributed")
    assert check_address(address) is None


def test_without_dask_the_cluster_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now raises ImportError
    with pytest.raises(MissingExtraError, match=r"\.\[cluster\]") as info:
        Search(np.eye(3), 1, "dot", ids=[0], scheduler="tcp://127.0.0.1:9").nearest("dot")
    assert info.value.extras == ("cluster",)


def test_merge_partial_is_the_top_k_of_the_union():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=(5, 30)).astype(np.float64)  # many exact ties
    want = np.array([np.lexsort((np.arange(30), -row))[:6] for row in scores])
    parts = []
    for r0, r1 in shard_bounds(30, 4):
        part = np.array([r0 + np.lexsort((np.arange(r1 - r0), -row[r0:r1]))[:6] for row in scores])
        parts.append((part, np.take_along_axis(scores, part, axis=1)))
    assert merge_partial(parts, 6, 30)[0].tolist() == want.tolist()
    assert shard_bounds(7, 7) == [(i, i + 1) for i in range(7)]
