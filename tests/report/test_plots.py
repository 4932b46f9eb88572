"""Figures, tested by what they contain: the data drawn equals the measurement,
titles and axis labels exist, PNGs are valid and of the requested size."""

import struct

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from embedlab import embed  # noqa: E402
from embedlab.measure import lab, projection  # noqa: E402
from embedlab.report import labels, plots  # noqa: E402
from embedlab.measure.norms import norm_distribution  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    return EmbeddingTable(rng.normal(size=(60, 8)), vocabulary=[f"w{i}" for i in range(60)])


def _labelled(ax):
    return ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


@pytest.mark.parametrize("size", [(1200, 800), (640, 480), (1234, 567)])
def test_png_has_the_requested_size(size):
    fig = plots.new_figure(*size)
    fig.add_subplot().plot([0, 1], [0, 1])
    assert png_size(plots.png_bytes(fig)) == size


def test_too_small_size():
    with pytest.raises(ValueError, match="50x50"):
        plots.new_figure(50, 50)


def label_boxes(fig, ax):
    """The label texts of an axes and their boxes in pixels, measured once the figure is drawn."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), tuple(t.get_window_extent(renderer).extents)) for t in ax.texts]


def assert_readable(fig, ax):
    """No two labels overlap, every label lies inside the axes, a leader line for each moved label."""
    from matplotlib.patches import FancyArrowPatch

    from embedlab.report.labels import LEADER_MIN, overlapping_pairs

    found = label_boxes(fig, ax)
    boxes = [box for _, box in found]
    assert overlapping_pairs(boxes) == []
    x0, y0, x1, y1 = ax.get_window_extent().extents
    assert all(x0 <= b[0] and y0 <= b[1] and b[2] <= x1 and b[3] <= y1 for b in boxes)
    leaders = [a for a in ax.get_children() if isinstance(a, FancyArrowPatch)]
    assert {id(a.patchA) for a in leaders} <= {id(t) for t in ax.texts}
    return found, leaders, LEADER_MIN


def unlabelled_note(fig):
    import re

    notes = [line for t in fig.texts for line in t.get_text().split("\n") if "labelled" in line]
    assert len(notes) == 1
    counts = re.fullmatch(r"(\d+) of (\d+) points labelled, (\d+) left unlabelled", notes[0])
    shown, total, left = map(int, counts.groups())
    assert shown + left == total
    return shown, total


def test_projection_points_are_the_projection(table):
    ids, groups = projection.choose_rows(table, "w0", k=4, sample=19)
    proj = projection.project(table, ids, "pca", groups=groups)
    fig = plots.projection_figure(proj, lang="en")
    ax = fig.axes[0]
    drawn = np.concatenate([c.get_offsets() for c in ax.collections])
    assert sorted(map(tuple, drawn.tolist())) == sorted(map(tuple, proj.points.tolist()))
    # labelled: the probe, every neighbour and the first 8 sample rows; all find room here
    wanted = [lab for lab, g in zip(proj.labels, proj.groups) if g != "sample"]
    wanted += [lab for lab, g in zip(proj.labels, proj.groups) if g == "sample"][:plots.SAMPLE_LABELS]
    found, _, _ = assert_readable(fig, ax)
    assert sorted(text for text, _ in found) == sorted(wanted)
    assert found[0][0] == "w0"  # the probe is placed first
    assert unlabelled_note(fig) == (len(wanted), len(proj.ids))
    assert _labelled(ax) and "PCA" in ax.get_title()
    assert any("only a view" in t.get_text() for t in fig.texts)


@pytest.mark.parametrize("lang, left_out", [("en", "Left out of the fit and the picture as degenerate (2; "
                                                     "--keep-degenerate keeps them)"),
                                              ("ko", "퇴화한 행 2개는 맞춤과 그림에서 뺐다(--keep-degenerate로 포함)")])
def test_a_projection_labels_whitespace_tokens_with_signs_and_names_the_rows_it_left_out(lang, left_out):
    """A token that is a space, a tab or a newline was a point without a label; an all-zero row and a copy are
    left out of the picture (measure.projection) and named under it, in the figure's language."""
    tokens = [" ", "\t", "\n", " the", "\u738b", "pad", "copy"] + [f"w{i}" for i in range(7, 20)]
    W = np.random.default_rng(6).normal(size=(20, 5))  # (V, D)
    W[5] = 0.0
    W[6] = W[8]
    table = EmbeddingTable(W, vocabulary=tokens)
    ids = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10]
    proj = projection.project(table, ids, "pca", groups=["probe"] + ["chosen"] * 9)
    fig = plots.projection_figure(proj, lang=lang)
    found, _, _ = assert_readable(fig, fig.axes[0])
    assert sorted(text for text, _ in found) == sorted(["\u2423", "\u21e5", "\u21b5", "\u2423the", "\u738b", "copy",
                                                        "w9", "w10"])
    (note,) = [t.get_text() for t in fig.texts if left_out in t.get_text()]
    assert "pad (id 5: " in note and "w8 (id 8: " in note and "id 6" in note.split("w8 (id 8: ")[1]  # 8 copies 6


