"""Figures: measurement results -> matplotlib Figures, and PNG bytes.

Each function takes a result a measurement produced and draws it; nothing is
computed here beyond placing marks. Axes carry units, titles say what was
measured on which table. matplotlib is imported on first use (the ``plots``
extra); the object-oriented API is used (no pyplot, no global state), so
figures can be made from any thread and nothing opens a window.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

from ..errors import MissingExtraError

__all__ = ["lab_figure", 
    "new_figure", "png_bytes", "DPI",
    "projection_figure", "norms_figure", "stretch_figure", "scale_figure",
    "cost_figure", "params_figure", "positions_figure", "bands_figure",
]

DPI = 100  # pixels per inch: a figure of 12 x 8 inches is 1200 x 800 pixels
GROUP_COLORS = {"probe": "#d62728", "cosine": "#1f77b4", "dot": "#ff7f0e", "both": "#9467bd",
                "sample": "#b0b0b0", "chosen": "#1f77b4"}
COSINE_SPAN = 0.01  # the narrowest range a cosine axis shows: nearly equal cosines read as a flat line
PROJECTION_NOTE = "2-D distances are only a view of the D-dimensional ones"
METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}  # as the field writes them
SAMPLE_LABELS = 8  # sample rows labelled besides the probe and its neighbours: a few, not the cloud
MAX_LABELS = 60  # labels asked of the placer at most; the rest are counted as unlabelled


def new_figure(width: int = 1200, height: int = 800) -> Any:
    """An empty ``matplotlib.figure.Figure`` of ``width`` x ``height`` pixels at ``DPI``.

    Raises ``ValueError`` for a size below 100 pixels and ``MissingExtraError``
    when matplotlib is not installed.
    """
    if width < 100 or height < 100:
        raise ValueError(f"figure size {width}x{height} pixels is too small: at least 100x100")
    figure_module = _matplotlib_figure()
    return figure_module.Figure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes, exactly the figure's size in pixels."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # Tokens in scripts that the default font lacks are drawn as boxes; not an error.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        warnings.filterwarnings("ignore", message="Matplotlib currently does not support")
        fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def projection_figure(proj: Any, fig: Any = None) -> Any:
    """Scatter of a ``projection.Projection``: one point per row, coloured by group.

    The probe, its neighbours and the first ``SAMPLE_LABELS`` sample rows (or
    every chosen row) are labelled, placed by ``labels.place_labels`` without
    overlap; a note at the bottom right says how many points were left
    unlabelled. The title names the distance the method keeps.
    """
    from . import labels

    fig = fig or new_figure()
    ax = fig.add_subplot()
    for group, color in GROUP_COLORS.items():
        mask = [g == group for g in proj.groups]
        if any(mask):
            pts = proj.points[mask]
            ax.scatter(pts[:, 0], pts[:, 1], s=60 if group == "probe" else 25, c=color, label=group)
    ax.set_title(_projection_title(proj))
    ax.set_xlabel(f"{proj.method} axis 1 (arbitrary units)")
    ax.set_ylabel(f"{proj.method} axis 2 (arbitrary units)")
    # Outside the axes, at the right: inside, it hid points wherever "best" put it.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
    fig.text(0.01, 0.005, PROJECTION_NOTE, fontsize=8, style="italic")
    wanted = _labelled_rows(proj.groups)
    placement = labels.place_labels(ax, proj.points[wanted], [proj.labels[i] for i in wanted], points=proj.points)
    unlabelled = len(proj.ids) - len(placement.placed)
    fig.text(0.99, 0.005, f"{len(placement.placed)} of {len(proj.ids)} points labelled, {unlabelled} left unlabelled",
             fontsize=8, style="italic", ha="right")
    return fig


def _labelled_rows(groups: list[str]) -> list[int]:
    """Rows to label, most important first: the probe, its neighbours (or every chosen row), then
    the first ``SAMPLE_LABELS`` sample rows; at most ``MAX_LABELS``."""
    rank = {"probe": 0, "both": 1, "cosine": 2, "dot": 3, "chosen": 4}
    first = sorted((i for i, g in enumerate(groups) if g in rank), key=lambda i: (rank[groups[i]], i))
    sample = [i for i, g in enumerate(groups) if g not in rank][:SAMPLE_LABELS]
    return (first + sample)[:MAX_LABELS]


def _projection_title(proj: Any) -> str:
    """What was projected and which distance the picture keeps, parameters rounded for people."""
    name = METHOD_NAMES.get(proj.method, proj.method)
    what = f"{name} of {len(proj.ids)} rows of the {proj.table} table"
    p = proj.parameters
    if proj.method == "pca":
        return (f"{what}: directions of largest euclidean variance, fitted on {p['fitted_rows']:,} rows")
    size = f"perplexity {p['perplexity']:.3g}" if "perplexity" in p else f"{p['n_neighbors']} neighbours"
    return f"{what}: keeps {p['metric']} neighbourhoods ({size}, seed {p['seed']})"


def norms_figure(dist: Any, fig: Any = None) -> Any:
    """Histogram of row norms (``norms.NormDistribution``), the longest rows marked and labelled.

    Each longest row is a red mark at its norm on top of its bar; its label
    (token and norm) is placed by ``labels.place_labels``. The title's count
    is the number of labels drawn; a row that found no place is named as
    marked but unlabelled.
    """
    import numpy as np

    from . import labels

    fig = fig or new_figure()
    ax = fig.add_subplot()
    ax.stairs(dist.counts, dist.edges, fill=True, color="#1f77b4")
    ax.set_yscale("log")
    top = max(int(dist.counts.max()), 1)
    anchors = _bar_tops(dist)  # (top, 2): each longest row's norm and the height of its bar
    ax.scatter(anchors[:, 0], anchors[:, 1], marker="v", s=30, c="#d62728", zorder=3)
    # Room above the bars for a row of labels rising from 2x the tallest bar: the log axis reaches 60x.
    ax.set_ylim(0.5, top * 60)
    ax.set_xlabel("row norm (L2 length, table units)")
    ax.set_ylabel("rows (log scale)")
    _no_offset(ax, "x", min_span=1e-3 * max(abs(float(dist.edges[0])), abs(float(dist.edges[-1]))))
    ax.set_title(_norms_title(dist, len(dist.longest_ids)))
    texts = [f"{label} ({norm:.4g})" for label, norm in zip(dist.longest_labels, dist.longest_norms)]
    row = np.column_stack([anchors[:, 0], np.full(len(anchors), top * 2.0)])  # (top, 2) where the labels start
    placement = labels.place_labels(ax, anchors, texts, start=row, direction="x", rotation=90)
    if placement.unplaced:
        ax.set_title(_norms_title(dist, len(placement.placed)))
    return fig


def _norms_title(dist: Any, labelled: int) -> str:
    marked = len(dist.longest_ids)
    rest = "" if labelled == marked else f" ({marked - labelled} more marked, no room for their labels)"
    return f"Row norms of the {dist.table} table ({int(dist.counts.sum())} rows), longest {labelled} labelled{rest}"


def _bar_tops(dist: Any) -> Any:
    """(top, 2) points: each longest row's norm, and the height of the histogram bar it falls in."""
    import numpy as np

    norms = np.asarray(dist.longest_norms, dtype=np.float64)  # (top,)
    bins = np.clip(np.searchsorted(dist.edges, norms, side="right") - 1, 0, len(dist.counts) - 1)  # (top,)
    return np.column_stack([norms, np.maximum(dist.counts[bins], 1)]).astype(np.float64)  # (top, 2)


