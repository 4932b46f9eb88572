"""Vocabulary: token id <-> token string, for tables that come with one, and the
one resolver that turns what a user writes (an id, a token, ``id:N``) into ids.

Standard library only. A vocabulary of size ``V`` holds one string per token id;
ids that have no string in the source (padding rows of a checkpoint whose table is
larger than its tokenizer) hold ``None`` and are shown as ``<id 50257>``.
"""

from __future__ import annotations

import difflib
import numbers
import re
from typing import Any, Iterable

from ..errors import TokenIdError, TokenTypeError, UnknownTokenError, brief

__all__ = ["Vocabulary", "resolve_id", "resolve_ids"]


class Vocabulary:
    """Token strings in id order, and the reverse map.

    Parameters
    ----------
    tokens : iterable of str or None
        ``tokens[i]`` is the string of token id ``i``; ``None`` where the source
        has none. If a string appears twice, the smaller id owns it.

    >>> v = Vocabulary(["[PAD]", "king", "queen"])
    >>> v.id("queen"), v.token(1), len(v)
    (2, 'king', 3)
    """

    def __init__(self, tokens: Iterable[str | None]) -> None:
        self._tokens: tuple[str | None, ...] = tuple(tokens)
        self._index: dict[str, int] | None = None  # built on first use

    def __len__(self) -> int:
        return len(self._tokens)

    @property
    def index_to_token(self) -> tuple[str | None, ...]:
        """Token strings in id order, shape (V,), ``None`` where unknown."""
        return self._tokens

    @property
    def token_to_index(self) -> dict[str, int]:
        """Map token string -> token id (a new dict each call is avoided: do not mutate)."""
        if self._index is None:
            index: dict[str, int] = {}
            for i, tok in enumerate(self._tokens):
                if tok is not None and tok not in index:
                    index[tok] = i
            self._index = index
        return self._index

    def token(self, token_id: int) -> str:
        """The string of ``token_id``; ``<id N>`` when the source has none.

        Raises ``TokenIdError`` (an ``IndexError``) outside ``0 <= id < V``.
        """
        if not 0 <= token_id < len(self._tokens):
            raise TokenIdError(f"token id {token_id} is out of range for V={len(self._tokens)}")
        tok = self._tokens[token_id]
        return f"<id {token_id}>" if tok is None else tok

    def id(self, token: str) -> int:
        """The token id of a string.

        Raises
        ------
        UnknownTokenError
            (a ``KeyError``) if the string is not in the vocabulary; the
            message suggests close entries.
        """
        found = self.token_to_index.get(token)
        if found is None:
            close = self.suggest(token)
            hint = f"; close entries: {', '.join(map(repr, close))}" if close else ""
            raise UnknownTokenError(
                f"token {brief(token)} is not in the vocabulary (V={len(self)}){hint}",
                parameter="token", value=token, expected=f"a token of the vocabulary (V={len(self)}){hint}")
        return found

    def suggest(self, token: str, n: int = 5) -> list[str]:
        """Up to ``n`` vocabulary entries that look like ``token`` (difflib ratio, case folded).

        Only entries of similar length and the same first letter (case folded)
        are compared, so a 400,000-word vocabulary answers in well under a second.
        """
        folded = token.casefold()
        pool: dict[str, str] = {}  # folded entry -> the entry, the smaller id first
        for entry in self.token_to_index:
            key = entry.casefold()
            if abs(len(entry) - len(token)) <= 2 and key[:1] == folded[:1] and key not in pool:
                pool[key] = entry
        return [pool[key] for key in difflib.get_close_matches(folded, list(pool), n=n, cutoff=0.6)]


# -- the token resolver ----------------------------------------------------------

_DECIMAL = re.compile(r"-?[0-9]+")  # ASCII digits only: "²" or "１３７" are strings, never ids


