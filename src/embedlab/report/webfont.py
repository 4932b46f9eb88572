"""Web fonts: a page carries the glyphs of its own text, so that it reads the same on any machine.

A browser draws the text of an HTML page, and of an SVG file, with the fonts it
finds on the machine; where none has Hangul, kana or Han (a server, a fresh
Linux without ``fonts-noto-cjk``), every Korean heading, caption and CJK token
is an empty box. So each page embeds the glyphs it shows: for each font file of
``fonts.files()`` (DejaVu Sans, then Noto Sans CJK JP: the files matplotlib
measures and draws the figures with, in its fallback order), a subset holding
exactly the characters of the page's text that this file is the first to have,
written by ``fontTools.subset`` as WOFF2 (Brotli-compressed, the ``brotli``
package) and inlined as an ``@font-face`` rule whose ``src`` is a ``data:``
URL. The rules share one family, ``FAMILY``, each with the ``unicode-range``
of its own characters, so the browser takes every character from the face
that has it, as matplotlib did when it laid the figure out. Pages and SVG
text name ``FAMILY`` first; the machine's fonts stay behind it for characters
neither file has (most emoji), which the figures draw as ``fonts.REPLACEMENT``.

The subsets keep only what the text needs: a Korean report of a few hundred
distinct characters embeds about 40 kB of WOFF2 as base64, written in about a
second; a page naming 785 distinct CJK characters 180 kB, in about 5 s on two
busy cores (cutting the CFF font and Brotli's best compression take the time).
Both fonts may be embedded: DejaVu
Sans under its own licence (Bitstream Vera's, with DejaVu's changes in the
public domain), Noto Sans CJK under the SIL Open Font License 1.1; each rule
names its font and licence in a comment.

fontTools and brotli come with the ``plots`` extra, as matplotlib does.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import io
from html.parser import HTMLParser
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

from ..errors import MissingExtraError
from . import fonts

__all__ = ["FAMILY", "font_faces", "page_text"]

FAMILY = "embedlab"  # the family of the embedded faces, named first by every page and SVG text
LICENCES = {"DejaVu Sans": "Bitstream Vera licence, DejaVu changes public domain",
            "Noto Sans CJK JP": "SIL Open Font License 1.1"}


def font_faces(text: str) -> str:
    """``@font-face`` rules of family ``FAMILY`` that hold a glyph for every character of ``text`` the
    shipped fonts have, as CSS for a ``<style>`` element; ``""`` when they have none of them.

    Parameters
    ----------
    text : str
        Everything the page shows (``page_text``): headings, prose, captions,
        figure text, tokens. Each character goes to the first file of
        ``fonts.files()`` that has it; a character no file has is left to the
        machine's fonts.

    Returns
    -------
    str
        One rule per file that has some of the characters:
        ``@font-face { font-family: "embedlab"; src: url(data:font/woff2;base64,...)
        format("woff2"); unicode-range: U+20-7E, U+AC00; }``, preceded by a comment
        naming the font and its licence. The same text gives the same bytes.

    Raises
    ------
    MissingExtraError
        (an ``ImportError``) when the CJK font, fontTools or brotli is not
        installed (the ``plots`` extra).

    >>> css = font_faces("king 王")
    >>> css.count("@font-face"), "unicode-range: U+20, U+67, U+69, U+6B, U+6E;" in css, "U+738B;" in css
    (2, True, True)
    """
    if importlib.util.find_spec("brotli") is None:
        raise MissingExtraError.for_module("brotli", "the fonts embedded in pages (WOFF2)", ("plots",))
    wanted = sorted({ord(c) for c in text})
    rules = []
    for path, family in zip(fonts.files(), fonts.families()):
        has = fonts.charmap(path)
        mine = tuple(p for p in wanted if p in has)
        wanted = [p for p in wanted if p not in has]
        if mine:
            data = base64.b64encode(_woff2(path, mine)).decode("ascii")
            rules.append(f"/* {family}, the characters of this page it has ({LICENCES.get(family, 'its licence')}) */\n"
                         f'@font-face {{ font-family: "{FAMILY}"; font-style: normal; font-weight: 400; '
                         f'src: url(data:font/woff2;base64,{data}) format("woff2"); '
                         f"unicode-range: {_ranges(mine)}; }}")
    return "\n".join(rules)


def page_text(markup: str) -> str:
    """The text a reader of an HTML or SVG document sees: its character data outside ``<style>`` and
    ``<script>``, character references decoded, and its ``placeholder`` attributes.

    >>> page_text('<style>p{}</style><h1>표 &amp; <b>x</b></h1><input placeholder="검색">')
    '표 & x검색'
    """
    reader = _TextReader()
    reader.feed(markup)
    reader.close()
    return "".join(reader.parts)


class _TextReader(HTMLParser):
    """Collects character data outside style and script elements, and placeholders."""

    HIDDEN = frozenset({"style", "script"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += tag in self.HIDDEN
        self.parts += [value for key, value in attrs if key == "placeholder" and value]

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN and self.hidden:
            self.hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


@functools.lru_cache(maxsize=16)
def _woff2(path: Path, points: tuple[int, ...]) -> bytes:
    """The font file ``path`` cut down to the glyphs of ``points`` (and what they need), as WOFF2 bytes.

    ``recalcTimestamp=False``: the file's own dates stay, so the same characters give the same bytes.
    """
    options = subset.Options()
    options.flavor = "woff2"
    options.drop_tables += ["FFTM"]  # FontForge's build dates (in DejaVu Sans): not a table a browser reads
    out = io.BytesIO()
    with TTFont(str(path), lazy=True, recalcTimestamp=False) as font:
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, out, options)  # in options.flavor (font.save would write the plain font)
    return out.getvalue()


def _ranges(points: tuple[int, ...]) -> str:
    """Sorted code points as a CSS ``unicode-range``: runs as ``U+AC00-AC02``.

    >>> _ranges((0x20, 0x41, 0x42, 0x43, 0xAC00))
    'U+20, U+41-43, U+AC00'
    """
    runs: list[list[int]] = []
    for p in points:
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ", ".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in runs)