def stretch_figure(cmp: Any, fig: Any = None) -> Any:
    """Cosine and dot-product lists of the probe before and after one row is stretched
    (``lab.StretchComparison``): bars of the scores, each labelled with the row's norm."""
    fig = fig or new_figure()
    axes = fig.subplots(2, 2)
    panels = [(cmp.cos_before, "cosine, before"), (cmp.dot_before, "dot product, before"),
              (cmp.cos_after, f"cosine, after x{cmp.factor:g}"), (cmp.dot_after, f"dot product, after x{cmp.factor:g}")]
    for ax, (scored, name) in zip(axes.ravel(), panels):
        labels = scored.tokens or [str(i) for i in scored.ids]
        colors = ["#d62728" if i == cmp.target else "#1f77b4" for i in scored.ids]
        y = list(range(len(scored.ids)))[::-1]  # best at the top
        ax.barh(y, scored.scores, color=colors)
        ax.set_yticks(y, [f"{lab} (norm {n:.3g})" for lab, n in zip(labels, scored.norms)], fontsize=8)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("cosine similarity (unitless)" if name.startswith("cosine") else "dot product (table units squared)")
    probe = cmp.probe_token or str(cmp.probe)
    target = next((t for i, t in zip(cmp.cos_before.ids, cmp.cos_before.tokens or []) if i == cmp.target), str(cmp.target))
    fig.suptitle(f"Neighbours of {probe!r}: stretching {target!r} (red) x{cmp.factor:g} moves it in the dot list only")
    return fig


