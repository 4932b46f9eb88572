"""``embedlab plot``: one figure as PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import arguments


PROJECTION_METHODS = ("pca", "tsne", "umap")  # projection.METHODS, without importing NumPy here


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot", help="figures as PNG: projections, norms, neighbours before/after stretch, sqrt(d) scaling, "
                     "position tables, wavelength bands",
        description="Draw one figure of a table and write it as a PNG (needs the plots extra).",
        epilog="Examples:\n  embedlab plot projection --model glove --probe king --method umap --out king.png\n"
               "  embedlab plot norms --model minilm --out norms.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("figure", choices=sorted(PLOTS), help="which figure")
    arguments.add_model_arguments(p)
    p.add_argument("--probe", type=arguments.given(str, "a token string or a token id"), help=arguments.PROBE_HELP)
    p.add_argument("--method", choices=PROJECTION_METHODS, default="pca", help="projection method (default pca)")
    p.add_argument("--tokens", help="comma-separated tokens or ids to project, instead of the probe, "
                                    "its neighbours and a random sample")
    p.add_argument("--k", type=int, help="neighbours per list (default 10; 5 for neighbors; V - 1 when smaller)")
    p.add_argument("--sample", type=int, default=40, help="random rows added to a projection (default 40)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the sample, t-SNE and UMAP (default 0)")
    p.add_argument("--perplexity", type=float, help="t-SNE perplexity (below the number of points)")
    p.add_argument("--top", type=int, help="longest rows labelled in the norms figure (default 10, or V when smaller)")
    p.add_argument("--stretch-factor", type=float, default=4.0, help="neighbors: factor of the stretched row")
    p.add_argument("--max-positions", type=int, default=512,
                   help="positions: T_max of the sinusoidal table for a source without a position table (default 512)")
    p.add_argument("--widths", type=arguments.widths, help="bands: comma-separated model widths (default D and D/2)")
    p.add_argument("--base", type=float, default=10000.0, help="positions, bands: sinusoidal base (default 10000)")
    p.add_argument("--size", type=arguments.pixels, default=(1200, 800), help="WIDTHxHEIGHT in pixels (default 1200x800)")
    p.add_argument("--out", type=arguments.png_path, help="PNG file to write (default FIGURE.png)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..report import plots, files
    from ..sources import loaders as sources

    with arguments.progress(3, f"plot {args.figure}", args.quiet) as bar:
        table = sources.load(args.model, tensor=args.tensor, words=args.words)
        bar.update()
        fig = PLOTS[args.figure](args, table, plots.new_figure(*args.size))
        bar.update()
        path = args.out or Path(f"{args.figure}.png")
        files.write_atomic({path: plots.png_bytes(fig)})
        bar.update()
    print(f"wrote {path} ({args.size[0]}x{args.size[1]} pixels)")
    return 0


def _plot_projection(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..measure import projection

    if args.tokens is not None:
        ids, groups = [table.token_id(t) for t in arguments.token_list(args.tokens)], None
    else:
        ids, groups = projection.choose_rows(table, arguments.probe_id(table, args.probe), k=10 if args.k is None else args.k,
                                             sample=args.sample, seed=args.seed)
    proj = projection.project(table, ids, args.method, groups=groups, seed=args.seed, perplexity=args.perplexity)
    return plots.projection_figure(proj, fig)


def _plot_norms(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import norms
    from ..report import plots

    top = min(10, table.V) if args.top is None else args.top
    return plots.norms_figure(norms.norm_distribution(table, top=top), fig)


def _plot_neighbors(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import lab
    from ..report import plots

    settings = lab.LabSettings(probe=arguments.probe_id(table, args.probe), k=min(5, table.V - 1) if args.k is None else args.k,
                               stretch_factor=args.stretch_factor)
    return plots.stretch_figure(lab.compare_stretch(table, settings), fig)


def _plot_scale(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import lab
    from ..report import plots

    probe = arguments.probe_id(table, args.probe)
    k = min(10, table.V - 1) if args.k is None else args.k
    ids = table.nearest([probe], k, "cosine").ids[0].tolist()
    return plots.scale_figure(lab.compare_scale(table, probe, ids), fig)


def _plot_positions(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..measure import positions as position_similarity

    maps = position_similarity.position_maps(table, base=args.base, max_positions=args.max_positions)
    return plots.positions_figure(maps, fig)


def _plot_bands(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..engine import positional

    widths = args.widths or [table.D, max(1, table.D // 2)]
    return plots.bands_figure({w: positional.wavelengths(w, args.base) for w in widths}, args.base, fig)


PLOTS = {"projection": _plot_projection, "norms": _plot_norms, "neighbors": _plot_neighbors, "scale": _plot_scale,
         "positions": _plot_positions, "bands": _plot_bands}
