"""Renderers of neighbour lists and hubs: hand-built results -> exact text."""

from __future__ import annotations

import json
import re

import numpy as np

from embedlab.report import formats, views
from embedlab.measure.hubs import Hub, HubsResult, MetricHubs
from embedlab.measure.neighbors import Listed, NeighborsResult, QueryLists


def neighbors_result():
    q = QueryLists(query="king", id=7, token="king", norm=1.5, lists={
        "cosine": [Listed(3, "queen", 0.71234, 1.25), Listed(9, "a\nb", 0.5, 0.75)],
        "dot": [Listed(2, "[CLS]", 2.5, 3.0), Listed(3, "queen", 1.33333, 1.25)],
    })
    v = QueryLists(query="vector 0", id=None, token=None, norm=2.0,
                   lists={"cosine": [Listed(1, None, 1.0, 2.0), Listed(0, None, 0.0, 0.0)],
                          "dot": [Listed(1, None, 4.0, 2.0), Listed(0, None, 0.0, 0.0)]})
    return NeighborsResult(k=2, metrics=["cosine", "dot"], queries=[q, v], median_norm=1.0, max_norm=3.0,
                           source={"source": "toy"})


def test_neighbors_terminal():
    assert views.neighbors_terminal(neighbors_result()) == (
        "toy: k=2; row norms: median 1.000, max 3.000\n"
        "\n"
        "query king (7), norm 1.500\n"
        "#  cosine     score   norm   dot        score  norm\n"
        "-  ---------  ------  -----  ---------  -----  -----\n"
        "1  queen (3)  0.7123  1.250  [CLS] (2)  2.500  3.000\n"
        "2  a\\nb (9)   0.5000  0.750  queen (3)  1.333  1.250\n"
        "\n"
        "query vector 0, norm 2.000\n"
        "#  cosine  score  norm   dot  score  norm\n"
        "-  ------  -----  -----  ---  -----  -----\n"
        "1  1       1.000  2.000  1    4.000  2.000\n"
        "2  0       0.000  0.000  0    0.000  0.000\n"
    )


def test_scores_keep_four_significant_digits_of_their_column():
    """A small-norm table's dot products (0.003812, 0.001586, 0.0009) read with their digits, not as 0.0038,
    0.0016, 0.0009 (4 fixed decimals): one number of decimals per column, 4 significant digits of its largest,
    as the projector page's lists; the decimals here are counted by hand."""
    q = QueryLists(query="a", id=0, token="a", norm=0.06203, lists={
        "cosine": [Listed(1, "b", 0.8193, 0.09374), Listed(2, "c", 0.05, 0.01944)],
        "dot": [Listed(1, "b", 0.0038124, 0.09374), Listed(3, "d", 0.00158612, 0.0593)]})
    result = NeighborsResult(k=2, metrics=["cosine", "dot"], queries=[q], median_norm=0.05285, max_norm=0.09374,
                             source={"source": "toy"})
    assert views.neighbors_terminal(result) == (
        "toy: k=2; row norms: median 0.05285, max 0.09374\n"
        "\n"
        "query a (0), norm 0.06203\n"
        "#  cosine  score   norm     dot    score     norm\n"
        "-  ------  ------  -------  -----  --------  -------\n"
        "1  b (1)   0.8193  0.09374  b (1)  0.003812  0.09374\n"
        "2  c (2)   0.0500  0.01944  d (3)  0.001586  0.05930\n"
    )


def test_tiny_and_huge_lengths_and_scores_do_not_read_as_zero_or_run_wide():
    q = QueryLists(query="tiny", id=0, token="tiny", norm=1e-200, lists={
        "cosine": [Listed(1, "b", 0.0004, 2.5e7)], "dot": [Listed(1, "b", -1e-201, 2.5e7)]})
    result = NeighborsResult(k=1, metrics=["cosine", "dot"], queries=[q], median_norm=0.5, max_norm=2.5e7,
                             source={"source": "toy"})
    assert views.neighbors_terminal(result) == (
        "toy: k=1; row norms: median 0.5000, max 2.500e+07\n"
        "\n"
        "query tiny (0), norm 1.000e-200\n"
        "#  cosine  score      norm       dot    score        norm\n"
        "-  ------  ---------  ---------  -----  -----------  ---------\n"
        "1  b (1)   0.0004000  2.500e+07  b (1)  -1.000e-201  2.500e+07\n"
    )


def test_neighbors_json_keeps_full_precision():
    data = json.loads(formats.to_json(neighbors_result()))
    assert data["queries"][0]["lists"]["cosine"][0] == {"id": 3, "token": "queen", "score": 0.71234, "norm": 1.25}
    assert data["queries"][1]["id"] is None


