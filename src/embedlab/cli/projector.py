"""``embedlab projector``: an interactive projection as one offline HTML file."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import api, sources
from ..api import PROJECTOR_K, PROJECTOR_SAMPLE
from ..report import files, projector as page
from ..report.formats import terminal_text
from ..report.locales import DEFAULT_LANGUAGE, LANGUAGES
from . import arguments
from .plot import ADD_OPTION, PROJECTION_METHODS, check_metric



def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "projector", help="an interactive projection as one offline HTML file: hover, search, nearest tokens",
        description="Project the probe, its neighbours and a random sample (or --tokens) to 2-D or 3-D and write "
                    "one self-contained HTML page (plotly.js inlined, about 5 MB; no network, no server). Hover a "
                    "point for its token and id, search a token, click a point for its k nearest tokens by cosine "
                    "and by dot product (exact, over the whole table), zoom and pan, colour by neighbour group or "
                    "row length. Needs the plots extra.",
        epilog="Examples:\n  embedlab projector --model glove --sample 10000 --out glove.html\n"
               "  embedlab projector --model minilm --tokens 春,夏,秋,king,queen --probe 王 --dims 3 --lang en\n"
               "  embedlab projector --model minilm --probe king --method umap --out king.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    rows = p.add_mutually_exclusive_group()
    rows.add_argument("--tokens", help="comma-separated tokens or ids to project, instead of a sample")
    rows.add_argument("--sample", type=arguments.sample_count,
                      help=arguments.sample_help(PROJECTOR_SAMPLE))
    p.add_argument("--probe", type=arguments.given(str, "a token string or a token id"),
                   help=arguments.PROBE_HELP[:-1] + "; with --tokens, none unless given: then it is added and "
                                                     "selected first)")
    p.add_argument("--method", choices=PROJECTION_METHODS, default="pca", help="projection method (default pca)")
    ADD_OPTION["metric"](p)  # the same flag, choices and help as plot projection's
    ADD_OPTION["keep_degenerate"](p)
    p.add_argument("--dims", type=int, choices=(2, 3), default=2, help="2-D or 3-D points (default 2)")
    p.add_argument("--k", type=arguments.at_least(1, "neighbours per list"), help=f"neighbours per list, over the whole table (default {PROJECTOR_K}; V - 1 on "
                                         "a smaller table)")
    p.add_argument("--seed", type=arguments.at_least(0, "a seed"), default=0, help="seed of the random rows, t-SNE and UMAP (default 0)")
    p.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE,
                   help=f"language of the page's words (default {DEFAULT_LANGUAGE})")
    p.add_argument("--out", type=html_path, default=Path("projector.html"),
                   help=f"HTML file to write (default projector.html{arguments.MAKES_FOLDER})")
    arguments.add_memory_argument(p)
    p.set_defaults(run=run, usage_error=p.error)


def run(args: argparse.Namespace) -> int:
    arguments.check_model_options(args)
    check_metric(args)
    arguments.check_sample(args, PROJECTOR_K)
    page.require_plotly()  # a missing extra is said now, not after the search
    files.check_writable([args.out])  # and a page that could not be written
    tokens = arguments.token_list(args.tokens) if args.tokens is not None else None
    table = sources.load(args.model, tensor=args.tensor, words=args.words, table=args.table)  # first, so the bar knows its total
    n = len(tokens) + (args.probe is not None) if tokens is not None else args.sample or min(PROJECTOR_SAMPLE, table.V)
    with arguments.progress_bar(total=2 * n, desc="nearest tokens") as advance:
        result = api.projector(table, tokens=tokens, sample=args.sample, probe=args.probe, method=args.method,
                               dims=args.dims, k=args.k, seed=args.seed, metric=args.metric,
                               memory=args.memory, progress=advance, keep_degenerate=bool(args.keep_degenerate))
    text = page.projector_html(result, args.lang)
    files.write_atomic({args.out: text})
    size = len(text.encode("utf-8"))
    print(terminal_text(f"wrote {args.out}: {len(result.ids):,} points, {result.dims}-D "
                        f"{page.METHOD_NAMES[result.method]}, {size / 2**20:.1f} MiB; open it in a browser "
                        "(no network needed)"))
    for note in result.notes:
        print(terminal_text(f"note: {note}"))
    return 0


def html_path(text: str) -> Path:
    """A file name ending in .html or .htm: the page is one HTML file."""
    if not text.strip() or not text.lower().endswith((".html", ".htm")):
        raise argparse.ArgumentTypeError(f"{text!r} must be an .html file name: the projector is one HTML page")
    return Path(text)
