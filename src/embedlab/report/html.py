"""``embed_report.html``: the lab report as one self-contained web page.

The same five sections as the Markdown (``report.lab.report_sections``), each with
its prose, its table of measured values and its figures embedded as PNG data
URIs. No network, no JavaScript, no external file: the page can be mailed or
opened offline. Standard library at import; matplotlib (the ``plots`` extra) draws the figures.
"""

from __future__ import annotations

import base64
import html

from ..measure.lab import LabResult
from .locales import DEFAULT_LANGUAGE, WORDS
from .formats import Inline
from .lab import report_sections

__all__ = ["report_html"]

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
figcaption, .left-out, .note { font-size: 0.85rem; color: #555; }
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
        A complete HTML5 document; figures are PNG data URIs. A figure the
        table is too small for (``result.views.left_out``) is one line saying
        why, where the figure would be.

    Raises
    ------
    ValueError
        For an unknown language, or a result measured without ``figures=True``.
    MissingExtraError
        When matplotlib is not installed (the ``plots`` extra).
    """
    if result.views is None:
        raise ValueError("the HTML report draws figures from what was measured: measure the lab with figures=True")
    from . import plots

    title, sections = report_sections(result, lang, HTML_INLINE)
    words = WORDS[lang]
    header = words["table_header"]
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{lang}">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>",
        f"<body><h1>{html.escape(title)}</h1>",
        *(f'<p class="note">{html.escape(words["note"])}: {html.escape(note)}</p>' for note in result.notes),
    ]
    for section in sections:
        parts.append(f'<section id="{section.key}"><h2>{html.escape(section.heading)}</h2>')
        parts.append(f"<p>{section.prose}</p>")
        parts.append(f"<table><tr><th>{html.escape(header[0])}</th><th>{html.escape(header[1])}</th></tr>")
        parts += [f"<tr><td><code>{html.escape(key)}</code></td><td>{value}</td></tr>" for key, value in section.rows]
        parts.append("</table>")
        for name in section.figures:
            reason = result.views.left_out.get(name)
            if reason is not None:
                parts.append(f'<p class="left-out">{html.escape(words["figure_left_out"].format(reason=reason))}</p>')
                continue
            data = base64.b64encode(plots.png_bytes(plots.lab_figure(name, result, lang))).decode("ascii")
            caption = html.escape(words["captions"][name])
            parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{caption}">'
                         f"<figcaption>{caption}</figcaption></figure>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
