"""Figures read by people: text in the report's language, numbers without offsets or multipliers,
parameters rounded, one colour per meaning, every labelled series in a legend.

Expected words come from the words file (``locales.WORDS``), the data that defines them; numbers
are computed here from the tables, never read back from the figure code.
"""

import re
import string
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.ticker import FixedFormatter, FuncFormatter  # noqa: E402

import embedlab  # noqa: E402
from embedlab import embed  # noqa: E402
from embedlab.engine.positional import wavelengths  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402
from embedlab.measure import lab, projection  # noqa: E402
from embedlab.measure.norms import norm_distribution  # noqa: E402
from embedlab.measure.positions import position_maps  # noqa: E402
from embedlab.report import formats, plots  # noqa: E402
from embedlab.report.locales import DEFAULT_LANGUAGE, LANGUAGES, WORDS  # noqa: E402

V, D = 60, 8


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    return EmbeddingTable(rng.normal(size=(V, D)), vocabulary=[f"w{i}" for i in range(V)],
                          positions=rng.normal(size=(32, D)))


@pytest.fixture(scope="module")
def result():
    return lab.measure(lab.ReferenceBackend(embed.make_table(16, 4, 0)), lab.LabSettings(probe=1, k=3, stretch_rank=2))


def _draw(name, table, result, lang):
    """Every figure of the module, by name, in ``lang``."""
    if name == "projection":
        ids, groups = projection.choose_rows(table, "w0", k=4, sample=19)
        return plots.projection_figure(projection.project(table, ids, "pca", groups=groups), lang=lang)
    if name == "norms":
        return plots.norms_figure(norm_distribution(table, top=4), lang=lang)
    if name == "stretch":
        return plots.stretch_figure(lab.compare_stretch(table, lab.LabSettings(probe=0, k=5)), lang=lang)
    if name == "scale":
        return plots.scale_figure(lab.compare_scale(table, 0, [1, 2, 3]), lang=lang)
    if name == "positions":
        return plots.positions_figure(position_maps(table), lang=lang)
    if name == "bands":
        return plots.bands_figure({64: wavelengths(64), 32: wavelengths(32)}, 10000.0, lang=lang)
    return {"cost": plots.cost_figure, "params": plots.params_figure}[name](result, lang=lang)


FIGURES = ["projection", "norms", "stretch", "scale", "positions", "bands", "cost", "params"]


def _texts(fig):
    """Titles, axis labels, legend entries and notes: every text of the figure but ticks and marks."""
    found = [t.get_text() for t in fig.texts]
    found += [line for t in fig.texts for line in t.get_text().split("\n")]  # the notes are lines of one text
    if fig._suptitle is not None:
        found.append(fig._suptitle.get_text())
    for legend in fig.legends:
        found += [t.get_text() for t in legend.get_texts()]
    for ax in fig.axes:
        found += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        found += [t.get_text() for t in ax.texts if t.get_text().endswith("position table")]
        if ax.get_legend() is not None:
            found += [t.get_text() for t in ax.get_legend().get_texts()]
    return [t for t in found if t]


def _expected(name, lang):
    """What a figure must say, from the words file; counts computed from the fixtures' sizes."""
    w = WORDS[lang]["figures"]
    return {
        "projection": [w["projection_axis"].format(method="PCA", axis=1), w["projection_axis"].format(method="PCA", axis=2),
                       w["group_probe"], w["group_sample"], w["projection_note"]],
        "norms": [w["norms_title"].format(table="array", rows=str(V), top="4"), w["norms_axis"], w["norms_rows"],
                  w["norms_bins"], w["norms_longest"]],
        "stretch": [w["cosine_before"], w["dot_before"], w["cosine_after"].format(factor="4"),
                    w["dot_after"].format(factor="4"), w["cosine_axis"], w["dot_axis"], w["group_cosine"],
                    w["group_dot"], w["stretched_row"]],
        "scale": [w["size_changes"], w["direction_stays"], w["before"], w["length_axis"], w["after_equals_before"],
                  w["neighbours"], w["cos_before_scale"], w["cos_after_scale"],
                  w["after_scale"].format(factor=f"{np.sqrt(D):.3g}")],
        "positions": [w["positions_title"].format(table="array", T_max="32", D=str(D)), w["adjacent_title"],
                      w["offset_title"], w["offset_axis"], w["mean_cosine_axis"], w["learned"], w["sinusoidal"],
                      w["position_map"].format(name=w["sinusoidal"]), w["position_p"], w["position_q"],
                      w["cosine_axis"]],
        "bands": [w["bands_title"], w["bands_strip"], w["bands_curve"].format(base="10,000"), w["wavelength_axis"],
                  w["model_width"], w["pair_axis"]],
        "cost": [w["cost_title"].format(vocab="16", dim="4", diff="0"), w["cost_axis"]],
        "params": [w["params_title"].format(dim="4"), w["params_axis"], w["tied"], w["untied"]],
    }[name]