@pytest.mark.slow  # the umap title: umap compiles its kernels on its first call in a process (~15 s)
def test_projection_titles_name_the_distance_kept_and_round_parameters(table):
    ids = list(range(20))
    pca = plots.projection_figure(projection.project(table, ids, "pca"), lang="en").axes[0].get_title()
    assert pca == "PCA of 20 rows of the array table: directions of largest euclidean variance, fitted on 60 rows"
    tsne = plots.projection_figure(projection.project(table, ids, "tsne"), lang="en").axes[0].get_title()
    assert tsne == "t-SNE of 20 rows of the array table: keeps cosine neighbourhoods (perplexity 6.33, seed 0)"
    pytest.importorskip("umap")
    umap = plots.projection_figure(projection.project(table, ids, "umap", metric="euclidean", seed=2), lang="en")
    assert umap.axes[0].get_title() == ("UMAP of 20 rows of the array table: keeps euclidean neighbourhoods "
                                        "(n_neighbors 15, seed 2)")


def test_a_dense_projection_labels_a_few_says_how_many_are_not_and_nothing_overlaps():
    # 200 rows in a tight cloud at a small size: the probe and neighbours first, then a few samples.
    rng = np.random.default_rng(8)
    dense = EmbeddingTable(rng.normal(size=(400, 6)), vocabulary=[f"token{i}" for i in range(400)])
    ids, groups = projection.choose_rows(dense, "token0", k=10, sample=200)
    proj = projection.project(dense, ids, "pca", groups=groups)
    fig = plots.projection_figure(proj, plots.new_figure(640, 480), lang="en")
    ax = fig.axes[0]
    found, leaders, _ = assert_readable(fig, ax)
    shown, total = unlabelled_note(fig)
    assert shown == len(found) and total == len(ids) and shown < total
    assert shown <= sum(g != "sample" for g in groups) + plots.SAMPLE_LABELS
    assert found[0][0] == "token0"
    assert leaders  # in a dense cloud some labels are moved off their points, and keep a line to them


def test_norms_figure_draws_the_histogram_and_the_longest_rows(table):
    dist = norm_distribution(table, top=4, bins=10)
    fig = plots.norms_figure(dist, lang="en")
    ax = fig.axes[0]
    drawn = ax.patches[0]  # the stairs
    assert np.array_equal(drawn.get_data().values, dist.counts)
    top_by_norm = np.argsort(-table.norms(), kind="stable")[:4]
    found, _, _ = assert_readable(fig, ax)
    assert [text for text, _ in found] == [f"w{i} ({table.norms()[i]:.4g})" for i in top_by_norm]
    marks = ax.collections[0].get_offsets()  # one mark per longest row, at its norm
    assert np.allclose(marks[:, 0], table.norms()[top_by_norm])
    assert ax.get_title().endswith("longest 4 labelled")
    assert _labelled(ax)


