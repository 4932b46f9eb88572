"""``embedlab compress``: neighbours lost against bytes saved, for each deployment-time reduction."""

from __future__ import annotations

import argparse

from .. import api
from ..report import files, formats, views
from ..report.formats import terminal_text
from . import arguments

METHODS = ("pca", "truncate", "int8", "binary", "pq")  # measure.compress.METHODS, without importing NumPy here


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compress", help="what shrinking the vectors costs: recall@k of PCA, truncation, int8, binary and pq "
                         "against bytes per token",
        description="Sample N rows as queries; find each one's exact k nearest over the whole table (cosine and "
                    "dot), then again on the reduced table: PCA and Matryoshka truncation to --dims widths, int8 "
                    "and binary quantisation (also with an exact rescoring of a shortlist, as deployed), product "
                    "quantisation (faiss). For each: bytes per token and for the table, recall@k, top-1 overlap "
                    "and Spearman's rho over each query's exact top 100.",
        epilog="Examples:\n  embedlab compress --model minilm\n"
               "  embedlab compress --model glove --dims 25,10 --methods pca,int8,binary --json\n"
               "  embedlab compress --model minilm --plot compress.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--queries", type=arguments.at_least(1, "query rows"), metavar="N", help="query rows sampled with --seed (default 1000; V on a "
                                                            "smaller table)")
    p.add_argument("--k", type=arguments.at_least(1, "neighbours"), help="neighbours compared (default 10; V - 1 on a smaller table)")
    p.add_argument("--dims", type=_ints, help="comma-separated widths d' for pca and truncate "
                                                         "(default D/2, D/4, D/8)")
    p.add_argument("--methods", type=_methods, help=f"comma-separated, of {', '.join(METHODS)} (default all; pq "
                                                     "needs faiss)")
    p.add_argument("--rescore", type=arguments.at_least(1, "a multiple of k"), default=4, help="int8 and binary: rescore the reduced top rescore x k "
                                                          "exactly (default 4)")
    p.add_argument("--pq-m", type=arguments.at_least(1, "sub-quantisers"), metavar="M", help="pq sub-quantisers of 8 bits, dividing D (default the "
                                                        "divisor of D nearest D/8)")
    p.add_argument("--seed", type=arguments.at_least(0, "a seed"), default=0, help="seed of the queries, PCA's row sample and pq (default 0)")
    arguments.add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--plot", type=arguments.figure_path, metavar="FILE", help="also draw recall@k against bytes "
                                                                              "per token, as .png or .svg"
                                                                              f"{arguments.MAKES_FOLDER}")
    arguments.add_language_argument(p, "the figure's text (with --plot)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.plot is not None:
        files.check_writable([args.plot])  # before the searches: a --plot that cannot be written costs nothing
    n_dims = len(set(args.dims)) if args.dims else 3
    rows = sum(n_dims if method in ("pca", "truncate") else 1 for method in args.methods or METHODS)
    with arguments.progress(2 + 2 * rows, "compress", args.quiet) as bar:
        result = api.compress(args.model, methods=args.methods, dims=args.dims, queries=args.queries, k=args.k,
                              rescore=args.rescore, pq_m=args.pq_m, seed=args.seed, memory=args.memory,
                              tensor=args.tensor, words=args.words, table=args.table, progress=bar.update)
    if args.plot is not None:  # drawn before anything is printed: a failed figure leaves no half output
        from ..report import plots

        fig = plots.compress_figure(result, lang=args.lang)
        files.write_atomic({args.plot: plots.figure_bytes(fig, args.plot)})
    text = formats.to_json(result) if args.json else views.compress_terminal(result)
    print(terminal_text(text), end="")
    if args.plot is not None and not args.json:
        print(terminal_text(f"wrote {args.plot}"))
    return 0


def _ints(text: str) -> list[int]:
    """'128,64' -> [128, 64]; the range (1 to D) is the library's to check, naming d'."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be comma-separated whole numbers, e.g. 128,64") from None


def _methods(text: str) -> list[str]:
    """Comma-separated method names, as typed; unknown names are the library's to refuse (it names them)."""
    return [part.strip() for part in text.split(",") if part.strip()]