def scale_figure(cmp: Any, fig: Any = None) -> Any:
    """Multiplying by sqrt(D) (``lab.ScaleComparison``): lengths grow, cosines stay."""
    fig = fig or new_figure()
    left, right = fig.subplots(1, 2)
    labels = cmp.tokens or [str(i) for i in cmp.ids]
    x = list(range(len(cmp.ids)))
    left.bar([i - 0.2 for i in x], cmp.norms_before, width=0.4, label="before")
    left.bar([i + 0.2 for i in x], cmp.norms_after, width=0.4, label=f"after x sqrt(D) = {cmp.factor:.4g}")
    left.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    left.set_ylabel("vector length (L2, table units)")
    left.set_title("Size changes")
    left.legend(fontsize=8)
    right.scatter(cmp.cos_before, cmp.cos_after, c="#1f77b4")
    lo, hi = min(cmp.cos_before + cmp.cos_after), max(cmp.cos_before + cmp.cos_after)
    right.plot([lo, hi], [lo, hi], color="#b0b0b0", linewidth=0.8, label="after = before")
    right.set_xlabel("cosine with the probe before scaling (unitless)")
    right.set_ylabel("cosine with the probe after scaling (unitless)")
    right.set_title("Direction does not")
    right.legend(fontsize=8)
    for axis in ("x", "y"):  # cosines that agree to 1e-9 would read '1e-9+9.9e-1' otherwise
        _no_offset(right, axis, min_span=COSINE_SPAN, plain=True)
    probe = cmp.probe_token or str(cmp.probe)
    fig.suptitle(f"Scaling by sqrt(D) (Vaswani et al. 2017, section 3.4): rows near {probe!r}")
    return fig


def lab_figure(name: str, result: Any) -> Any:
    """Figure ``name`` of the lab report, drawn from a ``LabResult`` measured with ``figures=True``.

    ``name`` is one of the figures of ``report.lab.SECTIONS``: ``projection``,
    ``norms``, ``cost``, ``params``, ``stretch``, ``scale``. Raises ``KeyError``
    for another name and ``ValueError`` for a figure the result left out
    (``result.views.left_out`` says why).
    """
    views = result.views
    if name in views.left_out:
        raise ValueError(f"figure {name!r} was left out: {views.left_out[name]}")
    draw = {
        "projection": lambda: projection_figure(views.projection),
        "norms": lambda: norms_figure(views.norms),
        "cost": lambda: cost_figure(result),
        "params": lambda: params_figure(result),
        "stretch": lambda: stretch_figure(result.stretch),
        "scale": lambda: scale_figure(result.scale),
    }
    return draw[name]()


def cost_figure(result: Any, fig: Any = None) -> Any:
    """Multiplications to get the probe's vector: lookup (0) vs one-hot product (V x D)."""
    fig = fig or new_figure()
    ax = fig.add_subplot()
    bars = ax.bar(["lookup", "one-hot x table"], [result.lookup_mults, result.one_hot_mults], color=["#2ca02c", "#d62728"])
    ax.bar_label(bars, labels=[str(result.lookup_mults), str(result.one_hot_mults)])
    ax.set_ylabel("multiplications per token")
    ax.set_title(f"Same vector, two routes (V={result.vocab}, D={result.dim}); largest difference {result.max_abs_diff:g}")
    return fig


def params_figure(result: Any, fig: Any = None) -> Any:
    """Parameters of table + head, tied and untied, now and at the bigger vocabulary."""
    fig = fig or new_figure()
    ax = fig.add_subplot()
    groups = [f"V = {result.vocab}", f"V = {result.bigger_vocab}"]
    tied = [result.tied_params, result.bigger_tied]
    untied = [result.untied_params, result.bigger_untied]
    bars_t = ax.bar([-0.2, 0.8], tied, width=0.4, label="tied (one table)")
    bars_u = ax.bar([0.2, 1.2], untied, width=0.4, label="untied (table + head)")
    ax.bar_label(bars_t, labels=[str(v) for v in tied], fontsize=8)
    ax.bar_label(bars_u, labels=[str(v) for v in untied], fontsize=8)
    ax.set_xticks([0, 1], groups)
    ax.set_ylabel("parameters")
    ax.set_title(f"Weight tying saves V x D parameters (D = {result.dim})")
    ax.legend()
    return fig