@pytest.mark.parametrize("size", [(1200, 800), (640, 480)])
def test_the_seed_norms_figure_labels_the_10_it_says(size):
    # It said "longest 10 labelled" and drew 6: labels placed at heights top / 2**rank on the log axis
    # fell below its bottom for rank >= 6, and matplotlib skips an annotation whose point is outside.
    seed = EmbeddingTable(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED))
    dist = norm_distribution(seed, top=10)
    fig = plots.norms_figure(dist, plots.new_figure(*size), lang="en")
    ax = fig.axes[0]
    found, leaders, _ = assert_readable(fig, ax)
    assert len(found) == 10 and "longest 10 labelled" in ax.get_title()
    assert [text.split(" ")[0] for text, _ in found] == [str(i) for i in dist.longest_ids]
    assert leaders


def test_norms_of_equal_rows_are_all_labelled_or_counted():
    equal = EmbeddingTable(np.ones((40, 4)), vocabulary=[f"same{i}" for i in range(40)])  # every norm 2.0
    fig = plots.norms_figure(norm_distribution(equal, top=40), lang="en")
    ax = fig.axes[0]
    found, _, _ = assert_readable(fig, ax)
    title = ax.get_title()
    if len(found) == 40:
        assert "longest 40 labelled" in title
    else:
        assert f"longest {len(found)} labelled ({40 - len(found)} more marked, no room for their labels)" in title


def test_stretch_figure_bars_are_the_scores(table):
    cmp = lab.compare_stretch(table, lab.LabSettings(probe=0, k=5))
    fig = plots.stretch_figure(cmp)
    panels = [cmp.cos_before, cmp.dot_before, cmp.cos_after, cmp.dot_after]
    for ax, scored in zip(fig.axes, panels):
        widths = [bar.get_width() for bar in ax.patches]
        assert widths == scored.scores
        assert ax.get_title()
    assert all(ax.get_xlabel() for ax in fig.axes[2:])  # before and after share each column's axis
    # the stretched row is drawn first in the dot list after stretching x4
    assert cmp.dot_after.ids[0] == cmp.target


def test_scale_figure(table):
    cmp = lab.compare_scale(table, 0, [1, 2, 3])
    fig = plots.scale_figure(cmp)
    left, right = fig.axes
    heights = [bar.get_height() for bar in left.patches]
    assert heights == cmp.norms_before + cmp.norms_after
    assert np.allclose(cmp.norms_after, np.array(cmp.norms_before) * np.sqrt(8))
    assert np.allclose(right.collections[0].get_offsets(), np.column_stack([cmp.cos_before, cmp.cos_after]))
    assert np.allclose(cmp.cos_before, cmp.cos_after)


def test_scale_points_carry_their_tokens_without_overlap(table):
    """Every point of the cosine scatter is labelled with its row's token, boxes apart, by its point."""
    ids = list(range(1, 11))
    fig = plots.scale_figure(lab.compare_scale(table, 0, ids), lang="en")
    right = fig.axes[1]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in right.texts if t.get_text()]
    assert sorted(t.get_text() for t in texts) == sorted(f"w{i}" for i in ids)
    boxes = [tuple(t.get_window_extent(renderer).extents) for t in texts]
    assert labels.overlapping_pairs(boxes) == []
    frame = right.get_window_extent(renderer).extents
    assert all(frame[0] <= b[0] and frame[1] <= b[1] and b[2] <= frame[2] and b[3] <= frame[3] for b in boxes)
    points = dict(zip((f"w{i}" for i in ids), right.transData.transform(right.collections[0].get_offsets())))
    for text, box in zip(texts, boxes):  # near its own point: within 110 pixels of the box
        x, y = points[text.get_text()]
        gap = np.hypot(max(box[0] - x, 0, x - box[2]), max(box[1] - y, 0, y - box[3]))
        assert gap < 110, (text.get_text(), gap)


