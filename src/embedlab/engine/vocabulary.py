"""Vocabulary: token id <-> token string, for tables that come with one.

Standard library only. A vocabulary of size ``V`` holds one string per token id;
ids that have no string in the source (padding rows of a checkpoint whose table is
larger than its tokenizer) hold ``None`` and are shown as ``<id 50257>``.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from ..errors import TokenIdError, UnknownTokenError, brief

__all__ = ["Vocabulary"]


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
