"""``embed_report.html``: the lab report as one self-contained web page.

The same five sections as the Markdown (``report.lab.report_sections``), each with
its prose, its table of measured values and its figures, inlined as SVG whose text
stays text: tokens are found with Ctrl+F, and figures are sharp at any zoom. The
page carries the glyphs of its own text (``report.webfont``: subsets of the fonts
the figures are drawn with, as WOFF2 in ``@font-face`` rules), and its CSS and the
figures' text name that family first, so Hangul, kana and Han read the same on a
machine without CJK fonts; the machine's fonts stand behind it. Each
figure is an image to assistive technology (``role="img"``), named by alt text
written from its numbers (``report.alt_text``), distinct from its visible caption,
with its width and height in pixels. A footer records embedlab's version, the date
and the command (``report.run``). No network, no JavaScript, no external file, no
absolute local path: the page can be mailed or opened offline. The figures are drawn
by ``report.plots``, imported with this module (matplotlib, the ``plots`` extra).
"""

from __future__ import annotations

import html
import re

from ..measure.lab import LabResult
from . import plots
from .alt_text import figure_alt_text
from .locales import DEFAULT_LANGUAGE, WORDS
from .formats import Inline, source_name, terminal_text
from .lab import report_sections, run_line
from .webfont import FAMILY, font_faces, page_text

__all__ = ["report_html"]


def _html_text(text: str, newlines: bool = True) -> str:
    r"""Text for the page, from a model's files or quoting them (a token, a folder name, alt text naming
    tokens): HTML-escaped, and each character that acts rather than being shown (``formats.HIDDEN``:
    controls, bidi overrides such as U+202E, line separators) written as its escape, so nothing in it
    becomes markup or turns the text after it around. A newline is kept (it is white space in HTML)
    unless ``newlines`` is false, as in a token.

    >>> _html_text("<b>\u202eab\n"), _html_text("a\nb", newlines=False)
    ('&lt;b&gt;\\u202eab\n', 'a\\nb')
    """
    return html.escape(terminal_text(text, newlines=newlines))


HTML_INLINE = Inline(code=lambda token: f"<code>{_html_text(token, newlines=False)}</code>", text=_html_text)

# Fonts a browser may find for CJK text the page's own faces (FAMILY) lack, the report language's own first
# (one Han character is drawn differently in Korean, Japanese and Chinese type); each list ends where the
# system's fallback takes over.
CJK_FONTS = {
    "ko": ("Noto Sans CJK KR", "Source Han Sans K", "Apple SD Gothic Neo", "Malgun Gothic"),
    "ja": ("Noto Sans CJK JP", "Source Han Sans", "Hiragino Sans", "Yu Gothic", "Meiryo"),
    "zh": ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei"),
}
FONT_ORDER = {"ko": ("ko", "ja", "zh"), "en": ("ko", "ja", "zh"), "ja": ("ja", "ko", "zh"), "zh": ("zh", "ja", "ko")}

STYLE = """
:root { --cjk-fonts: FONTS; }
body { font-family: "FAMILY", system-ui, "Segoe UI", Roboto, Helvetica, Arial, var(--cjk-fonts), sans-serif; max-width: 70rem;
       margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
td, th { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; }
th { background: #f4f4f4; }
code { background: #f4f4f4; padding: 0 0.2rem; border-radius: 3px; font-size: 0.9em;
       font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", "FAMILY", var(--cjk-fonts), monospace; }
figure { margin: 1rem 0; }
figcaption { margin-top: 0.3rem; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .left-out, .note, footer { font-size: 0.85rem; color: #555; }
footer { margin-top: 3rem; border-top: 1px solid #ddd; padding-top: 0.5rem; }
"""


