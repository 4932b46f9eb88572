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
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .. import __version__, embed
from ..errors import EmbedlabError
from ..report.locales import DEFAULT_LANGUAGE, LANGUAGES

__all__ = ["main", "build_parser"]

# What a user's bad input raises: the reference raises builtins, the rest of the
# package EmbedlabError subclasses of them. Anything else is a bug and shows its
# traceback; EMBEDLAB_DEBUG=1 shows the traceback of these too. EOFError is what a file
# cut short raises in readers such as NumPy's: bad input, not a bug.
USER_ERRORS = (EmbedlabError, ValueError, IndexError, KeyError, TypeError, OSError, EOFError, ImportError,
               MemoryError)

# Third-party modules -> the extra that installs them, for a clear "install this" message.
EXTRAS = {"numpy": "models", "safetensors": "models", "tokenizers": "models", "pyarrow": "models",
          "tqdm": "models", "scipy": "models", "threadpoolctl": "models", "torch": "torch",
          "matplotlib": "plots", "sklearn": "plots", "umap": "plots"}
# The extras a command needs whatever its model (the model adds models or data, --html adds
# plots), so that one install hint names them all: installing one extra per failed run, only
# to be asked for the next, is what a hint must spare the user.
COMMAND_EXTRAS = {"plot": ("plots",), "demo": ("torch",), "positions": ("models",), "encode": ("models",),
                  "neighbors": ("models",), "hubs": ("models",)}
