"""``embedlab neighbors`` and ``embedlab hubs``, called through ``cli.main``."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from embedlab import cli, embed


def run(*argv: str) -> int:
    return cli.main(list(argv))


SEED = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)


def test_neighbors_on_the_seed_table(capsys):
    assert run("neighbors", "137", "42", "--k", "4") == 0
    out = capsys.readouterr().out
    assert "query 137, norm" in out and "query 42, norm" in out
    assert out.splitlines()[3].split()[:3] == ["#", "cosine", "score"]
    first = out.splitlines()[5].split()
    assert first[0] == "1" and int(first[1]) == embed.nearest_by_cosine(SEED, 137, 4)[0]
    assert int(first[4]) == embed.nearest_by_dot(SEED, 137, 4)[0]


def test_neighbors_json_matches_the_reference(capsys):
    assert run("neighbors", "137", "--k", "5", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    lists = data["queries"][0]["lists"]
    assert [x["id"] for x in lists["cosine"]] == embed.nearest_by_cosine(SEED, 137, 5)
    assert [x["id"] for x in lists["dot"]] == embed.nearest_by_dot(SEED, 137, 5)
    assert [x["score"] for x in lists["dot"]] == pytest.approx(
        [embed.dot(SEED[137], SEED[i]) for i in embed.nearest_by_dot(SEED, 137, 5)], rel=1e-12)
    assert lists["dot"][0]["norm"] == pytest.approx(embed.norm(SEED[lists["dot"][0]["id"]]), rel=1e-12)


def test_neighbors_of_vectors_from_a_file(tmp_path, capsys):
    path = tmp_path / "probes.npy"
    np.save(path, np.array([SEED[7], [0.0] * embed.DIM]))
    assert run("neighbors", "--vector", str(path), "--k", "3", "--by", "cosine", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"] == ["cosine"]
    assert [x["id"] for x in data["queries"][0]["lists"]["cosine"]][0] == 7  # nothing left out
    assert [x["id"] for x in data["queries"][1]["lists"]["cosine"]] == [0, 1, 2]  # a zero vector


@pytest.mark.parametrize("argv, message", [
    (["neighbors"], "give at least one query"),
    (["neighbors", "600"], "token id 600 is out of range for V=512"),
    (["neighbors", "king"], "table has no vocabulary"),
    (["neighbors", "1", "--k", "512"], "--k 512: expected an int from 1 to 511 (V-1: the query itself is left out)"),
    (["neighbors", "1", "--memory", "1K"], "--memory 1K: expected at least"),
    (["hubs", "--k", "512"], "--k 512: expected an int from 1 to 511 (V-1: the query itself is left out)"),
    (["hubs", "--queries", "10", "--seed", "-1"], "--seed -1: expected a whole number >= 0"),
    (["neighbors", "--", "\u00b2"], "table has no vocabulary"),
    (["neighbors", "1", "--vector", "missing.npy"], "no such file: 'missing.npy'"),
])
def test_bad_input_is_one_line_on_stderr(argv, message, capsys):
    assert run(*argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_vector_file_that_is_not_numbers(tmp_path, capsys):
    path = tmp_path / "words.npy"
    np.save(path, np.array(["a", "b"]))
    assert run("neighbors", "--vector", str(path)) == 1
    assert "expected (D,) or (N, D) numbers" in capsys.readouterr().err
    np.save(path, np.array([[np.nan] * embed.DIM]))
    assert run("neighbors", "--vector", str(path)) == 1
    assert "query vector 0 contains NaN" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["neighbors", "1", "--memory", "lots"], ["neighbors", "1", "--memory", "inf"],
                                  ["neighbors", "1", "--memory", "1e400"], ["neighbors", "1", "--memory", "256IB"],
                                  ["hubs", "--queries", "0"],
                                  ["hubs", "--queries", "some"], ["neighbors", "1", "--by", "euclid"],
                                  ["neighbors", "1", "--memory", "1.5"], ["neighbors", "1", "--memory", "0.4"],
                                  ["neighbors", "1", "--k", "0"], ["hubs", "--k", "0"], ["hubs", "--k", "-3"],
                                  ["graph", "--k", "0", "--out", "g.parquet"],
                                  ["neighbors", "1", "--device", "tpu"], ["hubs", "--device", "cuda:x"],
                                  ["graph", "--device", "gpu", "--out", "g.parquet"]])
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as exit_:
        run(*argv)
    assert exit_.value.code == 2


@pytest.mark.parametrize("text, value", [("268435456", 2**28), ("512K", 2**19), ("256M", 2**28),
                                         ("256MiB", 2**28), ("1G", 2**30), ("1.5g", 3 * 2**29)])
def test_memory_sizes(text, value):
    assert cli.arguments.byte_size(text) == value


@pytest.mark.parametrize("text, value", [("1.5K", 1536), ("0.001K", 1), ("2.", 2), ("3.0", 3)])
def test_a_fraction_with_a_unit_rounds_down_to_whole_bytes(text, value):
    assert cli.arguments.byte_size(text) == value


@pytest.mark.parametrize("argv, message", [
    (["neighbors", "1", "--memory", "1.5"], "argument --memory: expected a whole number of bytes, got '1.5': "
                                            "a fraction needs a unit (K, M or G), e.g. 1.5K"),
    (["hubs", "--k", "0"], "argument --k: expected an int of at least 1 (neighbours per list), got '0'"),
    (["neighbors", "1", "--device", "tpu"], "argument --device: expected cpu, cuda or cuda:N, got 'tpu'"),
    (["hubs", "--device", "cuda:"], "argument --device: expected cpu, cuda or cuda:N, got 'cuda:'"),
])
def test_usage_errors_name_the_value(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        run(*argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ["cpu", "cuda", "cuda:0", "cuda:12"])
def test_device_names_that_parse(text):
    assert cli.arguments.device_name(text) == text


def test_hubs_on_the_seed_table(capsys):
    assert run("hubs", "--k", "5", "--top", "3") == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # no progress bar off a terminal
    out = captured.out
    assert "hubs of seed: V=512, D=64, k=5, 512 queries (every token)" in out
    assert "the 3 longest rows and the lists they enter" in out


def test_hubs_shows_a_progress_bar_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert run("hubs", "--k", "2", "--queries", "64") == 0
    assert "hubs" in capsys.readouterr().err  # tqdm's bar, cleared at the end


def test_hubs_json_of_a_sample(capsys):
    assert run("hubs", "--k", "3", "--queries", "100", "--seed", "2", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_queries"] == 100 and data["seed"] == 2 and "k_occurrence" not in data
    ids = np.sort(np.random.default_rng(2).choice(512, size=100, replace=False)).tolist()
    counts = np.zeros(512, dtype=int)
    for q in ids:
        for i in embed.nearest_by_dot(SEED, q, 3):
            counts[i] += 1
    top = data["metrics"]["dot"]["top"][0]
    assert top["lists"]["dot"] == counts.max() and top["id"] == int(np.argmax(counts))


@pytest.mark.data
def test_neighbors_and_hubs_on_minilm(capsys):
    assert run("neighbors", "--model", "minilm", "king", "--k", "5") == 0
    out = capsys.readouterr().out
    assert "query king (2332)" in out and "queen (3035)" in out
    assert run("hubs", "--model", "minilm", "--queries", "300", "--k", "5") == 0
    assert "300 queries (sampled with seed 0)" in capsys.readouterr().out


def test_neighbors_and_hubs_show_the_budget_the_plan_and_the_resident_cost(capsys):
    assert run("neighbors", "137", "--k", "4", "--memory", "1M") == 0
    out = capsys.readouterr().out
    assert "working memory of each search, planned at most (budget 1 MiB): cosine " in out
    assert "outputs 64 B, not counted" in out  # 1 query x 4 ids and scores x 8 bytes
    assert "resident, outside the budget: table 256 KiB + lengths 4 KiB = 260 KiB" in out  # 512 x 64 float64
    assert run("hubs", "--k", "3", "--queries", "50", "--memory", "2M", "--json") == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["budget"] == 2 * 2**20 and memory["outputs"] == 50 * 3 * 16
    assert all(0 < p["bytes"] <= 2 * 2**20 and p["fixed"] >= 512 for p in memory["plans"].values())
    assert memory["resident"]["table"] == 512 * 64 * 8 and memory["resident"]["norms"] == 512 * 8


def test_a_budget_too_small_names_the_smallest_that_works(capsys):
    assert run("neighbors", "137", "--k", "4", "--memory", "2K") == 1
    err = capsys.readouterr().err
    smallest = int(err.split("expected at least ")[1].split(" bytes")[0].replace(",", ""))
    assert run("neighbors", "137", "--k", "4", "--memory", str(smallest)) == 0
    assert run("neighbors", "137", "--k", "4", "--memory", str(smallest - 1)) != 0


def test_the_plan_and_resident_cost_show_only_when_memory_is_given(capsys):
    assert cli.parse(["neighbors", "137"]).memory is None  # not given: the library applies its default
    assert run("neighbors", "137", "--k", "4") == 0
    assert "working memory" not in capsys.readouterr().out
    assert run("neighbors", "137", "--k", "4", "--memory=64M") == 0
    assert "working memory of each search, planned at most (budget 64 MiB)" in capsys.readouterr().out
    assert run("neighbors", "137", "--k", "4", "--memory", "256M") == 0  # the default's value, given: shown too
    assert "working memory of each search, planned at most (budget 256 MiB)" in capsys.readouterr().out
    assert run("hubs", "--k", "3", "--queries", "50") == 0
    assert "resident, outside the budget" not in capsys.readouterr().out


@pytest.mark.torch
def test_the_plan_shown_is_the_search_that_runs_on_a_device(capsys):
    pytest.importorskip("torch")
    assert run("hubs", "--k", "3", "--queries", "50", "--memory", "8M", "--device", "cpu", "--json") == 0
    plans = json.loads(capsys.readouterr().out)["memory"]["plans"]
    assert {p["screen"] for p in plans.values()} == {"float"} and {p["workers"] for p in plans.values()} == {1}


def test_every_token_as_a_query_plans_with_the_codes_the_scan_uses(capsys):
    from embedlab.engine.neighbors.capability import fast_int16, int16_runs

    assert run("hubs", "--k", "3", "--memory", "64M", "--json") == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    W = np.asarray(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED))
    coded = int16_runs(np.linalg.norm(W, axis=1))
    assert (memory["resident"]["codes"] > 0) == coded  # the scan builds them where it uses them
    assert {p["screen"] for p in memory["plans"].values()} == {"int16" if coded and fast_int16() else "float"}
