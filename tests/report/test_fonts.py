"""Fonts for every script: the CJK font ships in a wheel and is found without importing its
package; what no font covers is found before drawing and named once, never drawn as a silent box.

Coverage is checked here against the font files' own character maps (FreeType, through
matplotlib.ft2font), read independently of embedlab's cache.
"""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

from matplotlib import font_manager, ft2font  # noqa: E402

from embedlab.engine.table import EmbeddingTable  # noqa: E402
from embedlab.measure import projection  # noqa: E402
from embedlab.report import fonts, plots  # noqa: E402
from embedlab.report.locales import WORDS  # noqa: E402

CJK_TOKENS = ["王", "春", "한국어", "かな", "國語", "简体"]  # Han (both forms), Hangul, kana
UNICORN = "\N{UNICORN FACE}"  # in neither DejaVu Sans nor Noto Sans CJK
KA = "\N{DEVANAGARI LETTER KA}"  # a script neither font has


def _cjk_file() -> Path:
    spec = importlib.util.find_spec("notojp_matplotlib")
    assert spec is not None, "notojp-matplotlib (the plots extra) is not installed"
    return Path(spec.submodule_search_locations[0], "fonts", "NotoSansCJKjp-Regular.otf")


def _charmap(path) -> set[int]:
    return set(ft2font.FT2Font(str(path)).get_charmap())


def _table(words):
    return EmbeddingTable(np.random.default_rng(3).normal(size=(len(words), 6)), vocabulary=words)


def test_the_cjk_font_is_registered_without_importing_its_package():
    before = dict(matplotlib.rcParams)
    assert fonts.families() == ("DejaVu Sans", "Noto Sans CJK JP")
    found = font_manager.findfont(font_manager.FontProperties(family="Noto Sans CJK JP"), fallback_to_default=False)
    assert Path(found).resolve() == _cjk_file().resolve()
    assert (_cjk_file().parent / "LICENSE").read_text(encoding="utf-8").startswith(
        "This Font Software is licensed under the SIL Open Font License")
    assert "notojp_matplotlib" not in sys.modules  # its __init__ would set the process-wide font
    assert dict(matplotlib.rcParams) == before


def test_coverage_is_the_fonts_own_character_maps():
    cjk = _charmap(_cjk_file())
    dejavu = _charmap(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")))
    for token in CJK_TOKENS:
        assert all(ord(c) in cjk for c in token) and fonts.missing(token) == ""
    for char in (UNICORN, KA):
        assert ord(char) not in cjk | dejavu and fonts.missing(f"a{char}b{char}") == char
    assert fonts.drawable(f"x{KA}") == f"x{fonts.REPLACEMENT}"
    assert fonts.undrawable(["king", UNICORN, "王", UNICORN]) == [UNICORN]


def test_cjk_tokens_are_drawn_with_the_cjk_font_and_no_missing_glyph():
    words = CJK_TOKENS + ["king", "queen"]
    proj = projection.project(_table(words), list(range(len(words))), "pca")
    fig = plots.projection_figure(proj, lang="ja")
    labels = fig.axes[0].texts
    assert [t.get_text() for t in labels] == words  # drawn as they are, not replaced
    for text in labels:
        assert text.get_fontfamily() == ["DejaVu Sans", "Noto Sans CJK JP"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.png_bytes(fig)
    assert [str(w.message) for w in caught] == []
    assert plots.undrawn_tokens(fig) == ()
    assert not any(WORDS["ja"]["figures"]["undrawn"].split("{")[0] in t.get_text() for t in fig.texts)


def test_a_token_no_font_has_is_named_once_and_drawn_without_a_warning():
    words = ["king", f"{UNICORN}", f"{KA}x", "王", "queen"]
    proj = projection.project(_table(words), list(range(len(words))), "pca")
    fig = plots.projection_figure(proj, lang="en")
    assert plots.undrawn_tokens(fig) == (UNICORN, f"{KA}x")
    drawn = [t.get_text() for t in fig.axes[0].texts]
    assert drawn == ["king", fonts.REPLACEMENT, f"{fonts.REPLACEMENT}x", "王", "queen"]
    lead = WORDS["en"]["figures"]["undrawn"].split("{")[0]
    notes = [t.get_text() for t in fig.texts if lead in t.get_text()]
    assert len(notes) == 1 and notes[0].count(lead) == 1
    assert "U+1F984" in notes[0] and "U+0915" in notes[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.png_bytes(fig)
    assert [str(w.message) for w in caught] == []


def test_dollar_signs_in_tokens_are_drawn_as_written_not_as_math():
    from matplotlib import cbook

    words = ["$x$", "a$b$c", "king", "queen"]
    fig = plots.projection_figure(projection.project(_table(words), [0, 1, 2, 3], "pca"), lang="en")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert not any(cbook.is_math_text(t) for t in texts)
    assert [t.replace("\\$", "$") for t in texts] == words  # matplotlib draws \$ as $
    plots.png_bytes(fig)


def test_control_characters_in_tokens_are_drawn_as_signs_or_escapes_on_one_line():
    # a tab and a newline as the signs labels give them (issue 23: formats.visible_whitespace), other controls escaped
    words = ["a\tb", "x\ny", "nul\x00", "king"]
    fig = plots.projection_figure(projection.project(_table(words), [0, 1, 2, 3], "pca"), lang="en")
    assert [t.get_text() for t in fig.axes[0].texts] == ["a\u21e5b", "x\u21b5y", "nul\\x00", "king"]
    assert plots.undrawn_tokens(fig) == ()  # escaped, every character has a glyph: no note
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.png_bytes(fig)
    assert [str(w.message) for w in caught] == []
