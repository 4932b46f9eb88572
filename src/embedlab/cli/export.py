"""``embedlab export``: the table in other tools' formats (the TensorBoard projector's TSV files)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import api
from ..report.formats import terminal_text
from . import arguments

FORMATS = ("projector",)  # report.export.FORMATS, without importing NumPy here


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="the table in other tools' formats: vectors.tsv and metadata.tsv for TensorBoard's projector",
        description="Write the table for another tool. --format projector: vectors.tsv (one row per token, D "
                    "tab-separated values, each the shortest text that reads back to the same number) and "
                    "metadata.tsv (one label per row; a header line only with several columns), as the "
                    "TensorBoard Embedding Projector loads them. Both files are written, or neither.",
        epilog="Examples:\n  embedlab export --format projector --model glove --limit 20000 --out glove-tsv\n"
               "  embedlab export --format projector --model minilm --metadata token,id --out minilm-tsv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="the format to write: projector (TensorBoard)")
    p.add_argument("--out", type=arguments.given(Path, "a folder"), default=Path("."),
                   help="folder for the files (default: .)")
    p.add_argument("--limit", type=arguments.at_least(1, "rows"), help="the first N rows only, ids 0 .. N-1 (default: all V); the projector "
                                             "draws up to about 100,000 points at ease")
    p.add_argument("--metadata", type=columns, help="columns of metadata.tsv: token (the default; id for a table "
                                                    "without vocabulary), id, or token,id")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    arguments.check_model_options(args)
    result = api.export(args.model, args.out, format=args.format, limit=args.limit, metadata=args.metadata,
                        tensor=args.tensor, words=args.words, table=args.table)
    vectors, metadata = result.files
    header = "a header line" if len(result.columns) > 1 else "no header line"
    print(terminal_text(f"wrote {vectors} ({result.rows:,} rows of D = {result.D} values) and {metadata} "
                        f"(column{'s' if len(result.columns) > 1 else ''} {', '.join(result.columns)}; {header})"))
    for note in result.notes:
        print(terminal_text(f"note: {note}"))
    return 0


def columns(text: str) -> list[str]:
    """'token,id' -> ['token', 'id']; an empty item is an error, not silently dropped."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise argparse.ArgumentTypeError(f"--metadata {text!r} has an empty item: expected token, id or token,id")
    return items
