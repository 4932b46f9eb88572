"""Neighbour search: ``embedlab neighbors`` and ``hubs``."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import arguments

DEFAULT_K = 10  # neighbours per list in neighbors and hubs
DEFAULT_TOP = 10  # hubs and longest rows shown by hubs


def add_neighbors(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "neighbors", help="nearest tokens by cosine and by dot, side by side, with row norms",
        description="For each query, its k nearest tokens by cosine similarity and by dot product, side by "
                    "side: score and the norm of each listed row, so you see why the lists differ. A query "
                    "by token or id leaves out exactly its own id; a vector leaves out nothing; equal scores "
                    "are listed by the smaller id.",
        epilog="Examples:\n  embedlab neighbors --model minilm king queen --k 5\n"
               "  embedlab neighbors --model glove paris --by cosine --json\n"
               "  embedlab neighbors --model minilm --vector probes.npy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("queries", nargs="*", metavar="QUERY",
                   help="token strings or token ids; id:N is always the id N, even where 'N' is also a token")
    p.add_argument("--k", type=int, help=f"neighbours per list (default {DEFAULT_K})")
    p.add_argument("--by", choices=("cosine", "dot", "both"), default="both", help="which lists (default both)")
    p.add_argument("--vector", type=arguments.given(Path, "a .npy file"), metavar="FILE.npy",
                   help="query vectors: a (D,) or (N, D) .npy array")
    arguments.add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=run_neighbors)


def run_neighbors(args: argparse.Namespace) -> int:
    from ..report import formats, views
    from ..sources import loaders as sources
    from ..measure.neighbors import neighbor_lists

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    vectors = None if args.vector is None else sources.load_vectors(args.vector)
    metrics = ("cosine", "dot") if args.by == "both" else (args.by,)
    result = neighbor_lists(table, args.queries, args.k, metrics, vectors=vectors, memory=args.memory)
    print(formats.to_json(result) if args.json else views.neighbors_terminal(result), end="")
    return 0




def add_hubs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hubs", help="rows that enter many neighbour lists (k-occurrence), by dot and by cosine",
        description="Every token (or a sample) as a query, under both metrics: count how many lists each row "
                    "enters (k-occurrence), show the most listed rows with their norms and norm ranks, the "
                    "Spearman correlation of row norm with k-occurrence, and how many lists the longest rows "
                    "enter. A progress bar shows on a terminal.",
        epilog="Examples:\n  embedlab hubs --model minilm\n"
               "  embedlab hubs --model glove --queries 20000 --seed 1 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--k", type=int, help=f"neighbours per list (default {DEFAULT_K})")
    p.add_argument("--queries", type=arguments.query_count, default=None, metavar="all|N",
                   help="every token (all, the default) or N tokens sampled with --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled queries (default 0)")
    p.add_argument("--top", type=int, help=f"hubs and longest rows to show (default {DEFAULT_TOP})")
    arguments.add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=run_hubs)


def run_hubs(args: argparse.Namespace) -> int:
    from ..report import formats, views
    from ..sources import loaders as sources
    from ..measure.hubs import measure_hubs

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    n = table.V if args.queries is None else args.queries
    with arguments.progress_bar(total=2 * n, desc="hubs") as advance:
        # measure_hubs takes no None for k or top yet: the defaults are applied here.
        result = measure_hubs(table, DEFAULT_K if args.k is None else args.k, n_queries=args.queries, seed=args.seed,
                              top=DEFAULT_TOP if args.top is None else args.top,
                              memory=args.memory, progress=advance)
    print(formats.to_json(result) if args.json else views.hubs_terminal(result), end="")
    return 0
