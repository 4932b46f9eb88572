"""``projector.html``: a projection to hover, search and click, as one offline page (``embedlab projector``).

The page is one file that needs no server and no network: plotly.js is
inlined (a bundle of only the traces the page draws, ``report.plotlyjs``),
and so are the figure, the data and a small hand-written script
(``projector.js``) and style sheet (``projector.css``) that lie beside this
module. A user hovers a point to see its token and id, types in a search box
to ring and zoom to matching tokens, clicks a point (or a row of a list) to
see its k nearest tokens by cosine and by dot product, measured exactly over
the whole table (``measure.projector``), zooms and pans, and colours the
points by neighbour group or by row length.

Why Plotly: ``--dims 3`` needs a 3-D scatter, which Plotly draws (WebGL) and
Bokeh does not; Plotly also writes self-contained files (its Python package
ships plotly.js, 4.8 MB; the page inlines a 1.8 MB bundle of the three traces
it draws, built from the same plotly.js). Bokeh's inline resources are
smaller (about 1.5 MB) but 2-D only. Two-dimensional pages draw with WebGL
too (``scattergl``: 10,000 points and more stay quick to hover), and fall back
to SVG in a browser without WebGL.

Every value reaches the page as JSON in one ``<script type="application/json">``
block, never written into the script's text: ``<``, ``>`` and ``&`` are written
as ``\\u003c``, ``\\u003e``, ``\\u0026``, so a token such as ``</script>`` can
neither end the block nor start a comment, and ``JSON.parse`` gives it back
unchanged. The script writes tokens into the page with ``textContent`` (and,
for Plotly's hover labels and its SVG traces' labels, with ``<``, ``>``, ``&``
as entities, since Plotly reads a little HTML in them; its WebGL traces,
``scattergl`` and ``scatter3d``, draw a label as it is), inside ``<bdi>`` so right-to-left tokens stay apart,
each space, tab and newline written as a sign (``␣``, ``⇥``, ``↵``): a token
that is a space was a point without a label.

The page carries the glyphs of its text (``report.webfont``): the title, the
panel's words, every token the data names and the script's own marks, as
subsets of the fonts the figures are drawn with, in ``@font-face`` rules that
its style sheet and Plotly's text name first, so Hangul, kana and Han read on a
machine without CJK fonts. The script draws the figure once those faces are
loaded (Plotly measures its labels with them). What a user types in the
search box is drawn with the machine's fonts.

Standard library at import; plotly, fontTools and brotli (the ``plots`` extra)
when a page is written.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

from .. import __version__
from ..errors import MissingExtraError
from .colors import PALETTE
from .formats import json_escaped, source_name, visible_whitespace
from .locales import DEFAULT_LANGUAGE, PROJECTOR_WORDS, WORDS
from .plotlyjs import plotly_js

__all__ = ["projector_html", "projector_figure", "page_data", "script_json", "require_plotly", "METHOD_NAMES",
           "GROUP_COLORS"]

METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}  # as the field writes them
# The figures' colours (report.colors.PALETTE), so a group means the same colour everywhere: the
# selected point as the probe (black), cosine neighbours blue, dot neighbours orange, both purple,
# a token given (--tokens) as the figures' chosen tokens, the other points as a random sample (grey).
GROUP_COLORS = {"selected": PALETTE["probe"], "cosine": PALETTE["cosine"], "dot": PALETTE["dot"],
                "both": PALETTE["both"], "chosen": PALETTE["chosen"], "other": PALETTE["sample"]}
CAMERA_3D = {"eye": {"x": 1.5, "y": 1.5, "z": 1.2}, "center": {"x": 0, "y": 0, "z": 0}}
# Up to this many points every point may carry a label; beyond, text labels go only to the selected point, its
# neighbours and the search matches (the first MATCHES_LABELLED), every other token shows on hover: Plotly
# places no labels, and in a dense cluster a label on every point piled up unreadably. Either way the page's
# script (projector.js) keeps, in 2-D, only labels that touch no label kept before them on the screen.
LABEL_ALL = 12
MATCHES_LABELLED = 12  # projector.js's MATCHES_LISTED: the matches listed in the panel are those labelled
DATA_ID = "embedlab-data"


def projector_html(result: Any, lang: str = DEFAULT_LANGUAGE) -> str:
    """The whole page: the figure, the data, plotly.js and the script, in one HTML5 document.

    Parameters
    ----------
    result : ProjectorResult
        As ``measure.projector.measure_projector`` (or ``embedlab.projector``) returns it.
    lang : {"ko", "en", "ja", "zh"}
        The language of the page's words.

    Returns
    -------
    str
        About 1.8 MB of plotly.js (``report.plotlyjs``; 4.8 MB where it falls back to plotly's full
        bundle) plus the data (about 0.5 kB a point with k = 10). The footer and the plotly.js
        script's ``data-plotly-js`` attribute name the version and the traces it carries.

    Raises
    ------
    ValueError
        For an unknown language.
    MissingExtraError
        (an ``ImportError``) when plotly, fontTools or brotli is not installed (the ``plots`` extra).
    """
    from .webfont import font_faces, page_text  # fontTools and matplotlib: off the seed report's path

    words = _words(lang)
    script = _plotly_js()
    title = _title(result, words)
    values = page_data(result, lang)
    data = script_json(values)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in result.notes)
    panel = PANEL.format(
        title=html.escape(title), summary=_summary(result, words),
        view_note=html.escape(words["view_note"].format(kept=_kept(result, lang))),
        labels_note=html.escape(words["labels_all" if len(result.ids) <= LABEL_ALL else "labels_some"].format(
            matches=MATCHES_LABELLED)),
        notes=f'<h2>{html.escape(words["notes"])}</h2><ul class="notes">{notes}</ul>' if notes else "",
        version=html.escape(__version__), plotly_label=html.escape(script.label),
        **{key: html.escape(words[key]) for key in ("search", "search_hint", "color_by", "color_group",
                                                     "color_norm", "reset", "selected", "click_hint", "cosine",
                                                     "dot", "no_webgl", "absent_hint")})
    # Every character the page can show: the panel, the data's strings (tokens, words), the script's own
    # marks (its '—' and '·'), and printable ASCII for the numbers and ids the script writes.
    shown = "".join((title, page_text(panel), *_strings(values), _asset("projector.js"), ASCII))
    return PAGE.format(lang=html.escape(lang), title=html.escape(title), table=html.escape(source_name(result.source)),
                       style=f"{font_faces(shown)}\n:root {{ --page-font: \"{_family()}\"; }}\n{_asset('projector.css')}",
                       panel=panel, data_id=DATA_ID, data=data, plotly_js=script.text,
                       plotly_label=html.escape(script.label),
                       script=_asset("projector.js"))


def projector_figure(result: Any) -> Any:
    """The Plotly figure of the page, before its script adds tokens and colours.

    Trace 0 holds every point (``scattergl``, or ``scatter3d`` with dims = 3),
    its ``customdata`` the token ids; trace 1 the selected point and its
    neighbours, labelled; trace 2 the rings of the search matches, the first
    ``MATCHES_LABELLED`` labelled. Trace 0's points are labelled only up to
    ``LABEL_ALL`` points (every other token shows on hover). Tokens are not in
    the figure: the script takes them from the data.

    Returns ``plotly.graph_objects.Figure``; raises ``MissingExtraError`` as ``projector_html``.
    """
    go = require_plotly().graph_objects
    ids = result.ids.tolist()  # (n,)
    coords = {axis: [round(v, 6) for v in result.points[:, c].tolist()] for c, axis in enumerate("xyz"[:result.dims])}
    style = _style(len(ids), result.dims)
    points = go.Scatter3d if result.dims == 3 else go.Scattergl
    overlay = go.Scatter3d if result.dims == 3 else go.Scatter  # 2-D: SVG text, shaped by the browser (CJK, RTL)
    empty = {axis: [] for axis in coords}
    traces = [points(**coords, customdata=ids, mode=style["mode"], marker=style["marker"], **LABELS),
              overlay(**empty, mode=style["overlay"], marker=style["selected"], **LABELS),
              points(**empty, mode="markers+text", hoverinfo="skip", marker=style["rings"], **LABELS)]
    return go.Figure(traces, layout={**_axes(result, coords), **LAYOUT, **_fonts()})


# Both labelled traces: the script sets each point's text (its token) and hovertext (token and id).
LABELS = {"hovertemplate": "%{hovertext}<extra></extra>", "textposition": "top center",
          "textfont": {"size": 14, "color": "#222222"}}
LAYOUT = {"template": "plotly_white", "showlegend": False, "hovermode": "closest", "uirevision": "keep",
          "margin": {"l": 30, "r": 10, "t": 10, "b": 30}}
FONTS = "system-ui, sans-serif"  # Plotly's text, after the page's own faces (webfont.FAMILY)
ASCII = "".join(map(chr, range(0x20, 0x7F)))  # printable ASCII: what the script writes beside the data's strings


def _fonts() -> dict[str, Any]:
    """Plotly's text (labels, axis titles, hover labels) in the page's own faces first, then ``FONTS``."""
    family = f'"{_family()}", {FONTS}'
    return {"font": {"family": family}, "hoverlabel": {"font": {"size": 14, "family": family}}}


def _family() -> str:
    """The family of the page's own faces (``webfont.FAMILY``)."""
    from .webfont import FAMILY  # fontTools and matplotlib: off the seed report's path

    return FAMILY


