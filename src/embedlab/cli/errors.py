"""From the library's exceptions to one line for the user, in the CLI's own terms.

The library names its Python parameters (``seq_len=0 must be an int of at
least 1``); the user typed flags (``--seq-len 0``). A flag is its parameter's
name: ``--`` + ``parameter.replace("_", "-")`` (``seq_len`` -> ``--seq-len``),
the same word from the flag to the library call. An error that carries the
structured fields ``parameter``, ``value`` and ``expected`` is written again
from them with that flag, where the command has it, and in the spelling the
user typed (``--seq``, an older spelling still accepted, is named as typed),
its number as typed too (``--memory 1K``, not the 1024 it parsed to).
``FLAG_EXCEPTIONS`` holds the few places where a flag must differ from its
parameter, each with its reason. The message text itself is never parsed.
"""

from __future__ import annotations

import argparse

from ..errors import MODULE_EXTRAS, EmbedlabError, MissingExtraError, brief, install_hint

__all__ = ["USER_ERRORS", "COMMAND_EXTRAS", "FLAG_EXCEPTIONS", "flag", "flag_of", "option_spellings", "message",
           "typed_value"]

# What the user got wrong rather than a bug: the builtins the library raises, and the
# package EmbedlabError subclasses of them. Anything else is a bug and shows its
# traceback; EMBEDLAB_DEBUG=1 shows the traceback of these too. EOFError is what a file
# cut short raises in readers such as NumPy's: bad input, not a bug.
USER_ERRORS = (EmbedlabError, ValueError, IndexError, KeyError, TypeError, OSError, EOFError, ImportError,
               MemoryError)

# (command, parameter) -> the flag that sets it, where a flag cannot be its parameter's name.
FLAG_EXCEPTIONS = {
    # plot bands draws the wavelength bands of several model widths at once (--widths 64,32); the library
    # draws one width per call, engine.positional.wavelengths(d_model), and names that d_model.
    ("plot", "d_model"): "--widths",
}

# The extras a command needs whatever its model (the model adds models or data, --html adds
# plots), so that one install hint names them all: installing one extra per failed run, only
# to be asked for the next, is what a hint must spare the user.
COMMAND_EXTRAS = {"plot": ("plots",), "demo": ("torch",), "positions": ("models",), "encode": ("models",),
                  "neighbors": ("models",), "hubs": ("models",), "projector": ("plots",), "export": ("models",),
                  "graph": ("models",), "audit": ("models",),
                  "diff": ("models",)}
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
        given = flag(args, exc.parameter)
        if given is not None:
            if exc.value is None:
                return f"{given} is missing: expected {exc.expected}"
            return f"{given} {typed_value(args, given, exc.value)}: expected {exc.expected}"
    if isinstance(exc, MemoryError):
        return "not enough memory for this size; try smaller sizes"
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def flag_of(parameter: str) -> str:
    """The flag of a library parameter: its name with dashes (``"growth_factor"`` -> ``"--growth-factor"``)."""
    return "--" + parameter.replace("_", "-")


def flag(args: argparse.Namespace, parameter: str | None) -> str | None:
    """The flag that sets a library parameter in the command ``args`` were parsed for, as the user typed it.

    ``flag_of(parameter)`` (or the command's ``FLAG_EXCEPTIONS`` entry) where the
    command has that option (``args.flags``, set by the parser: ``option_spellings``);
    an older spelling the user typed (``--seq`` for ``--seq-len``) is named as typed.
    None where the command has no such option (a positional argument, a parameter
    the command never sets).

    >>> args = argparse.Namespace(command="demo", flags={"--seq-len": ("--seq-len", "--seq")}, argv=["--seq", "0"])
    >>> flag(args, "seq_len"), flag(args, "d_model")
    ('--seq', None)
    """
    if parameter is None:
        return None
    canonical = FLAG_EXCEPTIONS.get((getattr(args, "command", None), parameter), flag_of(parameter))
    spellings = getattr(args, "flags", {}).get(canonical)
    if spellings is None:
        return None
    typed = [word.split("=", 1)[0] for word in getattr(args, "argv", ()) if word.split("=", 1)[0] in spellings]
    return typed[-1] if typed else canonical  # the last one wins, as argparse takes it


def typed_value(args: argparse.Namespace, given: str, value: object) -> str:
    """A flag's number as the user typed it (``--memory 1K``, not the 1024 it parsed to), from the command
    line ``args.argv``, where the flag's whole value is the one in question; ``shown(value)`` for a value
    that is not a number, one item of a list (``--tokens 1,2,999``: ``999``), or a flag not found typed.

    >>> args = argparse.Namespace(argv=["hubs", "--memory", "1K", "--k=07", "--tokens", "1,9"], memory=1024, k=7,
    ...                           tokens="1,9", seed=3, flags={})
    >>> [typed_value(args, flag, v) for flag, v in (("--memory", 1024), ("--k", 7), ("--tokens", 9), ("--seed", 3))]
    ['1K', '07', '9', '3']
    """
    canonical = next((flag for flag, spellings in getattr(args, "flags", {}).items() if given in spellings), given)
    whole = getattr(args, canonical[2:].replace("-", "_"), None)  # the flag's parsed value (its dest)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or whole != value:
        return shown(value)
    words = list(getattr(args, "argv", ()))
    typed = [word.split("=", 1)[1] if "=" in word else (words[i + 1] if i + 1 < len(words) else None)
             for i, word in enumerate(words) if word.split("=", 1)[0] == given]
    return typed[-1] if typed and typed[-1] is not None else shown(value)  # the last one wins, as argparse takes it


def option_spellings(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """A parser's options: the flag that names each (its first option string) -> every spelling it accepts.

    Set on every command's parser as the default ``flags`` (``cli.build_parser``), so that ``flag`` knows
    which flags the command has. ``--help`` is left out.
    """
    return {action.option_strings[0]: tuple(action.option_strings) for action in parser._actions
            if action.option_strings and action.dest != "help"}


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
