"""Neighbour search: ``embedlab neighbors`` and ``hubs``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import api, sources
from ..engine.neighbors.defaults import DEFAULT_K, METRICS
from ..measure.defaults import DEFAULT_TOP
from ..report import formats, views
from ..report.formats import terminal_text
from . import arguments


def add_neighbors(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "neighbors", help="nearest tokens by cosine and by dot, side by side, with row norms",
        description="For each query, its k nearest tokens by cosine similarity and by dot product, side by "
                    "side: score and the norm of each listed row, so you see why the lists differ. A query "
                    "by token or id leaves out exactly its own id; a vector leaves out nothing; equal scores "
                    "are listed by the smaller id.",
        epilog="Examples:\n  embedlab neighbors --model minilm king queen --k 5\n"
               "  embedlab neighbors --model glove paris --metrics cosine --json\n"
               "  embedlab neighbors --model minilm --vectors probes.npy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("queries", nargs="*", metavar="QUERY",
                   help="token strings or token ids; id:N is always the id N, even where 'N' is also a token")
    p.add_argument("--k", type=arguments.at_least(1, "neighbours per list"),
                   help=f"neighbours per list (default {DEFAULT_K}; V - 1 on a smaller table, said in a note)")
    add_metrics_argument(p, "--by")
    p.add_argument("--vectors", "--vector", type=arguments.given(Path, "a .npy file"), metavar="FILE.npy",
                   help="query vectors: a (D,) or (N, D) .npy array")
    arguments.add_memory_argument(p)
    add_device_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=run_neighbors)


def run_neighbors(args: argparse.Namespace) -> int:
    # Written a block of queries at a time as the lists come: 10^6 queries are never held as text or objects.
    stream = api.neighbors_stream(args.model, args.queries, k=args.k, metrics=args.metrics, vectors=args.vectors,
                                  memory=args.memory, device=args.device, tensor=args.tensor, words=args.words,
                                  table=args.table)
    pieces = (formats.to_json_chunks(stream.to_dict, "queries", stream.query_dicts()) if args.json
              else views.neighbors_terminal_stream(stream, memory=args.memory is not None))
    for piece in pieces:
        print(terminal_text(piece), end="")
    return 0




def add_scheduler_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the searches on a Dask cluster's workers: the scheduler's address, tcp://host:8786 "
                        "(start it with 'dask scheduler', workers with 'dask worker ADDRESS'); --memory is then "
                        "per task. Default: in this process")


def add_device_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", type=arguments.device_name, metavar="DEVICE",
                   help="run the products and the first pass with torch on this device: cpu, cuda or cuda:N "
                        "(TF32 off); candidates are rescored in float64 on the CPU, so the lists do not change. "
                        "Default: NumPy on the CPU")


def add_hubs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hubs", help="rows that enter many neighbour lists (k-occurrence), by dot and by cosine",
        description="Every token (or a sample) as a query, under both metrics: count how many lists each row "
                    "enters (k-occurrence), show the most listed rows with their norms and norm ranks, the "
                    "Spearman correlation of row norm with k-occurrence, and how many lists the longest rows "
                    "enter. A progress bar shows on a terminal.",
        epilog="Examples:\n  embedlab hubs --model minilm\n"
               "  embedlab hubs --model glove --queries 20000 --seed 1 --json\n"
               "  embedlab hubs --model glove --scheduler tcp://10.0.0.5:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--k", type=arguments.at_least(1, "neighbours per list"),
                   help=f"neighbours per list (default {DEFAULT_K}; V - 1 on a smaller table, said in a note)")
    p.add_argument("--queries", type=arguments.query_count, default=None, metavar="all|N",
                   help="every token (all, the default) or N tokens sampled with --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled queries (default 0)")
    p.add_argument("--top", type=int, help=f"hubs and longest rows to show (default {DEFAULT_TOP}; V on a smaller table)")
    arguments.add_memory_argument(p)
    add_scheduler_argument(p)
    add_device_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=run_hubs)


def run_hubs(args: argparse.Namespace) -> int:
    table = sources.load(args.model, tensor=args.tensor, words=args.words, table=args.table)  # first: the bar's total
    with arguments.progress_bar(total=2 * (table.V if args.queries is None else args.queries), desc="hubs") as advance:
        result = api.hubs(table, k=args.k, queries=args.queries, seed=args.seed, top=args.top, memory=args.memory,
                          progress=advance, scheduler=args.scheduler, device=args.device)
    text = formats.to_json(result) if args.json else views.hubs_terminal(result, memory=args.memory is not None)
    print(terminal_text(text), end="")
    return 0

def add_graph(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "graph", help="every token's k nearest tokens, by cosine and by dot, written as Parquet",
        description="The neighbour graph: every token's k nearest other tokens (exact; equal scores by the "
                    "smaller id) under each metric, written as one Parquet file with the columns query_id, "
                    "rank (1 = nearest), neighbor_id, score and metric; V * k rows per metric. The file appears "
                    "only when complete: Ctrl-C or an error leaves none. A progress bar (rows done, rate, time "
                    "left) shows on a terminal.",
        epilog="Examples:\n  embedlab graph --model minilm --out minilm-graph.parquet\n"
               "  embedlab graph --model glove --k 5 --metrics cosine --out glove-cos.parquet --memory 1G\n"
               "  embedlab graph --model glove --scheduler tcp://10.0.0.5:8786 --out glove-graph.parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--k", type=arguments.at_least(1, "neighbours per token"),
                   help=f"neighbours per token (default {DEFAULT_K}; V - 1 on a smaller table, said in a note)")
    add_metrics_argument(p, "--metric")
    p.add_argument("--out", type=parquet_path, required=True, metavar="FILE.parquet",
                   help="the Parquet file to write, in an existing folder")
    arguments.add_memory_argument(p)
    add_scheduler_argument(p)
    add_device_argument(p)
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(run=run_graph)


def run_graph(args: argparse.Namespace) -> int:
    api.graph_path(args.out)  # a missing folder is refused before the table loads
    table = sources.load(args.model, tensor=args.tensor, words=args.words, table=args.table)  # first: the bar's total
    with arguments.progress_bar(total=table.V * len(args.metrics), desc="graph") as advance:
        result = api.graph(table, args.out, k=args.k, metrics=args.metrics, memory=args.memory, progress=advance,
                           scheduler=args.scheduler, device=args.device)
    text = formats.to_json(result) if args.json else views.graph_terminal(result, memory=args.memory is not None)
    print(terminal_text(text), end="")
    return 0


METRIC_CHOICES = "cosine, dot, or both (both, cosine,dot or dot,cosine; the output follows that order)"


def add_metrics_argument(p: argparse.ArgumentParser, *older: str) -> None:
    """--metrics, which lists, the same in neighbors (older spelling --by) and graph (--metric): ``metrics``
    of ``api.neighbors`` and ``api.graph``."""
    p.add_argument("--metrics", *older, type=metric_list, default=METRICS,
                   metavar="{cosine,dot,both}", help=f"which lists: {METRIC_CHOICES} (default both)")


def metric_list(text: str) -> tuple[str, ...]:
    """'cosine,dot' -> ('cosine', 'dot'): one or both metrics, each once, in the order given; 'both' is METRICS.

    >>> metric_list("dot"), metric_list("both")
    (('dot',), ('cosine', 'dot'))
    """
    items = list(METRICS) if text.strip() == "both" else [item.strip() for item in text.split(",")]
    if not items or any(item not in METRICS for item in items) or len(set(items)) != len(items):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {METRIC_CHOICES}")
    return tuple(items)


def parquet_path(text: str) -> Path:
    """A file name ending in .parquet: the graph is written as Parquet only."""
    if not text.strip() or not text.lower().endswith(".parquet") or Path(text).name.lower() == ".parquet":
        raise argparse.ArgumentTypeError(f"{text!r} must be a .parquet file name, e.g. graph.parquet")
    return Path(text)
