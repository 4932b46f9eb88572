"""The diff's renderers: its words in four languages, the Markdown (as markdown-it-py renders it), the terminal
summary.

Expected words come from ``locales.DIFF_WORDS``, the data that defines them; the tables are built here.
"""

from __future__ import annotations

import string

import numpy as np
import pytest

import embedlab
from embedlab.engine.table import EmbeddingTable
from embedlab.report import diff as diff_report, views
from embedlab.report.locales import DIFF_WORDS, LANGUAGES

pytest.importorskip("markdown_it")
from hostile_text import render  # noqa: E402

TOKENS = ["<pad>", "王様", "日本語", "한국어", "a|b", "`tick`", "<img src=x>", *(f"w{i}" for i in range(7, 40))]


def _fields(value):
    if isinstance(value, str):
        return sorted(f for _, f, _, _ in string.Formatter().parse(value) if f)
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_fields(v) for v in value]
    return value


def _result(top: int = 3, scales=np.arange(1, 7)):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 8))
    B = np.vstack([A, np.repeat(A.mean(axis=0, keepdims=True), 2, axis=0), rng.normal(size=(1, 8))])
    B[[1, 2, 3, 4, 5, 6]] += rng.normal(size=(6, 8)) * np.asarray(scales)[:, None]  # moved: the tokens to show
    extra = ["新", "王", "x\u202ey"]
    return embedlab.diff(EmbeddingTable(A, vocabulary=TOKENS), EmbeddingTable(B, vocabulary=TOKENS + extra), top=top)


def test_every_language_has_the_same_diff_words_and_fields():
    base = _fields(DIFF_WORDS["en"])
    assert set(DIFF_WORDS) == set(LANGUAGES)
    for lang in LANGUAGES:
        assert _fields(DIFF_WORDS[lang]) == base, lang


@pytest.mark.parametrize("lang", LANGUAGES)
def test_markdown_has_its_languages_headings_and_shows_every_token_as_code(lang):
    r = _result()
    md = diff_report.diff_markdown(r, lang)
    words = DIFF_WORDS[lang]
    for part in ("summary", "most_moved", "least_moved", "new_rows", "drifted", "lowest_overlap"):
        assert f"\n## {words['headings'][part]}\n" in md, part
    assert f"\n## {words['geometry']['heading']}\n" in md
    page = render(md)
    assert not any(tag in ("img", "script") for tag, _ in page.tags)  # '<img src=x>' stays text
    most = sorted(range(1, 7), key=lambda i: -r.changes.l2[i])[:3]  # the three largest changes, from the arrays
    for i in most:
        assert TOKENS[i] in page.codes, TOKENS[i]
    assert "新" in page.codes and "王" in page.codes and "x\\u202ey" in page.codes  # the bidi control shown, not acting


def test_the_terminal_summary_counts_and_names_what_moved():
    r = _result(top=2)
    text = views.diff_terminal(r)
    lines = text.splitlines()
    assert lines[0] == "embedlab diff: A: array, V = 40 rows x D = 8. B: array, V = 43 rows x D = 8."
    assert lines[1] == ("Rows: 40 shared (40 by id, 0 by token string where the ids differ); 3 only in B (added), "
                        "0 only in A (removed).")
    assert lines[2].startswith("Exactly equal: 34; changed: 6 ")
    assert "Still at their initialisation: 2; moved: 1." in text
    assert "'新'" in text and "at the old rows' mean" in text and "\u202e" not in text
    assert "… and 1 more (--json lists all)" in text  # 3 added rows, 2 shown


@pytest.mark.plots
@pytest.mark.parametrize("lang", ["ko", "en"])
def test_the_figure_labels_the_drifted_rows_with_their_tokens_in_its_language(lang):
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    from embedlab.report import plots

    rng = np.random.default_rng(3)
    A = rng.normal(size=(200, 8))
    B = A @ np.linalg.qr(rng.normal(size=(8, 8)))[0] + rng.normal(size=(200, 8)) * 1e-4
    B[[1, 2, 3, 6]] += rng.normal(size=(4, 8)) * 3  # the CJK rows and '<img src=x>' moved far, the rest turned
    tokens = TOKENS + [f"w{i}" for i in range(40, 200)]
    r = embedlab.diff(EmbeddingTable(A, vocabulary=tokens), EmbeddingTable(B, vocabulary=tokens), top=3)
    fig = plots.diff_figure(r, lang=lang)
    texts = [t.get_text() for t in fig.findobj(Text)]
    words = DIFF_WORDS[lang]["figure"]
    assert words["drift_title"] in texts and words["geometry_title"] in texts
    for token in ("王様", "日本語", "한국어", "<img\u2423src=x>"):  # a label shows a space as ␣
        assert any(token in t for t in texts), token
    assert not any(t.startswith("w") and t[1:].isdigit() for t in texts)  # unmoved rows are not labelled
    assert not any("tick" in t or "a|b" in t for t in texts)
    assert plots.png_bytes(fig).startswith(b"\x89PNG")