def resolve_ids(queries: Iterable[Any], V: int, vocabulary: Vocabulary | None = None, *,
                parameter: str | None = None) -> list[int]:
    """Token ids for queries written as ids or token strings, each checked against ``[0, V)``.

    The one place where a query becomes a token id; every method of the
    package that takes ids goes through it (``EmbeddingTable.token_id``,
    ``lookup``, ``nearest``, the report's probe). The rules, per query:

    * an ``int`` (NumPy integers included) is an id, ``0 <= id < V``; a
      negative id is out of vocabulary, never counted from the end;
    * ``"id:N"`` is always the id ``N``, even where ``"N"`` is also a token;
    * any other string is a token of the vocabulary; a string of ASCII
      digits (``"137"``, surrounding spaces allowed) that is not a token is
      the id, so a table without vocabulary can be queried with text;
    * a bool, a float or anything else is a ``TypeError``.

    Parameters
    ----------
    queries : iterable of int or str, length N
        One query each; a single str is one query, not N characters.
    V : int
        Vocabulary size: rows of the table.
    vocabulary : Vocabulary, optional
        The table's token strings; ``None`` for a table without one.
    parameter : str, optional
        The caller's parameter name (``"probe"``), put on the errors'
        ``parameter`` field so a front end can name its own spelling.

    Returns
    -------
    list of int, length N

    Raises
    ------
    TokenIdError
        (an ``IndexError``) for an id outside ``[0, V)``, naming it and V.
    UnknownTokenError
        (a ``KeyError``) for a string that is neither a token nor an id; the
        message suggests close entries (``Vocabulary.suggest``).
    TypeError
        For a bool, a float or another type, for ``id:`` followed by anything
        but an integer, and for a token string on a table without vocabulary.

    >>> vocab = Vocabulary(["king", "queen", "1999"])
    >>> resolve_ids(["queen", 0, "1999", "id:2", " 1 "], 3, vocab)
    [1, 0, 2, 2, 1]
    """
    items = [queries] if isinstance(queries, str) else queries
    return [resolve_id(q, V, vocabulary, parameter=parameter) for q in items]


def resolve_id(query: Any, V: int, vocabulary: Vocabulary | None = None, *, parameter: str | None = None) -> int:
    """One query as a checked token id; the rules and errors of ``resolve_ids``.

    >>> resolve_id("id:3", 4), resolve_id("king", 4, Vocabulary(["a", "b", "king", "d"]))
    (3, 2)
    """
    if type(query) is int or (isinstance(query, numbers.Integral) and not isinstance(query, bool)):
        return _checked(int(query), V, parameter)
    if not isinstance(query, str):
        raise TokenTypeError(f"token ids must be ints or token strings, got {brief(query)} ({type(query).__name__})",
                             parameter=parameter, value=query, expected=f"a token id in [0, {V}) or a token")
    if query.startswith("id:"):
        return _checked(_parse_id(query, V, parameter), V, parameter)
    if vocabulary is not None and query in vocabulary.token_to_index:
        return vocabulary.token_to_index[query]
    if _DECIMAL.fullmatch(query.strip()):
        return _checked(int(query), V, parameter)
    if vocabulary is None:
        raise TokenTypeError(f"table has no vocabulary: {parameter or 'query'} {brief(query)} must be a token id",
                             parameter=parameter, value=query,
                             expected=f"a token id in [0, {V}) (the table has no vocabulary)")
    try:
        return vocabulary.id(query)  # raises UnknownTokenError with suggestions
    except UnknownTokenError as exc:
        if parameter is not None:
            exc.parameter = parameter  # the caller's name for it, for a front end's message
        raise


def _checked(token_id: int, V: int, parameter: str | None) -> int:
    if not 0 <= token_id < V:
        raise TokenIdError(f"token id {token_id} is out of range for V={V}", parameter=parameter, value=token_id,
                           expected=f"a token id in [0, {V})")
    return token_id


def _parse_id(query: str, V: int, parameter: str | None) -> int:
    """``"id:137"`` -> 137; anything after ``id:`` but an integer is a ``TokenTypeError``."""
    text = query[3:]
    if not _DECIMAL.fullmatch(text.strip()):
        raise TokenTypeError(f"query {brief(query)}: expected id:N with N a token id", parameter=parameter,
                             value=query, expected=f"id:N with N a token id in [0, {V})")
    return int(text)
