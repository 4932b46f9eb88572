"""The table in the TensorBoard Embedding Projector's format: ``vectors.tsv`` and ``metadata.tsv``.

The rules are the projector's own reader's (TensorBoard,
``plugins/projector/vz_projector/data-provider.ts``: ``parseTensors`` and
``parseMetadata``), which splits a file on ``\\n`` and a line on ``\\t``,
with no quoting and no escapes:

* ``vectors.tsv``: one line per token, its D values as decimal numbers
  separated by tabs. Lines whose trimmed text is empty are skipped, a first
  value that is not a number is taken as a label, and a vector of one value
  is refused: so the values must be finite and D at least 2.
* ``metadata.tsv``: one line per token, in the same order. With a single
  column there is no header line (each line is the label: the common "vocab
  file"); with several columns the first line is a header of the column
  names, and it is recognised by holding a tab. Lines whose trimmed text is
  empty (JavaScript's ``String.prototype.trim``) are skipped.

So a token cannot hold a tab, a newline or a carriage return as it is: such
characters are written as the two characters ``\\t``, ``\\n``, ``\\r``, and the
result's notes name the ids. A blank token (empty, or only whitespace) would
be skipped in a one-column file, shifting every label after it: it is refused
there, with the advice to add the id column.

Values are written in the shortest text that reads back to the same number:
float64 tables as float64, every other dtype (float32, float16, bfloat16) as
float32, which holds them exactly and which the projector reads them into.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..engine.table import EmbeddingTable
from ..errors import ChoiceError, SizeError, brief
from .files import write_atomic
from .formats import source_name

__all__ = ["FORMATS", "COLUMNS", "Export", "projector_tsv", "write_projector", "metadata_cell"]

FORMATS = ("projector",)
COLUMNS = ("token", "id")  # the columns metadata.tsv may hold
# What a line of TensorBoard's TSV cannot hold, and the text written instead.
ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# The characters JavaScript's String.prototype.trim removes (WhiteSpace and LineTerminator,
# ECMA-262): a metadata line made only of these is skipped by the projector.
JS_WHITESPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                          "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
BLOCK_VALUES = 2**19  # values formatted at once (NumPy's text array takes 128 bytes a value)


@dataclass(frozen=True)
class Export:
    """What ``write_projector`` wrote.

    Attributes
    ----------
    format : str
        ``"projector"``.
    files : tuple of str
        The paths written, as given (``out/vectors.tsv``, ``out/metadata.tsv``).
    rows, D : int
        Lines of vectors.tsv (ids 0 .. rows - 1) and values per line.
    columns : tuple of str
        The columns of metadata.tsv; a header line is written when there are several.
    table : str
        Which table: its name (``formats.source_name``).
    notes : tuple of str
        Tokens written escaped, or a row count below V.
    """

    format: str
    files: tuple[str, ...]
    rows: int
    D: int
    columns: tuple[str, ...]
    table: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values."""
        return {"format": self.format, "files": list(self.files), "rows": self.rows, "D": self.D,
                "columns": list(self.columns), "table": self.table, "notes": list(self.notes)}


def projector_paths(out: str | os.PathLike) -> list[Path]:
    """The files ``write_projector`` writes into the folder ``out``: ``vectors.tsv``, then ``metadata.tsv``.

    >>> [str(p) for p in projector_paths("tsv")]
    ['tsv/vectors.tsv', 'tsv/metadata.tsv']
    """
    return [Path(out) / "vectors.tsv", Path(out) / "metadata.tsv"]


def write_projector(table: EmbeddingTable, out: str | os.PathLike, *, limit: int | None = None,
                    metadata: Sequence[str] | None = None) -> Export:
    """Write ``vectors.tsv`` and ``metadata.tsv`` into the folder ``out``: both or none (``files.write_atomic``).

    Parameters and errors as ``projector_tsv``; ``OSError`` where a file cannot be written.
    """
    vectors, labels, columns, notes = projector_tsv(table, limit=limit, metadata=metadata)
    written = write_atomic(dict(zip(projector_paths(out), (vectors, labels))))
    rows = table.V if limit is None else limit
    return Export(format="projector", files=tuple(str(p) for p in written), rows=rows, D=table.D,
                  columns=columns, table=source_name(table.provenance.to_dict()), notes=notes)