def test_figure_words_share_keys_and_fields():
    def fields(text):
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}

    base = WORDS["en"]["figures"]
    for lang in LANGUAGES:
        words = WORDS[lang]["figures"]
        assert words.keys() == base.keys(), lang
        assert all(fields(words[key]) == fields(base[key]) for key in base), lang


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", FIGURES)
def test_figure_text_is_in_the_chosen_language(table, result, name, lang):
    texts = _texts(_draw(name, table, result, lang))
    missing = [t for t in _expected(name, lang) if t not in texts]
    assert not missing, (name, lang, missing, texts)
    if lang != "en":  # no English left over where the language has its own words
        english = {t for t in _expected(name, "en")} - set(_expected(name, lang))
        assert not english & set(texts), (name, lang, english & set(texts))


@pytest.mark.parametrize("name", FIGURES)
def test_the_default_language_is_the_reports(table, result, name):
    fig = _draw(name, table, result, DEFAULT_LANGUAGE)
    assert DEFAULT_LANGUAGE == "ko"
    assert set(_expected(name, "ko")) <= set(_texts(fig))


@pytest.mark.parametrize("call", [
    lambda t, r: plots.norms_figure(norm_distribution(t, top=2), lang="fr"),
    lambda t, r: plots.cost_figure(r, lang="fr"),
    lambda t, r: plots.bands_figure({8: wavelengths(8)}, 10000.0, lang="fr"),
    lambda t, r: plots.lab_figure("cost", r, "fr"),
    lambda t, r: embedlab.plot("norms", t, lang="fr"),
])
def test_an_unknown_language_names_the_value_and_the_choices(table, call):
    result = embedlab.report(table, figures=True)
    with pytest.raises(ValueError, match=r"unknown language 'fr': expected one of ko, en, ja, zh"):
        call(table, result)


def _rendered_axes(fig):
    plots.png_bytes(fig)  # ticks, their labels and offsets are made when the figure is drawn
    return [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)]


@pytest.mark.parametrize("name", FIGURES)
def test_no_axis_has_an_offset_or_a_multiplier(table, result, name):
    for axis in _rendered_axes(_draw(name, table, result, "en")):
        assert axis.get_offset_text().get_text() == ""
        labels = [t.get_text() for t in axis.get_ticklabels()]
        assert not any(re.search(r"\de[-+\N{MINUS SIGN}]?\d|×10|\$", t) for t in labels), labels


def test_large_counts_read_in_millions_and_thousands():
    # minilm's tables: V = 30,522, D = 384; the bigger vocabulary doubles V
    V_, D_ = 30522, 384
    counts = SimpleNamespace(vocab=V_, bigger_vocab=2 * V_, dim=D_, tied_params=V_ * D_, untied_params=2 * V_ * D_,
                             bigger_tied=2 * V_ * D_, bigger_untied=4 * V_ * D_)
    fig = plots.params_figure(counts, lang="en")
    (yaxis,) = [ax.yaxis for ax in fig.axes]
    _rendered_axes(fig)
    assert yaxis.get_offset_text().get_text() == ""
    shown = {float(t.get_position()[1]): t.get_text() for t in yaxis.get_ticklabels()
             if 0 <= t.get_position()[1] <= 4 * V_ * D_}
    assert shown and all(text == ("0" if value == 0 else f"{value / 1e6:g}M") for value, text in shown.items())
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{n:,}" for n in (V_ * D_, 2 * V_ * D_, 2 * V_ * D_,
                                                                               4 * V_ * D_))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["V = 30,522", "V = 61,044"]


def _tick_value(text):
    """A tick label read back by a second reader: '1.5K' -> 1500.0, '\u22120.5' -> -0.5."""
    m = re.fullmatch(r"(\N{MINUS SIGN}?)([0-9]+(?:\.[0-9]+)?)([KMBT]?)", text)
    assert m, f"tick label {text!r} is not a plain number with an optional K, M, B, T"
    scale = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m[3]]
    return (-1 if m[1] else 1) * float(m[2]) * scale