def test_cost_and_params_figures_show_the_report_numbers():
    result = lab.measure(lab.ReferenceBackend(embed.make_table(16, 4, 0)), lab.LabSettings(probe=1, k=3, stretch_rank=2))
    cost = plots.cost_figure(result, lang="en").axes[0]
    # Not one bar against zero: the numbers each route reads, D = 4 (one row) and V x D = 64 (every row),
    # each labelled with its multiplications (0 and 64).
    assert [b.get_width() for b in cost.patches] == [4, 16 * 4]
    labels = {t.get_position()[1]: t.get_text() for t in cost.get_yticklabels()}
    by_bar = [labels[b.get_y() + b.get_height() / 2] for b in cost.patches]
    assert by_bar == ["lookup (one row)\n4 entries read, 0 multiplications",
                      "one-hot × table (all V rows)\n64 entries read, 64 multiplications"]
    params = plots.params_figure(result).axes[0]
    assert sorted(b.get_height() for b in params.patches) == sorted([64, 128, 128, 256])


def test_positions_figure_heatmaps_are_the_cosine_matrices():
    from embedlab.measure.positions import cosine_matrix, position_maps
    from embedlab.engine.positional import sinusoidal_table

    rng = np.random.default_rng(2)
    learned = rng.normal(size=(16, 6))
    table = EmbeddingTable(rng.normal(size=(10, 6)), positions=learned)
    maps = position_maps(table)
    fig = plots.positions_figure(maps)
    heat_learned, heat_sin = (ax.images[0].get_array() for ax in fig.axes if ax.images)
    assert np.allclose(heat_learned, cosine_matrix(learned))
    sin = sinusoidal_table(16, 6)
    unit = sin / np.linalg.norm(sin, axis=1, keepdims=True)
    assert np.allclose(heat_sin, unit @ unit.T)
    curves = [ax for ax in fig.axes if "p + 1" in ax.get_title()][0]
    adjacent = [float(np.dot(unit[p], unit[p + 1])) for p in range(15)]
    assert np.allclose(curves.lines[1].get_ydata(), adjacent)
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes if ax.images)


def test_positions_figure_without_a_learned_table():
    from embedlab.measure.positions import position_maps

    maps = position_maps(EmbeddingTable(np.eye(4)), max_context_length=32)
    assert maps.learned is None and maps.sinusoidal_cosines.shape == (32, 32)
    fig = plots.positions_figure(maps, lang="en")
    # no empty panel: every visible axes draws something, and the title says why one map is missing
    assert all(ax.images or ax.lines or ax.collections for ax in fig.axes if ax.get_visible() and ax.axison)
    assert not any(t.get_text() for ax in fig.axes for t in ax.texts)
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["cosine of positions p and q, sinusoidal"]
    assert "array has no learned position table: the sinusoidal table alone is drawn" in fig.get_suptitle()
    plot_axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(plot_axes) == 3


def _offsets(fig):
    """The offset/multiplier text of every linear axis, once the figure is drawn ('' where none)."""
    plots.png_bytes(fig)  # ticks and their labels are placed when the figure is drawn
    formatters = [axis.get_major_formatter() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)]
    return [f.get_offset() for f in formatters if hasattr(f, "get_offset")]


def _tick_values(ax):
    return [float(t.get_text().replace("\N{MINUS SIGN}", "-")) for t in ax.get_yticklabels()]


def test_a_flat_sinusoidal_curve_has_plain_ticks_without_an_offset():
    from embedlab.measure.positions import position_maps

    # The seed table's case: no learned table, the sinusoidal adjacent cosine flat to 1e-12.
    maps = position_maps(EmbeddingTable(np.eye(64)), max_context_length=512)
    flat = maps.sinusoidal.adjacent
    assert np.ptp(flat) < 1e-9
    fig = plots.positions_figure(maps)
    assert not any(_offsets(fig))
    curves = [ax for ax in fig.axes if "p + 1" in ax.get_title()][0]
    low, high = curves.get_ylim()
    assert high - low >= 0.01 and low <= min(flat) and max(flat) <= high
    ticks = _tick_values(curves)
    assert all(-1.0 <= t <= 2.0 for t in ticks) and max(ticks) - min(ticks) < 0.02


