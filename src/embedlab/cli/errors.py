"""From the library's exceptions to one line for the user, and the install hint for a missing extra."""

from __future__ import annotations

import argparse
import re

from ..errors import EmbedlabError

__all__ = ["USER_ERRORS", "EXTRAS", "COMMAND_EXTRAS", "message"]

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


def message(exc: BaseException, args: argparse.Namespace | None = None) -> str:
    """One line for the user: what went wrong, and for a missing library, every extra the command needs."""
    module = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and module in EXTRAS:
        extras = extras_line(command_extras(args) | {EXTRAS[module]})
        return (f"this command needs {exc.name}, which is not installed: pip install -c constraints.txt "
                f"-e '.[{extras}]' (or 'make test', which installs every extra)")
    if isinstance(exc, ImportError) and args is not None:
        # A library hint names the extra of the one thing it lacked: widen it to the whole command's.
        named = re.search(r"-e '\.\[([a-z,]+)\]'", str(exc))
        if named:
            extras = extras_line(command_extras(args) | set(named[1].split(",")))
            return str(exc).replace(named[0], f"-e '.[{extras}]'")
    if isinstance(exc, MemoryError):
        return "not enough memory for this size; try smaller sizes"
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def command_extras(args: argparse.Namespace | None) -> set[str]:
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


def extras_line(extras: set[str]) -> str:
    """``{"models", "data", "plots"}`` -> ``"data,plots"``: models goes without saying beside the others."""
    if len(extras) > 1:
        extras = extras - {"models"}
    return ",".join(e for e in EXTRA_ORDER if e in extras)


