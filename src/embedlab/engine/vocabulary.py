"""Vocabulary: token id <-> token string, for tables that come with one, and the
one resolver that turns what a user writes (an id, a token, ``id:N``) into ids.

Standard library only. A vocabulary of size ``V`` holds one string per token id;
ids that have no string in the source (padding rows of a checkpoint whose table is
larger than its tokenizer) hold ``None`` and are shown as ``<id 50257>``.

A token typed by a person is not always spelled as the vocabulary stores it: ALBERT's
tokenizer decomposes Hangul (``표`` is stored as ``ᄑ`` + ``ᅭ``, NFKD), BERT's lowercases,
GPT-2's writes bytes as letters (``Ġking``). Where the source has a tokenizer, the
vocabulary holds its way of spelling text (``spell``: the tokenizer's own normalizer and
pre-tokenizer, given by ``sources.tokenizer``); a typed token that is not in the
vocabulary as typed is looked up as the tokenizer spells it (``Respelling``), and the
callers say so in their notes (``respellings``). A table without a tokenizer (word
vectors, a ``.npy``) has no such spelling: a token is found as typed or not at all.
"""

from __future__ import annotations

import difflib
import numbers
import operator
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ChoiceError, TokenIdError, TokenTypeError, UnknownTokenError, brief

__all__ = ["FIRST_COPY", "SPELLERS", "Spell", "Respelling", "Vocabulary", "resolve_id", "resolve_ids", "respellings"]

# Which id a repeated token string means when the source does not say.
FIRST_COPY = "the first copy"

# A tokenizer's way of spelling typed text: text -> [(form, speller), ...], the forms to try in order, each
# with the part of the tokenizer that wrote it (a key of SPELLERS). ``sources.tokenizer.TokenizerSpelling``.
Spell = Callable[[str], Sequence[tuple[str, str]]]
# What wrote a respelled form, in the words of the notes.
SPELLERS = {"normalizer": "normalised by the tokenizer",
            "pre_tokenizer": "normalised and pre-tokenized by the tokenizer (its spelling of a word on its own)"}
SUGGESTIONS = 5  # close entries an unknown token's message names
CODE_POINTS_SHOWN = 8  # characters of a respelled form written as code points, where it looks like the typed one


