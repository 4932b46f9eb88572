"""Label placement, checked on the drawn figure: boxes measured with the figure's own renderer
after a full draw, not taken from the placer's report alone."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("adjustText")

from matplotlib.patches import FancyArrowPatch  # noqa: E402

from embedlab.errors import ChoiceError, ShapeError  # noqa: E402
from embedlab.report import labels, plots  # noqa: E402


def drawn_boxes(fig, texts):
    """Each text's box in pixels, measured after the figure is drawn as it will be saved."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [tuple(t.get_window_extent(renderer).extents) for t in texts]


def inside(box, frame):
    return frame[0] <= box[0] and frame[1] <= box[1] and box[2] <= frame[2] and box[3] <= frame[3]


def scatter(n, seed=0, spread=1.0, size=(640, 480)):
    fig = plots.new_figure(*size)
    ax = fig.add_subplot()
    xy = np.random.default_rng(seed).normal(scale=spread, size=(n, 2))  # (n, 2)
    ax.scatter(xy[:, 0], xy[:, 1], s=25)
    return fig, ax, xy


def check(fig, ax, placement, n):
    """What every placement promises, measured on the drawn figure."""
    texts = [p.artist for p in placement.placed]
    assert list(ax.texts) == texts  # what is drawn is what was placed: nothing removed stays behind
    assert len(placement.placed) + len(placement.unplaced) == n
    boxes = drawn_boxes(fig, texts)
    assert boxes == [p.box for p in placement.placed]  # the layout did not move after placing
    assert labels.overlapping_pairs(boxes) == []
    frame = ax.get_window_extent().extents
    assert all(inside(b, frame) for b in boxes)
    arrows = [a for a in ax.get_children() if isinstance(a, FancyArrowPatch)]
    assert arrows == list(placement.leaders)
    assert [p.leader for p in placement.placed].count(True) == len(arrows)
    led = {id(a.patchA) for a in arrows}  # each leader line starts at its own label
    assert led == {id(p.artist) for p in placement.placed if p.leader}
    return boxes


def test_a_sparse_cloud_is_labelled_in_full_beside_its_points():
    fig, ax, xy = scatter(8, spread=5.0)
    names = [f"point {i}" for i in range(8)]
    placement = labels.place_labels(ax, xy, names)
    check(fig, ax, placement, 8)
    assert [p.text for p in placement.placed] == names and placement.unplaced == ()
    assert [p.index for p in placement.placed] == list(range(8))


def test_a_dense_cloud_no_label_overlaps_and_every_label_is_accounted_for():
    fig, ax, xy = scatter(40, seed=1, spread=0.3)
    names = [f"token{i:02d}" for i in range(40)]
    placement = labels.place_labels(ax, xy, names)
    boxes = check(fig, ax, placement, 40)
    assert len(boxes) >= 20  # most find a place at 640x480
    assert any(p.leader for p in placement.placed)  # labels pushed away keep a line to their point
    # priority: a label is only left out after every label before it was tried, so the first stay
    assert placement.placed[0].index == 0


def test_labels_on_one_point_fan_out_with_leader_lines():
    fig, ax, _ = scatter(20, seed=2)
    same = np.zeros((6, 2))  # six labels for one point
    placement = labels.place_labels(ax, same, [f"tie {i}" for i in range(6)])
    check(fig, ax, placement, 6)
    assert len(placement.placed) == 6
    assert sum(p.leader for p in placement.placed) >= 4


def test_no_room_left_labels_are_reported_not_dropped_silently():
    fig, ax, xy = scatter(24, seed=3, spread=1.0, size=(300, 200))
    names = [f"a rather long label {i}" for i in range(24)]
    placement = labels.place_labels(ax, xy, names)
    check(fig, ax, placement, 24)
    assert placement.unplaced  # 24 long labels cannot fit in 300x200 pixels
    assert all(names[i] not in [t.get_text() for t in ax.texts] for i in placement.unplaced)


def test_labels_keep_off_the_legend_and_the_points():
    fig, ax, xy = scatter(30, seed=4)
    ax.scatter([], [], label="a legend entry that is wide")
    legend = ax.legend(loc="upper right")
    placement = labels.place_labels(ax, xy, [f"w{i}" for i in range(30)])
    boxes = check(fig, ax, placement, 30)
    legend_box = tuple(legend.get_window_extent().extents)
    assert all(labels.overlapping_pairs([b, legend_box]) == [] for b in boxes)
    marks = ax.transData.transform(xy)  # (30, 2) pixels
    for b in boxes:
        assert not any(b[0] < x < b[2] and b[1] < y < b[3] for x, y in marks)


