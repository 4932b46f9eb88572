"""embedlab diff on the command line: the summary, --json complete, --markdown in --lang, B left out (the head),
and bad input as one clear line, never a traceback.

The tables are .npy files written here with their word lists; expected values are computed with NumPy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from embedlab.cli import main
from embedlab.report.locales import DIFF_WORDS


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(4)
    A = rng.normal(size=(30, 6)).astype(np.float32)
    B = np.vstack([A, A.mean(axis=0, keepdims=True)]).astype(np.float32)
    B[[2, 9]] += 0.5
    B[[4, 5]] = B[[5, 4]]  # two rows swapped under their tokens
    words = [f"w{i}" for i in range(30)]
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    (tmp_path / "a.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("\n".join(words + ["새말"]) + "\n", encoding="utf-8")
    args = [str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--words", str(tmp_path / "a.txt"),
            "--words-b", str(tmp_path / "b.txt")]
    return args, A, B


def test_the_summary_names_the_moved_rows_and_the_new_one(tables, capsys):
    args, A, B = tables
    assert main(["diff", *args, "--top", "4"]) == 0
    out = capsys.readouterr().out
    assert "Exactly equal: 26; changed: 4 " in out
    assert "Still at their initialisation: 1; moved: 0." in out
    assert "'새말'" in out


def test_json_holds_every_row(tables, capsys):
    args, A, B = tables
    assert main(["diff", *args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["rows"]) == 30 and data["counts"]["changed"] == 4
    assert [r["a_id"] for r in data["rows"] if not r["equal"]] == [2, 4, 5, 9]
    l2 = np.linalg.norm(B[:30].astype(np.float64) - A, axis=1)
    assert [r["l2"] for r in data["rows"]] == pytest.approx(l2.tolist(), rel=1e-6)
    assert data["new_rows"]["rows"][0]["b_id"] == 30 and data["new_rows"]["rows"][0]["verdict"] == "mean"
    assert data["run"]["command"].startswith("embedlab diff ")


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_markdown_is_written_in_its_language(tables, capsys, tmp_path, lang):
    args, _, _ = tables
    out = tmp_path / "sub" / "diff.md"
    assert main(["diff", *args, "--markdown", str(out), "--lang", lang]) == 0
    text = out.read_text(encoding="utf-8")
    assert f"## {DIFF_WORDS[lang]['headings']['most_moved']}" in text
    assert f"wrote {out}" in capsys.readouterr().out


def test_a_word_vector_table_has_no_head_to_compare_with(tables, capsys):
    args, _, _ = tables
    assert main(["diff", args[0], "--words", args[3]]) == 1
    err = capsys.readouterr().err
    assert err.startswith("embedlab diff: error: ") and err.count("\n") == 1
    assert "has no output head" in err and "give a second table B" in err and "--table" not in err  # the fix


def test_a_markdown_name_that_is_not_md_is_a_usage_error(tables, capsys):
    args, _, _ = tables
    with pytest.raises(SystemExit) as exit_:
        main(["diff", *args, "--markdown", "diff.txt"])
    assert exit_.value.code == 2


@pytest.mark.plots
def test_plot_writes_the_figure_beside_the_markdown(tables, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    args, _, _ = tables
    png, md = tmp_path / "fig" / "diff.png", tmp_path / "diff.md"
    assert main(["diff", *args, "--plot", str(png), "--markdown", str(md), "--lang", "en"]) == 0
    assert png.read_bytes().startswith(b"\x89PNG") and md.exists()
    out = capsys.readouterr().out
    assert f"wrote {md}" in out and f"wrote {png}" in out
