"""embedlab compress on the command line: the table, the figure, and one clear line for bad input."""

from __future__ import annotations

import json

import pytest

from embedlab.cli import main

pytest.importorskip("numpy")
pytest.importorskip("sklearn")


def _run(capsys, *argv):
    code = main(["compress", "--model", "seed", "--quiet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lists_each_method_and_size(capsys):
    code, out, _ = _run(capsys, "--queries", "20", "--methods", "pca,truncate,int8", "--dims", "32,8", "--json")
    data = json.loads(out)
    assert code == 0 and [(r["method"], r["dims"]) for r in data["rows"]] == [
        ("pca", 32), ("pca", 8), ("truncate", 32), ("truncate", 8), ("int8", None)]
    assert data["full_bytes_per_token"] == 64 * 8  # the seed table is float64
    assert data["rows"][4]["bytes_per_token"] == 64 and data["rows"][2]["bytes_per_token"] == 32 * 4


def test_the_figure_is_written_in_the_language_asked(tmp_path, capsys):
    from embedlab.report.locales import WORDS

    path = tmp_path / "c.svg"
    code, out, _ = _run(capsys, "--queries", "20", "--methods", "truncate,binary", "--plot", str(path), "--lang", "en")
    svg = path.read_text(encoding="utf-8")
    assert code == 0 and out.endswith(f"wrote {path}\n")
    assert WORDS["en"]["figures"]["compress_bytes"] in svg  # text kept as text
    assert "binary, top 40 rescored" in svg and "truncate" in svg


@pytest.mark.parametrize("argv, line", [
    (["--dims", "65"], "embedlab compress: error: --dims 65: expected 1 to 64\n"),
    (["--dims", "0"], "embedlab compress: error: --dims 0: expected 1 to 64\n"),
    (["--methods", "pca,zip"], "embedlab compress: error: --methods 'zip': expected some of pca, truncate, int8, "
                               "binary, pq\n"),
    (["--k", "512"], "embedlab compress: error: --k 512: expected an int from 1 to 511 (V - 1: each query leaves "
                     "itself out)\n"),
])
def test_bad_input_is_one_line(capsys, argv, line):
    code, out, err = _run(capsys, *argv)
    assert (code, out, err) == (1, "", line)
