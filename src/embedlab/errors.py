"""The package's error classes.

Each one subclasses the builtin it refines, so callers can catch either the
embedlab class or the builtin (``except IndexError`` catches a bad token id).
The reference module ``embed.py`` raises the builtins directly, since it imports
nothing from the package. The CLI turns any of these into one line on stderr
and a non-zero exit code.
"""

import contextlib
from typing import Iterator

__all__ = [
    "needs_extra",
    "EmbedlabError",
    "TokenIdError",
    "UnknownTokenError",
    "TokenTypeError",
    "ShapeError",
    "OutputPathError",
    "BudgetError",
    "ContextLengthError",
    "SourceError",
    "NoTokenizerError",
    "UnsafeFormatError",
    "TyingConflictError",
    "MissingExtraError",
    "ConfigError",
    "ConfigSizeError",
    "SizeError",
    "DtypeError",
    "ChoiceError",
    "SchedulerError",
    "install_hint",
    "MODULE_EXTRAS",
    "missing_extra",
    "brief",
]


class EmbedlabError(Exception):
    """Base class of every error embedlab raises on purpose.

    Parameters
    ----------
    message : str
        The whole message, in the library's terms (it names Python parameters:
        ``seq_len=0 must be an int of at least 1``).
    parameter : str, optional
        The library parameter whose value was wrong (``"seq_len"``), so that a
        front end can name it in its own terms (the CLI's flag ``--seq-len``, the
        parameter's name) instead of rewriting the message. A value read from a
        file the parameter names is the dotted key (``"config.num_hidden_layers"``):
        no flag sets it, so a front end shows the whole message.
    value : object, optional
        The value that was given for ``parameter``.
    expected : str, optional
        What ``parameter`` accepts, as a phrase that reads after the value
        ("an int of at least 1").

    >>> err = SizeError("seq_len=0 must be an int of at least 1", parameter="seq_len", value=0,
    ...                 expected="an int of at least 1")
    >>> str(err), err.parameter, err.value
    ('seq_len=0 must be an int of at least 1', 'seq_len', 0)
    """

    def __init__(self, message: str = "", *, parameter: str | None = None, value: object = None,
                 expected: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.value = value
        self.expected = expected


class TokenIdError(EmbedlabError, IndexError):
    """A token id outside ``0 <= id < V`` (negative ids included)."""


class TokenTypeError(EmbedlabError, TypeError):
    """A query that cannot be a token id: a bool, a float, ``id:`` without an integer, or a
    token string on a table that has no vocabulary."""


class UnknownTokenError(EmbedlabError, KeyError):
    """A token string that is not in the vocabulary.

    Subclasses ``KeyError`` but prints its message plainly (a bare KeyError
    prints the repr of its argument, quotes and all).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ShapeError(EmbedlabError, ValueError):
    """An array, vector or sequence whose shape or length is not the expected one."""


class ContextLengthError(ShapeError):
    """A sequence longer than the position table: T > T_max (or T < 1)."""


class SourceError(EmbedlabError, ValueError):
    """A model source that cannot be read: unknown name, bad or truncated file,
    declared sizes that disagree with the data."""


class NoTokenizerError(SourceError):
    """A source that has no tokenizer at all: a folder with none of the tokenizer files, a GGUF file
    without a token list, word vectors. A tokenizer file that is there but cannot be read (not a
    regular file, past its cap, nested too deep, refused by the library) is a plain ``SourceError``."""


class UnsafeFormatError(SourceError):
    """A file format that can run code when loaded (pickle); refused."""


class TyingConflictError(SourceError):
    """The config and the checkpoint disagree about weight tying, or a head the
    config requires is missing from the file."""


class MissingExtraError(EmbedlabError, ImportError):
    """An optional dependency is not installed; the message names the extra.

    ``extras`` holds the names of the extras that install it (``("plots",)``),
    so a front end can widen the hint to everything a whole command needs
    without reading the message. ``install_hint`` writes the one hint text.

    >>> err = MissingExtraError.for_module("matplotlib", "figures", ("plots",))
    >>> err.extras, str(err)
    (('plots',), "figures need matplotlib, which is not installed: pip install -c constraints.txt -e '.[plots]'")
    """

    def __init__(self, message: str = "", *, extras: tuple[str, ...] = (), module: str | None = None) -> None:
        super().__init__(message)
        self.extras = tuple(extras)
        self.name = module  # as ImportError.name: the module that is missing

    @classmethod
    def for_module(cls, module: str, what: str, extras: tuple[str, ...]) -> "MissingExtraError":
        """``what`` (a plural noun phrase: "figures") needs ``module``, installed by ``extras``."""
        return cls(f"{what} need {module}, which is not installed: {install_hint(extras)}", extras=extras,
                   module=module)


# The order extras are named in; data, torch and plots each install models too.
EXTRA_ORDER = ("models", "data", "torch", "plots")


def install_hint(extras: "tuple[str, ...] | set[str]") -> str:
    """The one install command for a set of extras: ``pip install -c constraints.txt -e '.[data,plots]'``.

    ``models`` goes without saying beside any other extra (each of them installs it).

    >>> install_hint({"models", "plots"})
    "pip install -c constraints.txt -e '.[plots]'"
    """
    chosen = set(extras)
    if len(chosen) > 1:
        chosen -= {"models"}
    named = [e for e in EXTRA_ORDER if e in chosen] + sorted(chosen - set(EXTRA_ORDER))
    return f"pip install -c constraints.txt -e '.[{','.join(named)}]'"


# Third-party modules -> the extra that installs them.
MODULE_EXTRAS = {"numpy": "models", "safetensors": "models", "tokenizers": "models", "pyarrow": "models",
                 "tqdm": "models", "scipy": "models", "threadpoolctl": "models", "gguf": "models", "numba": "models",
                 "torch": "torch", "distributed": "cluster", "dask": "cluster",
                 "matplotlib": "plots", "sklearn": "plots", "umap": "plots", "plotly": "plots",
                 "adjustText": "plots", "fontTools": "plots", "brotli": "plots"}


def missing_extra(exc: ImportError, what: str) -> "MissingExtraError | None":
    """The ``MissingExtraError`` for an import that failed because an extra is not installed, else ``None``.

    ``what`` is a plural noun phrase for what needed the module (see
    ``MissingExtraError.for_module``). ``None`` for a module no extra installs
    (a bug or a broken install, which should show as it is).

    >>> err = missing_extra(ModuleNotFoundError("No module named 'numpy'", name="numpy"), "real tables")
    >>> err.extras, err.name
    (('models',), 'numpy')
    >>> missing_extra(ModuleNotFoundError("No module named 'nosuch'", name="nosuch"), "real tables") is None
    True
    """
    module = (exc.name or "").split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or module not in MODULE_EXTRAS:
        return None
    return MissingExtraError.for_module(module, what, (MODULE_EXTRAS[module],))


@contextlib.contextmanager
def needs_extra(what: str) -> Iterator[None]:
    """Around the imports of a module that needs an extra: a missing extra is a ``MissingExtraError`` naming it.

    ``what`` says what needs it ("hub counts", "GGUF files"). Imports stay inside the functions that need
    them, in plain sight, where a module is on the import-free path (``import embedlab``, the seed report).
    Any other import error (a bug, a broken install) shows as it is.

    >>> with needs_extra("figures"):
    ...     import json
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = missing_extra(exc, what)
        if missing is None:
            raise
        raise missing from exc


class ConfigError(SourceError):
    """A model config (``config.json``) that lacks a size or holds a bad value;
    the message names the key and the value."""


class ConfigSizeError(ConfigError):
    """A config that declares a size beyond what embedlab builds (more layers,
    experts or positions than any real model has room for, or a model of more
    modules than the bound); the message names the key, the value and the maximum."""


class SizeError(EmbedlabError, ValueError):
    """A size or count that is zero, negative or not a whole number (V, D,
    T_max, a growth factor); the message names the value."""


class SchedulerError(EmbedlabError, ConnectionError):
    """A Dask scheduler that cannot be reached (or an address that is not one); the
    message names the address and how long it waited."""


class BudgetError(SizeError):
    """A working-memory budget too small for one block of a search.

    ``minimum`` is the smallest budget, in bytes, that the plan accepts for
    the same search (``engine.neighbors.plan.plan_blocks``).

    >>> BudgetError("too small", minimum=4096, parameter="memory", value=1000).minimum
    4096
    """

    def __init__(self, message: str = "", *, minimum: int, **fields: object) -> None:
        super().__init__(message, **fields)  # type: ignore[arg-type]
        self.minimum = minimum


class DtypeError(EmbedlabError, ValueError):
    """A dtype name that embedlab does not know; the message lists the known ones."""


class OutputPathError(EmbedlabError, ValueError):
    """An output path that cannot be written as asked: a name whose suffix is
    not the format's, or a folder that does not exist."""


class ChoiceError(EmbedlabError, ValueError):
    """A value that is not one of a fixed set (a metric, a position kind, a
    projection method); ``expected`` lists the choices."""


BRIEF_LIMIT = 60  # characters of a value that a message quotes whole


def brief(value: object, limit: int = BRIEF_LIMIT) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters with an ellipsis and the length.

    A query, a token or a path the user typed is echoed back in a message; a
    10,000-character one would bury the message, so only its start is shown.

    >>> brief("king")
    "'king'"
    >>> brief("ab" * 40, limit=10)
    "'ababababab…' (80 characters)"
    """
    if isinstance(value, str) and len(value) > limit:
        quoted = repr(value[:limit])
        return f"{quoted[:-1]}…{quoted[-1]} ({len(value):,} characters)"  # the ellipsis inside the quotes
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
