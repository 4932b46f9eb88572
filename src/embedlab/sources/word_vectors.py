"""Word vectors as text (GloVe, word2vec text) and word lists: one token per row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from ..errors import SourceError, brief, needs_extra
from ..engine.provenance import Provenance
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import Vocabulary
from . import files

__all__ = ["GENSIM_RULE", "BOM", "load_text", "read_words", "parquet_words"]

# Which row a repeated word means (``Vocabulary``'s ``rule``): gensim keeps the first copy.
GENSIM_RULE = "the first copy, as gensim reads word vectors"

BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark


def load_text(path: str | Path) -> EmbeddingTable:
    r"""GloVe text (``word v1 ... vD`` per line) or word2vec text (a ``V D`` header first).

    Read as gensim's ``KeyedVectors.load_word2vec_format`` reads it: lines end
    at ``\n`` alone, trailing ASCII whitespace is dropped, and fields are
    split on the ASCII space only, so a token holding U+00A0, U+3000 or any
    other Unicode space loads whole (``"new\u3000york 0.1 0.2"`` is one token
    and two values). A first line of exactly two integers is the word2vec
    header, never a token; without one, D is the number of values on the
    first line. Every line must then hold one word and exactly D values (a
    first line of a word alone is an error, not D = 0), and a declared V
    must match the rows found. A UTF-8 byte-order mark is skipped. A word
    that appears on several lines keeps every row (``id:N`` reaches each);
    the word itself means its first row, as gensim keeps the first copy
    (``Vocabulary.repeats`` lists the rest).

    Parameters
    ----------
    path : str or Path
        The text file.

    Returns
    -------
    EmbeddingTable
        (V, D) float32, with the words as its vocabulary.

    Raises
    ------
    SourceError
        For a file that is not a regular file (``files.regular_file``), an
        unreadable or non-UTF-8 file, a bad header, a line longer than
        ``files.LINE_CAP``, a line with the wrong number of fields or values
        that are not finite float32 numbers, or a header whose V differs from
        the rows found (reading stops at the first row past it); the message
        names the line, the value or both counts.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder, "v.txt")
    ...     _ = path.write_text("new\u3000york 1 2\ncat 3 4\n", encoding="utf-8")
    ...     load_text(path).vocabulary.index_to_token
    ('new\u3000york', 'cat')
    """
    path = Path(path)
    tokens: list[str] = []
    rows: list[np.ndarray] = []
    declared = dim = None
    try:
        with files.open_regular(path, "word-vector file") as handle:
            for number, raw in enumerate(_lines(path, handle), start=1):
                parts = _fields(path, number, raw.removeprefix(BOM) if number == 1 else raw)
                if not parts:
                    continue
                if number == 1 and len(parts) == 2 and all(_INTEGER.fullmatch(p) for p in parts):
                    declared, dim = _text_header(path, parts)
                    continue
                if declared is not None and len(rows) == declared:  # a row past the header's V: stop reading
                    raise SourceError(f"{path} declares {declared} vectors in its header but holds more: line "
                                      f"{number} is vector {declared + 1}")
                if dim is None and len(parts) == 1:  # D would be 0: a word list, not vectors
                    raise SourceError(f"{path} line {number}: expected a word followed by its D numbers, got only "
                                      f"{brief(parts[0])} (a word list, one token per line, goes with --words beside "
                                      "a .npy table)")
                dim = len(parts) - 1 if dim is None else dim
                rows.append(_values(path, number, parts, dim))
                tokens.append(parts[0])
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    if declared is not None and declared != len(rows):
        raise SourceError(f"{path} declares {declared} vectors in its header but holds {len(rows)}")
    if not rows or dim == 0:
        raise SourceError(f"{path} holds no vectors")
    prov = Provenance("text", path=str(path), dtype="text", tie_evidence="word vectors: no output head")
    return EmbeddingTable(np.stack(rows), vocabulary=Vocabulary(tokens, rule=GENSIM_RULE), provenance=prov)


def read_words(path: str | Path) -> list[str]:
    r"""The lines of a vocabulary file (``vocab.txt``, a word list), split as transformers' ``load_vocab`` splits them.

    ``load_vocab`` reads the file in text mode, where a line ends at ``"\n"``,
    ``"\r\n"`` or ``"\r"`` and nowhere else; ``str.splitlines`` would also
    break at U+2028, U+2029, U+0085, U+000B, U+000C, U+001C..U+001E, which are
    tokens in real vocabularies (a byte-level BPE or a multilingual WordPiece
    keeps them as they are). So ``"a\n\u2028\nb\n"`` is three tokens, the
    middle one U+2028. A UTF-8 byte-order mark is not part of the first token,
    and blank lines at the very end are not tokens. Repeated lines are kept:
    which id a repeated token means is the caller's to say (``npy.load_npy``:
    the first copy; ``tokenizer.folder_vocabulary``: the last, as
    ``BertTokenizer`` reads ``vocab.txt``).

    Raises ``SourceError`` for an empty file name, a file that is not a
    regular file or is larger than ``files.WORDS_CAP``, an unreadable or
    non-UTF-8 file or an empty line (a token cannot be empty).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder, "vocab.txt")
    ...     _ = path.write_bytes("a\r\n\u2028\rz\x85\n".encode("utf-8"))
    ...     read_words(path)
    ['a', '\u2028', 'z\x85']
    """
    if isinstance(path, str) and not path.strip():
        raise SourceError(f"empty file name {path!r}: expected a word list, one token per line")
    data = files.read_capped(path, "word list", files.WORDS_CAP)
    data = data.removeprefix(BOM)  # a UTF-8 byte-order mark is not part of the first token
    try:
        lines = _LINE_BREAK.split(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data[:exc.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
        raise SourceError(f"{path} line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x}): expected a word "
                          "list in UTF-8, one token per line") from None
    while lines and not lines[-1]:  # blank lines at the very end are not tokens
        lines.pop()
    for number, word in enumerate(lines, start=1):
        if not word:
            raise SourceError(f"{path} line {number} is empty: expected one token per line")
    return lines


# -- helpers ---------------------------------------------------------------------------

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # text mode's line ends (universal newlines), nothing more

_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: "²" or "１３７" are tokens, never a header

_TRAILING = b" \t\n\r\x0b\x0c"  # what gensim's bytes.rstrip() drops: ASCII whitespace only


def _lines(path: Path, handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines, each ending at b"\n" only (as gensim's readline), none longer than ``files.LINE_CAP``:
    a file without line ends is refused at the cap instead of read whole into one line."""
    number = 0
    while line := handle.readline(files.LINE_CAP + 1):
        number += 1
        if len(line) > files.LINE_CAP:
            raise SourceError(f"{path} line {number} is longer than {files.size_text(files.LINE_CAP)}, the most "
                              "embedlab reads for one line of word vectors")
        yield line


