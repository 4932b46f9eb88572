"""tools/screenshots.py's file names, without a browser: a fake page answers the few questions asked."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "screenshots.py"


def load():
    spec = importlib.util.spec_from_file_location("screenshots", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakePage:
    def __init__(self, projector, table, lang, title="a title in any language"):
        self.answers = {"Boolean(document.getElementById('embedlab-data'))": projector, "document.title": title,
                        "document.documentElement.lang": lang, load().TABLE_NAME: table}

    def evaluate(self, script):
        return self.answers[script]


def test_pages_of_the_same_name_get_distinct_png_names():
    shots = load()
    taken = set()
    pages = [(FakePage(True, "glove", "en"), Path("a/projector.html")),
             (FakePage(True, "minilm", "en"), Path("b/projector.html")),
             (FakePage(True, "minilm", "ko"), Path("c/projector.html")),
             (FakePage(False, "minilm", "ko", "임베딩 표에서 로짓까지: 실험 보고서"), Path("out/embed_report.html")),
             (FakePage(True, "glove", "en"), Path("d/projector.html"))]
    names = [shots.shot_name(page, path, taken) for page, path in pages]
    assert names == ["projector-glove-en-projector", "projector-minilm-en-projector", "projector-minilm-ko-projector",
                     "report-minilm-ko-embed_report", "projector-glove-en-projector-2"]
    assert len(set(names)) == len(names)


def test_pages_are_named_by_the_table_they_record_not_by_their_title():
    """Both kinds of page record their table in <meta name="embedlab-table">; the script reads it there
    (a report's title names no table; a zh projector's title has a full-width colon)."""
    import re

    import numpy as np
    import pytest

    pytest.importorskip("plotly")
    pytest.importorskip("sklearn")
    import embedlab
    from embedlab.engine.provenance import Provenance
    from embedlab.engine.table import EmbeddingTable
    from embedlab.report import projector

    table = EmbeddingTable(np.random.default_rng(0).normal(size=(20, 4)), vocabulary=[f"w{i}" for i in range(20)],
                           provenance=Provenance("minilm", package="x 1.0"))
    text = projector.projector_html(embedlab.projector(table, tokens=["w1", "w2", "w3"]), "zh")
    meta = re.search(r'<meta name="embedlab-table" content="([^"]*)">', text)[1]
    assert meta == "minilm" and "minilm：" in text  # the title's colon is full-width in zh
    shots = load()
    assert shots.shot_name(FakePage(True, meta, "zh", "minilm：3 个词元"), Path("p.html"), set()) == "projector-minilm-zh-p"
