"""Word vectors as text (GloVe, word2vec text) and word lists: one token per row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import MissingExtraError, SourceError
from ..engine.provenance import Provenance
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import Vocabulary

__all__ = ["load_text", "read_words", "check_unique", "parquet_words"]


def load_text(path: str | Path) -> EmbeddingTable:
    """GloVe text (``word v1 ... vD`` per line) or word2vec text (a ``V D`` header first).

    A first line of exactly two integers is the word2vec header, never a
    token; without one, D is the number of values on the first line. Every
    line must then hold one word and exactly D values (words hold no
    whitespace; a first line of a word alone is an error, not D = 0), a
    declared V must match the rows found, and no word may appear twice. A
    UTF-8 byte-order mark is skipped.

    Raises ``SourceError`` naming the line, the value or both counts.
    """
    path = Path(path)
    tokens: list[str] = []
    rows: list[np.ndarray] = []
    declared = dim = None
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                parts = line.split()
                if not parts:
                    continue
                if number == 1 and len(parts) == 2 and all(_is_int(p) for p in parts):
                    declared, dim = _text_header(path, parts)
                    continue
                if dim is None and len(parts) == 1:  # D would be 0: a word list, not vectors
                    raise SourceError(f"{path} line {number}: expected a word followed by its D numbers, got only "
                                      f"{parts[0]!r} (a word list, one token per line, goes with --words beside a "
                                      ".npy table)")
                dim = len(parts) - 1 if dim is None else dim
                if len(parts) != dim + 1:
                    raise SourceError(f"{path} line {number}: expected a word and {dim} values, "
                                      f"got {len(parts)} fields")
                try:
                    values = np.array(parts[1:], dtype=np.float64)  # (D,)
                except ValueError:
                    raise SourceError(f"{path} line {number}: expected a word followed by {dim} numbers, but the "
                                      f"values of {parts[0]!r} are not all numbers") from None
                if not np.isfinite(values).all() or np.abs(values).max() > np.finfo(np.float32).max:
                    raise SourceError(f"{path} line {number}: values of {parts[0]!r} must be finite float32 "
                                      f"numbers (|x| <= 3.4e38)")
                rows.append(values.astype(np.float32))
                tokens.append(parts[0])
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path} is not UTF-8 text: {exc}") from None
    if declared is not None and declared != len(rows):
        raise SourceError(f"{path} declares {declared} vectors in its header but holds {len(rows)}")
    if not rows or dim == 0:
        raise SourceError(f"{path} holds no vectors")
    check_unique(tokens, path)
    prov = Provenance("text", path=str(path), dtype="text", tie_evidence="word vectors: no output head")
    return EmbeddingTable(np.stack(rows), vocabulary=tokens, provenance=prov)


def read_words(path: str | Path) -> list[str]:
    """One token per line (a word list, ``vocab.txt``), in id order; the line break is not part of it.

    Raises ``SourceError`` for an empty file name, an unreadable file, an
    empty line or a token that appears twice (either would make ids and strings disagree).
    """
    if isinstance(path, str) and not path.strip():
        raise SourceError(f"empty file name {path!r}: expected a word list, one token per line")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read the word list {path}: {exc.strerror or exc}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is not part of the first token
    try:
        words = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SourceError(f"{path} line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x}): expected a word "
                          "list in UTF-8, one token per line") from None
    while words and not words[-1]:  # blank lines at the very end are not tokens
        words.pop()
    for number, word in enumerate(words, start=1):
        if not word:
            raise SourceError(f"{path} line {number} is empty: expected one token per line")
    check_unique(words, path)
    return words


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _text_header(path: Path, parts: list[str]) -> tuple[int, int]:
    declared, dim = int(parts[0]), int(parts[1])
    if declared < 1 or dim < 1:
        raise SourceError(f"{path} header declares {declared} vectors of {dim} values: both must be at least 1")
    return declared, dim


def check_unique(tokens: list[str], path: Path | str) -> None:
    seen: dict[str, int] = {}
    for row, token in enumerate(tokens):
        if token in seen:
            raise SourceError(f"{path}: token {token!r} appears twice (rows {seen[token]} and {row})")
        seen[token] = row


def parquet_words(path: Path, *, expected: int) -> Vocabulary:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError.for_module("pyarrow", "the glove word index (Parquet)", ("models",)) from None
    words = pq.read_table(path, columns=["index"]).column("index").to_pylist()
    if len(words) != expected:
        raise SourceError(f"{path} has {len(words)} words but the table has {expected} rows")
    return Vocabulary(words)
