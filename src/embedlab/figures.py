"""The figures of ``embedlab plot``, one library call each: measure, then draw.

``plot(figure, table_or_model, **options)`` measures what the figure shows on
one table (``measure/``) and draws it (``report.plots``), returning a
``matplotlib.figure.Figure`` (write it with ``report.plots.figure_bytes(fig, path)``,
PNG or SVG by the file's name as ``embedlab plot --out`` writes it, or with
``fig.savefig``), its text in the report's language (``lang``). Each figure
takes only its own options (``OPTIONS``); one that does not apply is refused,
never ignored. Defaults that do not fit a small table
shrink (k to V - 1, top to V), as in the CLI.

Figures:

===========  ==================================================  ==========================================
figure       what it shows                                        options
===========  ==================================================  ==========================================
projection   the probe, its neighbours and a sample, in 2-D       probe, method, tokens, k, sample, seed,
                                                                  perplexity, metric, keep_degenerate
norms        the distribution of row lengths, longest labelled    top
neighbors    cosine and dot lists before and after a stretch      probe, k, stretch_factor
scale        lengths and cosines before and after sqrt(D)         probe, k
positions    learned positions beside the sinusoidal table        max_context_length, base
bands        sinusoidal wavelength bands at several widths        widths, base
===========  ==================================================  ==========================================

A figure's call may have something to say beside the picture: a typed token
found only as the table's tokenizer spells it, the degenerate rows a
projection left out. ``plot_notes(fig)`` gives those sentences to a caller
(the CLI prints them).

matplotlib, scikit-learn and umap-learn come with the ``plots`` extra.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Sequence

from . import sources
from .api import _table, resolve_probe
from .deprecation import renamed
from .engine.neighbors.defaults import DEFAULT_K
from .engine.vocabulary import respellings
from .errors import needs_extra
from .measure import lab
from .measure.lab import REPORT_K
from .report.locales import DEFAULT_LANGUAGE, check_language

__all__ = ["OPTIONS", "PLOT_SAMPLE", "plot", "plot_notes"]

PLOT_SAMPLE = 60  # points of a projection figure in all, as --sample counts them in plot and projector
# Figure -> what its call says beside it (plot_notes); weak keys: an entry goes with its figure.
_NOTES: "weakref.WeakKeyDictionary[Any, tuple[str, ...]]" = weakref.WeakKeyDictionary()

# figure -> the options it takes (each a keyword of ``plot``)
OPTIONS: dict[str, tuple[str, ...]] = {
    "projection": ("probe", "method", "tokens", "k", "sample", "seed", "perplexity", "metric", "keep_degenerate"),
    "norms": ("top",),
    "neighbors": ("probe", "k", "stretch_factor"),
    "scale": ("probe", "k"),
    "positions": ("max_context_length", "base"),
    "bands": ("widths", "base"),
}


@renamed(max_positions="max_context_length")
def plot(figure: str, table_or_model: Any = "seed", *, size: tuple[int, int] = (1200, 800),
         tensor: str | None = None, words: str | os.PathLike | None = None, table: str = "input",
         lang: str = DEFAULT_LANGUAGE, **options: Any) -> Any:
    """Measure and draw one figure of a table.

    Parameters
    ----------
    figure : {"projection", "norms", "neighbors", "scale", "positions", "bands"}
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
        The (V, D) table, as ``embedlab.report`` takes it.
    size : (int, int)
        Width and height in pixels, each at least 100.
    tensor, words : optional
        For a model path: the tensor name of the table asked for; a ``.npy`` table's word list.
    table : {"input", "head"}
        For a model name or path: the token-embedding table (default) or the
        output head (``sources.load``); the titles name it ("tiny-llama, output head").
    lang : {"ko", "en", "ja", "zh"}
        The language of the figure's titles, axis labels, legends and notes:
        the report's (``report.locales.DEFAULT_LANGUAGE``, Korean) unless given.
    **options
        The figure's own options (``OPTIONS[figure]``): ``probe`` (token or id;
        default as ``resolve_probe``), ``k`` (neighbours; default ``DEFAULT_K``, 10; 5 for
        ``neighbors``, shrunk to V - 1), ``method`` (pca, tsne, umap), ``tokens``
        (rows to project instead of the probe's neighbours and a sample; a
        probe given beside them is added first and marked), ``sample`` (points in all: the
        probe, its k cosine and k dot neighbours, then random rows; ``PLOT_SAMPLE``
        or V), ``seed`` (0), ``perplexity`` (t-SNE), ``metric`` (the distance t-SNE
        and UMAP keep: cosine, the default, or euclidean), ``keep_degenerate`` (keep
        all-zero rows, copies and rows far longer than the rest in the fit and the
        picture; by default they are left out and named in a note), ``top`` (longest rows
        labelled, 10 or V), ``stretch_factor`` (4.0), ``max_context_length`` (T_max,
        the rows of a sinusoidal table for a table without positions: the config's
        ``max_position_embeddings``, else 512; ``max_positions=``, its old name, still works with a
        ``DeprecationWarning``), ``widths``
        (model widths, default D and D/2), ``base`` (10000.0).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For an unknown figure or language, ``perplexity`` without ``method="tsne"``, or
        ``metric`` with PCA (which keeps euclidean variance only).
    TypeError
        For an option the figure does not take, or ``k``/``sample`` beside ``tokens``.
    MissingExtraError
        When the ``plots`` extra is not installed.
    """
    if figure not in OPTIONS:
        raise ValueError(f"unknown figure {figure!r}: expected one of {', '.join(OPTIONS)}")
    stray = sorted(set(options) - set(OPTIONS[figure]))
    if stray:
        raise TypeError(f"{', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not apply to the {figure} figure: "
                        f"it takes {', '.join(OPTIONS[figure])}")
    check_language(lang)
    with needs_extra("figures"):  # matplotlib: imported here, as cli/plot.py puts this module on the seed report's import-free path
        from .report import plots

    fig = plots.new_figure(*size)
    loaded = _table(table_or_model, tensor, words, table)
    drawn = _DRAW[figure](loaded, fig, lang, **{name: options.get(name) for name in OPTIONS[figure]})
    typed = [q for q in (options.get("probe"), *(options.get("tokens") or ())) if q is not None]
    _NOTES[drawn] = tuple(r.note for r in respellings(typed, loaded.vocabulary)) + _NOTES.get(drawn, ())
    return drawn


def plot_notes(fig: Any) -> tuple[str, ...]:
    """What the call that drew ``fig`` says beside the figure, one sentence each: typed tokens found only as
    the table's tokenizer spells them (``vocabulary.Respelling.note``), the degenerate rows a projection left
    out or kept (``Projection.notes``, also drawn under the figure), the position rows a family leaves out
    (``positions.row_notes``, as ``positions`` prints them). ``()`` for a figure with none, or one not
    drawn by ``plot``."""
    return _NOTES.get(fig, ())


def _projection(table: Any, fig: Any, lang: str, *, probe: Any, method: str | None, tokens: Sequence[Any] | None,
                k: int | None, sample: int | None, seed: int | None, perplexity: float | None,
                metric: str | None, keep_degenerate: bool | None) -> Any:
    from .measure import projection
    from .measure.projector import given_rows
    from .report import plots

    method, seed = method or "pca", 0 if seed is None else seed
    if perplexity is not None and method != "tsne":
        raise ValueError(f"perplexity applies to method='tsne' only, not method={method!r}")
    if tokens is not None:
        given = [name for name, value in (("k", k), ("sample", sample)) if value is not None]
        if given:
            raise TypeError(f"{' and '.join(given)} do not apply with tokens: the rows projected are the tokens "
                            "given (and the probe, where one is given)")
        # As the projector: the tokens in the order given, a probe added first and marked as the probe.
        ids, groups = given_rows(table, tokens, None if probe is None else resolve_probe(table, probe))
    else:
        ids, groups = projection.choose_rows(table, resolve_probe(table, probe),
                                             k=min(DEFAULT_K, table.V - 1) if k is None else k,
                                             sample=min(PLOT_SAMPLE, table.V) if sample is None else sample,
                                             seed=seed)
    proj = projection.project(table, ids, method, groups=groups, seed=seed, perplexity=perplexity, metric=metric,
                              keep_degenerate=bool(keep_degenerate))
    _NOTES[fig] = proj.notes
    return plots.projection_figure(proj, fig, lang=lang)


def _norms(table: Any, fig: Any, lang: str, *, top: int | None) -> Any:
    from .measure import norms
    from .report import plots

    return plots.norms_figure(norms.norm_distribution(table, top=min(10, table.V) if top is None else top), fig,
                              lang=lang)


def _neighbors(table: Any, fig: Any, lang: str, *, probe: Any, k: int | None, stretch_factor: float | None) -> Any:
    from .report import plots

    settings = lab.LabSettings(probe=resolve_probe(table, probe), k=min(REPORT_K, table.V - 1) if k is None else k,
                               stretch_factor=4.0 if stretch_factor is None else stretch_factor)
    return plots.stretch_figure(lab.compare_stretch(table, settings), fig, lang=lang)


def _scale(table: Any, fig: Any, lang: str, *, probe: Any, k: int | None) -> Any:
    from .report import plots

    p = resolve_probe(table, probe)
    ids = table.nearest([p], min(DEFAULT_K, table.V - 1) if k is None else k, "cosine").ids[0].tolist()
    return plots.scale_figure(lab.compare_scale(table, p, ids), fig, lang=lang)


def _positions(table: Any, fig: Any, lang: str, *, max_context_length: int | None, base: float | None) -> Any:
    from .measure import positions
    from .report import plots

    rule = sources.read_input_rule(table)
    maps = positions.position_maps(table, base=10000.0 if base is None else base,
                                   max_context_length=max_context_length, rule=rule)
    drawn = plots.positions_figure(maps, fig, lang=lang)
    if maps.learned is not None:  # the rows left out, as `positions` says them (also drawn under the figure)
        _NOTES[drawn] = tuple(positions.row_notes(table, rule))
    return drawn


def _bands(table: Any, fig: Any, lang: str, *, widths: Sequence[int] | None, base: float | None) -> Any:
    from .engine import positional
    from .report import plots

    base = 10000.0 if base is None else base
    widths = widths or [table.D, max(1, table.D // 2)]
    return plots.bands_figure({w: positional.wavelengths(w, base) for w in widths}, base, fig, lang=lang)


_DRAW = {"projection": _projection, "norms": _norms, "neighbors": _neighbors, "scale": _scale,
         "positions": _positions, "bands": _bands}