def _style(n: int, dims: int) -> dict[str, Any]:
    """Modes and markers for n points: smaller and fainter as the cloud grows, and in 3-D, where near
    points would hide the selection; every point labelled up to ``LABEL_ALL``, else the selection only."""
    size = (9 if n <= 500 else 6 if n <= 3000 else 4) - ((4 if n > 500 else 2) if dims == 3 else 0)
    return {"mode": "markers+text" if n <= LABEL_ALL else "markers",
            "overlay": "markers+text",
            "marker": {"size": size, "color": GROUP_COLORS["other"], "opacity": 0.85 if dims == 2 or n <= 500 else 0.5},
            "selected": {"size": size + 4} | ({"line": {"width": 1, "color": "#ffffff"}} if dims == 2 else {}),
            "rings": {"symbol": "circle-open", "size": size + 10, "color": "#111111", "line": {"width": 2}}}


def _axes(result: Any, coords: dict[str, list[float]]) -> dict[str, Any]:
    """The axes, named by the method (``PCA 1``), without tick labels: the units mean nothing."""
    names = [f"{METHOD_NAMES[result.method]} {c + 1}" for c in range(result.dims)]
    if result.dims == 2:
        axis = {"showticklabels": False, "zeroline": False, "showgrid": True, "gridcolor": "#eeeeee"}
        return {"xaxis": {**axis, "title": {"text": names[0]}},
                "yaxis": {**axis, "title": {"text": names[1]}, "scaleanchor": "x", "scaleratio": 1}, "dragmode": "pan"}
    # A 3-D scene clips what lies beyond its axes, labels included: pad the ranges (more above, where labels
    # go), and step the camera back a little from Plotly's default so that the axis titles fit.
    axis = {"showticklabels": False, "showspikes": False}
    scene = {f"{a}axis": {**axis, "title": {"text": name}, "range": _padded(coords[a], a == "z")}
             for a, name in zip("xyz", names)}
    # "cube": the three axes drawn equally long, so the box fits the view whatever the spread of each
    # (with "data", one long axis ran out of the view); each axis keeps its own scale and title.
    return {"scene": {**scene, "aspectmode": "cube", "camera": CAMERA_3D}}


