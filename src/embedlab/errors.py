"""The package's error classes.

Each one subclasses the builtin it refines, so callers can catch either the
embedlab class or the builtin (``except IndexError`` catches a bad token id).
The reference module ``embed.py`` raises the builtins directly, since it imports
nothing from the package. The CLI turns any of these into one line on stderr
and a non-zero exit code.
"""

__all__ = [
    "EmbedlabError",
    "TokenIdError",
    "UnknownTokenError",
    "ShapeError",
    "ContextLengthError",
    "SourceError",
    "UnsafeFormatError",
    "TyingConflictError",
    "MissingExtraError",
    "ConfigError",
    "SizeError",
    "DtypeError",
]


class EmbedlabError(Exception):
    """Base class of every error embedlab raises on purpose."""


class TokenIdError(EmbedlabError, IndexError):
    """A token id outside ``0 <= id < V`` (negative ids included)."""


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


class UnsafeFormatError(SourceError):
    """A file format that can run code when loaded (pickle); refused."""


class TyingConflictError(SourceError):
    """The config and the checkpoint disagree about weight tying, or a head the
    config requires is missing from the file."""


class MissingExtraError(EmbedlabError, ImportError):
    """An optional dependency is not installed; the message names the extra."""


class ConfigError(SourceError):
    """A model config (``config.json``) that lacks a size or holds a bad value;
    the message names the key and the value."""


class SizeError(EmbedlabError, ValueError):
    """A size or count that is zero, negative or not a whole number (V, D,
    T_max, a growth factor); the message names the value."""


class DtypeError(EmbedlabError, ValueError):
    """A dtype name that embedlab does not know; the message lists the known ones."""
