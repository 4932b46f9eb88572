"""The neighbour graph (embedlab.measure.graph) against a NumPy full sort, and its Parquet file read back with pyarrow."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from embedlab import api
from embedlab.errors import ChoiceError
from embedlab.engine.table import EmbeddingTable
from embedlab.measure.graph import measure_graph
from embedlab.report.parquet import write_graph
from full_sort import self_full_sort




def small_table():
    rng = np.random.default_rng(3)
    W = rng.integers(-3, 4, size=(37, 5)).astype(np.float32)  # integer entries: exact ties
    W[10] = W[20]  # a duplicate row
    W[5] = 0.0  # a zero row
    W[30] *= 9  # a long row
    return W


def test_graph_parquet_reads_back_as_the_full_sort_lists(tmp_path):
    W = small_table()
    path = tmp_path / "graph.parquet"
    result = api.graph(EmbeddingTable(W), path, k=4, memory=10 * 2**20)
    assert result.rows == 37 * 4 * 2 and result.metrics == ("cosine", "dot")
    table = pq.read_table(path)
    assert table.column_names == ["query_id", "rank", "neighbor_id", "score", "metric"]
    types = {f.name: str(f.type) for f in table.schema}
    assert types["query_id"] == "int64" and types["rank"] == "int32" and types["neighbor_id"] == "int64"
    assert types["score"] == "double"
    columns = table.to_pydict()
    metric = np.array(columns["metric"])
    for name in ("cosine", "dot"):
        want_ids, want_scores = self_full_sort(W, 4, name)
        rows = metric == name
        assert np.array_equal(np.array(columns["query_id"])[rows], np.repeat(np.arange(37), 4))
        assert np.array_equal(np.array(columns["rank"])[rows], np.tile(np.arange(1, 5), 37))
        assert np.array_equal(np.array(columns["neighbor_id"])[rows].reshape(37, 4), want_ids)
        assert np.allclose(np.array(columns["score"])[rows].reshape(37, 4), want_scores, rtol=1e-12, atol=1e-12)
    meta = pq.read_metadata(path).metadata
    assert meta[b"embedlab.k"] == b"4" and meta[b"embedlab.V"] == b"37" and meta[b"embedlab.D"] == b"5"
    assert b"embedlab.version" in meta and b"embedlab.source" in meta
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.parquet"]  # no temporary left


def test_blocks_come_in_order_and_match_the_tables_own_lists():
    t = EmbeddingTable(small_table())
    g = measure_graph(t, 3, metrics=["dot"], memory=64 * 2**10)
    blocks = list(g.blocks)
    assert [b.metric for b in blocks] == ["dot"] * len(blocks)
    assert [b.start for b in blocks] == [0] + [b.stop for b in blocks[:-1]] and blocks[-1].stop == 37
    ids = np.concatenate([b.ids for b in blocks])
    assert np.array_equal(ids, t.nearest(np.arange(37), 3, "dot").ids)
    assert g.to_dict()["edges"] == 37 * 3


def test_another_source_of_blocks_feeds_the_same_writer(tmp_path):
    t = EmbeddingTable(small_table())

    def scan(W, k, metric, **kwargs):  # e.g. blocks computed elsewhere: here, the table's own lists
        for start in range(0, len(W), 10):
            stop = min(len(W), start + 10)
            got = t.nearest(np.arange(start, stop), k, metric)
            yield start, stop, got.ids, got.scores

    g = measure_graph(t, 2, metrics=["cosine"], scan=scan)
    write_graph(tmp_path / "g.parquet", g.blocks, metadata={"k": "2"})
    ids = np.array(pq.read_table(tmp_path / "g.parquet").column("neighbor_id")).reshape(37, 2)
    assert np.array_equal(ids, self_full_sort(small_table(), 2, "cosine")[0])


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupt_mid_way_leaves_no_file(tmp_path, error):
    calls = []

    def progress(n):
        calls.append(n)
        if len(calls) == 2:
            raise error("stop")

    (tmp_path / "graph.parquet").write_bytes(b"an older file")
    with pytest.raises(error):
        api.graph(EmbeddingTable(small_table()), tmp_path / "graph.parquet", k=3, memory=64 * 2**10,
                  progress=progress)
    assert len(calls) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.parquet"]  # no temporary, no partial file
    assert (tmp_path / "graph.parquet").read_bytes() == b"an older file"  # the old file kept whole


def test_bad_settings_are_refused(tmp_path):
    t = EmbeddingTable(small_table())
    for metrics in ([], ["cosine", "cosine"], ["l2"]):
        with pytest.raises(ChoiceError):
            measure_graph(t, 2, metrics=metrics)
    with pytest.raises(ValueError, match="k=37 is out of range"):
        measure_graph(t, 37)
    with pytest.raises(ValueError, match="not a .parquet file name"):
        api.graph(t, tmp_path / "graph.csv")
    with pytest.raises(ValueError, match="does not exist"):
        api.graph(t, tmp_path / "missing" / "graph.parquet")
    assert list(tmp_path.iterdir()) == []


def test_a_default_k_shrinks_on_a_tiny_table_with_a_note(tmp_path):
    result = api.graph([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], tmp_path / "g.parquet")
    assert result.k == 2 and result.rows == 3 * 2 * 2 and result.notes


def test_one_metric_given_as_a_string():
    from embedlab.engine.table import EmbeddingTable
    from embedlab.measure.graph import measure_graph

    g = measure_graph(EmbeddingTable([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]), 1, metrics="dot")
    assert g.metrics == ("dot",) and [b.ids.tolist() for b in g.blocks] == [[[2], [2], [0]]]
