"""The audit's renderers: its words in four languages, the Markdown, the terminal summary, the figure's refusal.

The result is measured on a table built here (NumPy) with a tokenizer built with ``tokenizers``: no torch needed.
Expected words come from ``locales.AUDIT_WORDS``, the data that defines them.
"""

from __future__ import annotations

import string
import sys

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from audit_models import trained_rows, untrained_rows, word_tokenizer  # noqa: E402
from embedlab import api  # noqa: E402
from embedlab.engine.provenance import Provenance  # noqa: E402
from embedlab.measure import audit as _audit  # noqa: E402,F401
from embedlab.report import audit as audit_report, views  # noqa: E402
from embedlab.report.locales import AUDIT_WORDS, LANGUAGES  # noqa: E402
from embedlab.sources.stored import StoredTables  # noqa: E402
from embedlab.sources.tokenizer import TokenizerInventory  # noqa: E402

measure = sys.modules["embedlab.measure.audit"]
undertrained = sys.modules["embedlab.measure.undertrained"]
TOKENS = ["<unk>", "<s>", "</s>", "王様", "a|b", "`x`", *(f"w{i}" for i in range(6, 200)),
          *(f"[unused{k}]" for k in range(8))]


def _result(with_tokenizer: bool = True, tied: bool = True):
    table = trained_rows(len(TOKENS), 1)
    table[-8:] = untrained_rows(8, 2)
    table[7] = 0.0
    stored = StoredTables(table=table, head=None, tied=tied, provenance=Provenance("safetensors", path="/m/tiny"),
                          vocab_size=len(TOKENS), vocab_size_key="config.json vocab_size")
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


def test_the_figure_without_indicators_is_refused_with_the_reason():
    pytest.importorskip("matplotlib")
    from embedlab.report import plots

    with pytest.raises(ValueError, match="no under-trained indicator to draw: no reference rows"):
        plots.audit_figure(_result(with_tokenizer=False, tied=None))


def test_the_apis_default_percentile_is_magikarps():
    assert api.AUDIT_PERCENTILE == undertrained.DEFAULT_PERCENTILE == 2.0
    assert np.isfinite(_result().undertrained.threshold)
