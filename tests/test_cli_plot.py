"""embedlab plot and embedlab report --html, as a user runs them."""

import struct

import pytest

pytest.importorskip("matplotlib")

from embedlab import cli  # noqa: E402
from embedlab.projection import METHODS  # noqa: E402


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_cli_methods_are_the_projection_methods():
    assert cli.PROJECTION_METHODS == METHODS


@pytest.mark.parametrize("figure", ["projection", "norms", "neighbors", "scale", "positions", "bands"])
def test_every_figure_on_the_seed_table(tmp_path, figure):
    out = tmp_path / f"{figure}.png"
    assert cli.main(["plot", figure, "--out", str(out), "--size", "640x480", "--quiet"]) == 0
    assert png_size(out) == (640, 480)


@pytest.mark.data
@pytest.mark.parametrize("model", ["minilm", "glove"])
@pytest.mark.parametrize("figure", ["projection", "norms", "neighbors", "scale", "positions", "bands"])
def test_every_figure_on_real_tables(tmp_path, model, figure):
    out = tmp_path / "f.png"
    assert cli.main(["plot", figure, "--model", model, "--probe", "king", "--out", str(out), "--quiet"]) == 0
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
    assert text.count("<h2>") == 5 and text.count("data:image/png;base64,") == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embed_report.html", "embed_report.json", "embed_report.md"]


@pytest.mark.parametrize("argv, message", [
    (["projection", "--tokens", ""], "empty item"),
    (["projection", "--tokens", "1,,2"], "empty item"),
    (["projection", "--sample", "-1"], "sample=-1"),
    (["neighbors", "--k", "0"], "k=0"),
])
def test_more_bad_input(tmp_path, capsys, argv, message):
    assert cli.main(["plot", *argv, "--out", str(tmp_path / "f.png"), "--quiet"]) == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["norms", "--out", "x.jpg"], ["norms", "--size", "100000x100000"]])
def test_out_must_be_png_and_size_bounded(argv):
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
