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
from typing import Any, Iterable, Mapping

from ..errors import ChoiceError, TokenIdError, TokenTypeError, UnknownTokenError, brief

__all__ = ["FIRST_COPY", "Vocabulary", "resolve_id", "resolve_ids"]

# Which id a repeated token string means when the source does not say.
FIRST_COPY = "the first copy"


class Vocabulary:
    """Token strings in id order, and the reverse map.

    Parameters
    ----------
    tokens : iterable of str or None
        ``tokens[i]`` is the string of token id ``i``; ``None`` where the source
        has none.
    owners : mapping of str to int, optional
        For a string that several ids hold (a repeated token), the id the
        string means: the one the source's own reader gives it (a tokenizer's
        ``get_vocab``; ``BertTokenizer`` keeps the last copy of a line of
        ``vocab.txt``). A whole token -> id map may be given; each id must
        hold its string. A string left out means its smallest id.
    rule : str, optional
        How ``owners`` was chosen, in words, for the notes that say a token is
        repeated (``"the last copy, as transformers' BertTokenizer reads
        vocab.txt"``); default ``FIRST_COPY``.

    Every id keeps its string whatever ``owners`` says, so each copy of a
    repeated token is shown as itself and reached by ``id:N``.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) if ``owners`` gives a string an id that does not
        hold it, naming both.

    >>> v = Vocabulary(["[PAD]", "king", "queen"])
    >>> v.id("queen"), v.token(1), len(v)
    (2, 'king', 3)
    >>> v = Vocabulary(["<s>", "<unk>", "<unk>"], owners={"<unk>": 2}, rule="the last copy")
    >>> v.id("<unk>"), v.token(1), v.repeats("<unk>")
    (2, '<unk>', (1, 2))
    """

    def __init__(self, tokens: Iterable[str | None], *, owners: Mapping[str, int] | None = None,
                 rule: str = FIRST_COPY) -> None:
        self._tokens: tuple[str | None, ...] = tuple(tokens)
        self._owners = dict(owners or {})
        self.rule = rule
        self._index: dict[str, int] | None = None  # built on first use
        self._repeated: dict[str, tuple[int, ...]] | None = None
        for token, i in self._owners.items():
            if not (isinstance(i, int) and 0 <= i < len(self._tokens) and self._tokens[i] == token):
                held = self._tokens[i] if isinstance(i, int) and 0 <= i < len(self._tokens) else None
                raise ChoiceError(f"owners gives token {brief(token)} the id {brief(i)}, which holds {brief(held)}",
                                  parameter="owners", value={token: i},
                                  expected=f"an id whose string is {brief(token)}")

    def __len__(self) -> int:
        return len(self._tokens)

    @property
    def index_to_token(self) -> tuple[str | None, ...]:
        """Token strings in id order, shape (V,), ``None`` where unknown."""
        return self._tokens

    @property
    def token_to_index(self) -> dict[str, int]:
        """Map token string -> the token id it means (built once: do not mutate).

        A repeated string means its id in ``owners``, else its smallest id.
        """
        if self._index is None:
            n = len(self._tokens)
            # Built from the last id to the first, so that the smallest id of a repeated string is written last.
            index: dict[Any, int] = dict(zip(reversed(self._tokens), range(n - 1, -1, -1)))
            index.pop(None, None)  # ids without a string
            index.update(self._owners)
            self._index = index
        return self._index

    def repeats(self, token: str) -> tuple[int, ...]:
        """Every id that holds ``token``, in id order, when more than one does; else ``()``."""
        if self._repeated is None and len(self.token_to_index) == len(self._tokens) - self._tokens.count(None):
            self._repeated = {}  # as many strings as ids that hold one: none is repeated
        if self._repeated is None:
            holders: dict[str, list[int]] = {}
            for i, tok in enumerate(self._tokens):
                if tok is not None:
                    holders.setdefault(tok, []).append(i)
            self._repeated = {tok: tuple(ids) for tok, ids in holders.items() if len(ids) > 1}
        return self._repeated.get(token, ())

    def repeat_note(self, token_id: int) -> str | None:
        """A sentence saying that the string of ``token_id`` is repeated, and which id it means; else ``None``.

        >>> Vocabulary(["a", "b", "a"]).repeat_note(2)
        "token 'a' is repeated: ids 0 and 2 hold it; 'a' means id 0 (the first copy); id:2 reaches the other"
        """
        token = self._tokens[token_id] if 0 <= token_id < len(self._tokens) else None
        ids = () if token is None else self.repeats(token)
        if not ids:
            return None
        owner = self.token_to_index[token]
        others = [i for i in ids if i != owner]
        held = ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"
        reach = ", ".join(f"id:{i}" for i in others)
        return (f"token {brief(token)} is repeated: ids {held} hold it; {brief(token)} means id {owner} ({self.rule}); "
                f"{reach} {'reaches the other' if len(others) == 1 else 'reach the others'}")

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
                f"token {brief(token)} is not in the vocabulary (V = {len(self):,}){hint}",
                parameter="token", value=token, expected=f"a token of the vocabulary (V = {len(self):,}){hint}")
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
