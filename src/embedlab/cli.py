"""The ``embedlab`` command: argument parsing and the walk of each command.

Each command is one walk: source -> measurement -> renderer. Nothing is
computed here. Heavy libraries (NumPy, PyTorch, matplotlib) are imported inside
the command that needs them, so ``embedlab report`` on the seed table runs on a
bare Python. ``main`` is the one place that turns the library's exceptions into
one line on stderr and exit code 1 (argparse uses 2 for usage errors).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Callable, Iterator, Sequence

from . import __version__, embed
from .errors import EmbedlabError
from .locales import DEFAULT_LANGUAGE, LANGUAGES

__all__ = ["main", "build_parser"]

# What a user's bad input raises: the reference raises builtins, the rest of the
# package EmbedlabError subclasses of them. Anything else is a bug and shows its traceback.
USER_ERRORS = (EmbedlabError, ValueError, IndexError, KeyError, TypeError, OSError, ImportError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 success, 1 error, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except USER_ERRORS as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"embedlab {args.command}: error: {message}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="embedlab",
        description="See and measure token embeddings, positions and the tied output head.",
        epilog="Example: embedlab report --model minilm --probe king --out out/minilm",
    )
    parser.add_argument("--version", action="version", version=f"embedlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


# -- embedlab report ---------------------------------------------------------

def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="the lab report: lookup, tying, neighbours, sqrt(d) scaling",
        description="Measure the lab's experiments on one table and write embed_report.json and "
                    "embed_report.md into --out.",
        epilog="Examples:\n  embedlab report --out out/\n"
               "  embedlab report --model minilm --probe king --out out/minilm --lang en",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_arguments(p)
    p.add_argument("--probe", default="137", help="probe token: a token string or a token id (default 137)")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for the report files (default: .)")
    p.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE,
                   help=f"language of the Markdown report (default {DEFAULT_LANGUAGE})")
    p.add_argument("--k", type=int, default=5, help="neighbours per list (default 5)")
    p.add_argument("--stretch-factor", type=float, default=4.0,
                   help="factor for the stretched row, the 5th cosine neighbour (default 4.0)")
    p.add_argument("--growth", type=int, default=2, help="vocabulary growth factor (default 2)")
    p.set_defaults(run=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from . import lab, render

    if args.model == "seed":
        engine: lab.Engine = lab.ReferenceEngine(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED))
        probe = _seed_probe(args.probe)
        seed, source = embed.SEED, None
    else:
        from . import sources

        table = sources.load(args.model, tensor=args.tensor, words=args.words)
        engine = lab.ArrayEngine(table)
        probe = table.token_id(args.probe)
        seed, source = None, table.provenance.to_dict()
    settings = lab.LabSettings(probe=probe, k=args.k, stretch_factor=args.stretch_factor,
                               growth_factor=args.growth)
    result = lab.measure(engine, settings, seed=seed, source=source)
    texts = {
        args.out / "embed_report.json": render.report_json(result),
        args.out / "embed_report.md": render.report_markdown(result, settings, args.lang),
    }
    written = render.write_atomic(texts)
    print(render.report_terminal(result, written), end="")
    return 0


# -- embedlab neighbors -----------------------------------------------------

def _add_neighbors(sub: argparse._SubParsersAction) -> None:
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
    _add_model_arguments(p)
    p.add_argument("queries", nargs="*", metavar="QUERY", help="token strings or token ids")
    p.add_argument("--k", type=int, default=10, help="neighbours per list (default 10)")
    p.add_argument("--by", choices=("cosine", "dot", "both"), default="both", help="which lists (default both)")
    p.add_argument("--vector", type=Path, metavar="FILE.npy", help="query vectors: a (D,) or (N, D) .npy array")
    _add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=_run_neighbors)


def _run_neighbors(args: argparse.Namespace) -> int:
    from . import render, sources
    from .neighbors import neighbor_lists

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    vectors = None if args.vector is None else sources.load_vectors(args.vector)
    metrics = ("cosine", "dot") if args.by == "both" else (args.by,)
    result = neighbor_lists(table, args.queries, args.k, metrics, vectors=vectors, memory=args.memory)
    print(render.neighbors_json(result) if args.json else render.neighbors_terminal(result), end="")
    return 0


# -- embedlab hubs -----------------------------------------------------------

def _add_hubs(sub: argparse._SubParsersAction) -> None:
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
    _add_model_arguments(p)
    p.add_argument("--k", type=int, default=10, help="neighbours per list (default 10)")
    p.add_argument("--queries", type=_queries, default=None, metavar="all|N",
                   help="every token (all, the default) or N tokens sampled with --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled queries (default 0)")
    p.add_argument("--top", type=int, default=10, help="hubs and longest rows to show (default 10)")
    _add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=_run_hubs)


def _run_hubs(args: argparse.Namespace) -> int:
    from . import render, sources
    from .hubs import measure_hubs

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    n = table.V if args.queries is None else args.queries
    with _progress_bar(total=2 * n, desc="hubs") as advance:
        result = measure_hubs(table, args.k, n_queries=args.queries, seed=args.seed, top=args.top,
                              memory=args.memory, progress=advance)
    print(render.hubs_json(result) if args.json else render.hubs_terminal(result), end="")
    return 0


# -- shared arguments and helpers ----------------------------------------------

def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="seed",
                   help="seed (default), minilm, glove, or a path: a checkpoint folder, a .safetensors, "
                        ".npy or GloVe/word2vec text file")
    p.add_argument("--tensor", help="for a checkpoint: the name of the token-embedding tensor")
    p.add_argument("--words", help="for a .npy table: a file with one token per line, in row order")


def _add_memory_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory", type=_bytes, default=256 * 2**20, metavar="BYTES",
                   help="working memory of the search: a number of bytes, or with K, M or G "
                        "(binary: 1M = 2**20 bytes); default 256M")


def _bytes(text: str) -> int:
    """``"256M"`` -> 268435456: bytes, with an optional K/M/G suffix (powers of 1024)."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
    number, unit = text.strip().upper().removesuffix("B").removesuffix("I"), ""
    if number[-1:] in "KMG" and number[-1:]:
        number, unit = number[:-1], number[-1]
    try:
        value = int(float(number) * units[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bytes such as 268435456, 512K, 256M or 1G, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"memory must be positive, got {text!r}")
    return value


def _queries(text: str) -> int | None:
    """``all`` -> None (every token); a positive whole number -> that many sampled queries."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected 'all' or a positive number of queries, got {text!r}")
    return int(text)


@contextlib.contextmanager
def _progress_bar(total: int, desc: str) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed); nothing otherwise."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not sys.stderr.isatty():
        yield None
        return
    with tqdm(total=total, desc=desc, unit="query", file=sys.stderr, leave=False) as bar:
        yield bar.update


def _seed_probe(text: str) -> int:
    """The seed table has no vocabulary: its probe is a token id."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"the seed table has no vocabulary: --probe must be a token id in [0, {embed.VOCAB}), "
                         f"got {text!r}") from None


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_report,
    _add_neighbors,
    _add_hubs,
)
