"""The ``embedlab`` command: argument parsing and the walk of each command.

Each command is one walk: source -> measurement -> renderer. Nothing is
computed here. Heavy libraries (NumPy, PyTorch, matplotlib) are imported inside
the command that needs them, so ``embedlab report`` on the seed table runs on a
bare Python. ``main`` is the one place that turns the library's exceptions into
one line on stderr and exit code 1 (argparse uses 2 for usage errors).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

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


# -- embedlab demo -----------------------------------------------------------

def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="the torch modules on one batch: shapes, parameters, position similarity",
        description="Build the token embedding, a learned and a sinusoidal position embedding and the composer "
                    "(PyTorch), run one batch of random ids, and show the (B, T) -> (B, T, D) contract, the "
                    "parameters each module adds, the mean cosine between positions k apart and the "
                    "sinusoidal wavelength bands.",
        epilog="Examples:\n  embedlab demo\n  embedlab demo --d-model 32   # fewer wavelength bands\n"
               "  embedlab demo --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--vocab", type=int, default=320, help="V, vocabulary size (default 320)")
    p.add_argument("--d-model", type=int, default=64, help="D, model width (default 64)")
    p.add_argument("--max-context", type=int, default=128, help="T_max, rows of the position tables (default 128)")
    p.add_argument("--batch", type=int, default=4, help="B, sequences in the batch (default 4)")
    p.add_argument("--seq", type=int, default=32, help="T, tokens per sequence (default 32)")
    p.add_argument("--seed", type=int, default=11, help="torch seed for the tables and the ids (default 11)")
    p.add_argument("--max-offset", type=int, default=6, help="largest offset k of the cosine curve (default 6)")
    p.add_argument("--base", type=float, default=10000.0, help="sinusoidal base (default 10000)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from . import nn, render

    settings = nn.DemoSettings(vocab_size=args.vocab, d_model=args.d_model, max_context_length=args.max_context,
                               batch_size=args.batch, seq_len=args.seq, seed=args.seed,
                               max_offset=args.max_offset, base=args.base)
    result = nn.demo(settings)
    print(render.result_json(result) if args.json else render.demo_terminal(result), end="")
    return 0


# -- embedlab positions ------------------------------------------------------

def _add_positions(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "positions", help="a learned position table against the sinusoidal one",
        description="Compare the learned position table of a checkpoint with a sinusoidal table of the same "
                    "size: adjacent-position cosine along the positions, mean cosine by offset (1, 2, 4, ...) "
                    "and whether the learned table is smooth.",
        epilog="Examples:\n  embedlab positions --model minilm\n  embedlab positions --model path/to/checkpoint --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_arguments(p, default="minilm")
    p.add_argument("--base", type=float, default=10000.0, help="base of the sinusoidal table (default 10000)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_run_positions)


def _run_positions(args: argparse.Namespace) -> int:
    from . import position_similarity, render, sources

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    result = position_similarity.compare_table_positions(table, base=args.base)
    print(render.result_json(result) if args.json else render.positions_terminal(result), end="")
    return 0


# -- embedlab encode ---------------------------------------------------------

def _add_encode(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "encode", help="text -> tokens -> ids -> vectors -> (B, T, D), step by step",
        description="Tokenize texts with the checkpoint's own tokenizer.json, look up token, position and "
                    "token-type vectors, and show their sum, the (B, T, D) input of the first block, a row per "
                    "token.",
        epilog='Examples:\n  embedlab encode --model minilm "i like apples" "apples are red"\n'
               '  embedlab encode --model minilm --truncate --json "a very long text ..."',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_arguments(p, default="minilm")
    p.add_argument("texts", nargs="+", metavar="TEXT", help="one or more texts (one sequence each)")
    p.add_argument("--truncate", action="store_true",
                   help="cut texts longer than the position table to T_max tokens (default: an error)")
    p.add_argument("--show", type=int, default=3, help="leading values shown of each vector (default 3)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_run_encode)


def _run_encode(args: argparse.Namespace) -> int:
    from . import input_embedding, render, sources

    tokenizer = sources.load_tokenizer(args.model)
    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    result = input_embedding.encode(table, tokenizer, args.texts, truncate=args.truncate, show=args.show)
    print(render.result_json(result) if args.json else render.encode_terminal(result), end="")
    return 0


# -- shared arguments and helpers ----------------------------------------------

def _add_model_arguments(p: argparse.ArgumentParser, default: str = "seed") -> None:
    p.add_argument("--model", default=default,
                   help=f"seed, minilm, glove, or a path: a checkpoint folder, a .safetensors, "
                        f".npy or GloVe/word2vec text file (default {default})")
    p.add_argument("--tensor", help="for a checkpoint: the name of the token-embedding tensor")
    p.add_argument("--words", help="for a .npy table: a file with one token per line, in row order")


def _seed_probe(text: str) -> int:
    """The seed table has no vocabulary: its probe is a token id."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"the seed table has no vocabulary: --probe must be a token id in [0, {embed.VOCAB}), "
                         f"got {text!r}") from None


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_report,
    _add_demo,
    _add_positions,
    _add_encode,
)