EXTRA_ORDER = ("models", "data", "torch", "plots")  # data, torch and plots each install models too


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 success, 1 error, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print(f"embedlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if os.environ.get("EMBEDLAB_DEBUG"):
            raise
        print(f"embedlab {args.command}: error: {_message(exc, args)}", file=sys.stderr)
        return 1


def _message(exc: BaseException, args: argparse.Namespace | None = None) -> str:
    """One line for the user: what went wrong, and for a missing library, every extra the command needs."""
    module = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and module in EXTRAS:
        extras = _extras_line(_command_extras(args) | {EXTRAS[module]})
        return (f"this command needs {exc.name}, which is not installed: pip install -c constraints.txt "
                f"-e '.[{extras}]' (or 'make test', which installs every extra)")
    if isinstance(exc, ImportError) and args is not None:
        # A library hint names the extra of the one thing it lacked: widen it to the whole command's.
        named = re.search(r"-e '\.\[([a-z,]+)\]'", str(exc))
        if named:
            extras = _extras_line(_command_extras(args) | set(named[1].split(",")))
            return str(exc).replace(named[0], f"-e '.[{extras}]'")
    if isinstance(exc, MemoryError):
        return "not enough memory for this size; try smaller sizes"
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def _command_extras(args: argparse.Namespace | None) -> set[str]:
    """The extras a command needs as called: its own, models for a real table, data for minilm and glove."""
    if args is None:
        return set()
    needs = set(COMMAND_EXTRAS.get(args.command, ()))
    model = getattr(args, "model", None)
    if model in ("minilm", "glove"):
        needs.add("data")
    elif model not in (None, "seed"):
        needs.add("models")
    if getattr(args, "html", False):
        needs.add("plots")
    return needs


def _extras_line(extras: set[str]) -> str:
    """``{"models", "data", "plots"}`` -> ``"data,plots"``: models goes without saying beside the others."""
    if len(extras) > 1:
        extras = extras - {"models"}
    return ",".join(e for e in EXTRA_ORDER if e in extras)


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
    p.add_argument("--probe", type=_given(str, "a token string or a token id"), help=PROBE_HELP)
    p.add_argument("--out", type=_given(Path, "a folder"), default=Path("."), help="folder for the report files (default: .)")
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
    p.set_defaults(run=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from ..measure import lab
    from ..report import render

    table = None
    if args.model == "seed":
        if args.tensor is not None or args.words is not None:
            raise ValueError("--tensor and --words do not apply to 'seed': it is the lab's built-in table")
        rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
        engine: lab.Engine = lab.ReferenceEngine(rows)
        probe = DEFAULT_PROBE_ID if args.probe is None else _seed_probe(args.probe)
        seed, source = embed.SEED, None
    else:
        from ..sources import loaders as sources

        table = sources.load(args.model, tensor=args.tensor, words=args.words)
        engine = lab.ArrayEngine(table)
        probe = _probe(table, args.probe)
        seed, source = None, table.provenance.to_dict()
    settings = lab.LabSettings(probe=probe, k=args.k, stretch_factor=args.stretch_factor,
                               growth_factor=args.growth)
    result = lab.measure(engine, settings, seed=seed, source=source)
    texts: dict[Path, str | bytes] = {
        args.out / "embed_report.json": render.report_json(result),
        args.out / "embed_report.md": render.report_markdown(result, settings, args.lang),
    }
    if args.html:
        from ..report import html as html_report
        from ..sources import loaders as sources

        table = table or sources.load("seed")
        figures, left_out = _report_figures(table, result, settings, args.lang)
        texts[args.out / "embed_report.html"] = html_report.report_html(result, settings, figures, args.lang,
                                                                        left_out)
    written = render.write_atomic(texts)
    print(render.report_terminal(result, written), end="")
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


# -- embedlab plot --------------------------------------------------------------

PROJECTION_METHODS = ("pca", "tsne", "umap")  # projection.METHODS, without importing NumPy here


def _add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plot", help="figures as PNG: projections, norms, neighbours before/after stretch, sqrt(d) scaling, "
                     "position tables, wavelength bands",
        description="Draw one figure of a table and write it as a PNG (needs the plots extra).",
        epilog="Examples:\n  embedlab plot projection --model glove --probe king --method umap --out king.png\n"
               "  embedlab plot norms --model minilm --out norms.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("figure", choices=sorted(PLOTS), help="which figure")
    _add_model_arguments(p)
    p.add_argument("--probe", type=_given(str, "a token string or a token id"), help=PROBE_HELP)
    p.add_argument("--method", choices=PROJECTION_METHODS, default="pca", help="projection method (default pca)")
    p.add_argument("--tokens", help="comma-separated tokens or ids to project, instead of the probe, "
                                    "its neighbours and a random sample")
    p.add_argument("--k", type=int, help="neighbours per list (default 10; 5 for neighbors; V - 1 when smaller)")
    p.add_argument("--sample", type=int, default=40, help="random rows added to a projection (default 40)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the sample, t-SNE and UMAP (default 0)")
    p.add_argument("--perplexity", type=float, help="t-SNE perplexity (below the number of points)")
    p.add_argument("--top", type=int, help="longest rows labelled in the norms figure (default 10, or V when smaller)")
    p.add_argument("--stretch-factor", type=float, default=4.0, help="neighbors: factor of the stretched row")
    p.add_argument("--max-positions", type=int, default=512,
                   help="positions: T_max of the sinusoidal table for a source without a position table (default 512)")
    p.add_argument("--widths", type=_widths, help="bands: comma-separated model widths (default D and D/2)")
    p.add_argument("--base", type=float, default=10000.0, help="positions, bands: sinusoidal base (default 10000)")
    p.add_argument("--size", type=_pixels, default=(1200, 800), help="WIDTHxHEIGHT in pixels (default 1200x800)")
    p.add_argument("--out", type=_png_path, help="PNG file to write (default FIGURE.png)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_plot)


def _run_plot(args: argparse.Namespace) -> int:
    from ..report import plots, render
    from ..sources import loaders as sources

    with _progress(3, f"plot {args.figure}", args.quiet) as bar:
        table = sources.load(args.model, tensor=args.tensor, words=args.words)
        bar.update()
        fig = PLOTS[args.figure](args, table, plots.new_figure(*args.size))
        bar.update()
        path = args.out or Path(f"{args.figure}.png")
        render.write_atomic({path: plots.png_bytes(fig)})
        bar.update()
    print(f"wrote {path} ({args.size[0]}x{args.size[1]} pixels)")
    return 0


def _plot_projection(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..measure import projection

    if args.tokens is not None:
        ids, groups = [table.token_id(t) for t in _token_list(args.tokens)], None
    else:
        ids, groups = projection.choose_rows(table, _probe(table, args.probe), k=10 if args.k is None else args.k,
                                             sample=args.sample, seed=args.seed)
    proj = projection.project(table, ids, args.method, groups=groups, seed=args.seed, perplexity=args.perplexity)
    return plots.projection_figure(proj, fig)


def _plot_norms(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import norms
    from ..report import plots

    top = min(10, table.V) if args.top is None else args.top
    return plots.norms_figure(norms.norm_distribution(table, top=top), fig)


def _plot_neighbors(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import lab
    from ..report import plots

    settings = lab.LabSettings(probe=_probe(table, args.probe), k=min(5, table.V - 1) if args.k is None else args.k,
                               stretch_factor=args.stretch_factor)
    return plots.stretch_figure(lab.compare_stretch(table, settings), fig)


def _plot_scale(args, table, fig):  # type: ignore[no-untyped-def]
    from ..measure import lab
    from ..report import plots

    probe = _probe(table, args.probe)
    k = min(10, table.V - 1) if args.k is None else args.k
    ids = table.nearest([probe], k, "cosine").ids[0].tolist()
    return plots.scale_figure(lab.compare_scale(table, probe, ids), fig)


def _plot_positions(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..measure import positions as position_similarity

    maps = position_similarity.position_maps(table, base=args.base, max_positions=args.max_positions)
    return plots.positions_figure(maps, fig)


def _plot_bands(args, table, fig):  # type: ignore[no-untyped-def]
    from ..report import plots
    from ..engine import positional

    widths = args.widths or [table.D, max(1, table.D // 2)]
    return plots.bands_figure({w: positional.wavelengths(w, args.base) for w in widths}, args.base, fig)


PLOTS = {"projection": _plot_projection, "norms": _plot_norms, "neighbors": _plot_neighbors, "scale": _plot_scale,
         "positions": _plot_positions, "bands": _plot_bands}


# -- embedlab params ---------------------------------------------------------

# The three forms of params (what is counted), and the options that belong to one form only:
# beside another form they would be silently ignored, so they are usage errors.
PARAMS_FORMS = {"vocab": "a model described by its sizes", "config": "a config.json alone",
                "model": "a safetensors checkpoint"}
PARAMS_FORM_OPTIONS = {"vocab": ("d_model", "untied", "max_positions", "positions", "type_vocab", "other"),
                       "model": ("tensor",)}


def _add_params(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "params", help="parameters and bytes of the tables, tied and untied, now and at a bigger vocabulary",
        description="Count the token table, position and token-type tables and the output head (0 when tied), "
                    "from sizes, from a config.json alone or from a safetensors checkpoint (headers only), "
                    "and set them beside the same model at a bigger vocabulary, tied and untied.",
        epilog="Examples:\n  embedlab params --vocab 50000 --d-model 768 --max-positions 1024 --dtype bf16\n"
               "  embedlab params --config path/to/config.json --factor 2\n"
               "  embedlab params --model minilm --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--vocab", type=int, metavar="V", help="vocabulary size V (with --d-model)")
    what.add_argument("--config", type=_given(Path, "a config.json or its folder"), help="a Hugging Face config.json (or its folder)")
    what.add_argument("--model", help="minilm or a safetensors checkpoint: a folder or a .safetensors file")
    p.add_argument("--d-model", type=int, metavar="D", help="model width D (with --vocab)")
    p.add_argument("--untied", action="store_true", help="a separate output head (default: tied)")
    p.add_argument("--max-positions", type=int, metavar="T_max", help="maximum context T_max")
    p.add_argument("--positions", choices=("learned", "sinusoidal", "rotary", "none"),
                   help="position kind (default: learned with --max-positions, else none)")
    p.add_argument("--type-vocab", type=int, help="rows of a token-type table (BERT: 2; default 0)")
    p.add_argument("--other", type=int, help="every other parameter of the model (default 0: the tables alone)")
    p.add_argument("--tensor", type=_given(str, "a tensor name"), help="with --model: the name of the token-embedding tensor")
    grow = p.add_mutually_exclusive_group()
    grow.add_argument("--factor", type=_int_or_float, help="vocabulary growth factor, a whole number (default 2)")
    grow.add_argument("--target-vocab", type=int, metavar="V", help="the bigger vocabulary size instead of a factor")
    p.add_argument("--dtype", help="bytes in fp32 (default; a checkpoint: its own), fp16, bf16, int8 or int4")
    p.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    p.set_defaults(run=_run_params, usage_error=p.error)


def _run_params(args: argparse.Namespace) -> int:
    from ..measure import params
    from ..report import render

    _check_params_form(args)
    if args.vocab is not None:
        count = params.from_numbers(args.vocab, args.d_model, tied=not args.untied, T_max=args.max_positions,
                                    positions=args.positions, type_vocab=args.type_vocab or 0,
                                    other=args.other or 0, dtype=args.dtype or "fp32")
    else:
        if args.config is not None:
            count = params.from_config(args.config, dtype=args.dtype or "fp32")
        else:
            from ..sources import loaders as sources

            count = params.from_checkpoint(sources.checkpoint_path(args.model), tensor=args.tensor, dtype=args.dtype)
    factor = 2 if args.factor is None and args.target_vocab is None else args.factor
    grown = params.growth(count.breakdown, factor=factor, target_V=args.target_vocab)
    print(render.params_json(count, grown) if args.json else render.params_terminal(count, grown), end="")
    return 0


def _check_params_form(args: argparse.Namespace) -> None:
    """A usage error (exit 2) for an option of another form than the one given, and for --vocab without --d-model.

    ``params --vocab 5 --d-model 3 --tensor x`` -> "--tensor does not apply with --vocab: it belongs
    with --model (a safetensors checkpoint)".
    """
    form = next(name for name in PARAMS_FORMS if getattr(args, name) is not None)
    problems = []
    for owner, options in PARAMS_FORM_OPTIONS.items():
        # `is`, not `in (None, False)`: --other 0 is given, though 0 == False.
        given = [f"--{name.replace('_', '-')}" for name in options
                 if getattr(args, name) is not None and getattr(args, name) is not False]
        if owner != form and given:
            verb, pronoun = ("does", "it belongs") if len(given) == 1 else ("do", "they belong")
            problems.append(f"{', '.join(given)} {verb} not apply with --{form}: {pronoun} with --{owner} "
                            f"({PARAMS_FORMS[owner]})")
    if form == "vocab" and args.d_model is None:
        problems.append("--vocab needs --d-model (the model width D)")
    if problems:
        args.usage_error("; ".join(problems))


def _int_or_float(text: str) -> int | float:
    """A number as typed; whether it is a valid factor is the library's to say (it names the value)."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


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
    from ..measure import demo
    from ..report import render

    settings = demo.DemoSettings(vocab_size=args.vocab, d_model=args.d_model, max_context_length=args.max_context,
                               batch_size=args.batch, seq_len=args.seq, seed=args.seed,
                               max_offset=args.max_offset, base=args.base)
    result = demo.demo(settings)
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
    from ..measure import positions as position_similarity
    from ..report import render
    from ..sources import loaders as sources

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
    from ..measure import encode as input_embedding
    from ..report import render
    from ..sources import loaders as sources

    tokenizer = sources.load_tokenizer(args.model)
    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    result = input_embedding.encode(table, tokenizer, args.texts, truncate=args.truncate, show=args.show)
    print(render.result_json(result) if args.json else render.encode_terminal(result), end="")
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
    p.add_argument("queries", nargs="*", metavar="QUERY",
                   help="token strings or token ids; id:N is always the id N, even where 'N' is also a token")
    p.add_argument("--k", type=int, default=10, help="neighbours per list (default 10)")
    p.add_argument("--by", choices=("cosine", "dot", "both"), default="both", help="which lists (default both)")
    p.add_argument("--vector", type=_given(Path, "a .npy file"), metavar="FILE.npy",
                   help="query vectors: a (D,) or (N, D) .npy array")
    _add_memory_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=_run_neighbors)


def _run_neighbors(args: argparse.Namespace) -> int:
    from ..report import render
    from ..sources import loaders as sources
    from ..measure.neighbors import neighbor_lists

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
    from ..report import render
    from ..sources import loaders as sources
    from ..measure.hubs import measure_hubs

    table = sources.load(args.model, tensor=args.tensor, words=args.words)
    n = table.V if args.queries is None else args.queries
    with _progress_bar(total=2 * n, desc="hubs") as advance:
        result = measure_hubs(table, args.k, n_queries=args.queries, seed=args.seed, top=args.top,
                              memory=args.memory, progress=advance)
    print(render.hubs_json(result) if args.json else render.hubs_terminal(result), end="")
    return 0


# -- shared arguments and helpers ----------------------------------------------

def _add_model_arguments(p: argparse.ArgumentParser, default: str = "seed") -> None:
    p.add_argument("--model", default=default,
                   help=f"seed, minilm, glove, or a path: a checkpoint folder, a .safetensors, "
                        f".npy or GloVe/word2vec text file (default {default})")
    p.add_argument("--tensor", type=_given(str, "a tensor name"), help="for a checkpoint: the name of the token-embedding tensor")
    p.add_argument("--words", type=_given(str, "a word-list file"),
                   help="for a .npy table: a file with one token per line, in row order")


# The probe when --probe is not given: "king" on a table whose vocabulary holds it (id 137
# of minilm is '[unused132]', a token that means nothing), else the lab's id 137, which
# keeps the seed report as it was.
DEFAULT_PROBE_TOKEN = "king"
DEFAULT_PROBE_ID = 137
PROBE_HELP = ("probe token: a token string or a token id; a number that is also a token is the token, write "
              "id:N to mean the id (default: 'king' where the table's vocabulary holds it, else id 137)")


def _probe(table: Any, given: str | None) -> int:
    """The probe's token id: ``given`` (a token or an id), else the default of PROBE_HELP."""
    if given is not None:
        return table.token_id(given)
    vocab = table.vocabulary
    if vocab is not None and DEFAULT_PROBE_TOKEN in vocab.token_to_index:
        return vocab.token_to_index[DEFAULT_PROBE_TOKEN]
    if table.V <= DEFAULT_PROBE_ID:
        raise ValueError(f"the default probe, id {DEFAULT_PROBE_ID}, is out of range for V={table.V}: give --probe, "
                         f"a token or an id below {table.V}")
    return table.token_id(DEFAULT_PROBE_ID)


def _add_memory_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory", type=_bytes, default=256 * 2**20, metavar="BYTES",
                   help="working memory of the search: a number of bytes, or with K, M or G "
                        "(binary: 1M = 2**20 bytes); default 256M")


def _bytes(text: str) -> int:
    """``"256M"`` -> 268435456: bytes, with an optional K/M/G suffix (powers of 1024)."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(?:([KMG])I?B?|B)?\s*", text.upper())
    if found is None:
        raise argparse.ArgumentTypeError(f"expected bytes such as 268435456, 512K, 256M or 1G, got {text!r}")
    value = int(float(found[1]) * units[found[2] or ""])
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
    """The seed table has no vocabulary: its probe is a token id (``137`` or ``id:137``)."""
    try:
        return int(text.removeprefix("id:"))
    except ValueError:
        raise ValueError(f"the seed table has no vocabulary: --probe must be a token id in [0, {embed.VOCAB}), "
                         f"got {text!r}") from None


def _given(convert: Callable[[str], Any], expected: str) -> Callable[[str], Any]:
    """An argument type that refuses an empty value (as a path, '' would silently be the current folder)."""
    def check(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"empty value {text!r}: expected {expected}")
        return convert(text)

    return check


def _widths(text: str) -> list[int]:
    """'64,32' -> [64, 32]: model widths, each at least 1."""
    try:
        widths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"widths {text!r} must be comma-separated ints, e.g. 64,32") from None
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"widths {text!r} must be ints >= 1")
    return widths


def _pixels(text: str) -> tuple[int, int]:
    """'1200x800' -> (1200, 800): a figure size in pixels, each side at least 100."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} must be WIDTHxHEIGHT in pixels, e.g. 1200x800") from None
    if not (100 <= width <= 10000 and 100 <= height <= 10000):
        raise argparse.ArgumentTypeError(f"size {text!r} must be between 100x100 and 10000x10000 pixels")
    return width, height


def _png_path(text: str) -> Path:
    """A file name ending in .png: figures are written as PNG only."""
    if not text.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"--out {text!r} must be a .png file name: figures are written as PNG")
    return Path(text)


def _token_list(text: str) -> list[str]:
    """'a,b,c' -> ['a', 'b', 'c']; an empty item is an error, not silently dropped."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise ValueError(f"--tokens {text!r} has an empty item: expected comma-separated tokens or ids, "
                         "e.g. king,queen")
    return items


@contextlib.contextmanager
def _progress(total: int, desc: str, quiet: bool) -> Iterator[Any]:
    """A tqdm bar on a terminal; silent when stderr is not a terminal or with --quiet."""
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, disable=quiet or not sys.stderr.isatty(), leave=False) as bar:
        yield bar


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_report,
    _add_params,
    _add_plot,
    _add_demo,
    _add_positions,
    _add_encode,
    _add_neighbors,
    _add_hubs,
)