def test_nearly_equal_norms_and_cosines_have_no_offset():
    rows = np.ones((50, 4))  # every row of length 2, up to 5e-8: norms and cosines nearly equal
    rows[:, 0] += np.arange(50) * 1e-9
    table = EmbeddingTable(rows, vocabulary=[f"w{i}" for i in range(50)])
    assert not any(_offsets(plots.norms_figure(norm_distribution(table), lang="en")))
    assert not any(_offsets(plots.scale_figure(lab.compare_scale(table, 0, list(range(1, 11))))))


def test_bands_figure_marks_every_wavelength():
    from embedlab.engine.positional import wavelengths

    bands = {64: wavelengths(64), 32: wavelengths(32)}
    fig = plots.bands_figure(bands, 10000.0)
    strip = fig.axes[0]
    marks = [c.get_offsets()[:, 0] for c in strip.collections]
    assert [len(m) for m in marks] == [32, 16]
    # 2 pi base^(2k/D), computed here: the first band is 2 pi, D=32's k-th band is D=64's (2k)-th
    assert np.allclose(marks[0][0], 2 * np.pi) and np.allclose(marks[1][5], 2 * np.pi * 10000 ** (10 / 32))
    assert np.allclose(marks[1], marks[0][::2])


# -- SVG with text kept as text (the HTML report's figures) ---------------------------------

def _svg_figure(label: str = "王様 king", size=(640, 480)):
    fig = plots.new_figure(*size)
    ax = fig.add_subplot()
    ax.scatter([0.0, 1.0], [0.0, 1.0])
    ax.annotate(label, (0.5, 0.5))
    ax.set_title("a < b & c")
    return fig


@pytest.mark.parametrize("size", [(1200, 800), (640, 480), (1234, 567)])
def test_svg_has_the_figures_pixel_size_and_its_points_as_viewbox(size):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(plots.svg_text(_svg_figure(size=size), "f"))
    assert (root.get("width"), root.get("height")) == tuple(str(n) for n in size)
    assert root.get("viewBox") == f"0 0 {size[0] * 72 / plots.DPI:g} {size[1] * 72 / plots.DPI:g}"


def test_svg_keeps_text_as_text_with_no_metadata():
    import xml.etree.ElementTree as ET

    svg = plots.svg_text(_svg_figure(), "f")
    texts = [el.text for el in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert "王様 king" in texts and "a < b & c" in texts  # no glyph outlines: the viewer draws them
    assert "<metadata" not in svg and "dc:date" not in svg and "matplotlib.org" not in svg


def test_svg_ids_carry_the_prefix_and_two_figures_share_none():
    import re

    one, two = plots.svg_text(_svg_figure(), "one"), plots.svg_text(_svg_figure(), "two")
    ids = [re.findall(r'\bid="([^"]+)"', svg) for svg in (one, two)]
    assert ids[0] and all(i.startswith("one-") for i in ids[0]) and all(i.startswith("two-") for i in ids[1])
    assert not set(ids[0]) & set(ids[1])
    refs = re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', one)
    assert refs and {a or b for a, b in refs} <= set(ids[0])  # every reference points inside the figure


def test_svg_of_the_same_figure_is_the_same_text():
    assert plots.svg_text(_svg_figure(), "f") == plots.svg_text(_svg_figure(), "f")


@pytest.mark.parametrize("prefix", ["", "1fig", "fig 1", 'a"b'])
def test_svg_refuses_a_prefix_that_is_not_an_id(prefix):
    with pytest.raises(ValueError, match="id prefix"):
        plots.svg_text(_svg_figure(), prefix)
