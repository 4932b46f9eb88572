"""embedlab plot and embedlab report --html, as a user runs them."""

import re
import struct
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from embedlab import cli  # noqa: E402
from embedlab.measure.projection import METHODS  # noqa: E402


PROBED = ("projection", "neighbors", "scale")  # the figures about one probe token


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_cli_methods_are_the_projection_methods():
    assert cli.plot.PROJECTION_METHODS == METHODS


@pytest.mark.parametrize("figure", ["projection", "norms", "neighbors", "scale", "positions", "bands"])
def test_every_figure_on_the_seed_table(tmp_path, figure):
    out = tmp_path / f"{figure}.png"
    assert cli.main(["plot", figure, "--out", str(out), "--size", "640x480", "--quiet"]) == 0
    assert png_size(out) == (640, 480)


@pytest.mark.data
@pytest.mark.parametrize("model", ["minilm", "glove"])
@pytest.mark.parametrize("figure", [pytest.param("projection", marks=pytest.mark.slow), "norms", "neighbors", "scale",
                                    "positions", "bands"])
def test_every_figure_on_real_tables(tmp_path, model, figure):
    out = tmp_path / "f.png"
    probe = ["--probe", "king"] if figure in PROBED else []
    assert cli.main(["plot", figure, "--model", model, *probe, "--out", str(out), "--quiet"]) == 0
    assert png_size(out) == (1200, 800)


@pytest.mark.parametrize("argv, message", [
    (["projection", "--method", "tsne", "--tokens", "1,2,3,4", "--perplexity", "30"], "perplexity 30.*4 rows"),
    (["projection", "--model", "seed", "--tokens", "1,2"], "at least 3 points"),
    (["projection", "--tokens", "1,2,999"], "999"),
])
def test_bad_input_clear_error_and_no_file(tmp_path, capsys, argv, message):
    import re

    out = tmp_path / "f.png"
    assert cli.main(["plot", *argv, "--out", str(out), "--quiet"]) == 1
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