def _fields(path: Path, number: int, raw: bytes) -> list[str]:
    """One line's fields: split on the ASCII space only (empty fields from doubled spaces dropped)."""
    try:
        line = raw.rstrip(_TRAILING).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path} line {number} is not valid UTF-8 (byte 0x{raw[exc.start]:02x}): expected "
                          "word vectors in UTF-8") from None
    return [part for part in line.split(" ") if part]


def _values(path: Path, number: int, parts: list[str], dim: int) -> np.ndarray:
    """The D values of one line as float32, shape (D,), checked finite and in float32's range."""
    if len(parts) != dim + 1:
        raise SourceError(f"{path} line {number}: expected a word and {dim} values, got {len(parts)} fields")
    try:
        values = np.array(parts[1:], dtype=np.float64)  # (D,)
    except ValueError:
        raise SourceError(f"{path} line {number}: expected a word followed by {dim} numbers, but the "
                          f"values of {brief(parts[0])} are not all numbers") from None
    if not np.isfinite(values).all() or np.abs(values).max() > np.finfo(np.float32).max:
        raise SourceError(f"{path} line {number}: values of {brief(parts[0])} must be finite float32 "
                          f"numbers (|x| <= 3.4e38)")
    return values.astype(np.float32)


def _text_header(path: Path, parts: list[str]) -> tuple[int, int]:
    declared, dim = int(parts[0]), int(parts[1])
    if declared < 1 or dim < 1:
        raise SourceError(f"{path} header declares {declared} vectors of {dim} values: both must be at least 1")
    return declared, dim


def parquet_words(path: Path, *, expected: int) -> Vocabulary:
    with needs_extra("the glove word list"):
        import pyarrow.parquet as pq  # the glove word list only: pyarrow's import costs ~60 ms every other load saves
    words = pq.read_table(path, columns=["index"]).column("index").to_pylist()
    if len(words) != expected:
        raise SourceError(f"{path} has {len(words)} words but the table has {expected} rows")
    return Vocabulary(words, rule=GENSIM_RULE)
