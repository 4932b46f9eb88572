"""``embedlab graph --scheduler`` and ``--device``: the same Parquet rows as the in-process scan."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from embedlab import cli, embed

COLUMNS = ["query_id", "rank", "neighbor_id", "score", "metric"]


def graph_rows(tmp_path, name, *argv):
    out = tmp_path / f"{name}.parquet"
    assert cli.main(["graph", "--out", str(out), *argv]) == 0
    table = pq.read_table(out)
    return {c: table.column(c).to_pylist() for c in COLUMNS}


@pytest.fixture(scope="module")
def reference_graph():
    """``reference_rows(3)``, computed once for the module: the pure-Python reference takes seconds on 512 rows."""
    return reference_rows(3)


def reference_rows(k):
    """The seed table's lists from the standard-library reference, in the file's order (cosine, then dot)."""
    W = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
    rows = {c: [] for c in ("query_id", "rank", "neighbor_id", "metric")}
    for metric, nearest in (("cosine", embed.nearest_by_cosine), ("dot", embed.nearest_by_dot)):
        for q in range(embed.VOCAB):
            for rank, n in enumerate(nearest(W, q, k), start=1):
                rows["query_id"].append(q), rows["rank"].append(rank), rows["neighbor_id"].append(n)
                rows["metric"].append(metric)
    return rows


@pytest.mark.slow
def test_graph_on_the_cluster_is_the_reference_graph(local_cluster, reference_graph, tmp_path, capsys):
    there = graph_rows(tmp_path, "there", "--k", "3", "--scheduler", local_cluster.scheduler_address)
    capsys.readouterr()
    expected = reference_graph
    assert {c: there[c] for c in ("query_id", "rank", "neighbor_id", "metric")} == expected
    here = graph_rows(tmp_path, "here", "--k", "3")
    assert there == here  # scores too, bit for bit


@pytest.mark.data
@pytest.mark.slow
def test_graph_of_minilm_on_the_cluster_matches_the_process(local_cluster, tmp_path, capsys):
    argv = ("--model", "minilm", "--k", "2", "--metric", "cosine")
    assert graph_rows(tmp_path, "there", *argv, "--scheduler", local_cluster.scheduler_address) == \
        graph_rows(tmp_path, "here", *argv)


@pytest.mark.torch
@pytest.mark.slow
def test_graph_with_the_screen_on_a_torch_device(reference_graph, tmp_path, capsys):
    pytest.importorskip("torch")
    on_torch = graph_rows(tmp_path, "torch", "--k", "3", "--device", "cpu")
    assert {c: on_torch[c] for c in ("query_id", "rank", "neighbor_id", "metric")} == reference_graph
    assert on_torch == graph_rows(tmp_path, "numpy", "--k", "3")
