"""``measure_hubs(scheduler=...)``: the counts on a Dask cluster equal the in-process counts, row for row.

The cluster is a ``LocalCluster`` of 2 worker processes (the ``local_cluster`` fixture);
the expected counts come from the in-process measurement and from a float64 full sort.
"""

from __future__ import annotations

import numpy as np
import pytest

from embedlab.engine.neighbors.capability import CODED_QUERIES
from embedlab.engine.table import EmbeddingTable
from embedlab.measure.hubs import measure_hubs
from full_sort import self_full_sort

distributed = pytest.importorskip("distributed")


def tied_table(V, D, seed):
    """Integer rows, a row repeated 50 times and zero rows: exact ties in many lists."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-3, 4, size=(V, D)).astype(np.float32)
    W[rng.integers(0, V, size=50)] = W[3]
    W[rng.integers(0, V, size=20)] = 0.0
    return W


def full_sort_counts(W, k, metric):
    """k-occurrence of every row from a full float64 sort by (-score, id), each query leaving itself out."""
    lists, _ = self_full_sort(W, k, metric)  # (V, K)
    return np.bincount(lists.ravel(), minlength=len(W))


@pytest.mark.slow
def test_every_token_on_the_cluster_counts_what_the_process_counts(local_cluster):
    W = tied_table(V=CODED_QUERIES + 452, D=8, seed=0)  # every token a query: the int16 codes go to the workers too
    here = measure_hubs(EmbeddingTable(W), 10)
    there = measure_hubs(EmbeddingTable(W), 10, scheduler=local_cluster.scheduler_address)
    for metric in ("dot", "cosine"):
        assert there.k_occurrence[metric].tolist() == here.k_occurrence[metric].tolist()
        assert there.k_occurrence[metric].tolist() == full_sort_counts(W, 10, metric).tolist()
    drop = {"seconds"}
    assert ({m: {f: v for f, v in vars(s).items() if f not in drop} for m, s in there.metrics.items()}
            == {m: {f: v for f, v in vars(s).items() if f not in drop} for m, s in here.metrics.items()})


def test_a_sample_through_the_callers_client_with_progress(local_cluster):
    W = tied_table(V=700, D=5, seed=1)
    done = []
    with distributed.Client(local_cluster.scheduler_address, set_as_default=False) as client:
        there = measure_hubs(EmbeddingTable(W), 4, queries=300, seed=2, scheduler=client, progress=done.append)
        assert client.status == "running"  # a client passed in is not closed
    here = measure_hubs(EmbeddingTable(W), 4, queries=300, seed=2)
    assert sum(done) == 2 * 300
    for metric in ("dot", "cosine"):
        assert there.k_occurrence[metric].tolist() == here.k_occurrence[metric].tolist()


@pytest.mark.torch
@pytest.mark.slow
def test_the_torch_screen_on_the_workers_counts_the_same(local_cluster):
    pytest.importorskip("torch")
    W = tied_table(V=500, D=6, seed=3)
    there = measure_hubs(EmbeddingTable(W), 5, scheduler=local_cluster.scheduler_address, device="cpu")
    for metric in ("dot", "cosine"):
        assert there.k_occurrence[metric].tolist() == full_sort_counts(W, 5, metric).tolist()