def report_html(result: LabResult, lang: str = DEFAULT_LANGUAGE) -> str:
    """The HTML page of the report: every section of ``report.lab.SECTIONS`` with its figures.

    Parameters
    ----------
    result : LabResult
        Measured with ``figures=True`` (``measure.lab.measure``), so that every
        figure is drawn from what was measured, never measured again.
    lang : {"ko", "en", "ja", "zh"}

    Returns
    -------
    str
        A complete HTML5 document; figures are inline ``<svg role="img">``
        elements, each named by its alt text (``<title>``, ``aria-labelledby``).
        Its style sheet embeds the glyphs of its text (``webfont.font_faces``).
        A figure the table is too small for (``result.views.left_out``) is one
        line saying why, where the figure would be. The footer (``run_line``)
        is there where ``result.run`` is set (``embedlab.report``, the CLI).

    Raises
    ------
    ValueError
        For an unknown language, or a result measured without ``figures=True``.
    MissingExtraError
        (an ``ImportError``) when the fonts or fontTools and brotli are not installed (the ``plots`` extra).
    """
    if result.views is None:
        raise ValueError("the HTML report draws figures from what was measured: measure the lab with figures=True")
    title, sections = report_sections(result, lang, HTML_INLINE)
    words = WORDS[lang]
    header = words["table_header"]
    parts = [
        f"<body><h1>{_html_text(title)}</h1>",
        *(f'<p class="note">{_html_text(words["note"])}: {_html_text(note)}</p>' for note in result.notes),
    ]
    for section in sections:
        parts.append(f'<section id="{section.key}"><h2>{_html_text(section.heading)}</h2>')
        parts.append(f"<p>{section.prose}</p>")
        parts.append(f"<table><tr><th>{_html_text(header[0])}</th><th>{_html_text(header[1])}</th></tr>")
        parts += [f"<tr><td><code>{_html_text(key)}</code></td><td>{value}</td></tr>" for key, value in section.rows]
        parts.append("</table>")
        for name in section.figures:
            reason = result.views.left_out.get(name)
            if reason is not None:
                parts.append(f'<p class="left-out">{_html_text(words["figure_left_out"].format(reason=reason))}</p>')
                continue
            svg = plots.svg_text(plots.lab_figure(name, result, lang), f"fig-{name}")
            parts.append(_figure(svg, f"fig-{name}", figure_alt_text(name, result, lang), words["captions"][name]))
        parts.append("</section>")
    if result.run is not None:
        parts.append(f"<footer><p>{run_line(result.run, lang, HTML_INLINE)}</p></footer>")
    parts.append("</body></html>")
    body = "\n".join(parts)
    return _head(result, title, lang, body) + body + "\n"


def _head(result: LabResult, title: str, lang: str, body: str) -> str:
    """The document up to ``<body>``: its metadata, and a style sheet whose ``@font-face`` rules carry the
    glyphs of every character ``body`` shows (the title is the h1's text), before the rules that name them."""
    fonts = ", ".join(f'"{font}"' for script in FONT_ORDER[lang] for font in CJK_FONTS[script])
    head = [
        "<!DOCTYPE html>",
        f'<html lang="{lang}">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *([f'<meta name="generator" content="embedlab {_html_text(result.run.version)}">'] if result.run else []),
        f'<meta name="embedlab-table" content="{_html_text(source_name(result.source))}">',  # tools/screenshots.py
        f"<title>{_html_text(title)}</title>",
        f"<style>\n{font_faces(page_text(body))}\n{STYLE.replace('FONTS', fonts).replace('FAMILY', FAMILY)}</style>",
        "</head>",
    ]
    return "\n".join(head) + "\n"


def _figure(svg: str, prefix: str, alt: str, caption: str) -> str:
    """One ``<figure>``: the SVG document ``svg`` (from ``plots.svg_text``, ids starting with ``prefix``)
    inlined as an image named by ``alt``, described by ``caption``; its text in the page's own faces
    (``FAMILY``, named first by ``svg_text``), then matplotlib's families (the ones it measured the text
    with), then the machine's CJK fonts (``--cjk-fonts``), before the generic family."""
    svg = svg[svg.index("<svg"):]  # no XML prolog or DOCTYPE inside HTML
    svg = re.sub(r' xmlns(:xlink)?="[^"]*"', "", svg)  # the HTML parser puts inline SVG in its namespace
    svg = re.sub(r"(font-family: [^;\"]*?)(, ?sans-serif)", r"\1, var(--cjk-fonts)\2", svg)
    opening = svg.index(">")
    return (f'<figure>{svg[:opening]} role="img" aria-labelledby="{prefix}-alt" aria-describedby="{prefix}-caption">'
            f'<title id="{prefix}-alt">{_html_text(alt)}</title>{svg[opening + 1:]}'
            f'<figcaption id="{prefix}-caption">{_html_text(caption)}</figcaption></figure>')
