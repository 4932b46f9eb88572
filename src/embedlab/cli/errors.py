"""From the library's exceptions to one line for the user, in the CLI's own terms.

The library names its Python parameters (``seq_len=0 must be an int of at
least 1``); the user typed flags (``--seq 0``). An error that carries the
structured fields ``parameter``, ``value`` and ``expected`` is written again
from them, with the flag from ``FLAGS``: the one table from parameter to flag.
The message text itself is never parsed.
"""

from __future__ import annotations

import argparse

from ..errors import MODULE_EXTRAS, EmbedlabError, MissingExtraError, brief, install_hint

__all__ = ["USER_ERRORS", "COMMAND_EXTRAS", "FLAGS", "COMMAND_FLAGS", "flag", "message"]

# What the user got wrong rather than a bug: the builtins the library raises, and the
# package EmbedlabError subclasses of them. Anything else is a bug and shows its
# traceback; EMBEDLAB_DEBUG=1 shows the traceback of these too. EOFError is what a file
# cut short raises in readers such as NumPy's: bad input, not a bug.
USER_ERRORS = (EmbedlabError, ValueError, IndexError, KeyError, TypeError, OSError, EOFError, ImportError,
               MemoryError)

# Library parameter -> the flag that sets it, the same in every command that has it.
FLAGS = {
    "k": "--k", "top": "--top", "show": "--show", "seed": "--seed", "base": "--base", "sample": "--sample",
    "method": "--method", "perplexity": "--perplexity", "metric": "--metric", "dtype": "--dtype", "positions": "--positions",
    "stretch_factor": "--stretch-factor", "growth_factor": "--growth", "n_queries": "--queries",
    "type_vocab": "--type-vocab", "other": "--other", "factor": "--factor", "target_V": "--target-vocab",
    "V": "--vocab", "D": "--d-model", "T_max": "--max-positions", "max_positions": "--max-positions",
    "vocab_size": "--vocab", "d_model": "--d-model", "max_context_length": "--max-context",
    "batch_size": "--batch", "seq_len": "--seq", "max_offset": "--max-offset", "tensor": "--tensor",
    "words": "--words", "memory": "--memory", "probe": "--probe", "heads": "--heads", "layers": "--layers",
    "d_ff": "--d-ff", "dims": "--dims", "methods": "--methods", "rescore": "--rescore", "pq_m": "--pq-m",
    "tokens": "--tokens", "limit": "--limit", "out": "--out", "metadata": "--metadata", "format": "--format",
    "device": "--device", "scheduler": "--scheduler", "unused": "--unused", "percentile": "--percentile", "table": "--table",
}
# (command, parameter) -> flag, where a command spells a parameter its own way: in report
# and plot, EmbeddingTable.stretch's `factor` is --stretch-factor (params has --factor);
# plot bands draws one width of --widths per call (d_model), plot positions a sinusoidal
# table of --max-positions rows (num_positions).
COMMAND_FLAGS = {
    ("report", "factor"): "--stretch-factor", ("plot", "factor"): "--stretch-factor",
    ("plot", "d_model"): "--widths", ("plot", "num_positions"): "--max-positions",
}

# The extras a command needs whatever its model (the model adds models or data, --html adds
# plots), so that one install hint names them all: installing one extra per failed run, only
# to be asked for the next, is what a hint must spare the user.
COMMAND_EXTRAS = {"plot": ("plots",), "demo": ("torch",), "positions": ("models",), "encode": ("models",),
                  "neighbors": ("models",), "hubs": ("models",), "projector": ("plots",), "export": ("models",),
                  "graph": ("models",), "audit": ("models",)}
EVERY_EXTRA = "(or 'make test', which installs every extra)"


def message(exc: BaseException, args: argparse.Namespace | None = None) -> str:
    """One line for the user: what went wrong in the flags they typed, and for a missing
    library, one install hint with every extra the command needs."""
    module = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and module in MODULE_EXTRAS:
        hint = install_hint(command_extras(args) | {MODULE_EXTRAS[module]})
        return f"this command needs {exc.name}, which is not installed: {hint} {EVERY_EXTRA}"
    if isinstance(exc, MissingExtraError) and exc.extras:
        # The library's hint names the extra of the one thing it lacked: name the whole command's.
        hint = install_hint(command_extras(args) | set(exc.extras))
        return f"this command needs {exc.name or 'an optional package'}, which is not installed: {hint} {EVERY_EXTRA}"
    if isinstance(exc, EmbedlabError) and exc.expected is not None and args is not None:
        given = flag(args.command, exc.parameter)
        if given is not None:
            if exc.value is None:
                return f"{given} is missing: expected {exc.expected}"
            return f"{given} {shown(exc.value)}: expected {exc.expected}"
    if isinstance(exc, MemoryError):
        return "not enough memory for this size; try smaller sizes"
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def flag(command: str, parameter: str | None) -> str | None:
    """The flag that sets a library parameter in a command: ``("demo", "seq_len")`` -> ``"--seq"``; None if none does."""
    if parameter is None:
        return None
    return COMMAND_FLAGS.get((command, parameter), FLAGS.get(parameter))


def shown(value: object) -> str:
    """A value as the user typed it: numbers plain (``0``, ``nan``), a range of ids as ``first-last`` (what
    ``--unused`` takes), strings quoted and cut when long.

    >>> shown(999), shown(range(1, 100000000000)), shown(range(7, 8)), shown("x")
    ('999', '1-99999999999', '7', "'x'")
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, range) and value.step == 1 and len(value):
        return str(value.start) if len(value) == 1 else f"{value.start}-{value.stop - 1}"
    return brief(value)


def command_extras(args: argparse.Namespace | None) -> set[str]:
    """The extras a command needs as called: its own, models for a real table, data for minilm and glove,
    cluster for --scheduler, torch for --device."""
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
    if getattr(args, "scheduler", None):
        needs.add("cluster")
    if getattr(args, "device", None):
        needs.add("torch")
    return needs
