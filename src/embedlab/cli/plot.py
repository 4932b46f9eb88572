"""``embedlab plot``: one figure as PNG or SVG, as the file's name says."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..engine.neighbors.defaults import DEFAULT_K
from ..errors import brief
from ..figures import OPTIONS, PLOT_SAMPLE, plot, plot_notes
from ..measure.lab import REPORT_K
from ..report import files
from ..report.formats import terminal_text
from . import arguments
from .errors import option_spellings


PROJECTION_METHODS = ("pca", "tsne", "umap")  # projection.METHODS, without importing NumPy here
PROJECTION_METRICS = ("cosine", "euclidean")  # projection.METRICS, likewise


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot", help="figures as PNG or SVG: projections, norms, neighbours before/after stretch, sqrt(d) scaling, "
                     "position tables, wavelength bands",
        description="Draw one figure of a table and write it as a PNG, or as an SVG (text kept as text, its "
                    "glyphs embedded) when --out ends in .svg (needs the plots extra). Each figure "
                    "takes its own options: embedlab plot FIGURE --help lists them.",
        epilog="Examples:\n  embedlab plot projection --model glove --probe king --method umap --out king.png\n"
               "  embedlab plot norms --model minilm --lang en --out norms.svg",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    figures = p.add_subparsers(dest="figure", required=True, metavar="FIGURE")
    for name, help_text in FIGURES.items():
        f = figures.add_parser(name, help=help_text,
                               description=f"{help_text[:1].upper()}{help_text[1:]}, as a PNG or an SVG.")
        # positions: the table `embedlab positions` reads by default, one with a position table
        arguments.add_model_arguments(f, default=arguments.DEFAULT_REAL_MODEL if name == "positions"
                                      else arguments.DEFAULT_MODEL)
        for option in OPTIONS[name]:
            ADD_OPTION[option](f)
        arguments.add_language_argument(f, "the figure's titles, axis labels, legends and notes")
        f.add_argument("--size", type=arguments.pixels, help="WIDTHxHEIGHT in pixels (default 1200x800)")
        f.add_argument("--out", type=arguments.figure_path,
                       help=f"PNG or SVG file to write, by its extension (default {name}.png{arguments.MAKES_FOLDER})")
        f.add_argument("--quiet", action="store_true", help="no progress bar")
        f.set_defaults(run=run, usage_error=f.error, flags=option_spellings(f))


def run(args: argparse.Namespace) -> int:
    from ..report import fonts, plots

    _check_options(args)
    path = args.out or Path(f"{args.figure}.png")
    files.check_writable([path])  # before the figure is drawn
    width, height = args.size or DEFAULT_SIZE
    options = {name: getattr(args, name) for name in OPTIONS[args.figure] if getattr(args, name) is not None}
    if "tokens" in options:
        options["tokens"] = arguments.token_list(options["tokens"])
    with arguments.progress(2, f"plot {args.figure}", args.quiet) as bar:
        fig = plot(args.figure, args.model, size=(width, height), tensor=args.tensor, words=args.words,
                   table=args.table, lang=args.lang, **options)
        bar.update()
        files.write_atomic({path: plots.figure_bytes(fig, path)})
        bar.update()
    print(terminal_text(f"wrote {path} ({width}x{height} pixels)"))
    for note in plot_notes(fig):
        print(terminal_text(f"note: {note}"))
    undrawn = plots.undrawn_tokens(fig)
    if undrawn:
        print(terminal_text(f"note: {len(undrawn)} token{'s' if len(undrawn) > 1 else ''} drawn with "
                            f"{fonts.REPLACEMENT} in place of characters no installed font has: "
                            f"{', '.join(map(brief, undrawn))}"))
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """A usage error (exit 2) for an option the figure would ignore as called.

    ``plot projection --method pca --perplexity 5`` -> "--perplexity applies to --method tsne only".
    """
    if args.figure != "projection":
        return
    if args.perplexity is not None and args.method != "tsne":
        args.usage_error(f"--perplexity applies to --method tsne only, not --method {args.method or 'pca'}")
    check_metric(args)
    if args.tokens is not None:
        given = [f"--{name}" for name in ("k", "sample") if getattr(args, name) is not None]
        if given:
            verb = "does" if len(given) == 1 else "do"
            args.usage_error(f"{' and '.join(given)} {verb} not apply with --tokens: the rows projected are the "
                             "tokens given (and --probe, where given)")
    arguments.check_sample(args, DEFAULT_K)


def check_metric(args: argparse.Namespace) -> None:
    """A usage error (exit 2) for ``--metric`` with PCA, in plot projection and the projector alike."""
    if args.metric is not None and (args.method or "pca") == "pca":
        args.usage_error(f"--metric {args.metric} applies to --method tsne or umap only: PCA keeps euclidean "
                         f"variance (its axes are the directions of largest variance) and has no metric to choose")


DEFAULT_SIZE = (1200, 800)
KEEP_DEGENERATE_HELP = ("keep all-zero rows, copies of a row and rows far longer than the rest (beyond the median + "
                        "10 MAD of the row lengths) in the fit and the picture; by default they are left out and "
                        "named in a note")


# Each option once, default None: a figure's own default is applied where it is drawn, so
# "not given" stays visible (and may shrink to the table, as --k and --top do).
ADD_OPTION = {
    "probe": lambda p: p.add_argument("--probe", type=arguments.given(str, "a token string or a token id"),
                                      help=arguments.PROBE_HELP),
    "method": lambda p: p.add_argument("--method", choices=PROJECTION_METHODS, help="projection method (default pca)"),
    "tokens": lambda p: p.add_argument("--tokens", help="comma-separated tokens or ids to project, instead of the "
                                                        "probe's neighbours and a random sample (with --probe, the "
                                                        "probe is added and marked)"),
    "k": lambda p: p.add_argument("--k", type=arguments.at_least(1, "neighbours per list"), help=f"neighbours per list (default {DEFAULT_K}, {REPORT_K} in the neighbors "
                                                        "figure; V - 1 on a smaller table)"),
    "sample": lambda p: p.add_argument("--sample", type=arguments.sample_count,
                                       help=arguments.sample_help(PLOT_SAMPLE)),
    "seed": lambda p: p.add_argument("--seed", type=arguments.at_least(0, "a seed"), help="random seed of the sample, of the rows PCA is "
                                                              "fitted on, of t-SNE and UMAP (default 0)"),
    "perplexity": lambda p: p.add_argument("--perplexity", type=arguments.above(0, "a t-SNE perplexity"),
                                           help="t-SNE perplexity, below the number of points (with --method tsne)"),
    "metric": lambda p: p.add_argument("--metric", choices=PROJECTION_METRICS,
                                       help="the distance t-SNE and UMAP keep (default cosine, as the neighbour "
                                            "lists; with --method tsne or umap)"),
    "keep_degenerate": lambda p: p.add_argument("--keep-degenerate", action="store_true", default=None,
                                                help=KEEP_DEGENERATE_HELP),
    "top": lambda p: p.add_argument("--top", type=arguments.at_least(1, "rows"), help="longest rows labelled (default 10, or V when smaller)"),
    "stretch_factor": lambda p: p.add_argument("--stretch-factor", type=arguments.above(0, "a stretch factor"),
                                               help="factor of the stretched row (default 4.0)"),
    "max_context_length": lambda p: p.add_argument("--max-context-length", "--max-positions",
                                                   type=arguments.at_least(2, "positions"), metavar="T_max",
                                                   help="T_max, the rows of the sinusoidal table for a source without "
                                                        "a position table (default: the config's "
                                                        "max_position_embeddings, else 512)"),
    "widths": lambda p: p.add_argument("--widths", type=arguments.widths,
                                       help="comma-separated model widths (default D and D/2)"),
    "base": lambda p: p.add_argument("--base", type=arguments.above(1, "a sinusoidal base"), help="sinusoidal base (default 10000)"),
}
# figure -> help; each takes the options of embedlab.figures.OPTIONS
FIGURES = {
    "projection": "a 2-D projection of the probe, its neighbours and a sample (or --tokens); the title names "
                  "the distance it keeps",
    "norms": "the distribution of row lengths, the longest rows labelled",
    "neighbors": "the probe's neighbours by cosine and by dot, before and after one row is stretched",
    "scale": "the probe and its neighbours before and after the sqrt(D) scaling",
    "positions": "the learned position table beside the sinusoidal one (cosine between positions)",
    "bands": "the wavelength bands of sinusoidal positions at one or more widths",
}
