"""The audit's renderers: its words in four languages, the Markdown, the terminal summary, the figure's refusal.

The result is measured on a table built here (NumPy) with a tokenizer built with ``tokenizers``: no torch needed.
Expected words come from ``locales.AUDIT_WORDS``, the data that defines them.
"""

from __future__ import annotations

import string
import sys
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from audit_models import trained_rows, untrained_rows, word_tokenizer  # noqa: E402
import embedlab  # noqa: E402
from embedlab import api  # noqa: E402
from embedlab.engine.provenance import Provenance  # noqa: E402
from embedlab.measure import audit as _audit  # noqa: E402,F401
from embedlab.report import audit as audit_report, run as run_record, views  # noqa: E402
from embedlab.report.formats import format_value  # noqa: E402
from embedlab.report.locales import AUDIT_WORDS, LANGUAGES  # noqa: E402
from embedlab.sources.stored import StoredTables  # noqa: E402
from embedlab.sources.tokenizer import TokenizerInventory  # noqa: E402

measure = sys.modules["embedlab.measure.audit"]
undertrained = sys.modules["embedlab.measure.undertrained"]
TOKENS = ["<unk>", "<s>", "</s>", "王様", "a|b", "`x`", *(f"w{i}" for i in range(6, 200)),
          *(f"[unused{k}]" for k in range(8))]


def _result(with_tokenizer: bool = True, tied: bool = True, padding: int = 0, nan_head_rows: tuple[int, ...] = ()):
    """The audit of a table of TOKENS (``padding`` rows past them), tied, or untied with a head whose
    ``nan_head_rows`` hold NaN."""
    table = trained_rows(len(TOKENS) + padding, 1)
    table[len(TOKENS) - 8:] = untrained_rows(8 + padding, 2)
    table[7] = 0.0
    head = None
    if nan_head_rows:
        head = trained_rows(len(table), 3)
        head[len(TOKENS) - 8:] = untrained_rows(8 + padding, 4)
        head[list(nan_head_rows)] = np.nan
    stored = StoredTables(table=table, head=head, tied=tied if head is None else False,
                          provenance=Provenance("safetensors", path="/m/tiny"),
                          head_provenance=None if head is None else Provenance("safetensors", path="/m/tiny",
                                                                               tensor="lm_head.weight", part="head"),
                          vocab_size=len(table), vocab_size_key="config.json vocab_size")
    if not with_tokenizer:
        return measure.audit(stored, None, no_tokenizer="tiny has no tokenizer")
    runner = word_tokenizer(TOKENS)
    runner.no_padding()
    inventory = TokenizerInventory(tokens=tuple(TOKENS), length=len(TOKENS), base_size=len(TOKENS),
                                   added=frozenset({0, 1, 2}), special=frozenset({0, 1, 2}), unused=frozenset(),
                                   types=None, reader="tokenizer.json, read by tokenizers", runner=runner)
    return measure.audit(stored, inventory)


def _fields(value):
    if isinstance(value, str):
        return sorted(f for _, f, _, _ in string.Formatter().parse(value) if f)
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_fields(v) for v in value]
    return value


def test_every_language_has_the_same_audit_words_and_fields():
    base = _fields(AUDIT_WORDS["en"])
    assert set(AUDIT_WORDS) == set(LANGUAGES)
    for lang in LANGUAGES:
        assert _fields(AUDIT_WORDS[lang]) == base, lang


def test_every_finding_has_words_and_advice():
    codes = {"ids_past_table", "ids_past_head", "nonfinite_rows", "zero_token_rows", "duplicate_rows",
             "config_vocab_size", "head_rows", "resize_drops_tokens", "resize_drops_trained", "undertrained",
             "reachable_unused", "unreachable", "holes", "padding_rows", "resize_changes"}
    for lang in LANGUAGES:
        assert set(AUDIT_WORDS[lang]["findings"]) == set(AUDIT_WORDS[lang]["advice"]) == codes, lang
    assert set(AUDIT_WORDS["en"]["populations"]) == set(measure.POPULATIONS)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_markdown_has_the_headings_of_its_language(lang):
    md = audit_report.audit_markdown(_result(), lang)
    words = AUDIT_WORDS[lang]
    assert md.startswith(f"# {words['title'].format(table='tiny')}\n")
    for part in ("summary", "accounting", "reachability", "degenerate", "undertrained"):
        assert f"\n## {words['headings'][part]}\n" in md, part
    assert f"**{words['severity']['warning']}**" in md  # the zero row 7


