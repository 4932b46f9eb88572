"""Figures: measurement results -> matplotlib Figures, and PNG bytes or SVG text.

``figure_bytes`` writes a figure as its file's name says, PNG or SVG (an SVG
file carries the glyphs of its text, ``svg_document``); ``svg_text`` is the
SVG an HTML page inlines.

Each function takes a result a measurement produced and draws it; nothing is
computed here beyond placing marks. Every text of a figure (titles, axis
labels, legends, notes) comes from the report's words,
``locales.WORDS[lang]["figures"]``, in the language ``lang`` (the report's
default unless given). Text is drawn with the font families of
``report.fonts`` (Latin, Greek, Cyrillic, Arabic, Han, kana, Hangul); a token
with a character no installed font has is drawn with ``fonts.REPLACEMENT``
in its place and named once, in a note on the figure (``undrawn_tokens``
gives them to a caller). Numbers read as people write them: no axis offset or
``1e7`` multiplier (ticks by one rule: K, M from 1,000 up, ``formats.tick_text``;
exact counts in titles and labels with thousands separators), parameters rounded in titles
(``formats.format_value``). A colour means one thing in every figure (``PALETTE``).

matplotlib (the ``plots`` extra) is imported with this module: a module on the seed
report's import-free path (``figures``) imports this one inside the function that draws.
The object-oriented API is used (no pyplot; rcParams are never changed: fonts are set
on each text), so nothing opens a window and one figure never changes another.
"""

from __future__ import annotations

import functools
import io
import os
import re
import warnings
import weakref
from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib
import matplotlib.figure
import numpy as np
from matplotlib import ticker
from matplotlib.colors import to_rgb
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from ..errors import SizeError, brief
from . import fonts, webfont
from .colors import PALETTE
from .formats import HIDDEN, cut_text, fixed, format_value, settings_text, source_name, tick_text, visible_whitespace
from .labels import place_labels
from .locales import AUDIT_WORDS, DEFAULT_LANGUAGE, DIFF_WORDS, WORDS, check_language

__all__ = [
    "lab_figure", "new_figure", "png_bytes", "DPI", "PALETTE", "GROUP_COLORS", "METHOD_NAMES",
    "undrawn_tokens", "svg_text", "svg_document", "figure_bytes", "FIGURE_SUFFIXES",
    "projection_figure", "norms_figure", "stretch_figure", "scale_figure",
    "cost_figure", "params_figure", "positions_figure", "bands_figure", "compress_figure", "audit_figure",
    "AUDIT_LABELS", "AUDIT_LISTED", "diff_figure", "DIFF_LABELS",
]

DPI = 100  # pixels per inch: a figure of 12 x 8 inches is 1200 x 800 pixels
FIGURE_SUFFIXES = (".png", ".svg")  # a figure file's format follows its name (figure_bytes)
GROUP_COLORS = {group: PALETTE[group] for group in ("probe", "cosine", "dot", "both", "sample", "chosen")}
METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}  # as the field writes them
COSINE_SPAN = 0.01  # the narrowest range a cosine axis shows: nearly equal cosines read as a flat line
NOTE_SIZE = 8  # points, the size of notes under a figure
UNDRAWN_SHOWN = 6  # tokens named in the note about undrawable tokens; the rest are counted
DEGENERATE_SHOWN = 4  # degenerate rows named in a projection's note; the rest are counted
# Figure -> tokens whose characters no font has, for callers that report them (the CLI's note);
# weak keys: an entry goes with its figure.
_UNDRAWN: "weakref.WeakKeyDictionary[Any, tuple[str, ...]]" = weakref.WeakKeyDictionary()
SAMPLE_LABELS = 8  # sample rows labelled besides the probe and its neighbours: a few, not the cloud
MAX_LABELS = 60  # labels asked of the placer at most; the rest are counted as unlabelled
AUDIT_LABELS = 12  # under-trained candidates labelled on the plot at most, the lowest first
AUDIT_LISTED = 20  # candidates listed beside the plot (id, token, value), the lowest first
DIFF_LABELS = 8  # rows labelled on the diff's drift panel at most, the most drifted first
DRIFT_LABELLED = 1e-6  # drift (1 - aligned cosine) below which a row is not labelled: rounding, not movement


