"""``embedlab audit``: does the vocabulary agree with the table and the head?"""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from pathlib import Path

from .. import api
from ..api import AUDIT_PERCENTILE
from ..report import audit as audit_report, files, formats, run as run_record, views
from ..report.audit import SHOWN
from ..report.formats import terminal_text
from ..sources.config_limits import MAX_TOKEN_ID
from . import arguments

AUDIT_KINDS = ("a model with its tokenizer: minilm, a checkpoint folder, a .safetensors or .gguf file; word vectors "
               "(GloVe, word2vec, a .npy with --words) get the parts that need no tokenizer")


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit", help="tokenizer vs table vs head: accounting, reachability, degenerate rows, under-trained tokens",
        description="Check a model's vocabulary against its token table and output head: the config's "
                    "vocab_size, the rows of each table and the tokenizer's ids (holes, ids past the table, rows "
                    "no token maps to, special and added tokens, what resize_token_embeddings(len(tokenizer)) "
                    "would drop); every token decoded and encoded again, sorted into the categories of Land & "
                    "Bartolo's Magikarp code; all-zero, non-finite and copied rows; and under-trained tokens: "
                    "rows close to the rows known to be unused (their indicators, on the head of an untied model "
                    "or the table of a tied one). A summary first: what is wrong, how bad, what to do.",
        epilog="Examples:\n  embedlab audit --model minilm\n"
               "  embedlab audit --model path/to/Llama-3-8B --json > audit.json\n"
               "  embedlab audit --model path/to/checkpoint --unused 128002-128255 --markdown audit.md "
               "--plot audit.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p, default=arguments.DEFAULT_REAL_MODEL, kinds=AUDIT_KINDS, table=False)
    p.add_argument("--unused", type=id_list, metavar="IDS", default=(),
                   help="ids known to be unused, added to the reference set: comma-separated ids and ranges "
                        "(5,7,100-120)")
    p.add_argument("--percentile", type=_percentile, default=AUDIT_PERCENTILE,
                   help="under-trained candidates: reachable tokens at or under this percentile of the reachable "
                        f"tokens' main indicator (default {AUDIT_PERCENTILE:g}, Magikarp's)")
    p.add_argument("--show", type=arguments.at_least(0, "ids shown per list"), default=SHOWN,
                   help=f"ids shown per list in the terminal summary (default {SHOWN}; --json lists all)")
    p.add_argument("--json", action="store_true", help="print everything as JSON, every list complete")
    p.add_argument("--markdown", type=_markdown_path, metavar="FILE",
                   help=f"also write the audit as Markdown in --lang{arguments.MAKES_FOLDER}")
    p.add_argument("--plot", type=arguments.figure_path, metavar="FILE",
                   help="also draw the main under-trained indicator over the ids, the threshold and the candidates "
                        f"labelled, as .png or .svg{arguments.MAKES_FOLDER}")
    arguments.add_language_argument(p, "the Markdown and the figure")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    files.check_writable(p for p in (args.markdown, args.plot) if p is not None)  # before the audit: costs nothing
    with arguments.working("embedlab audit"):
        result = api.audit(args.model, unused=args.unused, percentile=args.percentile, tensor=args.tensor,
                           words=args.words)
    # The audit records the command line as typed (absolute paths shown relative), not the API call.
    result = replace(result, run=replace(result.run, command=run_record.command_line(["embedlab", *args.argv])))
    written: dict[Path, str | bytes] = {}
    if args.markdown is not None:
        written[args.markdown] = audit_report.audit_markdown(result, lang=args.lang)
    if args.plot is not None:  # drawn before anything is printed: a failed figure leaves no half output
        from ..report import plots

        fig = plots.audit_figure(result, lang=args.lang)
        written[args.plot] = plots.figure_bytes(fig, args.plot)
    if written:
        files.write_atomic(written)
    text = formats.to_json(result) if args.json else views.audit_terminal(result, show=args.show)
    print(terminal_text(text), end="")
    if written and not args.json:
        print(terminal_text("\n".join(f"wrote {path}" for path in written)))
    return 0


def id_list(text: str) -> tuple[range, ...]:
    """``"5,7,100-102"`` -> ``(range(5, 6), range(7, 8), range(100, 103))``: ids and inclusive ranges, never
    expanded (``1-99999999999`` is one pair, not a list of 10^11 ids); the range of V is the library's.

    An id past the largest token id any model has (``MAX_TOKEN_ID``, 2^31 - 1) is a usage error here, naming
    what was typed.

    >>> id_list("5, 7,100-102")
    (range(5, 6), range(7, 8), range(100, 103))
    >>> id_list("1-99999999999")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1-99999999999': 99999999999 is past the largest token id a model can have, ...
    """
    ranges: list[range] = []
    for part in (p.strip() for p in text.split(",")):
        found = re.fullmatch(r"([0-9]+)(?:\s*-\s*([0-9]+))?", part)
        if found is None or (found[2] is not None and int(found[2]) < int(found[1])):
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated ids and ranges, e.g. 5,7,100-120, "
                                             f"got {part!r}")
        first, last = int(found[1]), int(found[2] or found[1])
        if last > MAX_TOKEN_ID:
            raise argparse.ArgumentTypeError(f"{part!r}: {last} is past the largest token id a model can have, "
                                             f"{MAX_TOKEN_ID:,} (2^31 - 1)")
        ranges.append(range(first, last + 1))
    return tuple(ranges)


def _percentile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentile from 0 to 100, got {text!r}")
    return value


def _markdown_path(text: str) -> Path:
    if not text.lower().endswith(".md"):
        raise argparse.ArgumentTypeError(f"{text!r} must end in .md: the file is Markdown")
    return Path(text)