def test_unknown_method_and_size_are_usage_errors(tmp_path):
    for argv in (["projection", "--method", "lle"], ["norms", "--size", "10x10"], ["norms", "--size", "big"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(["plot", *argv])
        assert exc.value.code == 2


def test_report_html_on_the_seed(tmp_path):
    assert cli.main(["report", "--html", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "embed_report.html").read_text(encoding="utf-8")
    assert text.count("<h2>") == 5 and text.count('<svg width="1200" height="800"') == 6 and "<img" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embed_report.html", "embed_report.json", "embed_report.md"]


def test_report_html_measures_the_lab_once(tmp_path, monkeypatch):
    # The lab needs four neighbour searches (cosine and dot, before and after the stretch); the
    # figures are drawn from the result, so a search more would be a figure measuring again.
    np = pytest.importorskip("numpy")
    from embedlab.engine.table import EmbeddingTable

    path = tmp_path / "t.npy"
    np.save(path, np.array(__import__("embedlab").embed.make_table(80, 6, 2)))
    calls = []
    real = EmbeddingTable.nearest
    monkeypatch.setattr(EmbeddingTable, "nearest", lambda self, *a, **kw: calls.append(a) or real(self, *a, **kw))
    assert cli.main(["report", "--html", "--model", str(path), "--probe", "3", "--out", str(tmp_path / "out")]) == 0
    assert len(calls) == 4


@pytest.mark.parametrize("argv, message", [
    (["projection", "--tokens", ""], "empty item"),
    (["projection", "--tokens", "1,,2"], "empty item"),
    (["projection", "--sample", "513"], "--sample 513: expected an int from 21 (the probe and its 10 + 10 neighbours) "
                                        "to V = 512"),
    (["neighbors", "--k", "512"], "--k 512"),
])
def test_more_bad_input(tmp_path, capsys, argv, message):
    assert cli.main(["plot", *argv, "--out", str(tmp_path / "f.png"), "--quiet"]) == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["plot", "projection", "--sample", "0"], "--sample 0: expected an int from 21 (the probe and its 10 + 10 "
                                              "neighbours) to V\n"),
    (["plot", "projection", "--sample", "20"], "--sample 20: expected an int from 21 (the probe and its 10 + 10 "
                                               "neighbours) to V\n"),
    (["plot", "projection", "--sample", "4", "--k", "2"], "--sample 4: expected an int from 5 (the probe and its "
                                                          "2 + 2 neighbours) to V\n"),
    (["plot", "projection", "--k", "0"], "argument --k: expected an int of at least 1"),
    (["plot", "projection", "--seed", "-1"], "argument --seed: expected an int of at least 0 (a seed)"),
    (["plot", "projection", "--method", "tsne", "--perplexity", "0"], "argument --perplexity: expected a number above 0"),
    (["plot", "projection", "--method", "tsne", "--perplexity", "nan"], "argument --perplexity: expected a number"),
    (["plot", "norms", "--top", "0"], "argument --top: expected an int of at least 1 (rows), got '0'"),
    (["plot", "neighbors", "--stretch-factor", "inf"], "argument --stretch-factor: expected a number above 0"),
    (["plot", "neighbors", "--stretch-factor", "-2"], "argument --stretch-factor: expected a number above 0"),
    (["plot", "positions", "--max-positions", "1"],
     "argument --max-context-length/--max-positions: expected an int of at least 2"),
    (["plot", "bands", "--base", "1"], "argument --base: expected a number above 1"),
    (["export", "--format", "projector", "--limit", "0"], "argument --limit: expected an int of at least 1 (rows)"),
    (["compress", "--queries", "0"], "argument --queries: expected an int of at least 1"),
    (["compress", "--k", "-2"], "argument --k: expected an int of at least 1"),
    (["compress", "--rescore", "0"], "argument --rescore: expected an int of at least 1"),
    (["compress", "--pq-m", "0"], "argument --pq-m: expected an int of at least 1"),
    (["compress", "--seed", "-1"], "argument --seed: expected an int of at least 0"),
])
def test_bad_numbers_are_usage_errors(capsys, argv, message):
    """Numbers refused whatever the table (0 points, a negative seed) are usage errors, exit 2 with the usage."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("usage: embedlab ") and message in err


def test_sample_help_is_the_same_in_plot_and_projector(capsys):
    """--sample counts the points in all in both commands, and says so in the same words."""
    helps = []
    for argv in (["plot", "projection", "--help"], ["projector", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        text = " ".join(capsys.readouterr().out.split())
        helps.append(text[text.index("--sample SAMPLE points"):].split(" --")[0])
    assert helps[0].replace("60", "N") == helps[1].replace("2,000", "N")
    assert "points in all: the probe, its k cosine and k dot neighbours, then random rows" in helps[0]


def test_plot_sample_counts_every_point(tmp_path):
    import embedlab

    fig = embedlab.plot("projection", sample=30, lang="en")
    drawn = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert drawn == 30


@pytest.mark.parametrize("name", ["norms.svg", "NORMS.SVG"])
def test_out_ending_in_svg_writes_an_svg_that_carries_its_glyphs(tmp_path, capsys, name):
    """The format follows the name (as compress --plot and audit --plot): an SVG document, parsed here as XML,
    of the size asked, its tokens as text, and a glyph for every character outside ASCII of its text in the
    fonts it embeds (read back with fontTools)."""
    import xml.etree.ElementTree as ET

    import numpy as np

    pytest.importorskip("brotli")
    from embedded_fonts import covered

    words = ["王", "女王", "한국어", "かな", "東京"] + [f"w{i}" for i in range(27)]
    W = np.random.default_rng(2).normal(size=(len(words), 8))  # (32, 8)
    W[:5] *= 3  # the CJK rows the longest: labelled on the norms figure
    np.save(tmp_path / "t.npy", W)
    (tmp_path / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    out = tmp_path / name
    assert cli.main(["plot", "norms", "--model", str(tmp_path / "t.npy"), "--words", str(tmp_path / "words.txt"),
                     "--size", "640x480", "--out", str(out), "--quiet"]) == 0
    assert f"wrote {out} (640x480 pixels)" in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    root = ET.fromstring(text)
    svg = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{svg}svg" and (root.get("width"), root.get("height")) == ("640", "480")
    shown = "".join("".join(t.itertext()) for t in root.iter(f"{svg}text"))
    assert all(w in shown for w in ("王", "한국어", "東京"))  # the Korean title and the tokens, as text
    css = "".join(s.text or "" for s in root.iter(f"{svg}style"))
    assert {ord(c) for c in shown if ord(c) > 127} <= covered(css)


def test_a_figure_file_of_another_kind_is_refused_by_the_library():
    from embedlab.report import plots

    with pytest.raises(ValueError, match=r"'x\.jpg' must end in \.png or \.svg"):
        plots.figure_bytes(plots.new_figure(200, 100), "x.jpg")


@pytest.mark.parametrize("argv", [["norms", "--out", "x.jpg"], ["norms", "--size", "100000x100000"]])
def test_out_must_be_png_or_svg_and_size_bounded(argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(["plot", *argv])
    assert exc.value.code == 2


def test_out_is_a_folder(tmp_path, capsys):
    assert cli.main(["plot", "norms", "--out", str(tmp_path / "dir.png"), "--quiet"]) == 0
    (tmp_path / "d.png").mkdir()
    assert cli.main(["plot", "norms", "--out", str(tmp_path / "d.png"), "--quiet"]) == 1
    assert "is a folder" in capsys.readouterr().err


def test_neighbors_small_k(tmp_path):
    assert cli.main(["plot", "neighbors", "--k", "3", "--out", str(tmp_path / "n.png"), "--quiet"]) == 0


# -- small and narrow tables: figures adapt their counts; a projection that cannot be made is named --------

def _save(tmp_path, V, D):
    import numpy as np

    path = tmp_path / f"t{V}x{D}.npy"
    np.save(path, np.random.default_rng(V * 10 + D).normal(size=(V, D)))
    return str(path)


@pytest.mark.parametrize("V", [3, 7])
def test_report_html_on_a_table_smaller_than_its_counts(tmp_path, capsys, V):
    # The norms figure labels 10 rows by default and the report has no --top: it labels all V.
    assert cli.main(["report", "--html", "--model", _save(tmp_path, V, 3), "--probe", "0", "--k", "2",
                     "--out", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "embed_report.html").read_text(encoding="utf-8")
    assert text.count("<figure>") == 6 and '<p class="left-out">' not in text
    assert "note:" not in capsys.readouterr().out


@pytest.mark.parametrize("figure", ["norms", "neighbors", "scale", "projection"])
def test_plot_defaults_adapt_to_a_table_of_7_rows(tmp_path, figure):
    out = tmp_path / "f.png"
    probe = ["--probe", "0"] if figure in PROBED else []
    assert cli.main(["plot", figure, "--model", _save(tmp_path, 7, 3), *probe, "--out", str(out),
                     "--quiet"]) == 0
    assert png_size(out) == (1200, 800)


def test_an_explicit_top_beyond_v_is_still_an_error(tmp_path, capsys):
    assert cli.main(["plot", "norms", "--model", _save(tmp_path, 7, 3), "--top", "8",
                     "--out", str(tmp_path / "f.png"), "--quiet"]) == 1
    assert "--top 8: expected an int in [1, V=7]" in capsys.readouterr().err


@pytest.mark.parametrize("V, k, reason", [(7, "5", "a 2-D projection by pca needs D >= 2, got D=1"),
                                          (2, "1", "a 2-D projection by pca needs at least 3 points, got 2")])
def test_report_html_leaves_out_a_projection_it_cannot_make_and_says_why(tmp_path, capsys, V, k, reason):
    D = 1 if V == 7 else 3
    assert cli.main(["report", "--html", "--lang", "en", "--model", _save(tmp_path, V, D), "--probe", "0",
                     "--k", k, "--out", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "embed_report.html").read_text(encoding="utf-8")
    assert text.count("<figure>") == 5  # every figure but the projection
    assert f'<p class="left-out">Figure left out: {reason.replace(">", "&gt;")}</p>' in text
    assert f"note: embed_report.html leaves a figure out: {reason}\n" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["pca", "tsne"])
def test_plot_projection_of_a_1_wide_table_is_refused_before_fitting(tmp_path, capsys, method):
    out = tmp_path / "f.png"
    assert cli.main(["plot", "projection", "--method", method, "--model", _save(tmp_path, 200, 1), "--probe", "0",
                     "--out", str(out), "--quiet"]) == 1
    assert capsys.readouterr().err == f"embedlab plot projection: error: a 2-D projection by {method} needs D >= 2, got D=1\n"
    assert not out.exists()


# -- --metric: the distance t-SNE and UMAP keep; PCA has none to choose ---------------------------------

@pytest.mark.parametrize("argv", [["--metric", "cosine"], ["--method", "pca", "--metric", "euclidean"]])
def test_metric_with_pca_is_a_usage_error_that_says_why(tmp_path, capsys, argv):
    out = tmp_path / "f.png"
    with pytest.raises(SystemExit) as exc:
        cli.main(["plot", "projection", *argv, "--out", str(out), "--quiet"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--metric {argv[-1]} applies to --method tsne or umap only: PCA keeps euclidean variance" in err
    assert not out.exists()


def test_an_unknown_metric_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["plot", "projection", "--method", "tsne", "--metric", "manhattan"])
    assert exc.value.code == 2
    assert "invalid choice: 'manhattan' (choose from 'cosine', 'euclidean')" in capsys.readouterr().err


def test_cli_metrics_are_the_projection_metrics():
    from embedlab.measure.projection import METRICS

    assert cli.plot.PROJECTION_METRICS == METRICS


@pytest.mark.parametrize("metric", [None, "cosine", "euclidean"])
def test_metric_reaches_the_projection_and_its_title(tmp_path, monkeypatch, metric):
    from embedlab.measure import projection

    seen = []
    real = projection.project
    monkeypatch.setattr(projection, "project", lambda *a, **kw: seen.append(kw) or real(*a, **kw))
    out = tmp_path / "f.png"
    given = [] if metric is None else ["--metric", metric]
    assert cli.main(["plot", "projection", "--method", "tsne", *given, "--sample", "30", "--out", str(out),
                     "--quiet"]) == 0
    assert png_size(out) == (1200, 800)
    assert seen[0]["metric"] == metric  # None: the library's default, cosine

    import embedlab

    fig = embedlab.plot("projection", method="tsne", sample=30, lang="en",
                        **({} if metric is None else {"metric": metric}))
    assert f"keeps {metric or 'cosine'} neighbourhoods" in fig.axes[0].get_title()


def test_plot_refuses_a_metric_with_pca():
    import embedlab

    with pytest.raises(ValueError, match="metric='cosine' does not apply to method='pca': PCA keeps euclidean"):
        embedlab.plot("projection", metric="cosine")


def test_the_pca_title_says_how_many_rows_it_was_fitted_on():
    import embedlab

    title = embedlab.plot("projection", lang="en").axes[0].get_title()  # the seed table: V = 512, all fitted
    assert title == ("PCA of 60 rows of the seed table: directions of largest euclidean variance, "
                     "fitted on 512 rows")


def test_plot_projection_takes_a_probe_beside_tokens_as_the_projector_does(tmp_path):
    """``--tokens`` with ``--probe``: the probe is added to the rows (the projector's rule), not refused."""
    out = tmp_path / "p.png"
    assert cli.main(["plot", "projection", "--model", _save(tmp_path, 9, 3), "--tokens", "1,2,3", "--probe", "6",
                     "--out", str(out), "--quiet"]) == 0
    assert png_size(out) == (1200, 800)


def test_every_single_file_output_says_a_missing_folder_is_created(tmp_path, capsys):
    """plot --out, projector --out and compress --plot create a missing folder, and their help and the README
    say so in one phrase."""
    from embedlab.cli.arguments import MAKES_FOLDER

    for argv, flag in ((["plot", "norms", "--help"], "--out"), (["projector", "--help"], "--out"),
                       (["compress", "--help"], "--plot")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        text = " ".join(capsys.readouterr().out.split())
        help_of = re.search(rf" {flag} [A-Z]+ ([^\[]*?) --", text)[1]  # the option's line, not the usage
        assert MAKES_FOLDER.strip("; ") in help_of, argv
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "a missing folder is created" in " ".join(readme.split())
    out = tmp_path / "new" / "deeper" / "n.png"
    assert cli.main(["plot", "norms", "--out", str(out), "--quiet"]) == 0 and png_size(out) == (1200, 800)


def test_plot_projection_leaves_degenerate_rows_out_and_keep_degenerate_keeps_them(tmp_path, capsys):
    """An all-zero row and a copy are left out of the fit and the picture, named on the terminal; the flag keeps
    them; a figure without a projection has no such flag."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("sklearn")
    W = np.random.default_rng(9).normal(size=(40, 4))  # (V, D)
    W[3] = 0.0
    W[7] = W[5]
    np.save(tmp_path / "t.npy", W)
    out = tmp_path / "p.png"
    argv = ["plot", "projection", "--model", str(tmp_path / "t.npy"), "--tokens", "0,3,5,7,9,11,13", "--probe", "0",
            "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert notes == ["note: 2 degenerate rows left out of the PCA fit and the picture (--keep-degenerate, "
                     "keep_degenerate=True, keeps them): id 3 (all zeros), id 7 (a copy of id 5)"]
    assert cli.main([*argv, "--keep-degenerate"]) == 0
    assert "note: 2 degenerate rows kept in the PCA fit and the picture" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["plot", "norms", "--keep-degenerate"])
    assert exc.value.code == 2