def new_figure(width: int = 1200, height: int = 800) -> Any:
    """An empty ``matplotlib.figure.Figure`` of ``width`` x ``height`` pixels at ``DPI``.

    Raises ``ValueError`` for a size below 100 pixels.
    """
    if width < 100 or height < 100:
        raise ValueError(f"figure size {width}x{height} pixels is too small: at least 100x100")
    return matplotlib.figure.Figure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes, exactly the figure's size in pixels.

    Nothing is silenced: the figures of this module draw only characters some
    font has (see ``undrawn_tokens``).
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def svg_text(fig: Any, id_prefix: str = "fig") -> str:
    """The figure as an SVG document whose text stays text, ``width`` x ``height`` in CSS pixels.

    Written with ``svg.fonttype = "none"``: every title, label and token is a
    ``<text>`` element, so tokens can be found with Ctrl+F and the figure is
    sharp at any zoom. Its fonts are the family a page embeds
    (``webfont.FAMILY``; ``svg_document`` embeds it in a file of its own), then
    the families matplotlib measured the text with, then the viewer's sans-serif. ``width``/``height`` are the figure's pixel size
    (as ``png_bytes``'s PNG; the ``viewBox`` keeps matplotlib's points), and the
    document carries no metadata (no date, no links).

    Every ``id`` (and each ``url(#...)``/``href="#..."`` that refers to one)
    starts with ``id_prefix`` + ``-``, and the prefix salts matplotlib's hashed
    ids, so several figures inlined in one HTML page never share an id, and
    the same figure drawn twice gives the same text.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    id_prefix : str
        Letters, digits, ``-`` and ``_``, starting with a letter.

    Raises
    ------
    ValueError
        For an ``id_prefix`` that is not a valid id start (``"fig 1"``, ``"1fig"``).

    >>> svg = svg_text(new_figure(200, 100), "a")
    >>> 'width="200" height="100" viewBox="0 0 144 72"' in svg, 'id="a-figure_1"' in svg
    (True, True)
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", id_prefix):
        raise ValueError(f"id prefix {id_prefix!r} must be letters, digits, '-' or '_', starting with a letter")
    buffer = io.StringIO()
    metadata = dict.fromkeys(("Creator", "Date", "Format", "Type"))  # None drops each: no date, no URLs
    with warnings.catch_warnings(), matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": id_prefix}):
        # matplotlib measures each text with its own font to lay the figure out; with text kept
        # as text it draws no glyph, so "Glyph ... missing from font" is about the measuring
        # only: the viewer draws the token with a font that has it.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        warnings.filterwarnings("ignore", message="Matplotlib currently does not support")
        fig.savefig(buffer, format="svg", metadata=metadata)
    width, height = (round(float(n) * fig.dpi) for n in fig.get_size_inches())
    text = re.sub(r'(<svg\b[^>]*?) width="[^"]*" height="[^"]*"', rf'\1 width="{width}" height="{height}"',
                  buffer.getvalue(), count=1)
    text = re.sub(r'(\bid="|url\(#|href="#)', rf"\g<1>{id_prefix}-", text)
    # The faces a page or file embeds first (webfont.FAMILY), then the families matplotlib measured the text
    # with; a viewer without them falls back to its own sans-serif, not its serif default.
    text = re.sub(r"(font-family: )", rf"\1'{webfont.FAMILY}', ", text)
    return re.sub(r"(font(?:-family)?:[^;\"]*'Noto Sans CJK JP')", r"\1, sans-serif", text)


def svg_document(fig: Any) -> str:
    """The figure as an SVG file that reads the same on any machine: ``svg_text`` with a ``<style>`` whose
    ``@font-face`` rules carry the glyphs of every character of its text (``webfont.font_faces``).

    Raises ``MissingExtraError`` (an ``ImportError``) without fontTools and brotli (the ``plots`` extra).
    """
    text = svg_text(fig)
    opening = re.search(r"<svg\b[^>]*>", text).end()
    return f"{text[:opening]}\n<style>\n{webfont.font_faces(webfont.page_text(text))}\n</style>{text[opening:]}"


def figure_bytes(fig: Any, path: str | os.PathLike) -> bytes:
    """The figure as the file ``path`` names: PNG (``png_bytes``) or SVG (``svg_document``) by its extension.

    Raises ``ValueError`` for another extension (``FIGURE_SUFFIXES``).
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FIGURE_SUFFIXES:
        raise ValueError(f"{str(path)!r} must end in .png or .svg: the figure's format follows the name")
    return png_bytes(fig) if suffix == ".png" else svg_document(fig).encode("utf-8")


def undrawn_tokens(fig: Any) -> tuple[str, ...]:
    """The tokens a figure of this module could not draw whole: each holds a character no
    installed font has (drawn as ``fonts.REPLACEMENT``, named in a note on the figure).
    ``()`` for a figure with none, or one not drawn here."""
    return _UNDRAWN.get(fig, ())