def test_a_row_of_rotated_labels_stays_a_row():
    fig, ax, _ = scatter(0)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    anchors = np.column_stack([np.full(8, 9.0), np.arange(8) * 0.1])  # (8, 2): eight points nearly on top
    row = np.column_stack([anchors[:, 0], np.full(8, 5.0)])
    placement = labels.place_labels(ax, anchors, [f"row {i} (1.5)" for i in range(8)], start=row,
                                    direction="x", rotation=90)
    boxes = check(fig, ax, placement, 8)
    assert len(boxes) == 8
    bottom = ax.transData.transform((0, 5.0))[1]
    assert all(b[3] - b[1] > b[2] - b[0] for b in boxes)
    assert all(abs(b[1] - bottom) < 3 for b in boxes)  # each rises from the row


@pytest.mark.parametrize("scale", ["linear", "log"])
def test_a_long_label_in_a_row_gets_room_above_not_dropped(scale):
    """A row with room sideways keeps a label taller than the room above its start: the axes grow up."""
    fig, ax, _ = scatter(0)
    ax.set_yscale(scale)
    ax.set_xlim(0, 10)
    ax.set_ylim(1, 100)
    anchors = np.column_stack([[2.0, 5.0, 8.0], [1.5, 1.5, 1.5]])  # (3, 2): far apart, room along x
    row = np.column_stack([anchors[:, 0], np.full(3, 50.0)])  # the row starts near the top
    texts = ["a (1.5)", "http://www.nyse.com/" + "x" * 30 + " (12.43)", "b (1.5)"]
    placement = labels.place_labels(ax, anchors, texts, start=row, direction="x", rotation=90)
    boxes = check(fig, ax, placement, 3)
    assert placement.unplaced == () and sorted(p.text for p in placement.placed) == sorted(texts)
    assert ax.get_ylim()[1] > 100  # the top was raised: the row's start is where it was
    start = ax.transData.transform((0, 50.0))[1]
    assert all(abs(b[1] - start) < 3 for b in boxes)


def test_the_same_call_places_the_same_boxes():
    runs = []
    for _ in range(2):
        fig, ax, xy = scatter(40, seed=5, spread=0.5)
        runs.append([p.box for p in labels.place_labels(ax, xy, [f"w{i}" for i in range(40)]).placed])
    assert runs[0] == runs[1]


def test_no_labels():
    fig, ax, xy = scatter(5)
    placement = labels.place_labels(ax, np.empty((0, 2)), [], points=xy)
    assert placement == labels.Placement(placed=(), unplaced=(), leaders=())


@pytest.mark.parametrize("kwargs, error, match", [
    ({"anchors": np.zeros((3, 2)), "texts": ["a", "b"]}, ShapeError, r"anchors must be \(n, 2\) with n = 2"),
    ({"points": np.zeros(4)}, ShapeError, r"points must be \(m, 2\)"),
    ({"start": np.zeros((1, 2))}, ShapeError, "start must be"),
    ({"direction": "y"}, ChoiceError, "unknown direction 'y': expected one of xy, x"),
])
def test_bad_arguments(kwargs, error, match):
    fig, ax, xy = scatter(2)
    call = {"anchors": xy, "texts": ["a", "b"], **kwargs}
    with pytest.raises(error, match=match):
        labels.place_labels(ax, call.pop("anchors"), call.pop("texts"), **call)


def test_arguments_are_not_changed():
    fig, ax, xy = scatter(10, seed=6)
    before = xy.copy()
    names = [f"w{i}" for i in range(10)]
    labels.place_labels(ax, xy, names, points=xy)
    assert np.array_equal(xy, before) and names == [f"w{i}" for i in range(10)]


def test_without_adjusttext_the_error_names_the_extra(monkeypatch):
    import sys

    from embedlab.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "adjustText", None)  # import adjustText raises ImportError
    fig, ax, xy = scatter(3)
    with pytest.raises(MissingExtraError, match=r"labels on figures need adjustText.*\.\[plots\]"):
        labels.place_labels(ax, xy, ["a", "b", "c"])