def positions_figure(maps: Any, fig: Any = None) -> Any:
    """Learned vs sinusoidal positions (``position_similarity.PositionMaps``): cosine
    heatmaps side by side, adjacent-position cosine along the table, mean cosine by offset."""
    fig = fig or new_figure()
    axes = fig.subplots(2, 2)
    panels = [(maps.learned_cosines, f"learned ({maps.table})"), (maps.sinusoidal_cosines, "sinusoidal")]
    for ax, (matrix, name) in zip(axes[0], panels):
        if matrix is None:
            ax.text(0.5, 0.5, f"{maps.table} has no learned position table", ha="center", va="center")
            ax.set_axis_off()
            continue
        image = ax.imshow(matrix, vmin=-1.0, vmax=1.0, cmap="RdBu_r", origin="upper")
        ax.set_title(f"cosine of positions p and q, {name}", fontsize=10)
        ax.set_xlabel("position q (0-based)")
        ax.set_ylabel("position p (0-based)")
        fig.colorbar(image, ax=ax, label="cosine similarity (unitless)")
    curves, offsets = axes[1]
    for similarity, name in ((maps.learned, "learned"), (maps.sinusoidal, "sinusoidal")):
        if similarity is None:
            continue
        curves.plot(range(len(similarity.adjacent)), similarity.adjacent, label=name, linewidth=0.8)
        offsets.plot(similarity.offsets, similarity.by_offset, marker="o", label=name)
    curves.set_title("adjacent positions: cosine of p and p + 1", fontsize=10)
    curves.set_xlabel("position p (0-based)")
    curves.set_ylabel("cosine similarity (unitless)")
    curves.legend(fontsize=8)
    # The sinusoidal line is flat (its adjacent cosine is the same at every p, up to rounding):
    # alone, it made the axis read '1e-12+9.637400968e-1'.
    _no_offset(curves, "y", min_span=COSINE_SPAN, plain=True)
    offsets.set_xscale("log", base=2)
    offsets.set_title("mean cosine of p and p + k", fontsize=10)
    offsets.set_xlabel("offset k (positions, log scale)")
    offsets.set_ylabel("mean cosine similarity (unitless)")
    offsets.legend(fontsize=8)
    _no_offset(offsets, "y", min_span=COSINE_SPAN, plain=True)
    fig.suptitle(f"Position tables of {maps.table}: T_max = {maps.T_max}, D = {maps.D}")
    return fig


def bands_figure(bands: dict[int, Any], base: float, fig: Any = None) -> Any:
    """Sinusoidal wavelength bands for several widths: ``{D: wavelengths (ceil(D/2),)}``
    (Vaswani et al. 2017, section 3.5): one mark per sin/cos pair."""
    fig = fig or new_figure()
    strip, curve = fig.subplots(2, 1)
    for row, (width, lengths) in enumerate(bands.items()):
        strip.scatter(lengths, [row] * len(lengths), marker="|", s=300, label=f"D = {width}: {len(lengths)} bands")
        curve.plot([2 * k / width for k in range(len(lengths))], lengths, marker=".", label=f"D = {width}")
    strip.set_xscale("log")
    strip.set_ylim(-0.5, len(bands) - 0.5)
    strip.set_yticks(range(len(bands)), [f"D = {w}" for w in bands])
    strip.set_xlabel("wavelength (positions, log scale)")
    strip.set_ylabel("model width")
    strip.set_title("one band per sin/cos pair: halving D keeps the range, halves the bands", fontsize=10)
    curve.set_yscale("log")
    curve.set_xlabel("pair index 2k / D (unitless)")
    curve.set_ylabel("wavelength (positions, log scale)")
    curve.set_title(f"wavelength = 2 pi base^(2k / D), base = {base:g}", fontsize=10)
    curve.legend(fontsize=8)
    fig.suptitle("Sinusoidal wavelength bands")
    return fig


def _no_offset(ax: Any, axis: str, min_span: float, plain: bool = False) -> None:
    """Tick labels of one linear axis without matplotlib's offset (``1e-12+9.637e-1``).

    A range narrower than ``min_span`` (data units) is widened to it about its
    middle, so nearly equal values read as a flat line, not as noise magnified
    to fill the axis. ``plain`` also turns off the ``x1e5`` multiplier, for
    values in a known small range such as cosines.
    """
    ax.ticklabel_format(axis=axis, useOffset=False, **({"style": "plain"} if plain else {}))
    get, put = (ax.get_xlim, ax.set_xlim) if axis == "x" else (ax.get_ylim, ax.set_ylim)
    low, high = get()
    if high - low < min_span:
        middle = (low + high) / 2
        put(middle - min_span / 2, middle + min_span / 2)


def _matplotlib_figure() -> Any:
    try:
        import matplotlib.figure
    except ImportError:
        raise MissingExtraError.for_module("matplotlib", "figures", ("plots",)) from None
    return matplotlib.figure