def projection_figure(proj: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Scatter of a ``projection.Projection``: one point per row, coloured by group.

    The probe, its neighbours and the first ``SAMPLE_LABELS`` sample rows (or
    every chosen row) are labelled, placed by ``labels.place_labels`` without
    overlap; a note at the bottom right says how many points were left
    unlabelled. The title names the method as the field does
    (``METHOD_NAMES``), the distance it keeps and its settings rounded
    (``settings_text``).

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    ax = fig.add_subplot()
    for group, color in GROUP_COLORS.items():
        mask = [g == group for g in proj.groups]
        if any(mask):
            pts = proj.points[mask]
            ax.scatter(pts[:, 0], pts[:, 1], s=90 if group == "probe" else 25, c=color,
                       marker="*" if group == "probe" else "o", label=words[f"group_{group}"], zorder=3)
    method = METHOD_NAMES.get(proj.method, proj.method)
    ax.set_title(_projection_title(proj, words))
    ax.set_xlabel(words["projection_axis"].format(method=method, axis=1))
    ax.set_ylabel(words["projection_axis"].format(method=method, axis=2))
    # Outside the axes, at the right: inside, it hid points wherever "best" put it.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
    # The last line of the notes says how many points got a label: known once they are placed, so a line is
    # kept for it here (the notes set the layout before the labels) and written below. On a line of its own, it
    # never runs into a long note (it stood at the right of the same line, and met the degenerate rows' note).
    notes = [words["projection_note"], *_degenerate_notes(proj, words), "-"]
    _finish(fig, words, tokens=proj.labels, notes=notes)  # before the labels: it sets the layout
    wanted = _labelled_rows(proj.groups)
    placement = place_labels(ax, proj.points[wanted], [_label(proj.labels[i]) for i in wanted],
                             points=proj.points, family=list(fonts.families()))
    placed = len(placement.placed)
    line = words["labelled_note"].format(placed=format_value(placed), total=format_value(len(proj.ids)),
                                         left=format_value(len(proj.ids) - placed))
    for text in fig.texts:  # _add_notes' block: the kept line replaced (a note on undrawn tokens may follow it)
        lines = text.get_text().split("\n")
        if "-" in lines:
            lines[lines.index("-")] = _drawn(line, lines=True)
            text.set_text("\n".join(lines))
            break
    return fig


def _degenerate_notes(proj: Any, words: dict[str, str]) -> list[str]:
    """The note under a projection naming its degenerate rows, left out or kept (``Projection.degenerate``), each
    with why; the first ``DEGENERATE_SHOWN``, then a count. No note where there are none."""
    found = getattr(proj, "degenerate", None)
    if found is None or not found.ids:
        return []
    why = {i: words["degenerate_zero"] for i in found.zero}
    why |= {i: words["degenerate_copy"].format(of=of) for i, of in found.copies}
    why |= {i: words["degenerate_long"].format(limit=format_value(found.limit)) for i in found.long}
    rows = [f"id {i} ({why[i]})" if label is None else f"{_label(label)} (id {i}: {why[i]})"
            for i, label in zip(found.ids, proj.degenerate_labels)]
    more = f" … (+{len(rows) - DEGENERATE_SHOWN})" if len(rows) > DEGENERATE_SHOWN else ""
    key = "projection_kept" if proj.kept_degenerate else "projection_left_out"
    return [words[key].format(count=format_value(len(rows)), rows=", ".join(rows[:DEGENERATE_SHOWN]) + more)]


def _labelled_rows(groups: list[str]) -> list[int]:
    """Rows to label, most important first: the probe, its neighbours (or every chosen row), then
    the first ``SAMPLE_LABELS`` sample rows; at most ``MAX_LABELS``."""
    rank = {"probe": 0, "both": 1, "cosine": 2, "dot": 3, "chosen": 4}
    first = sorted((i for i, g in enumerate(groups) if g in rank), key=lambda i: (rank[groups[i]], i))
    sample = [i for i, g in enumerate(groups) if g not in rank][:SAMPLE_LABELS]
    return (first + sample)[:MAX_LABELS]


def _projection_title(proj: Any, words: dict[str, str]) -> str:
    """What was projected and which distance the picture keeps, parameters rounded for people."""
    method = METHOD_NAMES.get(proj.method, proj.method)
    what = words["projection_title"].format(method=method, rows=format_value(len(proj.ids)), table=proj.table)
    p = proj.parameters
    if proj.method == "pca":
        fitted = p.get("fitted_rows")
        return what + (words["projection_pca"].format(fitted=format_value(fitted)) if fitted else "")
    settings = settings_text({k: v for k, v in p.items() if k != "metric"})
    return what + words["projection_keeps"].format(metric=words[f"metric_{p.get('metric', 'euclidean')}"],
                                                   settings=settings)


def norms_figure(dist: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Histogram of row norms (``norms.NormDistribution``), the longest rows marked and labelled.

    Each longest row is a mark at its norm on top of its bar; its label
    (token and norm) is placed by ``labels.place_labels``. The title's count
    is the number of labels drawn; a row that found no place is named as
    marked but unlabelled.

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    ax = fig.add_subplot()
    ax.stairs(dist.counts, dist.edges, fill=True, color=PALETTE["rows"], label=words["norms_bins"])
    ax.set_yscale("log")
    top = max(int(dist.counts.max()), 1)
    anchors = _bar_tops(dist)  # (top, 2): each longest row's norm and the height of its bar
    ax.scatter(anchors[:, 0], anchors[:, 1], marker="v", s=30, c=PALETTE["longest"], zorder=3,
               label=words["norms_longest"])
    # Room above the bars for a row of labels rising from 2x the tallest bar: the log axis reaches 60x.
    ax.set_ylim(0.5, top * 60)
    ax.set_xlabel(words["norms_axis"])
    ax.set_ylabel(words["norms_rows"])
    ax.legend(loc="upper left", fontsize=8)
    _min_span(ax, "x", 1e-3 * max(abs(float(dist.edges[0])), abs(float(dist.edges[-1]))))
    ax.set_title(_norms_title(dist, len(dist.longest_ids), words))
    _finish(fig, words, tokens=dist.longest_labels)  # before the labels: it sets the layout
    texts = [f"{_label(label)} ({norm:.4g})" for label, norm in zip(dist.longest_labels, dist.longest_norms)]
    row = np.column_stack([anchors[:, 0], np.full(len(anchors), top * 2.0)])  # (top, 2) where the labels start
    placement = place_labels(ax, anchors, texts, start=row, direction="x", rotation=90,
                             family=list(fonts.families()))
    if placement.unplaced:
        ax.set_title(_drawn(_norms_title(dist, len(placement.placed), words)))
    return fig


def _norms_title(dist: Any, labelled: int, words: dict[str, str]) -> str:
    marked = len(dist.longest_ids)
    title = words["norms_title"].format(table=dist.table, rows=format_value(int(dist.counts.sum())),
                                        top=format_value(labelled))
    return title if labelled == marked else title + words["norms_unplaced"].format(more=format_value(marked - labelled))


def _bar_tops(dist: Any) -> Any:
    """(top, 2) points: each longest row's norm, and the height of the histogram bar it falls in."""
    norms = np.asarray(dist.longest_norms, dtype=np.float64)  # (top,)
    bins = np.clip(np.searchsorted(dist.edges, norms, side="right") - 1, 0, len(dist.counts) - 1)  # (top,)
    return np.column_stack([norms, np.maximum(dist.counts[bins], 1)]).astype(np.float64)  # (top, 2)


def stretch_figure(cmp: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Cosine and dot-product lists of the probe before and after one row is stretched
    (``lab.StretchComparison``): bars of the scores, each labelled with the row's norm.

    Cosine panels are drawn in ``PALETTE["cosine"]``, dot-product panels in
    ``PALETTE["dot"]``, the stretched row in ``PALETTE["stretched"]`` (red).

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    axes = fig.subplots(2, 2, sharex="col")  # before and after on one scale: the stretched row's jump shows
    factor = format_value(cmp.factor)
    panels = [(cmp.cos_before, "cosine", words["cosine_before"]), (cmp.dot_before, "dot", words["dot_before"]),
              (cmp.cos_after, "cosine", words["cosine_after"].format(factor=factor)),
              (cmp.dot_after, "dot", words["dot_after"].format(factor=factor))]
    tokens = []
    for ax, (scored, metric, name) in zip(axes.ravel(), panels):
        labels = scored.tokens or [str(i) for i in scored.ids]
        tokens += labels
        colors = [PALETTE["stretched"] if i == cmp.target else PALETTE[metric] for i in scored.ids]
        y = list(range(len(scored.ids)))[::-1]  # best at the top
        ax.barh(y, scored.scores, color=colors)
        ax.set_yticks(y, [words["with_norm"].format(token=_label(lab), norm=f"{n:.3g}")
                          for lab, n in zip(labels, scored.norms)], fontsize=8)
        ax.set_title(name, fontsize=10)
    for ax, metric in zip(axes[1], ("cosine", "dot")):
        ax.set_xlabel(words[f"{metric}_axis"])
    target = next((t for i, t in zip(cmp.cos_before.ids, cmp.cos_before.tokens or []) if i == cmp.target), None)
    fig.suptitle(_title(words, "stretch_title", cmp.table, probe=_named(cmp.probe_token, cmp.probe),
                        target=_named(target, cmp.target), factor=factor))
    fig.legend(handles=_patches([(PALETTE["cosine"], words["group_cosine"]), (PALETTE["dot"], words["group_dot"]),
                                 (PALETTE["stretched"], words["stretched_row"])]),
               loc="outside lower center", ncols=3, fontsize=8)
    return _finish(fig, words, tokens=[cmp.probe_token or "", *tokens])


def scale_figure(cmp: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Multiplying by sqrt(D) (``lab.ScaleComparison``): lengths grow, cosines stay.

    Left, each row's length before and after; right, each row's cosine with the
    probe before against after, every point labelled with its token (placed by
    ``labels.place_labels``; a label with no room is counted in the panel's title).

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    left, right = fig.subplots(1, 2)
    labels = cmp.tokens or [str(i) for i in cmp.ids]
    x = list(range(len(cmp.ids)))
    left.bar([i - 0.2 for i in x], cmp.norms_before, width=0.4, color=PALETTE["before"], label=words["before"])
    left.bar([i + 0.2 for i in x], cmp.norms_after, width=0.4, color=PALETTE["after"],
             label=words["after_scale"].format(factor=format_value(cmp.factor)))
    left.set_xticks(x, [_label(label) for label in labels], rotation=45, ha="right", fontsize=8)
    left.set_ylabel(words["length_axis"])
    left.set_title(words["size_changes"])
    left.legend(fontsize=8)
    right.scatter(cmp.cos_before, cmp.cos_after, c=PALETTE["cosine"], label=words["neighbours"], zorder=3)
    lo, hi = min(cmp.cos_before + cmp.cos_after), max(cmp.cos_before + cmp.cos_after)
    right.plot([lo, hi], [lo, hi], color=PALETTE["reference"], linewidth=0.8, linestyle="--",
               label=words["after_equals_before"])
    right.set_xlabel(words["cos_before_scale"])
    right.set_ylabel(words["cos_after_scale"])
    right.set_title(words["direction_stays"])
    right.legend(fontsize=8)
    for axis in ("x", "y"):  # cosines that agree to 1e-9 would be magnified into noise otherwise
        _min_span(right, axis, COSINE_SPAN)
    fig.suptitle(_title(words, "scale_title", cmp.table, probe=_named(cmp.probe_token, cmp.probe)))
    _finish(fig, words, tokens=[cmp.probe_token or "", *labels])  # before the labels: it sets the layout
    points = np.column_stack([cmp.cos_before, cmp.cos_after]).astype(np.float64)  # (k, 2)
    diagonal = np.repeat(np.linspace(lo, hi, 60)[:, None], 2, axis=1)  # (60, 2): labels keep off the after = before line
    placement = place_labels(right, points, [_label(label) for label in labels], points=np.vstack([points, diagonal]),
                             family=list(fonts.families()))
    if placement.unplaced:
        right.set_title(words["direction_stays"] + "\n" + words["scale_unplaced"].format(
            left=format_value(len(placement.unplaced))), fontsize=10)
    return fig


def lab_figure(name: str, result: Any, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Figure ``name`` of the lab report in ``lang``, drawn from a ``LabResult`` measured with ``figures=True``.

    ``name`` is one of the figures of ``report.lab.SECTIONS``: ``projection``,
    ``norms``, ``cost``, ``params``, ``stretch``, ``scale``. Raises ``KeyError``
    for another name and ``ValueError`` for a figure the result left out
    (``result.views.left_out`` says why) or an unknown language.
    """
    check_language(lang)
    views = result.views
    if name in views.left_out:
        raise ValueError(f"figure {name!r} was left out: {views.left_out[name]}")
    draw = {
        "projection": lambda: projection_figure(views.projection, lang=lang),
        "norms": lambda: norms_figure(views.norms, lang=lang),
        "cost": lambda: cost_figure(result, lang=lang),
        "params": lambda: params_figure(result, lang=lang),
        "stretch": lambda: stretch_figure(result.stretch, lang=lang),
        "scale": lambda: scale_figure(result.scale, lang=lang),
    }
    return draw[name]()


def cost_figure(result: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """The two routes to the probe's vector (``LabResult``): lookup reads its row (D numbers,
    no multiplication), the one-hot product reads every row (V x D numbers, as many
    multiplications). Bars of the numbers read, on a log axis, each labelled with both counts.

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    ax = fig.add_subplot()
    read = [result.dim, result.one_hot_mults]  # a row of D numbers; every row, V x D
    mults = [result.lookup_mults, result.one_hot_mults]
    y = [1, 0]  # lookup on top
    ax.barh(y, read, color=[PALETTE["lookup"], PALETTE["one_hot"]], height=0.4)
    ax.set_xscale("log")
    ax.set_xlim(0.5, max(read) * 2)
    ax.set_yticks(y, [f"{route}\n{words['cost_bar'].format(numbers=format_value(n), mults=format_value(m))}"
                      for route, n, m in zip((words["route_lookup"], words["route_one_hot"]), read, mults)])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel(words["cost_axis"])
    ax.set_title(words["cost_title"].format(vocab=format_value(result.vocab), dim=format_value(result.dim),
                                            diff=format_value(result.max_abs_diff)))
    return _finish(fig, words)


def params_figure(result: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Parameters of table + head, tied and untied, now and at the bigger vocabulary (``LabResult``).

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    ax = fig.add_subplot()
    groups = [f"V = {result.vocab:,}", f"V = {result.bigger_vocab:,}"]
    tied = [result.tied_params, result.bigger_tied]
    untied = [result.untied_params, result.bigger_untied]
    bars_t = ax.bar([-0.2, 0.8], tied, width=0.4, color=PALETTE["tied"], label=words["tied"])
    bars_u = ax.bar([0.2, 1.2], untied, width=0.4, color=PALETTE["untied"], label=words["untied"])
    ax.bar_label(bars_t, labels=[f"{v:,}" for v in tied], fontsize=8)
    ax.bar_label(bars_u, labels=[f"{v:,}" for v in untied], fontsize=8)
    ax.set_xticks([0, 1], groups)
    ax.set_ylabel(words["params_axis"])
    ax.set_title(words["params_title"].format(dim=format_value(result.dim)))
    ax.legend(loc="upper left")
    return _finish(fig, words)


def positions_figure(maps: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Learned vs sinusoidal positions (``measure.positions.PositionMaps``): cosine
    heatmaps side by side, adjacent-position cosine along the table, mean cosine by offset.

    A table without a learned position table (GloVe; a model with sinusoidal or
    rotary positions) gets no empty panel: the sinusoidal heatmap takes the left
    column, and the title says that the table has no learned positions, so only the
    sinusoidal table is drawn.

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    if maps.learned_cosines is None:
        panels = fig.subplot_mosaic([["sinusoidal", "curves"], ["sinusoidal", "offsets"]])
        maps_drawn = [(panels["sinusoidal"], maps.sinusoidal_cosines, words["sinusoidal"])]
        curves, offsets = panels["curves"], panels["offsets"]
    else:
        axes = fig.subplots(2, 2)
        maps_drawn = [(axes[0][0], maps.learned_cosines, words["learned_of"].format(table=maps.table)),
                      (axes[0][1], maps.sinusoidal_cosines, words["sinusoidal"])]
        curves, offsets = axes[1]
    step = maps.heatmap_step  # cell i is position i * step: the axes read in positions
    for ax, matrix, name in maps_drawn:
        edge = (matrix.shape[0] - 0.5) * step
        image = ax.imshow(matrix, vmin=-1.0, vmax=1.0, cmap="RdBu_r", origin="upper",
                          extent=(-0.5 * step, edge, edge, -0.5 * step))
        ax.set_title(words["position_map"].format(name=name), fontsize=10)
        ax.set_xlabel(words["position_q"])
        ax.set_ylabel(words["position_p"])
        fig.colorbar(image, ax=ax, label=words["cosine_axis"])
    for similarity, kind in ((maps.learned, "learned"), (maps.sinusoidal, "sinusoidal")):
        if similarity is None:
            continue
        color = PALETTE[kind]
        curves.plot(range(len(similarity.adjacent)), similarity.adjacent, label=words[kind], linewidth=0.8,
                    color=color)
        offsets.plot(similarity.offsets, similarity.by_offset, marker="o", label=words[kind], color=color)
    curves.set_title(words["adjacent_title"], fontsize=10)
    curves.set_xlabel(words["position_p"])
    curves.set_ylabel(words["cosine_axis"])
    curves.legend(fontsize=8)
    # The sinusoidal line is flat (its adjacent cosine is the same at every p, up to rounding):
    # alone, it made the axis read '1e-12+9.637400968e-1'.
    _min_span(curves, "y", COSINE_SPAN)
    offsets.set_xscale("log", base=2)
    offsets.set_title(words["offset_title"], fontsize=10)
    offsets.set_xlabel(words["offset_axis"])
    offsets.set_ylabel(words["mean_cosine_axis"])
    offsets.legend(fontsize=8)
    _min_span(offsets, "y", COSINE_SPAN)
    title = words["positions_title"].format(table=maps.table, T_max=format_value(maps.T_max), D=format_value(maps.D))
    if maps.learned_cosines is None:
        title += "\n" + words["no_learned"].format(table=maps.table)
    fig.suptitle(title)
    return _finish(fig, words, notes=_position_notes(maps, words))


def _position_notes(maps: Any, words: dict[str, str]) -> list[str]:
    """Where the figure's positions come from: the rows left out, the T_max read, what was drawn."""
    notes = []
    if maps.position_offset:
        notes.append(words["positions_offset"].format(
            last=format_value(maps.position_offset - 1), stored=format_value(maps.stored_rows),
            family=maps.family or "the family", offset=format_value(maps.position_offset)))
    if maps.T_max_from in ("config", "default"):
        notes.append(words[f"positions_{maps.T_max_from}"].format(T_max=format_value(maps.T_max)))
    if maps.drawn < maps.T_max:
        notes.append(words["positions_drawn"].format(drawn=format_value(maps.drawn), T_max=format_value(maps.T_max)))
    if maps.heatmap_step > 1:
        notes.append(words["positions_step"].format(step=format_value(maps.heatmap_step)))
    return notes


def bands_figure(bands: dict[int, Any], base: float, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """Sinusoidal wavelength bands for several widths: ``{D: wavelengths (ceil(D/2),)}``
    (Vaswani et al. 2017, section 3.5): one mark per sin/cos pair.

    Every width is drawn in the sinusoidal colour (``PALETTE["sinusoidal"]``),
    the first at full strength, the others lighter.

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    strip, curve = fig.subplots(2, 1)
    shades = _shades(PALETTE["sinusoidal"], len(bands))
    for row, ((width, lengths), color) in enumerate(zip(bands.items(), shades)):
        strip.scatter(lengths, [row] * len(lengths), marker="|", s=300, color=color)
        curve.plot([2 * k / width for k in range(len(lengths))], lengths, marker=".", color=color,
                   label=f"D = {width:,}")
    strip.set_xscale("log")
    strip.set_ylim(-0.5, len(bands) - 0.5)
    strip.set_yticks(range(len(bands)), [words["band_count"].format(width=format_value(w), bands=format_value(len(b)))
                                         for w, b in bands.items()])
    strip.set_xlabel(words["wavelength_axis"])
    strip.set_ylabel(words["model_width"])
    strip.set_title(words["bands_strip"], fontsize=10)
    curve.set_yscale("log")
    curve.set_xlabel(words["pair_axis"])
    curve.set_ylabel(words["wavelength_axis"])
    curve.set_title(words["bands_curve"].format(base=format_value(base)), fontsize=10)
    curve.legend(fontsize=8)
    fig.suptitle(words["bands_title"])
    return _finish(fig, words)


def compress_figure(result: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """recall@k against bytes per token (``measure.compress.CompressResult``): cosine and dot panels.

    One line per method through its sizes (pca, truncate), one point for the
    others; int8 and binary also rescored (hollow marks, dashed line to the
    reduced point); the full table a grey star at recall 1. Bytes on a log axis,
    each method at what it costs a token in all (``total_bytes_per_token``: its
    code and its share of the side data, PCA axes, int8 ranges, pq codebooks).

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).
    """
    words = _words(lang)
    fig = fig or new_figure()
    axes = fig.subplots(1, 2, sharey=True)
    by_method: dict[str, list[Any]] = {}
    for row in result.rows:
        by_method.setdefault(row.method, []).append(row)
    name = source_name(result.source) if result.source else "table"
    for ax, metric in zip(axes, ("cosine", "dot")):
        ax.plot([result.full_bytes_per_token], [1.0], marker="*", markersize=14, linestyle="none",
                color=PALETTE["reference"],
                label=words["compress_full"].format(bytes=format_value(result.full_bytes_per_token)))
        for method, rows in by_method.items():
            rows = sorted(rows, key=lambda r: r.total_bytes_per_token)
            x = [r.total_bytes_per_token for r in rows]
            ax.plot(x, [r.metrics[metric].recall for r in rows], marker="o", color=PALETTE[method],
                    label=method if method in ("pca", "truncate") else f"{method} ({rows[0].size})")
            if method in ("pca", "truncate"):  # pca's sizes above its points, truncation's below: never on each other
                for r in rows:
                    ax.annotate(r.size, (r.total_bytes_per_token, r.metrics[metric].recall), fontsize=7,
                                xytext=(4, 5) if method == "pca" else (4, -11), textcoords="offset points")
            rescored = [(r.total_bytes_per_token, r.metrics[metric].rescored_recall) for r in rows
                        if r.metrics[metric].rescored_recall is not None]
            for (bx, by), r in zip(rescored, rows):
                ax.plot([bx, bx], [r.metrics[metric].recall, by], linestyle="--", color=PALETTE[method])
                ax.plot([bx], [by], marker="o", markerfacecolor="white", color=PALETTE[method],
                        label=words["compress_rescored"].format(method=method, shortlist=result.shortlist))
        ax.set_xscale("log")
        ax.set_title(words[f"compress_{metric}"])
        ax.set_xlabel(words["compress_bytes"])
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(words["compress_recall"].format(k=result.k))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(words["compress_title"].format(table=name, queries=format_value(result.n_queries), k=result.k))
    return _finish(fig, words, notes=())


def audit_figure(result: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """The main under-trained indicator of every row over its id (``measure.audit.AuditResult``).

    Every row a small grey point (rasterised: 256k of them stay light in an
    SVG), the reference rows in ``PALETTE["unused"]``, the candidates in
    ``PALETTE["candidate"]``, the lowest ``AUDIT_LABELS`` labelled with their
    tokens (``labels.place_labels``), and the threshold as a dashed line.

    Text in ``lang`` (one of ``locales.LANGUAGES``; ``ValueError`` for another).

    A row without an indicator (NaN: its row holds NaN or infinity, or the table measured has no row for
    it) has no point: a note under the figure says how many and which.

    Raises
    ------
    SizeError
        (a ``ValueError``) for a result without under-trained indicators: no reference rows, the part was
        skipped (the message says why; ``parameter`` is ``"unused"``, the ids that would give it some).
    """
    words, w = _words(lang), AUDIT_WORDS[check_language(lang)]
    u = result.undertrained
    if u is None:
        why = "; ".join(s.reason for s in result.skipped if s.part == "undertrained") or "not measured"
        raise SizeError(f"no under-trained indicator to draw: {why}", parameter="unused", value=None,
                        expected=f"the ids of tokens known to be unused, to draw the under-trained indicator: {why}")
    fig = fig or new_figure()
    ax = fig.add_subplot()
    values = u.values[u.main]  # (V,)
    ids = np.arange(len(values))  # (V,)
    ax.scatter(ids, values, s=2, c=PALETTE["rows"], linewidths=0, rasterized=True, label=w["figure"]["tokens"])
    reference = np.asarray(u.reference, dtype=np.int64)
    ax.scatter(reference, values[reference], s=6, c=PALETTE["unused"], linewidths=0, rasterized=True,
               label=w["figure"]["reference"].format(count=format_value(len(reference))))
    candidates = np.asarray(u.candidates, dtype=np.int64)
    ax.scatter(candidates, values[candidates], s=14, c=PALETTE["candidate"], zorder=3,
               label=w["figure"]["candidates"].format(count=format_value(len(candidates))))
    if np.isfinite(u.threshold):
        ax.axhline(u.threshold, color=PALETTE["threshold"], linestyle="--", linewidth=1,
                   label=w["figure"]["threshold"].format(percentile=format_value(u.percentile),
                                                         value=f"{u.threshold:.4g}"))
    ax.set_xlim(-0.01 * len(values), 1.01 * len(values))
    ax.set_xlabel(w["figure"]["x"])
    ax.set_ylabel(w["figure"]["y"].format(indicator=w["indicators"][u.main]))
    ax.set_title(w["figure"]["title"].format(table=_drawn(_audit_table(result)), part=w["parts"][u.measured_on]))
    _audit_legend(ax, result, candidates, values, w)
    shown = candidates[:AUDIT_LABELS]
    texts = [_drawn(repr(result.token(int(i)))) if result.token(int(i)) is not None else str(int(i)) for i in shown]
    listed = [t for i in candidates[:AUDIT_LISTED] if (t := result.token(int(i))) is not None]
    _finish(fig, words, tokens=listed, notes=_not_drawn(values, w))
    if len(shown):
        anchors = np.column_stack([shown, values[shown]]).astype(np.float64)  # (n, 2)
        place_labels(ax, anchors, texts, family=list(fonts.families()), color=PALETTE["candidate"])
    return fig


def _audit_legend(ax: Any, result: Any, candidates: Any, values: Any, w: dict[str, Any]) -> None:
    """The legend outside the axes, then the lowest ``AUDIT_LISTED`` candidates as lines of it (id, token,
    value): the plot's labels crowd where candidates do, the list stays readable."""
    handles, texts = ax.get_legend_handles_labels()
    listed = candidates[:AUDIT_LISTED]
    if len(listed):
        handles.append(Line2D([], [], linestyle="none"))
        texts.append(w["figure"]["lowest"].format(count=format_value(len(listed))))
        for i in listed.tolist():
            token = result.token(i)
            handles.append(Line2D([], [], linestyle="none"))
            texts.append(f"{i}  {repr(token) if token is not None else '-'}  {fixed(float(values[i]), 4)}")
    more = len(candidates) - len(listed)
    if more > 0:
        handles.append(Line2D([], [], linestyle="none"))
        texts.append(w["more_listed"].format(count=format_value(more)))
    ax.legend(handles, texts, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8,
              markerscale=2, handlelength=1.0)


def _not_drawn(values: Any, w: dict[str, Any]) -> list[str]:
    """The note saying how many rows have no indicator (NaN: a row holding NaN or infinity, or no row in the
    table measured) and so no point, with the first ids: a figure must not leave a row out silently."""
    missing = np.flatnonzero(~np.isfinite(values))  # (n,)
    if not missing.size:
        return []
    ids = ", ".join(str(i) for i in missing[:UNDRAWN_SHOWN].tolist())
    more = f" … (+{format_value(missing.size - UNDRAWN_SHOWN)})" if missing.size > UNDRAWN_SHOWN else ""
    return [w["figure"]["not_drawn"].format(count=format_value(int(missing.size)), ids=ids + more)]


def _audit_table(result: Any) -> str:
    """The audited model's name (the token table's provenance, without the part)."""
    return source_name({**result.source, "part": "input"})


def diff_figure(result: Any, fig: Any = None, *, lang: str = DEFAULT_LANGUAGE) -> Any:
    """The diff in three panels (``measure.diff.DiffResult``): each shared row's drift after alignment
    (1 - aligned cosine) over A's id, the most drifted labelled with their tokens; the histogram of the
    neighbour overlap; each table's geometry side by side (A in ``PALETTE["before"]``, B in ``"after"``).
    A panel whose part did not run is left out. Text in ``lang``.
    """
    words, w = _words(lang), DIFF_WORDS[check_language(lang)]["figure"]
    panels = [p for p, present in (("drift", result.alignment is not None), ("overlap", result.overlap is not None),
                                   ("geometry", bool(result.geometry))) if present]
    fig = fig or new_figure(1200 if len(panels) < 3 else 1500, 700)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    names = {"a": source_name(result.source_a), "b": source_name(result.source_b)}
    fig.suptitle(w["title"].format(a=_drawn(names["a"]), b=_drawn(names["b"])))
    labelled: list[tuple[Any, Any, list[str]]] = []
    for ax, panel in zip(axes, panels):
        if panel == "drift":
            labelled.append(_drift_panel(ax, result, w))
        elif panel == "overlap":
            _overlap_panel(ax, result, w)
        else:
            _geometry_panel(ax, result, w, names)
    tokens = [t for _, _, texts in labelled for t in texts]
    _finish(fig, words, tokens=tokens)
    for ax, anchors, texts in labelled:
        if len(texts):
            place_labels(ax, anchors, [_label(t) for t in texts], family=list(fonts.families()),
                         color=PALETTE["stretched"])
    return fig


def _drift_panel(ax: Any, result: Any, w: dict[str, Any]) -> tuple[Any, Any, list[str]]:
    drift = 1.0 - result.alignment.cosines  # (n,)
    ids = result.match.a_ids  # (n,)
    ax.scatter(ids, drift, s=3, c=PALETTE["rows"], linewidths=0, rasterized=True)
    top = result.most_drifted(DIFF_LABELS)
    # Only rows within two orders of magnitude of the largest drift are labelled: a table where five rows drifted
    # names five, not three more at 1e-5; rounding (below DRIFT_LABELLED) is never named.
    top = top[drift[top] > max(DRIFT_LABELLED, 0.01 * float(drift[top[0]]) if len(top) else 0.0)]
    ax.scatter(ids[top], drift[top], s=14, c=PALETTE["stretched"], zorder=3)
    ax.set_title(w["drift_title"])
    ax.set_xlabel(w["drift_x"])
    ax.set_ylabel(w["drift_y"])
    texts = [result.token(int(ids[j]), int(result.match.b_ids[j])) or str(int(ids[j])) for j in top]
    return ax, np.column_stack([ids[top], drift[top]]).astype(np.float64), texts


def _overlap_panel(ax: Any, result: Any, w: dict[str, Any]) -> None:
    o = result.overlap
    counts = o.histogram()  # (k + 1,)
    ax.bar(np.arange(o.k + 1), counts, color=PALETTE["cosine"])
    ax.set_title(w["overlap_title"].format(queries=format_value(len(o.positions)), k=o.k))
    ax.set_xlabel(w["overlap_x"].format(k=o.k))
    ax.set_ylabel(w["overlap_y"])
    ax.set_xticks(np.arange(o.k + 1))


def _geometry_panel(ax: Any, result: Any, w: dict[str, Any], names: dict[str, str]) -> None:
    measures = [m for m in w["measures"] if all(getattr(iso, m) is not None for iso in result.geometry.values())]
    x = np.arange(len(measures))
    for offset, side in ((-0.2, "a"), (0.2, "b")):
        if side in result.geometry:
            values = [getattr(result.geometry[side], m) for m in measures]
            bars = ax.bar(x + offset, values, width=0.4, color=PALETTE["before" if side == "a" else "after"],
                          label=w["side"].format(side=side.upper(), table=_drawn(names[side])))
            # each value written on its bar: a ratio of 0.0003 has no visible bar, and reads as missing without it
            ax.bar_label(bars, labels=[f"{v:.0e}" if abs(v) < 0.01 and v != 0 else f"{v:.2f}" for v in values],
                         fontsize=7, padding=2)
    ax.set_xticks(x, [w["measures"][m] for m in measures], rotation=20, ha="right")
    ax.axhline(0.0, color=PALETTE["reference"], linewidth=0.8)
    ax.set_title(w["geometry_title"])
    ax.legend(loc="best", fontsize=8)


# -- shared steps: words, fonts, numbers, notes -----------------------------------------------

def _words(lang: str) -> dict[str, str]:
    """The figure words of ``lang``; ``ValueError`` (``ChoiceError``) for an unknown language."""
    return WORDS[check_language(lang)]["figures"]  # type: ignore[return-value]


def _drawn(text: str, lines: bool = False) -> str:
    """``text`` as a figure draws it: control characters escaped (``_escaped``), characters no
    font has replaced (``fonts.drawable``), and each unescaped ``$`` escaped, so that a token
    such as ``$x$`` is drawn as written, not as math."""
    return re.sub(r"(?<!\\)\$", r"\\$", fonts.drawable(_escaped(text, lines)))


def _escaped(text: str, lines: bool = False) -> str:
    """Control characters, which no font draws, and bidi controls, which would turn the text after
    them around (``formats.HIDDEN``), written as Python writes them (``\\t``, ``\\x00``, ``\\u202e``);
    a newline too unless ``lines`` (a token is drawn on one line)."""
    return HIDDEN.sub(lambda m: m[0] if lines and m[0] == "\n" else repr(m[0])[1:-1], text)


# Characters of a token a figure's label shows; the rest is cut, with the token's length (``_label``).
LABEL_LIMIT = 24


def _label(token: str) -> str:
    """A token as a label on a figure: its spaces, tabs and newlines as signs (``formats.visible_whitespace``:
    a token ``' '`` is ``␣``, not nothing), ``_drawn``, cut after ``LABEL_LIMIT`` characters with its length
    (``formats.cut_text``), so long tokens (a 100,000-character one, or a panel of 60-character ones)
    cannot push the axes out of the figure."""
    return _drawn(cut_text(visible_whitespace(token), LABEL_LIMIT))


def _named(token: str | None, token_id: int) -> str:
    """A token in a title: quoted as Python writes it (``'king'``); a table without a vocabulary
    names the row by its id, unquoted (``137``)."""
    return _drawn(brief(token)) if token is not None else str(token_id)


def _finish(fig: Any, words: dict[str, str], tokens: Iterable[str] = (), notes: Sequence[str] = ()) -> Any:
    """The steps every figure ends with: notes under the plot (with one naming the ``tokens``
    no font can draw), every text in the fallback font families, plain numbers on every axis."""
    undrawn = [t for t in dict.fromkeys(tokens) if fonts.missing(_escaped(t))]
    if undrawn:
        notes = [*notes, _undrawn_note(undrawn, words)]
    if notes:
        _add_notes(fig, notes)
    family = list(fonts.families())
    for ax in fig.axes:
        ax.tick_params(labelfontfamily=family)  # kept for the tick labels made when the figure is drawn
        for axis in (ax.xaxis, ax.yaxis):
            _plain_numbers(axis)
    for text in fig.findobj(Text):
        text.set_fontfamily(family)
        text.set_text(_drawn(text.get_text(), lines=True))
    _UNDRAWN[fig] = tuple(undrawn)
    return fig


def _title(words: dict[str, str], key: str, table: str | None, **fields: str) -> str:
    """The title ``key`` naming its table (``key + "_in"``: "Neighbours of 'king' in tiny-llama: ..."), so
    figures of several models tell themselves apart; without the name for a table that has none (a bare
    list of rows)."""
    return words[key].format(**fields) if table is None else words[f"{key}_in"].format(table=table, **fields)


def _undrawn_note(undrawn: Sequence[str], words: dict[str, str]) -> str:
    """The note naming tokens no font can draw whole: each as drawn, with the code points of the
    characters drawn as ``fonts.REPLACEMENT`` (``'�' (U+1F984)``); the first
    ``UNDRAWN_SHOWN``, then a count."""
    shown = ", ".join(f"{_drawn(brief(t))} ({' '.join(f'U+{ord(c):04X}' for c in fonts.missing(_escaped(t)))})"
                      for t in undrawn[:UNDRAWN_SHOWN])
    more = f" … (+{len(undrawn) - UNDRAWN_SHOWN})" if len(undrawn) > UNDRAWN_SHOWN else ""
    return words["undrawn"].format(tokens=shown + more)


def _add_notes(fig: Any, notes: Sequence[str]) -> None:
    """Notes as lines under the plot, with room kept for them (constrained layout's ``rect``)."""
    fig.text(0.01, 0.005, "\n".join(notes), fontsize=NOTE_SIZE, color="#404040", ha="left", va="bottom")
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        line = 1.5 * NOTE_SIZE / 72 * fig.dpi  # pixels per line of notes
        share = (len(notes) * line + 6) / (fig.get_figheight() * fig.dpi)
        engine.set(rect=(0, share, 1, 1 - share))


def _plain_numbers(axis: Any) -> None:
    """Tick labels of one axis as people write numbers, never with an offset or a ``1e7`` multiplier,
    by ``formats.tick_text``'s one rule (K, M from 1,000 up): ``0.25``, ``500``, ``2K``, ``11.7M``.
    On a log axis only the major ticks are labelled, each on its own (``100``, ``1K``, ``10K``)."""
    if axis.get_scale() == "log":
        axis.set_major_formatter(_tick_formatter()(shared=False))
        axis.set_minor_formatter(ticker.NullFormatter())
        low, high = sorted(abs(v) for v in axis.get_view_interval())
        if axis.get_transform().base == 10 and 0 < low and high / low < 100:  # under 2 decades: 1, 2, 5, 10, ...
            axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    elif isinstance(axis.get_major_formatter(), ticker.ScalarFormatter):
        axis.set_major_formatter(_tick_formatter()(shared=True))


@functools.cache
def _tick_formatter() -> type:
    """A ``matplotlib.ticker.Formatter`` writing ticks with ``formats.tick_text``: all the ticks of an
    axis together (``shared``: one unit, one number of decimals) or each on its own (log axes)."""
    class PeopleFormatter(ticker.Formatter):
        def __init__(self, shared: bool) -> None:
            self.shared, self.ticks = shared, ()

        def set_locs(self, locs: Sequence[float]) -> None:
            self.ticks = tuple(locs)

        def __call__(self, x: float, pos: int | None = None) -> str:
            return tick_text(x, self.ticks if self.shared and self.ticks else [x])

    return PeopleFormatter


def _min_span(ax: Any, axis: str, min_span: float) -> None:
    """Widen one linear axis to at least ``min_span`` (data units) about its middle, so nearly
    equal values (cosines equal to 1e-12) read as a flat line, not as noise magnified to fill it."""
    get, put = (ax.get_xlim, ax.set_xlim) if axis == "x" else (ax.get_ylim, ax.set_ylim)
    low, high = get()
    if high - low < min_span:
        middle = (low + high) / 2
        put(middle - min_span / 2, middle + min_span / 2)


def _patches(entries: Sequence[tuple[str, str]]) -> list[Any]:
    """Legend handles for colours that several bars share: ``(colour, label)`` each."""
    return [Patch(color=color, label=label) for color, label in entries]


def _shades(color: str, n: int) -> list[tuple[float, float, float]]:
    """``n`` shades of one colour: the colour itself, then lighter (mixed with white up to 60%)."""
    rgb = to_rgb(color)
    return [tuple(c + (1 - c) * 0.6 * i / max(n - 1, 1) for c in rgb) for i in range(n)]  # type: ignore[misc]