def hubs_result():
    h = Hub(id=2, token="the", lists={"dot": 9, "cosine": 1}, norm=7.0, norm_rank=1)
    g = Hub(id=0, token="a", lists={"dot": 0, "cosine": 3}, norm=1.0, norm_rank=2)
    metric = {
        "dot": MetricHubs("dot", [h], 9, 1.23456, 5, 0.9, 4, 0.25),
        "cosine": MetricHubs("cosine", [g], 3, None, 1, None, 1, 0.5),
    }
    return HubsResult(V=4, D=2, k=1, n_queries=4, even_share=1.0, seed=None, metrics=metric, longest=[h, g],
                      source={"source": "toy"}, k_occurrence={"dot": np.array([0, 0, 9, 1])})


def test_hubs_terminal():
    assert views.hubs_terminal(hubs_result()) == (
        "hubs of toy: V=4, D=2, k=1, 4 queries (every token)\n"
        "Spearman correlation of row norm with k-occurrence: dot 0.9, cosine -\n"
        "\n"
        "dot: the rows in the most lists (an even share is 1; skewness 1.235, 5 rows in no list; 0.2 s)\n"
        "rank  row      lists  norm   norm rank\n"
        "----  -------  -----  -----  ---------\n"
        "1     the (2)  9      7.000  1\n"
        "\n"
        "cosine: the rows in the most lists (an even share is 1; skewness -, 1 row in no list; 0.5 s)\n"
        "rank  row    lists  norm   norm rank\n"
        "----  -----  -----  -----  ---------\n"
        "1     a (0)  3      1.000  2\n"
        "\n"
        "the 2 longest rows and the lists they enter\n"
        "norm rank  row      norm   dot lists  cosine lists\n"
        "---------  -------  -----  ---------  ------------\n"
        "1          the (2)  7.000  9          1\n"
        "2          a (0)    1.000  0          3\n"
        "together they enter 4 of 4 dot lists and 1 cosine lists\n"
    )


def test_hubs_json_leaves_the_per_row_counts_out():
    data = json.loads(formats.to_json(hubs_result()))
    assert "k_occurrence" not in data
    assert data["metrics"]["dot"]["top"][0] == {"id": 2, "token": "the", "lists": {"dot": 9, "cosine": 1},
                                                "norm": 7.0, "norm_rank": 1}
    assert data["metrics"]["cosine"]["spearman_norm"] is None


def test_notes_close_both_views():
    from dataclasses import replace

    note = "k = 2: the default 10 shrunk to V - 1"
    assert views.neighbors_terminal(replace(neighbors_result(), notes=(note,))).endswith(f"\nnote: {note}\n")
    assert views.hubs_terminal(replace(hubs_result(), notes=(note,))).endswith(
        f"and 1 cosine lists\nnote: {note}\n")
    assert json.loads(formats.to_json(replace(neighbors_result(), notes=(note,))))["notes"] == [note]
    assert json.loads(formats.to_json(replace(hubs_result(), notes=(note,))))["notes"] == [note]


def test_counts_carry_thousands_separators_and_ids_do_not():
    """Counts (parameters, V, multiplications) read 32,768; ids stay as written (token 30000)."""
    import embedlab
    from embedlab.engine.table import EmbeddingTable
    from embedlab.report import lab as lab_report

    rng = np.random.default_rng(0)
    table = EmbeddingTable(rng.normal(size=(30001, 4)).astype(np.float32))
    result = embedlab.report(table, probe=30000)
    V, D = 30001, 4  # the counts, by hand: V * D parameters tied, twice untied
    terminal = lab_report.report_terminal(result, [])
    assert f"{V:,} x {D}" in terminal and f"{V * D:,} / {2 * V * D:,} (saved {V * D:,})" in terminal
    assert "probe                      30000" in terminal  # an id: no separator
    markdown = lab_report.report_markdown(result, "en")
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|$", markdown, flags=re.M))
    assert rows["params"].strip() == f"{V * D:,}" and rows["one_hot_mults"].strip() == f"{V * D:,}"
    assert rows["vocab"].strip() == f"{V:,}" and rows["bigger_vocab"].strip() == f"{2 * V:,}"
    assert rows["probe"].strip().startswith("30000")
    assert f"{V * D:,}" in markdown.split("|")[0]  # the prose too


def test_params_view_separates_thousands(capsys):
    from embedlab import cli

    assert cli.main(["params", "--vocab", "50257", "--d-model", "768"]) == 0
    out = capsys.readouterr().out
    assert "V=50,257 x D=768" in out and "V=100,514" in out  # V and the doubled V, counts
    assert f"{50257 * 768:,}" in out