def page_data(result: Any, lang: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
    """Everything the page's script reads, as plain JSON-able values.

    ``figure`` (``projector_figure`` as a dict), ``config`` (Plotly's),
    ``rows`` (the n projected ids, their groups and lengths), ``neighbors``
    (per metric, the n lists of K ids and scores), ``named`` (every id the
    page names, with its token, None without vocabulary, the token as the
    page shows it, its spaces, tabs and newlines as signs, ``formats.visible_whitespace``,
    and its length),
    ``probe``, ``dims``, ``k``, ``colors``, ``words`` (the page's words in ``lang``) and
    ``font_family`` (the page's own faces, which the script loads before Plotly draws).
    Scores, lengths and coordinates are rounded for display (4 and 6 significant digits).
    """
    words = _words(lang)
    figure = projector_figure(result).to_plotly_json()
    norm_of = dict(zip(result.named_ids.tolist(), result.norms.tolist()))
    return {
        "figure": _plain(figure),
        "config": {"responsive": True, "scrollZoom": True, "displaylogo": False,
                   "modeBarButtonsToRemove": ["select2d", "lasso2d", "sendDataToCloud"]},
        "rows": {"ids": result.ids.tolist(), "groups": list(result.groups),
                 "norms": [_short(norm_of[i]) for i in result.ids.tolist()]},
        "neighbors": {metric: {"ids": result.neighbor_ids[metric].tolist(),
                               "scores": [[_short(s) for s in row] for row in result.neighbor_scores[metric].tolist()]}
                      for metric in result.neighbor_ids},
        "named": {"ids": result.named_ids.tolist(), "tokens": list(result.tokens),
                  "labels": [None if t is None else visible_whitespace(t) for t in result.tokens],
                  "norms": [_short(v) for v in result.norms.tolist()]},
        "probe": result.probe, "dims": result.dims, "k": result.k, "colors": GROUP_COLORS,
        "font_family": _family(),
        "words": {key: words[key] for key in ("matches", "no_match", "legend", "click_hint", "not_shown", "length",
                                               "columns", "color_norm")},
    }


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside ``<script type="application/json">`` whatever its strings hold.

    ``<``, ``>`` and ``&`` become ``\\u003c``, ``\\u003e``, ``\\u0026`` (JSON escapes,
    so ``JSON.parse`` returns the strings unchanged); so do DEL, the C1 and bidi controls,
    U+2028 and U+2029 (``formats.json_escaped``).
    NaN and infinity are refused (``ValueError``): JSON has no such numbers.

    >>> script_json({"t": "</script><!--"})
    '{"t":"\\\\u003c/script\\\\u003e\\\\u003c!--"}'
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return json_escaped(text)


def require_plotly() -> Any:
    """The ``plotly`` package with ``plotly.graph_objects`` and ``plotly.offline`` loaded.

    Raises ``MissingExtraError`` naming the ``plots`` extra when plotly is not installed;
    a caller can call it first, before a long measurement.
    """
    try:
        import plotly
        import plotly.graph_objects  # noqa: F401  (loads the submodules used here)
        import plotly.offline  # noqa: F401
    except ImportError:
        raise MissingExtraError.for_module("plotly", "projector pages", ("plots",)) from None
    return plotly


def _words(lang: str) -> dict[str, Any]:
    if lang not in PROJECTOR_WORDS:
        raise ValueError(f"unknown page language {lang!r}: expected one of {', '.join(PROJECTOR_WORDS)}")
    return PROJECTOR_WORDS[lang]


def _kept(result: Any, lang: str) -> str:
    """What the method keeps, in ``lang``: t-SNE and UMAP name their metric as the plot titles do."""
    metric = result.parameters.get("metric", "euclidean")
    return _words(lang)["kept"][result.method].format(metric=WORDS[lang]["figures"][f"metric_{metric}"])


def _title(result: Any, words: dict[str, Any]) -> str:
    return words["title"].format(table=source_name(result.source), n=f"{len(result.ids):,}", dims=result.dims,
                                 method=METHOD_NAMES[result.method])


def _summary(result: Any, words: dict[str, Any]) -> str:
    """The summary line as HTML: words escaped, the probe's token as code."""
    if result.probe is not None and "sample" in result.groups:
        token = result.token_of(result.probe)
        probe = f'<bdi class="token">{html.escape(token if token is not None else f"id {result.probe}")}</bdi>'
        points = html.escape(words["points_sampled"]).format(probe=probe, seed=result.seed)
    else:
        points = html.escape(words["points_tokens"])
    return html.escape(words["summary"]).format(V=f"{result.V:,}", D=f"{result.D:,}", points=points, k=result.k)


def _padded(values: list[float], above: bool) -> list[float]:
    """An axis range around ``values`` with a margin of 8%, 20% on the upper side when ``above``."""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return [lo - 0.08 * span, hi + (0.2 if above else 0.08) * span]


def _short(x: float) -> float:
    """A score or length rounded to 4 significant digits, as the page shows it."""
    return float(f"{x:.4g}")


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-able value, keys included, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _plain(value: Any) -> Any:
    """Plotly's dict with its tuples and NumPy values made plain JSON values."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else list(v)))


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    """The text of a file beside this module (the page's script and style sheet)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _plotly_js() -> Any:
    """The plotly.js the page inlines (``report.plotlyjs.plotly_js``), read once."""
    return plotly_js(require_plotly())


PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="embedlab-table" content="{table}">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<main class="projector">
<div id="plot" class="plot" role="img" aria-label="{title}"></div>
{panel}
</main>
<script type="application/json" id="{data_id}">{data}</script>
<script id="plotly-js" data-plotly-js="{plotly_label}">{plotly_js}</script>
<script>{script}</script>
</body>
</html>
"""

PANEL = """<aside class="panel">
<h1>{title}</h1>
<p class="summary">{summary}</p>
<p class="note">{view_note}</p>
<p id="no-webgl" class="warning" hidden>{no_webgl}</p>
<label class="search" for="search">{search}</label>
<input id="search" type="search" placeholder="{search}" autocomplete="off" spellcheck="false">
<p class="hint">{search_hint}</p>
<p id="match-count" class="hint" aria-live="polite"></p>
<ul id="matches" class="matches"></ul>
<fieldset class="colour"><legend>{color_by}</legend>
<label><input type="radio" name="colour" value="group" checked> {color_group}</label>
<label><input type="radio" name="colour" value="norm"> {color_norm}</label>
</fieldset>
<ul id="legend" class="legend"></ul>
<p class="hint" id="labels-note">{labels_note}</p>
<button id="reset" type="button">{reset}</button>
<section id="selection" aria-live="polite">
<h2>{selected}</h2>
<p id="selected-token">{click_hint}</p>
<h3 class="list-title">{cosine}</h3>
<table id="list-cosine" class="neighbours"><thead></thead><tbody></tbody></table>
<h3 class="list-title">{dot}</h3>
<table id="list-dot" class="neighbours"><thead></thead><tbody></tbody></table>
<p id="absent-hint" class="hint" hidden>{absent_hint}</p>
</section>
{notes}
<p class="footer">embedlab {version} · {plotly_label}</p>
</aside>"""
