"""Label placement: text beside the points of a figure, never on another label, never lost.

One job: given the points of an axes and the labels some of them should carry
(most important first), put each label near its point so that no two labels
overlap and every label lies inside the axes; move a label away where its
place is taken, with a leader line back to its point; and leave a label out
only when no place is left, saying which. ``place_labels`` returns what it
placed and where (display boxes in pixels), so that a figure can say "N
labelled" and mean it, and tests can check the boxes.

How: in a cloud of points, adjustText (Flyamer, https://github.com/Phlya/adjustText,
the matplotlib counterpart of R's ggrepel) pushes labels apart from each other
and from the points, for a fixed number of iterations (its default, one second
of wall clock, would make the picture depend on the machine's speed). A row of
labels (``direction="x"``: above a histogram) is packed in one dimension
instead, in the order of its points, so that leader lines never cross.
Repulsion leaves some overlaps in a dense cloud, so a second pass makes the promise:
labels are kept in priority order, and one that still touches a kept label or
the legend, or pokes out of the axes, is tried at places around its point
(nearest first); with none free, it is removed and reported as unplaced.

Placing needs final pixel positions, so ``place_labels`` draws the figure once
and then fixes its layout (axis limits, the legend's corner, the layout
engine): call it after everything else in the axes is drawn. A row whose
labels are taller than the room above their start raises the top of the
y-axis to make room (``_room_above``), rather than drop the long ones.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import FancyArrowPatch

from ..errors import ChoiceError, MissingExtraError, ShapeError

__all__ = ["PlacedLabel", "Placement", "place_labels", "overlapping_pairs"]

DIRECTIONS = ("xy", "x")
ITERATIONS = 100  # adjustText steps: a fixed count, so the same figure comes out on any machine
PAD = 1.0  # pixels kept free around each label box
MARK = 3.0  # half-size in pixels of the square around each point that no label may cover
LEADER_MIN = 20.0  # a label whose box is farther than this (pixels) from its point gets a leader line;
# nearer, it reads as beside its point, and a short stub would read as a minus sign ("—ii")
# Places tried around a point when repulsion left a label on another: distances in pixels
# from the point to the nearest edge of the label, and the 8 compass directions at each.
RESCUE_RADII = (4.0, 14.0, 28.0, 46.0, 70.0, 100.0)
LEADER_STYLE = {"arrowstyle": "-", "color": "#707070", "linewidth": 0.6, "shrinkA": 1.0, "shrinkB": 3.0}


@dataclass(frozen=True)
class PlacedLabel:
    """One label drawn in the axes.

    Attributes
    ----------
    index : int
        Which label of the ``texts`` given to ``place_labels`` (0-based).
    text : str
        The label.
    anchor : (float, float)
        The point it labels, in data coordinates.
    box : (float, float, float, float)
        The label's box in display pixels, ``(x0, y0, x1, y1)``, as
        ``Text.get_window_extent`` reports it once placed.
    leader : bool
        Whether a leader line joins the label to its point (it was moved more
        than ``LEADER_MIN`` pixels away from it).
    artist : matplotlib.text.Text
        The text drawn.
    """

    index: int
    text: str
    anchor: tuple[float, float]
    box: tuple[float, float, float, float]
    leader: bool
    artist: Any


@dataclass(frozen=True)
class Placement:
    """What ``place_labels`` drew: the labels placed, in priority order, and those left out.

    Attributes
    ----------
    placed : tuple of PlacedLabel
    unplaced : tuple of int
        Indices of the labels that found no free place (not drawn).
    leaders : tuple of matplotlib.patches.FancyArrowPatch
        The leader lines drawn, one per placed label with ``leader`` True.
    """

    placed: tuple[PlacedLabel, ...]
    unplaced: tuple[int, ...]
    leaders: tuple[Any, ...]


def place_labels(ax: Any, anchors: Any, texts: Sequence[str], *, points: Any = None, start: Any = None,
                 direction: str = "xy", rotation: float = 0.0, fontsize: float = 8.0,
                 color: str = "black", family: Sequence[str] | None = None) -> Placement:
    """Label points of ``ax`` without overlap; most important label first.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes whose marks, title and legend are all drawn already (see the
        module docstring: the figure's layout is fixed here).
    anchors : array_like, shape (n, 2), float
        The point each label belongs to, in data coordinates.
    texts : sequence of str, length n
        The labels, in priority order: when places run out, the last ones
        are left out first.
    points : array_like, shape (m, 2), optional
        Every point of the axes in data coordinates (labelled or not): labels
        are pushed off them. Default: the anchors.
    start : array_like, shape (n, 2), optional
        Where each label starts, in data coordinates (ggrepel's nudge: a row
        of labels above a histogram); default beside its anchor.
    direction : {"xy", "x"}
        Which way labels may move from where they start: anywhere, or along
        x only (a row stays a row).
    rotation : float
        Text angle in degrees (90: read bottom to top).
    fontsize : float
        In points.
    color : str
        Colour of the labels.
    family : sequence of str, optional
        Font families, the first that has a glyph drawing it (``report.fonts``);
        the labels are measured in them, so CJK labels are placed at their own size.

    Returns
    -------
    Placement
        Every placed label's box is inside the axes, clear of the legend, and
        at least ``2 * PAD`` pixels from every other placed label's box.
        ``len(placed) + len(unplaced) == n``.

    Raises
    ------
    ShapeError
        When ``anchors`` is not (n, 2) with n the number of texts, or
        ``points`` not (m, 2).
    MissingExtraError
        When adjustText (the ``plots`` extra) is not installed.
    """
    xy = np.array(anchors, dtype=np.float64).reshape(-1, 2) if len(texts) else np.empty((0, 2))  # (n, 2)
    if xy.shape != (len(texts), 2):
        raise ShapeError(f"anchors must be (n, 2) with n = {len(texts)} labels, got shape {np.shape(anchors)}")
    marks = xy if points is None else np.asarray(points, dtype=np.float64)  # (m, 2)
    if marks.ndim != 2 or marks.shape[1] != 2:
        raise ShapeError(f"points must be (m, 2), got shape {marks.shape}")
    begin = xy if start is None else np.asarray(start, dtype=np.float64)  # (n, 2)
    if begin.shape != xy.shape:
        raise ShapeError(f"start must be (n, 2) like anchors {xy.shape}, got shape {begin.shape}")
    if direction not in DIRECTIONS:
        raise ChoiceError(f"unknown direction {direction!r}: expected one of {', '.join(DIRECTIONS)}",
                          parameter="direction", value=direction, expected=f"one of {', '.join(DIRECTIONS)}")
    renderer = _renderer(ax.figure)
    with _measuring():
        _freeze_layout(ax)
        # Beside the point (left, bottom), or a rotated label rising from it (left along the text, centred across).
        va = "center" if rotation else "bottom"
        fonts = {} if family is None else {"fontfamily": list(family)}
        artists = [ax.text(x, y, label, fontsize=fontsize, color=color, rotation=rotation, ha="left", va=va,
                           rotation_mode="anchor", **fonts) for (x, y), label in zip(begin.tolist(), texts)]
        if artists and direction == "x":
            _room_above(ax, artists, begin, renderer)
            _pack_row(ax, artists, xy, begin, renderer)
        elif artists:
            _repel(ax, artists, marks, xy)
        placed, unplaced, leaders = _keep_free(ax, artists, xy, marks, begin if start is not None else None,
                                               direction, renderer)
    return Placement(placed=tuple(placed), unplaced=tuple(unplaced), leaders=tuple(leaders))


def overlapping_pairs(boxes: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of boxes ``(x0, y0, x1, y1)`` whose interiors overlap.

    Boxes that only touch along an edge do not overlap.

    >>> overlapping_pairs([(0, 0, 2, 2), (1, 1, 3, 3), (2, 0, 4, 1.5)])
    [(0, 1), (1, 2)]
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)  # (n, 4)
    return [(i, int(j)) for i in range(len(b)) for j in np.flatnonzero(_overlaps(b[i], b, 0.0)) if j > i]


# -- helpers ---------------------------------------------------------------------------------------

def _keep_free(ax: Any, artists: list[Any], xy: np.ndarray, marks: np.ndarray, start: np.ndarray | None,
               direction: str, renderer: Any) -> tuple[list, list, list]:
    """The checking pass: keep each label, in priority order, where it is free or at the first free
    place around its point (its start, in a row); remove it when none is. Free means inside the
    axes, off the legend, off every point's mark and off every label kept before it. Draws the
    leader lines of labels kept away from their point."""
    placed, unplaced, leaders = [], [], []
    marks_px = ax.transData.transform(marks) if len(marks) else np.empty((0, 2))  # (m, 2) display pixels
    taken = np.vstack([np.hstack([marks_px - MARK, marks_px + MARK]),  # (m, 4) each point's mark
                       np.reshape([b for b in (_legend_box(ax),) if b is not None], (-1, 4))])  # (m + 0|1, 4)
    frame = ax.get_window_extent(renderer).extents  # (x0, y0, x1, y1) of the axes, pixels
    anchor_px = ax.transData.transform(xy) if len(xy) else xy  # (n, 2) display pixels
    home_px = anchor_px if start is None else ax.transData.transform(start)  # (n, 2)
    for index, (text, point, home) in enumerate(zip(artists, anchor_px, home_px)):
        box = _free_place(text, home, direction, taken, frame, renderer, ax)
        if box is None:
            text.remove()
            unplaced.append(index)
            continue
        taken = np.vstack([taken, box])
        leader = _gap(box, point) > LEADER_MIN
        if leader:
            leaders.append(_leader(ax, text, xy[index]))
        placed.append(PlacedLabel(index=index, text=text.get_text(), anchor=(float(xy[index, 0]), float(xy[index, 1])),
                                  box=tuple(float(v) for v in box), leader=leader, artist=text))
    return placed, unplaced, leaders


def _renderer(fig: Any) -> Any:
    """The figure's renderer; a figure made without pyplot gets an Agg canvas (no window)."""
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


@contextlib.contextmanager
def _measuring() -> Iterator[None]:
    """Draws made only to measure text: a glyph the font lacks is the business of the draw that
    renders the figure (the same text is drawn again there, and warns there), not of measuring."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        warnings.filterwarnings("ignore", message="Matplotlib currently does not support")
        yield


def _freeze_layout(ax: Any) -> None:
    """Draw once, then keep what the draw decided: labels placed in pixels stay where they were put.

    Without this, the next draw would let a "best" legend jump onto the labels (it avoids
    texts drawn after it was placed), let autoscaling widen the limits for the leader lines,
    and let the layout engine move the axes.
    """
    fig = ax.figure
    fig.draw_without_rendering()
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    legend = ax.get_legend()
    if legend is not None:
        corner = ax.transAxes.inverted().transform(legend.get_window_extent().p0)  # lower-left, axes fraction
        legend.set_bbox_to_anchor(None)  # the corner is in the axes' own fraction, whatever anchored it
        legend.set_loc(tuple(float(v) for v in corner))
    fig.set_layout_engine("none")


def _room_above(ax: Any, artists: list[Any], start: np.ndarray, renderer: Any) -> None:
    """Raise the top of the y-axis until every label of a row fits between its start and the axes' top.

    A row's labels may only move along x, so a label taller than the room above its start
    (a long token, rotated) would never fit and be dropped with the row half empty: the
    axes make room instead. Works in the axis's scale space (linear or log), where pixels
    are linear: with ``lo``, ``hi`` the limits and ``s`` the start there, ``H`` the axes'
    height and ``L`` the label's (pixels), the label fits when ``(hi - s) H >= L (hi - lo)``,
    so ``hi = (s H - L lo) / (H - L)``. A label taller than 90% of the axes keeps the limit
    (it cannot fit; the checking pass reports it).
    """
    frame = ax.get_window_extent(renderer).extents  # (x0, y0, x1, y1) pixels
    height = frame[3] - frame[1]
    scale = ax.yaxis.get_transform()  # data -> scale space (identity, or log)
    lo, hi = scale.transform(np.asarray(ax.get_ylim(), dtype=np.float64))  # (2,)
    need = hi
    for text, (_, y) in zip(artists, start.tolist()):
        tall = text.get_window_extent(renderer).height + 2 * PAD + 1.0  # pixels, with the check's pad
        if tall < 0.9 * height:
            s = float(scale.transform(np.asarray([y], dtype=np.float64))[0])
            need = max(need, (s * height - tall * lo) / (height - tall))
    if need > hi:
        top = float(scale.inverted().transform(np.asarray([need], dtype=np.float64))[0])
        ax.set_ylim(ax.get_ylim()[0], top)


def _pack_row(ax: Any, artists: list[Any], anchors: np.ndarray, start: np.ndarray, renderer: Any) -> None:
    """A row of labels (direction "x"): in the order of their points along x, so that no two
    leader lines cross, each as near its point's x as its neighbours allow, inside the axes.

    One dimension needs no repulsion: push right where a label would overlap the one before,
    then pull left where the row runs past the axes (the order never changes). Labels that
    cannot fit in the row's width at all are left where they started, the least important
    first, for the checking pass to place elsewhere or report.
    """
    frame = ax.get_window_extent(renderer).extents  # (x0, y0, x1, y1) pixels
    # each label's room: its box, the PAD both sides that the check keeps, and a pixel for rounding
    widths = [t.get_window_extent(renderer).width + 2 * PAD + 1.0 for t in artists]
    room = frame[2] - frame[0] - 2 * PAD
    kept = list(range(len(artists)))  # priority order: the last is the least important
    while sum(widths[i] for i in kept) > room:
        kept.pop()
    wanted = ax.transData.transform(anchors)[:, 0]  # (n,) each point's x, pixels
    row = sorted(kept, key=lambda i: (wanted[i], i))
    centres = [float(wanted[i]) for i in row]
    for k in range(1, len(row)):  # push right: no overlap with the label before
        centres[k] = max(centres[k], centres[k - 1] + (widths[row[k - 1]] + widths[row[k]]) / 2)
    right = frame[2] - PAD
    for k in reversed(range(len(row))):  # pull left: inside the axes, no overlap with the label after
        if k == len(row) - 1:
            limit = right - widths[row[k]] / 2
        else:
            limit = centres[k + 1] - (widths[row[k]] + widths[row[k + 1]]) / 2
        centres[k] = min(centres[k], limit)
    for i, centre in zip(row, centres):
        _centre_at(artists[i], centre, start[i], ax, renderer)


def _centre_at(text: Any, centre: float, start: np.ndarray, ax: Any, renderer: Any) -> None:
    """Move a text along x (keeping its start's y) so that its box is centred on ``centre`` pixels."""
    text.set_position((float(start[0]), float(start[1])))
    box = text.get_window_extent(renderer)
    x = ax.transData.transform(start)[0] + centre - (box.x0 + box.x1) / 2
    text.set_position((float(ax.transData.inverted().transform((x, 0.0))[0]), float(start[1])))


def _repel(ax: Any, artists: list[Any], marks: np.ndarray, anchors: np.ndarray) -> None:
    """adjustText, run for a fixed number of steps, without its own arrows (drawn after the check)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            from adjustText import adjust_text
    except ImportError:
        raise MissingExtraError.for_module("adjustText", "labels on figures", ("plots",)) from None
    # Untangling crossed leader lines swaps labels whose lines cross; lines that share their point
    # always "cross", so with repeated anchors it would swap forever (and format every swap as a
    # debug message): only labels of distinct points are untangled.
    distinct = len(np.unique(anchors, axis=0)) == len(anchors)
    quiet = logging.getLogger("adjustText")
    level, quiet.level = quiet.level, logging.ERROR  # it logs "labels too long" as warnings; checked below
    try:
        with warnings.catch_warnings():
            # adjustText calls the deprecated Logger.warn in some branches.
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="adjustText")
            adjust_text(artists, x=marks[:, 0], y=marks[:, 1], ax=ax, target_x=anchors[:, 0], target_y=anchors[:, 1],
                        iter_lim=ITERATIONS, time_lim=None, expand=(1.15, 1.4), ensure_inside_axes=True,
                        prevent_crossings=distinct)
    finally:
        quiet.level = level


def _free_place(text: Any, home: np.ndarray, direction: str, taken: np.ndarray, frame: Any, renderer: Any,
                ax: Any) -> tuple[float, float, float, float] | None:
    """The label's box where repulsion left it if free, else the first free place near ``home``
    (display pixels: its point, or its start in a row), moving the text there; None when every
    place is taken."""
    box = tuple(text.get_window_extent(renderer).extents)
    if _fits(box, taken, frame):
        return box
    width, height = box[2] - box[0], box[3] - box[1]
    for cx, cy in _candidates(home, width, height, direction, frame):
        candidate = (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)
        if _fits(candidate, taken, frame):
            text.set_horizontalalignment("center")
            text.set_verticalalignment("center")
            text.set_rotation_mode("default")
            text.set_position(ax.transData.inverted().transform((cx, cy)))
            return tuple(text.get_window_extent(renderer).extents)
    return None


def _candidates(home: np.ndarray, width: float, height: float, direction: str, frame: Any) -> Iterator[tuple]:
    """Box centres to try, nearest first: in a row, sideways along it step by step (the box's
    bottom on the row); elsewhere, the 8 compass directions at each of ``RESCUE_RADII``, the
    box's nearest edge that far from the point."""
    if direction == "x":
        cy = home[1] + height / 2
        for step in range(1, int(frame[2] - frame[0]) // 2 + 1):
            for sign in (-1, 1):
                yield home[0] + sign * 2 * step, cy
        return
    for radius in RESCUE_RADII:
        for angle in range(0, 360, 45):
            dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
            yield home[0] + dx * (radius + width / 2), home[1] + dy * (radius + height / 2)


def _fits(box: Sequence[float], taken: np.ndarray, frame: Sequence[float]) -> bool:
    """Whether ``box`` lies inside ``frame`` and clear of every box of ``taken`` (k, 4), by ``PAD``."""
    inside = (box[0] >= frame[0] + PAD and box[1] >= frame[1] + PAD
              and box[2] <= frame[2] - PAD and box[3] <= frame[3] - PAD)
    return inside and not _overlaps(np.asarray(box, dtype=np.float64), taken, PAD).any()


def _overlaps(box: np.ndarray, others: np.ndarray, pad: float) -> np.ndarray:
    """(k,) bool: whether ``box`` and each row of ``others`` (k, 4), every box grown by ``pad``
    pixels, share interior."""
    others = np.reshape(others, (-1, 4))
    return ((box[0] - pad < others[:, 2] + pad) & (others[:, 0] - pad < box[2] + pad)
            & (box[1] - pad < others[:, 3] + pad) & (others[:, 1] - pad < box[3] + pad))


def _gap(box: Sequence[float], point: np.ndarray) -> float:
    """Distance in pixels from a point to the nearest point of a box (0 inside it)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return math.hypot(dx, dy)


def _legend_box(ax: Any) -> tuple[float, float, float, float] | None:
    legend = ax.get_legend()
    return None if legend is None else tuple(legend.get_window_extent().extents)


def _leader(ax: Any, text: Any, anchor: np.ndarray) -> Any:
    """A thin line from the label's box to its point (added as an artist: it must not rescale the axes)."""
    line = FancyArrowPatch(posA=text.get_position(), posB=(float(anchor[0]), float(anchor[1])), patchA=text,
                           transform=ax.transData, zorder=1.5, **LEADER_STYLE)
    ax.add_artist(line)
    return line
