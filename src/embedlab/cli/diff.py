"""``embedlab diff``: what changed between two tables, and did the new rows train?"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from .. import api
from ..report import diff as diff_report, files, formats, run as run_record, views
from ..report.formats import terminal_text
from . import arguments


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff", help="two tables (or a table and its head): moved rows, new rows, Procrustes alignment",
        description="Compare two tables of one lineage (a model and its fine-tune, a table before and after "
                    "tokens were added, two merged models) or a model's token table and its output head: the "
                    "rows they share (by id, and by token string where the ids differ), added and removed; "
                    "for each shared row whether it is exactly equal, its L2 and relative change, the rows "
                    "that moved most and least; the added rows against their initialisation (the old rows' "
                    "mean, as transformers' mean resizing starts them, or zero); the orthogonal map that "
                    "best aligns B to A (Procrustes), with each row's aligned cosine; and for every shared "
                    "token, how many of its k nearest (cosine) A and B have in common, each searched over its "
                    "whole vocabulary with the exact search (Gonen et al. 2020).",
        epilog="Examples:\n  embedlab diff path/to/base path/to/finetuned\n"
               "  embedlab diff path/to/model                  # its token table against its output head\n"
               "  embedlab diff base grown --json > diff.json\n"
               "  embedlab diff base finetuned --center --markdown diff.md --lang en",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", metavar="A", type=arguments.given(str, "a model name or path"),
                   help=f"the table before: {arguments.ANY_TABLE}")
    p.add_argument("b", metavar="B", nargs="?", type=arguments.given(str, "a model name or path"),
                   help="the table after, as A; left out, A's other table (--table-b: its output head)")
    p.add_argument("--table", choices=arguments.TABLES, default="input",
                   help="which table of A's model: input, the token-embedding table (default), or head")
    p.add_argument("--table-b", choices=arguments.TABLES, default=None,
                   help="which table of B's model (default: --table; with B left out, A's other table)")
    for suffix, which in (("", "A"), ("-b", "B")):
        p.add_argument(f"--tensor{suffix}", type=arguments.given(str, "a tensor name"),
                       help=f"for {which}'s checkpoint: the name of the tensor of the table read")
        p.add_argument(f"--words{suffix}", type=arguments.given(str, "a word-list file"),
                       help=f"for {which} as a .npy table: a file with one token per line, in row order")
    p.add_argument("--top", type=arguments.at_least(1, "rows per ranking"), default=None,
                   help="rows listed per ranking (most and least moved, most drifted; default 10)")
    p.add_argument("--k", type=arguments.at_least(0, "neighbours per list; 0 leaves the overlap out"), default=None,
                   help="neighbours per list of the overlap (default 10; 0 leaves the overlap out, which searches "
                        "both tables whole)")
    p.add_argument("--queries", type=arguments.query_count, default=None,
                   help="the overlap of 'all' shared tokens (default) or of this many, sampled with --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled queries (default 0)")
    p.add_argument("--geometry", action=argparse.BooleanOptionalAction, default=True,
                   help="each table's isotropy: mean cosine of random pairs, first-component share, IsoScore, "
                        "partition-function ratio, the mean row, all-but-the-top's effect on neighbours (default on)")
    p.add_argument("--center", action="store_true", help="align after centring both tables on their mean row")
    p.add_argument("--scale", action="store_true", help="also scale B to A when aligning")
    arguments.add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print everything as JSON, every row")
    p.add_argument("--markdown", type=_markdown_path, metavar="FILE",
                   help=f"also write the diff as Markdown in --lang{arguments.MAKES_FOLDER}")
    p.add_argument("--plot", type=arguments.figure_path, metavar="FILE",
                   help="also draw the drift after alignment over the ids, the overlap histogram and the geometry "
                        f"side by side, as .png or .svg{arguments.MAKES_FOLDER}")
    arguments.add_language_argument(p, "the Markdown and the figure")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    files.check_writable(p for p in (args.markdown, args.plot) if p is not None)  # before the tables load
    result = api.diff(args.a, args.b, table=args.table, table_b=args.table_b, top=args.top, k=args.k,
                      queries=args.queries, seed=args.seed, center=args.center, geometry=args.geometry,
                      scale=args.scale, memory=args.memory, tensor=args.tensor, tensor_b=args.tensor_b,
                      words=args.words, words_b=args.words_b)
    # The diff records the command line as typed (absolute paths shown relative), not the API call.
    result = replace(result, run=replace(result.run, command=run_record.command_line(["embedlab", *args.argv])))
    written: dict[Path, str | bytes] = {}
    if args.markdown is not None:
        written[args.markdown] = diff_report.diff_markdown(result, lang=args.lang)
    if args.plot is not None:  # drawn before anything is printed: a failed figure leaves no half output
        from ..report import plots

        written[args.plot] = plots.figure_bytes(plots.diff_figure(result, lang=args.lang), args.plot)
    if written:
        files.write_atomic(written)
    print(terminal_text(formats.to_json(result) if args.json else views.diff_terminal(result)), end="")
    if written and not args.json:
        print(terminal_text("\n".join(f"wrote {path}" for path in written)))
    return 0


def _markdown_path(text: str) -> Path:
    if not text.lower().endswith(".md"):
        raise argparse.ArgumentTypeError(f"{text!r} must end in .md: the file is Markdown")
    return Path(text)
