"""The glyphs a page carries: @font-face rules with WOFF2 subsets in data: URLs, read back with fontTools
(tests/embedded_fonts.py) and checked against the font files themselves (their character maps, read with
fontTools from the files the figures are drawn with: matplotlib's DejaVu Sans and the Noto Sans CJK JP of
notojp-matplotlib), never against embedlab's own lists."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("brotli")

from fontTools.ttLib import TTFont  # noqa: E402
from matplotlib import get_data_path  # noqa: E402

from embedded_fonts import covered, faces  # noqa: E402
from embedlab.errors import MissingExtraError  # noqa: E402
from embedlab.report import webfont  # noqa: E402

UNICORN = "\N{UNICORN FACE}"  # in neither font


def _cmap(path: Path) -> set[int]:
    with TTFont(str(path), lazy=True) as font:
        return set(font.getBestCmap())


DEJAVU = Path(get_data_path(), "fonts", "ttf", "DejaVuSans.ttf")
NOTO = Path(importlib.util.find_spec("notojp_matplotlib").submodule_search_locations[0], "fonts",
            "NotoSansCJKjp-Regular.otf")


def test_each_character_comes_from_the_first_font_that_has_it_as_matplotlib_draws_it():
    text = "king × 王 한국어 かな — é"
    css = webfont.font_faces(text)
    (latin, latin_range), (cjk, cjk_range) = faces(css)
    dejavu, noto = _cmap(DEJAVU), _cmap(NOTO)
    wanted = {ord(c) for c in text}
    assert latin_range == wanted & dejavu  # DejaVu Sans first, as fonts.families() orders them
    assert cjk_range == (wanted - dejavu) & noto
    assert latin_range <= set(latin.getBestCmap()) and cjk_range <= set(cjk.getBestCmap())
    assert "Noto Sans CJK JP" in cjk["name"].getDebugName(1) and "DejaVu Sans" in latin["name"].getDebugName(1)
    assert "SIL Open Font License 1.1" in css


def test_a_subset_holds_the_glyphs_asked_for_and_not_the_whole_font():
    css = webfont.font_faces("표")
    ((font, points),) = faces(css)
    assert points == {ord("표")} and ord("표") in font.getBestCmap()
    assert len(font.getGlyphOrder()) < 10  # .notdef and the glyph, not Noto's 65,535
    assert len(css) < 5000


def test_characters_no_font_has_are_left_to_the_machine():
    assert webfont.font_faces(UNICORN) == ""
    assert ord(UNICORN) not in covered(webfont.font_faces(f"a{UNICORN}"))


def test_the_same_text_gives_the_same_bytes():
    webfont._woff2.cache_clear()
    first = webfont.font_faces("같은 글자 same")
    webfont._woff2.cache_clear()
    assert webfont.font_faces("같은 글자 same") == first


def test_page_text_is_what_a_reader_sees():
    markup = ('<html><head><style>h1 { font-family: "x가" }</style><script>var s = "나";</script></head>'
              '<body><h1>제목 &amp; &#x738B;</h1><svg><text>축</text></svg><input placeholder="검색"></body></html>')
    assert webfont.page_text(markup) == "제목 & 王축검색"


def test_without_brotli_the_extra_is_named(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "brotli" else object())
    with pytest.raises(MissingExtraError, match=r"brotli.*plots"):
        webfont.font_faces("표")
