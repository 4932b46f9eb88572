"""``embed_report.html``: the lab report as one self-contained web page.

The same five sections as the Markdown (``report.lab.report_sections``), each with
its prose, its table of measured values and its figures embedded as PNG data
URIs. No network, no JavaScript, no external file: the page can be mailed or
opened offline. Standard library only; the figures arrive as PNG bytes.
"""

from __future__ import annotations

import base64
import html
from typing import Sequence

from ..measure.lab import LabResult, LabSettings
from .locales import DEFAULT_LANGUAGE, WORDS
from .formats import Inline
from .lab import report_sections

__all__ = ["Figure", "report_html"]

# (PNG bytes, caption) of one figure
Figure = tuple[bytes, str]

HTML_INLINE = Inline(code=lambda token: f"<code>{html.escape(token)}</code>", text=html.escape)

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.5; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
td, th { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
code { background: #f4f4f4; padding: 0 0.2rem; border-radius: 3px; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .left-out { font-size: 0.85rem; color: #555; }
"""


def report_html(result: LabResult, settings: LabSettings, figures: dict[str, Sequence[Figure]],
                lang: str = DEFAULT_LANGUAGE, left_out: dict[str, Sequence[str]] | None = None) -> str:
    """The HTML page of the report.

    Parameters
    ----------
    result, settings :
        The measured report and what it measured (as for the Markdown).
    figures : dict of str -> sequence of (bytes, str)
        PNG bytes and a caption for each figure, keyed by section name
        (``what``, ``lookup``, ``tying``, ``neighbors``, ``scale``).
    lang : {"ko", "en", "ja", "zh"}
    left_out : dict of str -> sequence of str, optional
        Keyed by section like ``figures``: why a figure of that section could
        not be drawn (e.g. a projection of a table with D = 1); each reason
        becomes one line where the figure would be.

    Returns
    -------
    str
        A complete HTML5 document.

    Raises
    ------
    ValueError
        For an unknown language or a figure or reason keyed by an unknown section.
    """
    title, sections = report_sections(result, settings, lang, HTML_INLINE)
    left_out = left_out or {}
    unknown = (set(figures) | set(left_out)) - {s.key for s in sections}
    if unknown:
        raise ValueError(f"figures for unknown sections: {sorted(unknown)}")
    header = WORDS[lang]["table_header"]
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{lang}">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>",
        f"<body><h1>{html.escape(title)}</h1>",
    ]
    for section in sections:
        parts.append(f'<section id="{section.key}"><h2>{html.escape(section.heading)}</h2>')
        parts.append(f"<p>{section.prose}</p>")
        parts.append(f"<table><tr><th>{html.escape(header[0])}</th><th>{html.escape(header[1])}</th></tr>")
        parts += [f"<tr><td><code>{html.escape(key)}</code></td><td>{value}</td></tr>" for key, value in section.rows]
        parts.append("</table>")
        for png, caption in figures.get(section.key, ()):
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        for reason in left_out.get(section.key, ()):
            parts.append(f'<p class="left-out">{html.escape(WORDS[lang]["figure_left_out"].format(reason=reason))}</p>')
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
