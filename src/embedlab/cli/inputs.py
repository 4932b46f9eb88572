"""The input side: ``embedlab demo``, ``positions`` and ``encode``."""

from __future__ import annotations

import argparse

from .. import api
from ..report import formats, views
from ..report.formats import terminal_text
from . import arguments


def add_demo(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--vocab-size", "--vocab", type=int, default=320, metavar="V",
                   help="V, vocabulary size (default 320)")
    p.add_argument("--d-model", type=int, default=64, metavar="D", help="D, model width (default 64)")
    p.add_argument("--max-context-length", "--max-context", type=int, default=128, metavar="T_max",
                   help="T_max, maximum context: rows of the position tables (default 128)")
    p.add_argument("--batch-size", "--batch", type=int, default=4, metavar="B",
                   help="B, sequences in the batch (default 4)")
    p.add_argument("--seq-len", "--seq", type=int, default=32, metavar="T", help="T, tokens per sequence (default 32)")
    p.add_argument("--seed", type=int, default=11, help="torch seed for the tables and the ids (default 11)")
    p.add_argument("--max-offset", type=int, help="largest offset k of the cosine curve (default 6; T_max - 1 when "
                                                  "smaller)")
    p.add_argument("--base", type=float, default=10000.0, help="sinusoidal base (default 10000)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    given = {"max_offset": args.max_offset} if args.max_offset is not None else {}
    result = api.demo(vocab_size=args.vocab_size, d_model=args.d_model, max_context_length=args.max_context_length,
                      batch_size=args.batch_size, seq_len=args.seq_len, seed=args.seed, base=args.base, **given)
    text = formats.to_json(result) if args.json else views.demo_terminal(result)
    print(terminal_text(text), end="")
    return 0




def add_positions(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "positions", help="a learned position table against the sinusoidal one",
        description="Compare the learned position table of a checkpoint with a sinusoidal table of the same "
                    "size: adjacent-position cosine along the positions, mean cosine by offset (1, 2, 4, ...) "
                    "and whether the learned table is smooth.",
        epilog="Examples:\n  embedlab positions --model minilm\n  embedlab positions --model path/to/checkpoint --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p, default=arguments.DEFAULT_REAL_MODEL, table=False,  # positions meet the input table only
                                  kinds="a table with learned positions: minilm, or a checkpoint folder or "
                                        ".safetensors file holding a position table")
    p.add_argument("--base", type=float, default=10000.0, help="base of the sinusoidal table (default 10000)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run_positions)


def run_positions(args: argparse.Namespace) -> int:
    with arguments.working("embedlab positions"):
        result = api.positions(args.model, base=args.base, tensor=args.tensor, words=args.words)
    text = formats.to_json(result) if args.json else views.positions_terminal(result)
    print(terminal_text(text), end="")
    return 0




def add_encode(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "encode", help="text -> tokens -> ids -> vectors -> (B, T, D), step by step",
        description="Tokenize texts with the checkpoint's own tokenizer.json, look up token, position and "
                    "token-type vectors, and show their sum, the (B, T, D) input of the first block, a row per "
                    "token.",
        epilog='Examples:\n  embedlab encode --model minilm "i like apples" "apples are red"\n'
               '  embedlab encode --model minilm --truncate --json "a very long text ..."',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p, default=arguments.DEFAULT_REAL_MODEL, words=False, table=False,  # text -> the input table's rows
                                  kinds="a checkpoint with its tokenizer: minilm, or a checkpoint folder (or "
                                        ".safetensors file) with tokenizer.json beside it")
    p.add_argument("texts", nargs="+", metavar="TEXT", help="one or more texts (one sequence each)")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--truncate", dest="truncate", action="store_const", const=True, default=None,
                     help="cut long texts: at the length tokenizer.json saves, else at the positions the model can "
                          "use (T_max less the family's offset); default: cut only where tokenizer.json saves a "
                          "length, else refuse")
    cut.add_argument("--no-truncate", dest="truncate", action="store_const", const=False,
                     help="never cut: refuse a text longer than the length tokenizer.json saves (or, with none "
                          "saved, than the positions the model can use)")
    p.add_argument("--show", type=int, default=3, help="leading values shown of each vector (default 3)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run_encode)


def run_encode(args: argparse.Namespace) -> int:
    with arguments.working("embedlab encode"):
        result = api.encode(args.model, args.texts, truncate=args.truncate, show=args.show, tensor=args.tensor)
    text = formats.to_json(result) if args.json else views.encode_terminal(result)
    print(terminal_text(text), end="")
    return 0