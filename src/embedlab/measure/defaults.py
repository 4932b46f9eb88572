"""Counts left at their default shrink to fit a small table, and say so.

A default is a guess made for real tables (``k = 10`` neighbours); on a table
with fewer rows it would be refused although the user asked for nothing
unusual. So a count that was not given shrinks to what the table has, and the
result carries a note saying so. A count the user gave is never changed: the
measurement refuses it when it does not fit. Standard library only.
"""

from __future__ import annotations

__all__ = ["fit_default", "DEFAULT_TOP"]

DEFAULT_TOP = 10  # hubs and longest rows reported by the hubs measurement when top is not given (V on a smaller table)


def fit_default(given: int | None, default: int, limit: int, name: str, limit_name: str) -> tuple[int, tuple[str, ...]]:
    """The count to use and the notes that say why: ``given`` as it is, else ``default`` shrunk to ``limit``.

    Parameters
    ----------
    given : int or None
        The count the caller gave; ``None`` when left at its default.
    default : int
        The default for tables big enough.
    limit : int
        The largest count the table allows (``V - 1`` for neighbour lists).
    name, limit_name : str
        How the note names the count (``"k"``) and the limit (``"V - 1"``).

    Returns
    -------
    (int, tuple of str)
        The count, and one note when the default was shrunk (none otherwise).
        A limit below 1 shrinks nothing: the measurement then refuses the
        default with its own message (a table of one row has no neighbour).

    >>> fit_default(None, 10, 3, "k", "V - 1")
    (3, ('k = 3: the default 10 shrunk to V - 1',))
    >>> fit_default(20, 10, 3, "k", "V - 1"), fit_default(None, 10, 400, "k", "V - 1")
    ((20, ()), (10, ()))
    """
    if given is not None:
        return given, ()
    if 1 <= limit < default:
        return limit, (f"{name} = {limit}: the default {default} shrunk to {limit_name}",)
    return default, ()
