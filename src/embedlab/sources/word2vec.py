"""word2vec binary word vectors, as word2vec.c (``-binary 1``) and gensim (``binary=True``) write them.

The layout (gensim ``KeyedVectors.load_word2vec_format``, the oracle of the tests)::

    b"3 2\n"                                 header: V and D as ASCII integers
    b"king " + 2 float32 (little-endian)     one record per word: the word, a space, D values
    b"\n"                                    word2vec.c ends each record with a newline; gensim writes none

The file is recognised by its content, not by its suffix: ``.bin`` is also
the suffix of PyTorch pickles, which embedlab refuses (they can run code when
loaded). Nothing here unpickles: a word2vec file is parsed as bytes and floats.

At import the module needs the standard library only (``resolve`` uses the detector to
name a file's kind); NumPy is imported when a table is read.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.provenance import Provenance
from ..engine.vocabulary import Vocabulary
from ..errors import SourceError, brief
from . import files

if TYPE_CHECKING:
    import numpy as np

    from ..engine.table import EmbeddingTable

__all__ = ["is_word2vec_binary", "load_word2vec_binary"]

_HEADER = re.compile(rb"\A([0-9]+) ([0-9]+)[ \t\r]*\n")  # "V D\n", as both writers print it
_SNIFF = 1 << 16  # bytes read to recognise the format: the header and the first record
_BLANK = b" \t\r\n"  # what may follow the last record


def is_word2vec_binary(path: str | Path) -> bool:
    """Whether ``path`` holds word2vec binary vectors: a ``V D`` header line, then a word and raw floats.

    A word2vec *text* file has the same header; it is told apart by its first
    record, whose values are numbers written out (``king 0.1 0.2``). A file
    that cannot be read, is not a regular file, a pickle, a zip or anything else answers ``False``.
    """
    try:
        with files.open_regular(path) as handle:  # never a FIFO or a device: open() could block, read never end
            head = handle.read(_SNIFF)
    except (OSError, SourceError):
        return False
    header = _HEADER.match(head)
    if header is None:
        return False
    record = head[header.end():].lstrip(b"\n")
    if record.find(b" ") < 1:  # a record starts with a non-empty word and a space
        return False
    fields = [f for f in record.split(b"\n", 1)[0].rstrip(_BLANK).split(b" ") if f]
    return not (len(fields) > 1 and all(_is_number(f) for f in fields[1:]))  # written-out numbers: text


def load_word2vec_binary(path: str | Path) -> "EmbeddingTable":
    r"""A (V, D) float32 table and its words from a word2vec binary file, read as gensim reads it.

    Each record is a word (UTF-8, up to the first space; leading ``\n`` from
    the previous record's end dropped, as gensim does) and D little-endian
    float32 values. The header's V and D are checked against the data: a
    file cut short, or with more records than declared, is an error, never
    truncated or padded (C17). A word on several records keeps every row and
    means its first (gensim keeps the first copy); ``id:N`` reaches each.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    EmbeddingTable
        ``W_E`` (V, D) float32; ``provenance.source == "word2vec"``.

    Raises
    ------
    SourceError
        For a missing or bad header, fewer or more records than declared, a
        word that is empty or not UTF-8, or values that are not finite;
        the message names the record or both counts.
    """
    import numpy as np

    from ..engine.table import EmbeddingTable
    from .word_vectors import GENSIM_RULE

    path = Path(path)
    try:
        with files.open_regular(path, "word2vec file") as handle, \
                mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            V, D, start = _header(path, data)
            W = np.empty((V, D), dtype=np.float32)  # (V, D)
            words = _records(path, data, start, W)
    except (OSError, ValueError) as exc:  # ValueError: mmap of an empty file
        if isinstance(exc, SourceError):
            raise
        raise SourceError(f"cannot read {path}: {exc}") from None
    if not np.isfinite(W).all():
        row = int(np.flatnonzero(~np.isfinite(W).all(axis=1))[0])
        raise SourceError(f"{path} record {row + 1} ({brief(words[row])}): values must be finite float32 numbers")
    W.flags.writeable = False
    prov = Provenance("word2vec", path=str(path), dtype="float32", tie_evidence="word vectors: no output head")
    return EmbeddingTable(W, vocabulary=Vocabulary(words, rule=GENSIM_RULE), provenance=prov)


def _header(path: Path, data: mmap.mmap) -> tuple[int, int, int]:
    """(V, D, offset of the first record), checked against the file's size before anything is allocated."""
    header = _HEADER.match(data[:256])
    if header is None:
        raise SourceError(f"{path} does not start with a word2vec header: expected a line 'V D' of two integers")
    V, D = int(header[1]), int(header[2])
    if V < 1 or D < 1:
        raise SourceError(f"{path} header declares {V} vectors of {D} values: both must be at least 1")
    least = V * (2 + 4 * D)  # per record: a word of at least one byte, a space, D float32 values
    if len(data) - header.end() < least:
        raise SourceError(f"{path} declares {V} vectors of {D} float32 values in its header, at least {least:,} "
                          f"bytes, but holds {len(data) - header.end():,} after the header")
    return V, D, header.end()


def _records(path: Path, data: mmap.mmap, pos: int, W: "np.ndarray") -> list[str]:
    """Read V records into ``W`` (V, D) from ``pos``; the words in row order."""
    import numpy as np

    V, D = W.shape
    size, words = len(data), []
    for row in range(V):
        while pos < size and data[pos] == 0x0A:  # the newline word2vec.c writes after each record
            pos += 1
        space = data.find(b" ", pos)
        if space < 0 or size - (space + 1) < 4 * D:
            raise SourceError(f"{path} declares {V} vectors in its header but holds {row}")
        if space == pos:
            raise SourceError(f"{path} record {row + 1} has an empty word: expected a word, a space and {D} values")
        try:
            words.append(data[pos:space].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SourceError(f"{path} record {row + 1}: the word is not valid UTF-8 ({exc.reason} at byte "
                              f"{pos + exc.start})") from None
        W[row] = np.frombuffer(data[space + 1:space + 1 + 4 * D], dtype="<f4")  # (D,)
        pos = space + 1 + 4 * D
    if data[pos:].strip(_BLANK):
        raise SourceError(f"{path} declares {V} vectors in its header but holds more: {size - pos:,} bytes follow "
                          f"record {V}")
    return words


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True
