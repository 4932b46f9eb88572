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
    def __init__(self, projector, title, lang):
        self.answers = {"Boolean(document.getElementById('embedlab-data'))": projector, "document.title": title,
                        "document.documentElement.lang": lang}

    def evaluate(self, script):
        return self.answers[script]


def test_pages_of_the_same_name_get_distinct_png_names():
    shots = load()
    taken = set()
    pages = [(FakePage(True, "glove: 10,000 points, 2-D PCA", "en"), Path("a/projector.html")),
             (FakePage(True, "minilm: 6 points, 3-D PCA", "en"), Path("b/projector.html")),
             (FakePage(True, "minilm: 6 points, 3-D PCA", "ko"), Path("c/projector.html")),
             (FakePage(False, "minilm — embedlab report", "ko"), Path("out/embed_report.html")),
             (FakePage(True, "glove: 10,000 points, 2-D PCA", "en"), Path("d/projector.html"))]
    names = [shots.shot_name(page, path, taken) for page, path in pages]
    assert names == ["projector-glove-en-projector", "projector-minilm-en-projector", "projector-minilm-ko-projector",
                     "report-minilm-ko-embed_report", "projector-glove-en-projector-2"]
    assert len(set(names)) == len(names)
