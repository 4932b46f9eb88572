"""``embedlab params``: parameters and bytes of the tables, tied and untied, now and at a bigger V."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import api
from ..report import formats, views
from ..report.formats import terminal_text
from . import arguments
from .errors import flag, flag_of


# The three forms of params (what is counted), and the options that belong to one form only:
# beside another form they would be silently ignored, so they are usage errors.
PARAMS_FORMS = {"vocab_size": "a model described by its sizes", "config": "a config.json alone",
                "model": "a safetensors checkpoint or a GGUF file"}
PARAMS_FORM_OPTIONS = {"vocab_size": ("d_model", "untied", "max_context_length", "positions", "type_vocab", "other",
                                      "heads", "layers", "d_ff"),
                       "model": ("tensor",)}


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "params", help="parameters and bytes of the tables, tied and untied, now and at a bigger vocabulary",
        description="Count the token table, position and token-type tables and the output head (0 when tied), "
                    "from sizes, from a config.json alone, from a safetensors checkpoint (headers only) "
                    "or from a llama.cpp GGUF file (tensor infos only), "
                    "and set them beside the same model at a bigger vocabulary, tied and untied.",
        epilog="Examples:\n  embedlab params --vocab-size 50000 --d-model 768 --max-context-length 1024 --dtype bf16\n"
               "  embedlab params --config path/to/config.json --growth-factor 2\n"
               "  embedlab params --model minilm --json\n"
               "  embedlab params --vocab-size 512 --d-model 64 --heads 4 --layers 2\n"
               "  embedlab params --model path/to/model.gguf",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--vocab-size", "--vocab", type=int, metavar="V", help="vocabulary size V (with --d-model)")
    what.add_argument("--config", type=arguments.given(Path, "a config.json or its folder"), help="a Hugging Face config.json (or its folder)")
    what.add_argument("--model", help="minilm, a safetensors checkpoint (a folder or a .safetensors file) "
                                         "or a llama.cpp .gguf file")
    p.add_argument("--d-model", type=int, metavar="D", help="model width D (with --vocab-size)")
    p.add_argument("--untied", action="store_true", help="a separate output head (default: tied)")
    p.add_argument("--max-context-length", "--max-positions", type=int, metavar="T_max",
                   help="maximum context T_max: the rows of a learned position table")
    p.add_argument("--positions", choices=("learned", "sinusoidal", "rotary", "none"),
                   help="position kind (default: learned with --max-context-length, else none)")
    p.add_argument("--type-vocab", type=int, help="rows of a token-type table (BERT: 2; default 0)")
    p.add_argument("--other", type=int, help="every other parameter of the model (default 0: the tables alone)")
    p.add_argument("--heads", type=int, metavar="h", help="attention heads h (with --layers): count the blocks and "
                                                          "show the dimension plan (d_k = D / h)")
    p.add_argument("--layers", type=int, metavar="L", help="layers L (with --heads)")
    p.add_argument("--d-ff", type=int, metavar="d_ff", help="feed-forward width (with --heads and --layers; "
                                                             "default 4 x D)")
    p.add_argument("--tensor", type=arguments.given(str, "a tensor name"), help="with --model: the name of the token-embedding tensor")
    grow = p.add_mutually_exclusive_group()
    grow.add_argument("--growth-factor", "--factor", type=_int_or_float, metavar="N",
                      help="vocabulary growth factor, a whole number (default 2)")
    grow.add_argument("--target-vocab-size", "--target-vocab", type=int, metavar="V",
                      help="the bigger vocabulary size instead of a growth factor")
    p.add_argument("--dtype", help="bytes in fp32 (default; a checkpoint: its own; a GGUF file: each tensor as "
                                   "stored), fp16, bf16, int8 or int4")
    p.add_argument("--json", action="store_true", help="print JSON instead of the tables")
    p.set_defaults(run=run, usage_error=p.error)


def run(args: argparse.Namespace) -> int:
    _check_params_form(args)
    with arguments.working("embedlab params"):
        result = api.params(args.vocab_size, args.d_model, config=args.config, model=args.model,
                            tied=False if args.untied else None, max_context_length=args.max_context_length,
                            positions=args.positions, type_vocab=args.type_vocab, other=args.other, tensor=args.tensor,
                            dtype=args.dtype, growth_factor=args.growth_factor, target_vocab_size=args.target_vocab_size,
                            heads=args.heads, layers=args.layers, d_ff=args.d_ff)
    text = formats.to_json(result) if args.json else views.params_terminal(result.count, result.growth)
    print(terminal_text(text), end="")
    return 0


def _check_params_form(args: argparse.Namespace) -> None:
    """A usage error (exit 2) for an option of another form than the one given, and for --vocab-size without --d-model.

    ``params --vocab-size 5 --d-model 3 --tensor x`` -> "--tensor does not apply with --vocab-size: it belongs
    with --model (a safetensors checkpoint)". Options given are named as typed (``--vocab``, an older
    spelling, stays ``--vocab``).
    """
    form = next(name for name in PARAMS_FORMS if getattr(args, name) is not None)
    problems = []
    for owner, options in PARAMS_FORM_OPTIONS.items():
        # `is`, not `in (None, False)`: --other 0 is given, though 0 == False.
        given = [flag(args, name) for name in options
                 if getattr(args, name) is not None and getattr(args, name) is not False]
        if owner != form and given:
            verb, pronoun = ("does", "it belongs") if len(given) == 1 else ("do", "they belong")
            problems.append(f"{', '.join(given)} {verb} not apply with {flag(args, form)}: {pronoun} with "
                            f"{flag_of(owner)} ({PARAMS_FORMS[owner]})")
    if form == "vocab_size" and args.d_model is None:
        problems.append(f"{flag(args, form)} needs --d-model (the model width D)")
    if args.max_context_length is not None and args.positions in ("none", "rotary"):
        problems.append(f"{flag(args, 'max_context_length')} does not apply with --positions {args.positions}: it is "
                        "the rows of a position table, and this kind has none to count")
    if args.positions == "learned" and args.max_context_length is None and form == "vocab_size":
        problems.append("--positions learned needs --max-context-length (T_max, the rows of the position table)")
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
