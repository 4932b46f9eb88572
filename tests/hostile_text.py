"""The tests' oracle for text from hostile model files: which characters act instead of being shown,
how each should be shown, and what a Markdown viewer makes of a page.

The acting characters are listed here from the issue (C0 and C1 controls, DEL, the Unicode
bidi controls, U+2028/U+2029); their visible form is what Python's ``repr`` writes; Markdown
is rendered by markdown-it-py (CommonMark with GFM tables, as a reader's viewer shows it)
and read back with the standard library's ``html.parser``. Nothing here comes from embedlab.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

markdown_it = pytest.importorskip("markdown_it")

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ACTING = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), *BIDI, "\u2028", "\u2029"])

# One of each kind: CR and the other line breaks, an OSC title and a clear-screen, the one-character
# CSI, a bidi override, HTML, Markdown markup, backticks, pipes, entities, NUL and BEL.
HOSTILE = ["cr\rbreak", "<img src=x onerror=alert(1)>", "tick`s``", "\x1b]0;owned\x07", "\x1b[2J", "csi\x9b31m",
           "rlo\u202eevil", "ls\u2028ps\u2029", "nul\x00bel\x07", "pipe|cell", "lf\nline", "crlf\r\nx",
           "vt\x0bff\x0c", "nel\x85", "lri\u2066x\u2069", "lrm\u200e\u200f\u061c",
           "*em* _u_ [l](javascript:alert(1))", "&lt;b&gt;", "`", " a ", "del\x7f", "back\\slash", "tab\there",
           "<script>alert(1)</script>", "- [x] ~~s~~ # h", "1. one", "a\\", "\\`", "``x``"]


def visible(text: str) -> str:
    """``text`` with each acting character as ``repr`` writes it (``\\x1b``, ``\\u202e``)."""
    return "".join(repr(ch)[1:-1] if ch in ACTING else ch for ch in text)


def acting(text: str) -> set[str]:
    """The acting characters in ``text``, newline aside (it ends lines in every medium)."""
    return {ch for ch in text if ch in ACTING and ch != "\n"}


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each ``<code>`` element, of an HTML text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple]] = []
        self.codes: list[str] = []
        self.cells: list[str] = []
        self.text = ""
        self._in: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, tuple(attrs)))
        if tag in ("code", "td", "th"):
            self._in.append(tag)
            (self.codes if tag == "code" else self.cells).append("")

    def handle_endtag(self, tag):
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data):
        self.text += data
        if "code" in self._in:
            self.codes[-1] += data
        if any(t in ("td", "th") for t in self._in):
            self.cells[-1] += data


def render(markdown: str) -> Elements:
    return Elements(markdown_it.MarkdownIt("commonmark").enable("table").render(markdown))
