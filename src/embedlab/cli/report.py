"""``embedlab report``: the lab report (JSON, Markdown, terminal; --html)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from .. import api
from ..api import REPORT_K
from ..report import files, formats, lab as lab_report, run as run_record
from ..report.formats import terminal_text
from . import arguments


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="the lab report: lookup, tying, neighbours, sqrt(d) scaling",
        description="Measure the lab's experiments on one table and write embed_report.json and "
                    "embed_report.md into --out. Each records embedlab's version, the date (UTC; "
                    "SOURCE_DATE_EPOCH fixes it) and this command line, with no absolute path.",
        epilog="Examples:\n  embedlab report --out out/\n"
               "  embedlab report --model minilm --probe king --out out/minilm --lang en",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--probe", type=arguments.given(str, "a token string or a token id"), help=arguments.PROBE_HELP)
    p.add_argument("--out", type=arguments.given(Path, "a folder"), default=Path("."), help="folder for the report files (default: .)")
    arguments.add_language_argument(p, "the Markdown and HTML reports and the HTML report's figures")
    p.add_argument("--k", type=arguments.at_least(1, "neighbours per list"),
                   help=f"neighbours per list (default {REPORT_K}; V - 1 on a smaller table, said in a note)")
    p.add_argument("--stretch-factor", type=float, default=4.0,
                   help="factor for the stretched row, the 5th cosine neighbour or the last when --k is "
                        "below 5 (default 4.0)")
    p.add_argument("--growth-factor", "--growth", type=int, default=2, metavar="N",
                   help="vocabulary growth factor of the parameter count (default 2)")
    p.add_argument("--html", action="store_true",
                   help="also write embed_report.html: every section with its figures, one self-contained file "
                        "(needs the plots extra)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    arguments.check_model_options(args)
    names = ["embed_report.json", "embed_report.md"] + (["embed_report.html"] if args.html else [])
    files.check_writable(args.out / name for name in names)  # before the measurements: a bad --out costs nothing
    with arguments.working("embedlab report"):  # measured, rendered and written: then the summary is printed
        result = api.report(args.model, probe=args.probe, k=args.k, stretch_factor=args.stretch_factor,
                            growth_factor=args.growth_factor, tensor=args.tensor, words=args.words, figures=args.html,
                            table=args.table)
        # The report records the command line as typed (absolute paths shown relative), not the API call.
        result = replace(result, run=replace(result.run, command=run_record.command_line(["embedlab", *args.argv])))
        texts: dict[Path, str | bytes] = {
            args.out / names[0]: formats.to_json(result),
            args.out / names[1]: lab_report.report_markdown(result, args.lang),
        }
        if args.html:
            from ..report import html as html_report

            texts[args.out / names[2]] = html_report.report_html(result, args.lang)
        written = files.write_atomic(texts)
    print(terminal_text(lab_report.report_terminal(result, written)), end="")
    for reason in result.views.left_out.values() if result.views else ():
        print(terminal_text(f"note: embed_report.html leaves a figure out: {reason}"))
    return 0