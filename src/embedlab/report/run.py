"""The run record of a report: embedlab's version, the date and the command that produced it.

Every report (JSON ``run``, the Markdown's last line, the HTML's footer) says
which embedlab wrote it, when, and how to write it again. The command never
holds an absolute local path (``formats.shown_path``). Standard library only.
"""

from __future__ import annotations

import datetime
import os
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import __version__
from .formats import shown_path

__all__ = ["Run", "record", "report_date", "command_line", "call_form"]


@dataclass(frozen=True)
class Run:
    """Who wrote a report, when, and how.

    Attributes
    ----------
    version : str
        embedlab's version (``embedlab.__version__``).
    date : str
        When, in ISO 8601 UTC to the second: ``"2026-09-17T08:00:00Z"``.
    command : str or None
        The command line (``embedlab report --model minilm --out out``) or the
        Python call (``embedlab.report('minilm', probe='king')``) that produced
        it; ``None`` where no call can be written out (a table passed as an object).
    """

    version: str
    date: str
    command: str | None

    def to_dict(self) -> dict[str, Any]:
        """``{"version": ..., "date": ..., "command": ...}``: the report JSON's ``run`` object."""
        return {"version": self.version, "date": self.date, "command": self.command}


def record(command: str | None = None, date: str | datetime.datetime | None = None) -> Run:
    """The run record of a report made now (or at ``date``) by this embedlab.

    ``date`` as ``report_date`` takes it.

    >>> r = record("embedlab report", date="2026-09-17T08:00:00Z")
    >>> r.date, r.command, r.version == __import__("embedlab").__version__
    ('2026-09-17T08:00:00Z', 'embedlab report', True)
    """
    return Run(version=__version__, date=report_date(date), command=command)


def report_date(date: str | datetime.datetime | None = None) -> str:
    """A report's date: ISO 8601, UTC, to the second, ``Z`` for UTC.

    ``None`` is now, or the time ``SOURCE_DATE_EPOCH`` names where that is set
    (seconds since 1970, the reproducible-builds convention that matplotlib
    follows too), so a build or a test can fix it. A ``datetime`` without a time
    zone is taken as UTC; a string is taken as it is written.

    Raises ``ValueError`` for a ``SOURCE_DATE_EPOCH`` that is not a whole number.

    >>> report_date(datetime.datetime(2026, 9, 17, 10, 0, 5, 123, tzinfo=datetime.timezone(datetime.timedelta(hours=2))))
    '2026-09-17T08:00:05Z'
    """
    if isinstance(date, str):
        return date
    if date is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch is not None and epoch.strip():
            try:
                seconds = int(epoch)
            except ValueError:
                raise ValueError(f"SOURCE_DATE_EPOCH={epoch!r} must be a whole number of seconds since 1970") from None
            date = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        else:
            date = datetime.datetime.now(datetime.timezone.utc)
    if date.tzinfo is None:
        date = date.replace(tzinfo=datetime.timezone.utc)
    return date.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def command_line(argv: Sequence[str], cwd: str | os.PathLike | None = None) -> str:
    """A command line as a report records it: shell-quoted (``shlex.join``), every absolute path
    (an argument, or the value of ``--flag=PATH``) written as ``formats.shown_path`` writes it.

    >>> command_line(["embedlab", "report", "--model", "/home/me/lab/m", "--probe", "王",
    ...               "--out=/tmp/r"], cwd="/home/me/lab")
    "embedlab report --model m --probe '王' --out=r"
    """
    return shlex.join(_shown_argument(arg, cwd) for arg in argv)


def _shown_argument(arg: str, cwd: str | os.PathLike | None) -> str:
    flag, equals, value = arg.partition("=")
    if equals and flag.startswith("-") and os.path.isabs(value):
        return f"{flag}={shown_path(value, cwd=cwd)}"
    return shown_path(arg, cwd=cwd) if os.path.isabs(arg) else arg


def call_form(function: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
              cwd: str | os.PathLike | None = None) -> str | None:
    """A Python call written out, ``embedlab.report('minilm', probe='king')``, or ``None`` where an
    argument has no literal form (a table passed as an object, a list of rows).

    Keyword arguments left at ``None`` are left out; paths are written as ``command_line`` writes them.

    >>> call_form("embedlab.report", ["minilm"], {"probe": "王", "k": None, "growth_factor": 2})
    "embedlab.report('minilm', probe='王', growth_factor=2)"
    >>> call_form("embedlab.report", [[[1.0, 0.0], [0.0, 1.0]]]) is None
    True
    """
    values = [*args, *(value for value in (kwargs or {}).values() if value is not None)]
    if not all(isinstance(value, (str, int, float, os.PathLike)) for value in values):
        return None

    def literal(value: Any) -> str:
        if isinstance(value, os.PathLike) or (isinstance(value, str) and os.path.isabs(value)):
            return repr(_shown_argument(os.fspath(value), cwd))
        return repr(value)

    written = [literal(value) for value in args]
    written += [f"{key}={literal(value)}" for key, value in (kwargs or {}).items() if value is not None]
    return f"{function}({', '.join(written)})"