@dataclass(frozen=True)
class Respelling:
    """A typed token found in the vocabulary only as the table's tokenizer spells it.

    Attributes
    ----------
    typed : str
        The token as the user wrote it (``'표'``, one precomposed syllable).
    token : str
        The vocabulary's string it was found as (``'표'``: U+1111 U+116D).
    id : int
        That string's token id.
    speller : str
        What spelled it: ``"normalizer"`` (the tokenizer's normalizer) or
        ``"pre_tokenizer"`` (its normalizer, then its pre-tokenizer, when
        that gives one piece); a key of ``SPELLERS``.
    """

    typed: str
    token: str
    id: int
    speller: str

    @property
    def note(self) -> str:
        """One sentence for a result's notes; code points where the two strings look alike.

        >>> Respelling("\ud45c", "\u1111\u116d", 148, "normalizer").note
        "'\ud45c' -> '\u1111\u116d' (U+1111 U+116D), id 148: normalised by the tokenizer"
        >>> Respelling("King", "king", 2, "normalizer").note
        "'King' -> 'king', id 2: normalised by the tokenizer"
        """
        alike = unicodedata.normalize("NFC", self.typed) == unicodedata.normalize("NFC", self.token)
        points = " ".join(f"U+{ord(c):04X}" for c in self.token[:CODE_POINTS_SHOWN])
        more = " …" if len(self.token) > CODE_POINTS_SHOWN else ""
        shown = f" ({points}{more})" if alike else ""
        return f"{brief(self.typed)} -> {brief(self.token)}{shown}, id {self.id}: {SPELLERS[self.speller]}"


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
    spell : callable, optional
        The source tokenizer's way of spelling typed text (``Spell``: text ->
        the forms to try, in order, each with what wrote it); a typed token
        not found as typed is looked up in those forms (``respell``). None
        (the default) for a source without a tokenizer.

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
    >>> v = Vocabulary(["[PAD]", "king"], spell=lambda text: [(text.lower(), "normalizer")])
    >>> v.id("KING"), v.respell("KING").note
    (1, "'KING' -> 'king', id 1: normalised by the tokenizer")
    """

    def __init__(self, tokens: Iterable[str | None], *, owners: Mapping[str, int] | None = None,
                 rule: str = FIRST_COPY, spell: Spell | None = None) -> None:
        self._tokens: tuple[str | None, ...] = tuple(tokens)
        self._owners = dict(owners or {})
        self.rule = rule
        self.spell = spell
        self._index: dict[str, int] | None = None  # built on first use
        self._named: list[str] | None = None  # ``token_rows``' strings, built on first use
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
        return self._repeated_strings().get(token, ())

    def any_repeated(self) -> bool:
        """Whether any string is held by more than one id (found once, then kept).

        >>> Vocabulary(["a", "b"]).any_repeated(), Vocabulary(["a", "b", "a"]).any_repeated()
        (False, True)
        """
        return bool(self._repeated_strings())

    def _repeated_strings(self) -> dict[str, tuple[int, ...]]:
        """Each string more than one id holds -> those ids in order, built on first use."""
        if self._repeated is None and len(self.token_to_index) == len(self._tokens) - self._tokens.count(None):
            self._repeated = {}  # as many strings as ids that hold one: none is repeated
        if self._repeated is None:
            holders: dict[str, list[int]] = {}
            for i, tok in enumerate(self._tokens):
                if tok is not None:
                    holders.setdefault(tok, []).append(i)
            self._repeated = {tok: tuple(ids) for tok, ids in holders.items() if len(ids) > 1}
        return self._repeated

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

    def token_rows(self, rows: Sequence[Sequence[int]]) -> list[list[str]]:
        """``token`` of every id of n rows of K ints (a search's ``ids.tolist()``) -> n lists of K strings.

        One range check for all of them (each row's min and max), then each
        string is read by index in C (``operator.itemgetter``), not by a call
        of ``token`` per id: a search's lists name 100,000 tokens at 10,000
        queries. The strings of ids without one (``<id N>``) are made once,
        with a list of V references (8 bytes an id). Raises ``TokenIdError``
        (an ``IndexError``) naming an id outside ``0 <= id < V``.

        >>> Vocabulary(["a", None, "c"]).token_rows([[2, 1], [0, 0]])
        [['c', '<id 1>'], ['a', 'a']]
        """
        full = [row for row in rows if len(row)]
        if full:
            low, high = min(map(min, full)), max(map(max, full))
            if low < 0 or high >= len(self._tokens):
                raise TokenIdError(f"token id {low if low < 0 else high} is out of range for V={len(self._tokens)}")
        if self._named is None:  # "<id N>" in place of a missing string, made once
            self._named = [f"<id {i}>" if tok is None else tok for i, tok in enumerate(self._tokens)]
        named = self._named
        return [[named[row[0]]] if len(row) == 1 else list(operator.itemgetter(*row)(named)) if len(row) else []
                for row in rows]

    def id(self, token: str) -> int:
        """The token id of a string: as typed, else as the source's tokenizer spells it (``respell``).

        Raises
        ------
        UnknownTokenError
            (a ``KeyError``) if the string is in the vocabulary neither as
            typed nor as the tokenizer spells it; the message names the
            tokenizer's spelling where it differs, the close entries with
            their ids (``suggest``), and the ``id:N`` form.
        """
        found = self.token_to_index.get(token)
        if found is not None:
            return found
        respelled = self.respell(token)
        if respelled is not None:
            return respelled.id
        spelled = list(dict.fromkeys(form for form, _ in self._forms(token) if form != token))
        written = f", nor as its tokenizer spells it ({', '.join(map(brief, spelled))})" if spelled else ""
        close = list(dict.fromkeys(entry for text in (token, *spelled) for entry in self.suggest(text)))[:SUGGESTIONS]
        hint = (f"; close entries: {', '.join(f'{brief(e)} (id:{self.token_to_index[e]})' for e in close)}"
                if close else "")
        raise UnknownTokenError(f"token {brief(token)} is not in the vocabulary (V = {len(self):,}){written}{hint}; "
                                "give a token id as id:N", parameter="token", value=token,
                                expected=f"a token of the vocabulary (V = {len(self):,}){written}{hint}; "
                                         "or a token id as id:N")

    def respell(self, token: str) -> Respelling | None:
        """Where ``token`` is not in the vocabulary as typed, the first of the tokenizer's spellings of it
        that is (``spell``); else None (found as typed, no tokenizer, or no spelling found).

        >>> v = Vocabulary(["a", "\u1111\u116d"], spell=lambda t: [(t.replace("\ud45c", "\u1111\u116d"), "normalizer")])
        >>> v.respell("\ud45c").id, v.respell("a") is None, v.respell("b") is None
        (1, True, True)
        """
        if token in self.token_to_index:
            return None
        for form, speller in self._forms(token):
            found = self.token_to_index.get(form)
            if found is not None and form != token:
                return Respelling(typed=token, token=form, id=found, speller=speller)
        return None

    def _forms(self, token: str) -> Sequence[tuple[str, str]]:
        """The tokenizer's spellings of ``token`` (``spell``), none without a tokenizer."""
        return () if self.spell is None else self.spell(token)

    def suggest(self, token: str, n: int = SUGGESTIONS) -> list[str]:
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
    * a string that is neither is looked up as the table's tokenizer spells
      it (``Vocabulary.respell``; ``respellings`` says which were);
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
        (a ``KeyError``) for a string that is neither a token (as typed or as
        the tokenizer spells it) nor an id; the message names close entries
        with their ids (``Vocabulary.id``).
    TypeError
        For a bool, a float or another type, for ``id:`` followed by anything
        but an integer, and for a token string on a table without vocabulary.

    >>> vocab = Vocabulary(["king", "queen", "1999"])
    >>> resolve_ids(["queen", 0, "1999", "id:2", " 1 "], 3, vocab)
    [1, 0, 2, 2, 1]
    """
    items = [queries] if isinstance(queries, str) else queries
    if isinstance(items, list) and items and all(type(q) is int for q in items):
        # A list of plain ints (10,000 ids from a script): one range check for all, in C; where one is out of
        # range, the loop below names the first such, as it would have.
        if 0 <= min(items) and max(items) < V:
            return list(items)
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


def respellings(queries: Iterable[Any], vocabulary: Vocabulary | None) -> tuple[Respelling, ...]:
    """The queries ``resolve_ids`` finds only as the tokenizer spells them, each once, in order.

    For the callers' notes (``Respelling.note``): a query that is an int, an
    ``id:N``, a token as typed or an id written in digits is not respelled.
    Queries are not checked here: resolve them first.

    >>> v = Vocabulary(["[PAD]", "king", "7"], spell=lambda text: [(text.lower(), "normalizer")])
    >>> [r.token for r in respellings(["KING", "king", 1, "7", "KING"], v)]
    ['king']
    """
    if vocabulary is None or vocabulary.spell is None:
        return ()
    items = [queries] if isinstance(queries, str) else queries
    found: dict[str, Respelling] = {}
    for query in items:
        if (isinstance(query, str) and query not in found and not query.startswith("id:")
                and query not in vocabulary.token_to_index and not _DECIMAL.fullmatch(query.strip())):
            respelled = vocabulary.respell(query)
            if respelled is not None:
                found[query] = respelled
    return tuple(found.values())


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
