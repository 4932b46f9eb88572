"""One name per table in every command: the model's folder, never its format or family (issue 23, item 1).

Two tiny checkpoints built with transformers (a BERT and an untied Llama, from
the ``hf_families`` fixture) are copied into folders whose names say neither
the format nor the family (``alpha-model``, ``beta-model``). Every command's
output, figure and page must name each by its folder, so that outputs of two
models are told apart; no output may call a model "safetensors". The names
expected are the folders' own, not embedlab's output.
"""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("matplotlib")

import embedlab  # noqa: E402
from embedlab import cli  # noqa: E402

pytestmark = pytest.mark.torch

NAMES = {"bert": "alpha-model", "llama": "beta-model"}
FIGURES = ("projection", "norms", "neighbors", "scale", "positions")


@pytest.fixture(scope="module")
def folders(hf_families, tmp_path_factory):
    """family -> a copy of its checkpoint in a folder named after neither format nor family, with a tokenizer."""
    root = tmp_path_factory.mktemp("names")
    vocab = {"[PAD]": 0, "[UNK]": 1, **{f"w{i}": i for i in range(2, 1000)}}
    out = {}
    for family, name in NAMES.items():
        folder = shutil.copytree(hf_families[family].path, root / name)
        tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
        tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
        tk.save(str(folder / "tokenizer.json"))
        out[family] = folder
    return out


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("family", NAMES)
def test_the_terminal_outputs_name_the_folder(folders, capsys, family):
    folder, name = folders[family], NAMES[family]
    other = next(n for f, n in NAMES.items() if f != family)
    outputs = {
        "neighbors": run(capsys, "neighbors", "--model", folder, "w5", "--k", "3")[1].splitlines()[0],
        "encode": run(capsys, "encode", "--model", folder, "w5 w6")[1].splitlines()[0],
        "hubs": run(capsys, "hubs", "--model", folder, "--k", "3", "--queries", "50")[1].splitlines()[0],
    }
    for command, first in outputs.items():
        assert name in first and other not in first and "safetensors" not in first, (command, first)
    data = json.loads(run(capsys, "neighbors", "--model", folder, "w5", "--k", "3", "--json")[1])
    assert data["source"]["name"] == name and data["source"]["source"] == "safetensors"  # the format: its own key


def test_positions_and_its_error_name_the_folder(folders, capsys):
    code, out, _ = run(capsys, "positions", "--model", folders["bert"])
    assert code == 0 and out.startswith("embedlab positions: alpha-model position table (")
    code, _, err = run(capsys, "positions", "--model", folders["llama"])
    assert code == 1 and err.startswith("embedlab positions: error: beta-model has no position table")
    assert "safetensors" not in err


@pytest.mark.parametrize("family", NAMES)
@pytest.mark.parametrize("figure", FIGURES)
def test_every_figure_names_its_folder(folders, family, figure):
    name, other = NAMES[family], next(n for f, n in NAMES.items() if f != family)
    options = {"probe": "w5"} if figure in ("projection", "neighbors", "scale") else {}
    fig = embedlab.plot(figure, str(folders[family]), lang="en", **options)
    titles = " ".join([fig._suptitle.get_text() if fig._suptitle else "", *(ax.get_title() for ax in fig.axes)])
    assert name in titles and other not in titles and "safetensors" not in titles, titles


def test_the_output_head_is_named_by_folder_and_part(folders):
    fig = embedlab.plot("scale", str(folders["llama"]), table="head", probe="w5", lang="en")
    assert "rows of beta-model, output head near 'w5'" in fig._suptitle.get_text()


def test_the_projector_page_and_the_report_name_the_folder(folders, capsys, tmp_path):
    page = tmp_path / "p.html"
    assert run(capsys, "projector", "--model", folders["bert"], "--out", page, "--sample", "30")[0] == 0
    html = page.read_text(encoding="utf-8")
    assert "<title>alpha-model: " in html and "safetensors" not in html.split("<script")[0]
    assert run(capsys, "report", "--model", folders["llama"], "--out", tmp_path / "r", "--lang", "en")[0] == 0
    markdown = (tmp_path / "r" / "embed_report.md").read_text(encoding="utf-8")
    assert "The token-embedding table of `beta-model`" in markdown and "| `source.name` | beta-model |" in markdown
    assert json.loads((tmp_path / "r" / "embed_report.json").read_text())["source"]["name"] == "beta-model"