def test_markdown_quotes_tokens_as_code():
    md = audit_report.audit_markdown(_result(), "en")
    assert "7 `w7`" in md  # the zero row, named with its token


def test_the_terminal_summary_of_a_partial_audit_says_what_it_skipped():
    text = views.audit_terminal(_result(with_tokenizer=False, tied=None))
    lines = text.splitlines()
    assert lines[0] == ("embedlab audit: tiny: token table V = 208 rows x D = 16 (not known); no output head of its own, "
                        "and the source does not say the head is the token table. Tokenizer: none.")
    assert "skipped: row accounting against the tokenizer: the tokenizer's ids: tiny has no tokenizer" in lines
    assert "skipped: reachability: tiny has no tokenizer" in lines
    assert any(line.startswith("skipped: under-trained tokens: no reference rows") for line in lines)
    words = AUDIT_WORDS["en"]
    parts = ", ".join(words["skipped_parts"][p] for p in ("accounting", "reachability", "undertrained"))
    # no finding (a zero row without a token is no finding): never "Nothing wrong found." alone
    assert lines[1] == f"{words['clean_partial']} Skipped: {parts}." != words["clean"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_resize_rule_is_numbers_worded_in_each_language(lang):
    r = _result(padding=8)
    table = trained_rows(len(TOKENS) + 8, 1)
    table[len(TOKENS) - 8:] = untrained_rows(16, 2)
    table[7] = 0.0
    # the oracle: the median length of the rows tokens map to, the [unusedN] tokens left out
    token_rows = [i for i, t in enumerate(TOKENS) if not t.startswith("[unused")]
    median = float(np.median(np.linalg.norm(table[token_rows].astype(np.float64), axis=1)))
    rule = r.to_dict()["accounting"]["resize"]["rule"]
    assert rule["factor"] == 4.0 and list(rule["lengths"]) == ["input"]
    assert rule["lengths"]["input"] == pytest.approx([median / 4, median * 4], rel=1e-6)
    words = AUDIT_WORDS[lang]
    md = audit_report.audit_markdown(r, lang)
    said = words["trained_rule"].format(factor="4", ranges=words["rule_range"].format(
        part=words["parts"]["input"], low=f"{median / 4:.4g}", high=f"{median * 4:.4g}"))
    assert said in md.replace("\\", "")  # Markdown escapes the rule's brackets
    assert (lang == "en") == ("a row looks trained" in md)  # no English sentence in another language's report
    # the note on what a resize drops: no warning names a row here (the 8 padding rows never trained), so no
    # "besides those a warning names"
    assert words["findings"]["resize_changes"].format(length=format_value(len(TOKENS)), count=8, besides="") in md


def test_a_figure_says_which_rows_it_could_not_draw():
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    from embedlab.report import plots

    r = _result(nan_head_rows=(50, 51))
    texts = [t.get_text() for t in plots.audit_figure(r, lang="en").findobj(Text)]
    note = AUDIT_WORDS["en"]["figure"]["not_drawn"].format(count=2, ids="50, 51")
    assert any(note in text for text in texts), texts


def test_the_markdown_ends_with_the_run_record():
    r = replace(_result(), run=run_record.record("embedlab audit --model m", date="2026-09-17T08:00:00Z"))
    assert audit_report.audit_markdown(r, "en").endswith(
        f"\n---\n\nWritten by embedlab {embedlab.__version__} on 2026-09-17T08:00:00Z (UTC) with "
        "`embedlab audit --model m`\n")
    assert r.to_dict()["run"] == {"version": embedlab.__version__, "date": "2026-09-17T08:00:00Z",
                                  "command": "embedlab audit --model m"}


def test_the_figure_without_indicators_is_refused_with_the_reason():
    pytest.importorskip("matplotlib")
    from embedlab.report import plots

    with pytest.raises(ValueError, match="no under-trained indicator to draw: no reference rows"):
        plots.audit_figure(_result(with_tokenizer=False, tied=None))


def test_the_apis_default_percentile_is_magikarps():
    assert api.AUDIT_PERCENTILE == undertrained.DEFAULT_PERCENTILE == 2.0
    assert np.isfinite(_result().undertrained.threshold)