def test_every_tick_follows_one_rule_for_numbers():
    """One rule on every axis, linear and log: K, M from 1,000 up, plain below; no '1,000' beside '10K'."""
    rng = np.random.default_rng(0)
    wide = EmbeddingTable(rng.normal(size=(20000, 4)) * rng.lognormal(size=(20000, 1)))
    figs = [plots.norms_figure(norm_distribution(wide, top=3), lang="en"),  # log counts up to ~10K
            plots.bands_figure({512: wavelengths(512, 10000.0)}, 10000.0, lang="en"),  # log up to ~60K
            plots.params_figure(SimpleNamespace(vocab=30522, bigger_vocab=61044, dim=384, tied_params=30522 * 384,
                                                untied_params=2 * 30522 * 384, bigger_tied=2 * 30522 * 384,
                                                bigger_untied=4 * 30522 * 384), lang="en")]
    seen = set()
    for fig in figs:
        for axis in _rendered_axes(fig):
            low, high = sorted(axis.get_view_interval())
            shown = [(float(t.get_position()[axis.axis_name == "y"]), t.get_text()) for t in axis.get_ticklabels()]
            if isinstance(axis.get_major_formatter(), (FixedFormatter, FuncFormatter)):
                continue  # words (the bands' rows, the V = ... groups), not a number scale
            shown = [(v, t) for v, t in shown if t and low <= v <= high]
            largest = max((abs(v) for v, _ in shown), default=0.0)
            for value, text in shown:
                assert "," not in text, text
                assert _tick_value(text) == pytest.approx(value, rel=1e-6, abs=1e-9), (text, value)
                unit = text[-1] if text[-1] in "KMBT" else ""
                # K from 1,000 on, never before: each tick on a log axis, the largest on a linear one
                reach = abs(value) if axis.get_scale() == "log" else largest
                assert value == 0 or (unit != "") == (reach >= 1000), (text, value)  # 0 is "0"
                seen.add(unit)
    assert {"", "K", "M"} <= seen  # the figures do show every kind


def test_a_tsne_title_names_the_method_as_the_field_does_and_rounds_its_settings(table):
    proj = projection.project(table, list(range(20)), "tsne", perplexity=52 / 3)  # 17.333...
    title = plots.projection_figure(proj, lang="en").axes[0].get_title()
    assert title == "t-SNE of 20 rows of the array table: keeps cosine neighbourhoods (perplexity 17.3, seed 0)"


@pytest.mark.parametrize("value, shown", [(17.333333333333332, "17.3"), (30.0, "30"), (5, "5"), (400000, "400,000"),
                                          (0.000123456, "0.000123"), (1234.5, "1,234"), (True, "True")])
def test_format_value(value, shown):
    assert formats.format_value(value) == shown


def _color(artist):
    face = artist.get_facecolor()
    return tuple(np.asarray(face).reshape(-1, 4)[0]) if not isinstance(face, tuple) else face


def test_a_colour_means_one_thing_in_every_figure(table, result):
    sinusoidal, cosine, dot = (to_rgba(plots.PALETTE[k]) for k in ("sinusoidal", "cosine", "dot"))
    # sinusoidal positions: beside a learned table, alone, and in the bands figure
    for maps in (position_maps(table), position_maps(EmbeddingTable(np.eye(4)), max_context_length=16)):
        fig = plots.positions_figure(maps, lang="en")
        lines = [line for ax in fig.axes for line in ax.get_lines() if line.get_label() == "sinusoidal"]
        assert len(lines) == 2 and all(to_rgba(line.get_color()) == sinusoidal for line in lines)
    bands = plots.bands_figure({64: wavelengths(64), 32: wavelengths(32)}, 10000.0, lang="en")
    assert to_rgba(bands.axes[1].get_lines()[0].get_color()) == sinusoidal
    assert tuple(bands.axes[0].collections[0].get_edgecolor()[0]) == sinusoidal
    # cosine and dot: the lists of the stretch figure, the groups of a projection, the scale scatter
    cmp = lab.compare_stretch(table, lab.LabSettings(probe=0, k=5))
    fig = plots.stretch_figure(cmp, lang="en")
    for ax, scored, color in zip(fig.axes, [cmp.cos_before, cmp.dot_before, cmp.cos_after, cmp.dot_after],
                                 [cosine, dot, cosine, dot]):
        for bar, token_id in zip(ax.patches, scored.ids):
            assert bar.get_facecolor() == (to_rgba(plots.PALETTE["stretched"]) if token_id == cmp.target else color)
    ids = [0, *table.nearest([0], 4, "cosine").ids[0].tolist()]
    groups = ["probe"] + ["cosine"] * 4
    proj = plots.projection_figure(projection.project(table, ids, "pca", groups=groups), lang="en")
    cos_points = [c for c in proj.axes[0].collections if c.get_label() == "cosine neighbour"]
    assert _color(cos_points[0]) == cosine
    scale = plots.scale_figure(lab.compare_scale(table, 0, [1, 2, 3]), lang="en")
    assert _color(scale.axes[1].collections[0]) == cosine


@pytest.mark.parametrize("name", FIGURES)
def test_every_labelled_series_is_in_a_legend(table, result, name):
    fig = _draw(name, table, result, "en")
    in_legends = {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    for ax in fig.axes:
        if ax.get_legend() is not None:
            in_legends |= {t.get_text() for t in ax.get_legend().get_texts()}
    for ax in fig.axes:
        _, labels = ax.get_legend_handles_labels()
        assert set(labels) <= in_legends, (name, set(labels) - in_legends)


def test_the_cost_figure_is_not_one_bar_against_zero(result):
    bars = plots.cost_figure(result, lang="en").axes[0].patches
    widths = [b.get_width() for b in bars]
    assert min(widths) > 0 and widths == [4, 16 * 4] and widths[1] / widths[0] == 16  # V times more read