def projector_tsv(table: EmbeddingTable, *, limit: int | None = None,
                  metadata: Sequence[str] | None = None) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """The two files' text: (vectors.tsv, metadata.tsv, metadata's columns, notes).

    Parameters
    ----------
    table : EmbeddingTable
        The (V, D) table; never changed.
    limit : int, optional
        The first ``limit`` rows (ids 0 .. limit - 1), ``1 <= limit <= V``; all V by default.
    metadata : sequence of {"token", "id"}, optional
        metadata.tsv's columns, each once; default ``("token",)``, or
        ``("id",)`` for a table without vocabulary.

    Raises
    ------
    SizeError
        (a ``ValueError``) for a limit outside [1, V], or D < 2 (the projector refuses
        one-value vectors).
    ChoiceError
        (a ``ValueError``) for an unknown or repeated column, or ``token`` on a table without vocabulary.
    ValueError
        For a row holding NaN or infinity, or a blank token in a one-column metadata.tsv.

    >>> t = EmbeddingTable([[0.5, -1.0], [0.25, 3.0]], vocabulary=["a\\tb", "c"])
    >>> vectors, labels, columns, notes = projector_tsv(t)
    >>> vectors, labels, notes
    ('0.5\\t-1.0\\n0.25\\t3.0\\n', 'a\\\\tb\\nc\\n', ('1 token holds a tab, newline or carriage return, written as \\\\t, \\\\n, \\\\r: id 0',))
    >>> projector_tsv(t, metadata=["token", "id"])[1]
    'token\\tid\\na\\\\tb\\t0\\nc\\t1\\n'
    """
    rows = _check_limit(limit, table.V)
    if table.D < 2:
        raise SizeError(f"the projector reads vectors of at least 2 values, got D={table.D}", parameter="D",
                        value=table.D, expected="a table of D >= 2 (TensorBoard refuses one-value vectors)")
    columns = _check_columns(metadata, table.vocabulary is not None)
    labels, notes = _metadata_text(table, rows, columns)
    return _vectors_text(table, rows), labels, columns, notes


def metadata_cell(token: str) -> str:
    """A token as one cell of metadata.tsv: tab, newline and carriage return written as ``\\t``, ``\\n``, ``\\r``.

    >>> metadata_cell("a\\tb"), metadata_cell("</script>")
    ('a\\\\tb', '</script>')
    """
    return "".join(ESCAPES.get(ch, ch) for ch in token) if any(ch in ESCAPES for ch in token) else token


def _vectors_text(table: EmbeddingTable, rows: int) -> str:
    """vectors.tsv: ``rows`` lines of D tab-separated values, float32 or float64 shortest repr."""
    W = table.W_E
    dtype = np.float64 if W.dtype == np.float64 else np.float32
    step = max(1, BLOCK_VALUES // table.D)
    parts = []
    for start in range(0, rows, step):
        block = np.asarray(W[start:min(rows, start + step)], dtype=dtype)  # (b, D)
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            bad = start + int(np.flatnonzero(~finite)[0])
            raise ValueError(f"row {bad} holds NaN or infinity: the projector reads finite numbers only")
        # NumPy writes each value in the shortest text that reads back to it in its own dtype.
        parts.append("\n".join("\t".join(line) for line in block.astype(str).tolist()))
    return "\n".join(parts) + "\n"


def _metadata_text(table: EmbeddingTable, rows: int, columns: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """metadata.tsv and its notes: a header line only with several columns."""
    tokens = table.tokens(np.arange(rows)) if "token" in columns else None
    escaped = []
    lines = ["\t".join(columns)] if len(columns) > 1 else []
    for i in range(rows):
        cells = []
        for column in columns:
            if column == "id":
                cells.append(str(i))
                continue
            token = tokens[i]
            if len(columns) == 1 and all(ch in JS_WHITESPACE for ch in token):
                raise ValueError(f"token id {i} is blank ({brief(token)}): the projector skips blank lines of a "
                                 "one-column metadata.tsv, shifting every label after it; add the id column "
                                 "(metadata=('token', 'id'); --metadata token,id)")
            cell = metadata_cell(token)
            if cell != token:
                escaped.append(i)
            cells.append(cell)
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n", _escape_notes(escaped)


def _escape_notes(escaped: list[int]) -> tuple[str, ...]:
    if not escaped:
        return ()
    shown = ", ".join(map(str, escaped[:10])) + (", ..." if len(escaped) > 10 else "")
    held = "token holds" if len(escaped) == 1 else "tokens hold"
    return (f"{len(escaped)} {held} a tab, newline or carriage return, written as \\t, \\n, \\r: "
            f"id{'s' if len(escaped) > 1 else ''} {shown}",)


def _check_limit(limit: Any, V: int) -> int:
    if limit is None:
        return V
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or not 1 <= limit <= V:
        raise SizeError(f"limit={limit!r} rows: expected an int from 1 to V = {V}", parameter="limit",
                        value=limit, expected=f"an int from 1 to V = {V:,}")
    return int(limit)


def _check_columns(metadata: Sequence[str] | None, has_vocabulary: bool) -> tuple[str, ...]:
    if metadata is None:
        return ("token",) if has_vocabulary else ("id",)
    columns = (metadata,) if isinstance(metadata, str) else tuple(metadata)
    known = ", ".join(COLUMNS)
    if not columns or any(c not in COLUMNS for c in columns) or len(set(columns)) != len(columns):
        raise ChoiceError(f"metadata columns {columns!r}: expected one or more of {known}, each once",
                          parameter="metadata", value=",".join(map(str, columns)),
                          expected=f"one or more of {known}, each once, comma-separated")
    if "token" in columns and not has_vocabulary:
        raise ChoiceError("metadata column 'token': the table has no vocabulary", parameter="metadata",
                          value=",".join(columns), expected="id (this table has no vocabulary)")
    return columns
