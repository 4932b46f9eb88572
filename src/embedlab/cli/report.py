"""``embedlab report``: the lab report (JSON, Markdown, terminal; --html)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import embed
from ..report.locales import DEFAULT_LANGUAGE, LANGUAGES
from . import arguments


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="the lab report: lookup, tying, neighbours, sqrt(d) scaling",
        description="Measure the lab's experiments on one table and write embed_report.json and "
                    "embed_report.md into --out.",
        epilog="Examples:\n  embedlab report --out out/\n"
               "  embedlab report --model minilm --probe king --out out/minilm --lang en",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments.add_model_arguments(p)
    p.add_argument("--probe", type=arguments.given(str, "a token string or a token id"), help=arguments.PROBE_HELP)
    p.add_argument("--out", type=arguments.given(Path, "a folder"), default=Path("."), help="folder for the report files (default: .)")
    p.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE,
                   help=f"language of the Markdown report (default {DEFAULT_LANGUAGE})")
    p.add_argument("--k", type=int, default=5, help="neighbours per list (default 5)")
    p.add_argument("--stretch-factor", type=float, default=4.0,
                   help="factor for the stretched row, the 5th cosine neighbour or the last when --k is "
                        "below 5 (default 4.0)")
    p.add_argument("--growth", type=int, default=2, help="vocabulary growth factor (default 2)")
    p.add_argument("--html", action="store_true",
                   help="also write embed_report.html: every section with its figures, one self-contained file "
                        "(needs the plots extra)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..measure import lab
    from ..report import files, lab as lab_report

    table = None
    if args.model == "seed":
        if args.tensor is not None or args.words is not None:
            raise ValueError("--tensor and --words do not apply to 'seed': it is the lab's built-in table")
        rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
        engine: lab.Engine = lab.ReferenceEngine(rows)
        probe = arguments.DEFAULT_PROBE_ID if args.probe is None else arguments.seed_probe(args.probe)
        seed, source = embed.SEED, None
    else:
        from ..sources import loaders as sources

        table = sources.load(args.model, tensor=args.tensor, words=args.words)
        engine = lab.ArrayEngine(table)
        probe = arguments.probe_id(table, args.probe)
        seed, source = None, table.provenance.to_dict()
    settings = lab.LabSettings(probe=probe, k=args.k, stretch_factor=args.stretch_factor,
                               growth_factor=args.growth)
    result = lab.measure(engine, settings, seed=seed, source=source)
    texts: dict[Path, str | bytes] = {
        args.out / "embed_report.json": lab_report.report_json(result),
        args.out / "embed_report.md": lab_report.report_markdown(result, settings, args.lang),
    }
    if args.html:
        from ..report import html as html_report
        from ..sources import loaders as sources

        table = table or sources.load("seed")
        figures, left_out = _report_figures(table, result, settings, args.lang)
        texts[args.out / "embed_report.html"] = html_report.report_html(result, settings, figures, args.lang,
                                                                        left_out)
    written = files.write_atomic(texts)
    print(lab_report.report_terminal(result, written), end="")
    for reason in (r for reasons in left_out.values() for r in reasons) if args.html else ():
        print(f"note: embed_report.html leaves a figure out: {reason}")
    return 0


REPORT_NORMS_TOP = 10  # longest rows labelled in the report's norms figure, or V when smaller


def _report_figures(table, result, settings, lang):  # type: ignore[no-untyped-def]
    """Measure and draw the figures of each report section: {section: [(png, caption)]}, and
    {section: [why a figure is left out]} for figures the table is too small for."""
    from ..measure import lab, norms, projection
    from ..report import plots
    from ..report.locales import WORDS

    captions = WORDS[lang]["captions"]
    ids, groups = projection.choose_rows(table, settings.probe, k=settings.k)
    near = list(dict.fromkeys([*result.cos_neighbors, *result.dot_neighbors]))
    unfit = projection.unfit_reason("pca", len(ids), table.D)
    drawn = {
        "what": [("norms", plots.norms_figure(norms.norm_distribution(table, top=min(REPORT_NORMS_TOP, table.V))))],
        "lookup": [("cost", plots.cost_figure(result))],
        "tying": [("params", plots.params_figure(result))],
        "neighbors": [("stretch", plots.stretch_figure(lab.compare_stretch(table, settings)))],
        "scale": [("scale", plots.scale_figure(lab.compare_scale(table, settings.probe, near)))],
    }
    if unfit is None:
        drawn["what"].insert(0, ("projection",
                                 plots.projection_figure(projection.project(table, ids, "pca", groups=groups))))
    figures = {section: [(plots.png_bytes(fig), captions[name]) for name, fig in figs] for section, figs in drawn.items()}
    return figures, ({} if unfit is None else {"what": [unfit]})
