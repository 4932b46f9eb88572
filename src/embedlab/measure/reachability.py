"""Reachability of every token: decode its id, encode the string again, and sort it as Magikarp does.

Land & Bartolo 2024, "Fishing for Magikarp: Automatically Detecting Under-trained
Tokens in Large Language Models" (arXiv 2405.05417), sort each token of a
vocabulary by what its own tokenizer does with it. Their code,
``magikarp/tokenization.py`` of github.com/cohere-ai/magikarp
(``TokenizerAnalyzer.categorize_token``), decodes the id alone and encodes the
string again (``clean_decode``/``clean_encode``), then, in this order:

=========================  ==============================================================
``OK``                     encoding gives the id back: the token is reachable
``OK_SPECIAL``             the same, for a special token
``UNREACHABLE_SPECIAL``    not given back, and the string looks like a control token: at
                           least 3 characters, starts with ``[`` or ``<``, ends with ``]`` or
                           ``>``, holds a letter (``[BOS]``, ``</s>``)
``UNDECODEABLE``           not given back, and the string holds U+FFFD: a partial UTF-8 byte
                           sequence (a byte-level token that is half a character)
``UNREACHABLE_SINGLE_TOKEN``  encoding gives one other id
``UNREACHABLE_MULTI_TOKEN``   encoding gives several ids (or none)
=========================  ==============================================================

The string is decoded with ``skip_special_tokens=False`` and encoded with
``add_special_tokens=False``, as theirs (transformers with
``clean_up_tokenization_spaces=False``, which for a tokenizers-backed tokenizer
is the ``tokenizers`` object's own ``decode``/``encode``). A tokenizer that puts
a space before a text's first word (its encoding of ``"test"`` starts with a
token whose first character is one of `` ▁_Ġ``) is run as theirs runs it in
``starting_space_mode``: ``«`` (else ``»``) before the string, its id before
the token, both taken off again, so the space the tokenizer adds is not
mistaken for part of the token. Two differences, both where their code would
stop or misread: each prefix is tried on the string alone (their loop prepends
the second prefix to the first), and a token no prefix works for is decoded
and encoded plainly (theirs raises ``AssertionError``); ``notes`` counts them.
Every id that holds a token is sorted, where theirs iterates ``get_vocab()``,
which keeps one id of a string that several ids hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["CATEGORIES", "REACHABLE", "START_PREFIXES", "SPACE_CHARS", "Unreachable", "Reachability", "reachability"]

CATEGORIES = ("OK", "OK_SPECIAL", "UNREACHABLE_SPECIAL", "UNDECODEABLE", "UNREACHABLE_SINGLE_TOKEN",
              "UNREACHABLE_MULTI_TOKEN")
REACHABLE = ("OK", "OK_SPECIAL")  # magikarp's candidates for verification: categories starting with OK
START_PREFIXES = ("«", "»")  # magikarp's TokenizerAnalyzer.START_PREFIXES
SPACE_CHARS = " ▁_Ġ"  # magikarp's TokenizerAnalyzer.SPACE_CHARS
PROBE_TEXT = "test"  # what magikarp encodes to see whether the tokenizer adds a leading space
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"  # U+FFFD: what a decoder writes for a partial UTF-8 sequence


@dataclass(frozen=True)
class Unreachable:
    """A token that encoding its own decoded string does not give back (magikarp's ``token_info``)."""

    id: int
    token: str
    category: str
    decoded: str
    reencoded: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "category": self.category, "decoded": self.decoded,
                "reencoded_ids": list(self.reencoded)}


@dataclass(frozen=True)
class Reachability:
    """Every token sorted into ``CATEGORIES``.

    Attributes
    ----------
    categories : dict of str -> tuple of int
        Each category (all of ``CATEGORIES``, in that order) -> its ids, ascending.
    unreachable : tuple of Unreachable
        The ids not in ``REACHABLE``, in id order, with their decoded string and what it encodes to.
    prefix : str or None
        The start prefix the tokenizer was run with (``"«"``), None without one.
    notes : tuple of str
    """

    categories: dict[str, tuple[int, ...]]
    unreachable: tuple[Unreachable, ...]
    prefix: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        """Category -> how many ids."""
        return {name: len(ids) for name, ids in self.categories.items()}

    def category_of(self) -> dict[int, str]:
        """Id -> its category."""
        return {i: name for name, ids in self.categories.items() for i in ids}

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "prefix": self.prefix,
                "categories": {name: list(ids) for name, ids in self.categories.items()},
                "unreachable": [u.to_dict() for u in self.unreachable], "notes": list(self.notes)}


def reachability(tokens: Sequence[str | None], special: frozenset[int] | set[int], runner: Any) -> Reachability:
    """Sort every id that holds a token (``tokens[i]`` not None) into ``CATEGORIES``.

    Parameters
    ----------
    tokens : sequence of str or None
        Each id's token as the vocabulary stores it; None for a hole.
    special : set of int
        The ids the tokenizer treats as special (``OK_SPECIAL`` where reachable).
    runner : tokenizers.Tokenizer
        Anything with its ``encode``, ``encode_batch`` and ``decode_batch``.

    Returns
    -------
    Reachability

    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> runner = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "b": 2, "a b": 3}, unk_token="[UNK]"))
    >>> runner.pre_tokenizer = pre_tokenizers.Whitespace()
    >>> r = reachability(["[UNK]", "a", "b", "a b"], {0}, runner)
    >>> r.categories["OK"], r.categories["UNREACHABLE_SPECIAL"], r.unreachable[1].reencoded
    ((1, 2), (0,), (1, 2))
    """
    ids = [i for i, token in enumerate(tokens) if token is not None]
    codec = _Codec(runner, tokens)
    decoded = codec.decode(ids)
    encoded = codec.encode(decoded)
    sorted_ids: dict[str, list[int]] = {name: [] for name in CATEGORIES}
    unreachable = []
    for i, text, again in zip(ids, decoded, encoded):
        category = _category(i, text, again, special)
        sorted_ids[category].append(i)
        if category not in REACHABLE:
            unreachable.append(Unreachable(i, tokens[i], category, text, tuple(again)))  # type: ignore[arg-type]
    return Reachability(categories={name: tuple(found) for name, found in sorted_ids.items()},
                        unreachable=tuple(unreachable), prefix=codec.prefix, notes=codec.notes())


def _category(i: int, s: str, tokens: Sequence[int], special: frozenset[int] | set[int]) -> str:
    """magikarp/tokenization.py, ``categorize_token``: the first test that holds names the category."""
    if list(tokens) == [i]:
        return "OK_SPECIAL" if i in special else "OK"
    if len(s) >= 3 and s[0] in "[<" and s[-1] in "]>" and any(c.isalpha() for c in s):
        return "UNREACHABLE_SPECIAL"  # [BOS], </s> and the like
    if REPLACEMENT in s:
        return "UNDECODEABLE"
    if len(tokens) == 1:
        return "UNREACHABLE_SINGLE_TOKEN"
    return "UNREACHABLE_MULTI_TOKEN"


class _Codec:
    """magikarp's ``clean_decode``/``clean_encode`` over many ids at once (the tokenizers library's batch calls)."""

    def __init__(self, runner: Any, tokens: Sequence[str | None]) -> None:
        self.runner = runner
        self.prefixes: list[tuple[str, int]] = []  # (prefix, its id) of the prefixes that are one token each
        self.fallbacks = {"decode": 0, "encode": 0}  # tokens no prefix worked for
        self.unsplit: list[str] = []  # prefixes that are not one token
        probe = runner.encode(PROBE_TEXT, add_special_tokens=False).ids
        first = tokens[probe[0]] if probe and 0 <= probe[0] < len(tokens) else None
        if first and first[0] in SPACE_CHARS:  # magikarp's _set_flags: the tokenizer adds a leading space
            for prefix in START_PREFIXES:
                ids = runner.encode(prefix, add_special_tokens=False).ids
                if len(ids) == 1:
                    self.prefixes.append((prefix, ids[0]))
                else:
                    self.unsplit.append(prefix)
        self.prefix = self.prefixes[0][0] if self.prefixes else None
        self.spaced = bool(first and first[0] in SPACE_CHARS)

    def decode(self, ids: list[int]) -> list[str]:
        out: list[str | None] = [None] * len(ids)
        for prefix, prefix_id in self.prefixes:
            todo = [k for k, s in enumerate(out) if s is None]
            texts = self.runner.decode_batch([[prefix_id, ids[k]] for k in todo], skip_special_tokens=False)
            for k, text in zip(todo, texts):
                text = text[1:] if text[:1] == " " else text  # e.g. mistral, but not llama2 (magikarp's comment)
                if text.startswith(prefix):
                    out[k] = text[1:]
        todo = [k for k, s in enumerate(out) if s is None]
        if self.prefixes:
            self.fallbacks["decode"] = len(todo)
        for k, text in zip(todo, self.runner.decode_batch([[ids[k]] for k in todo], skip_special_tokens=False)):
            out[k] = text
        return out  # type: ignore[return-value]

    def encode(self, texts: list[str]) -> list[list[int]]:
        out: list[list[int] | None] = [None] * len(texts)
        for prefix, prefix_id in self.prefixes:
            todo = [k for k, ids in enumerate(out) if ids is None]
            for k, encoding in zip(todo, self.runner.encode_batch([prefix + texts[k] for k in todo],
                                                                  add_special_tokens=False)):
                if encoding.ids[:1] == [prefix_id]:
                    out[k] = encoding.ids[1:]
        todo = [k for k, ids in enumerate(out) if ids is None]
        if self.prefixes:
            self.fallbacks["encode"] = len(todo)
        for k, encoding in zip(todo, self.runner.encode_batch([texts[k] for k in todo], add_special_tokens=False)):
            out[k] = encoding.ids
        return out  # type: ignore[return-value]

    def notes(self) -> tuple[str, ...]:
        found = []
        if self.spaced and not self.prefixes:
            found.append(f"the tokenizer adds a leading space, but neither {' nor '.join(START_PREFIXES)} is one token "
                         "of it: tokens were decoded and encoded without a prefix")
        if self.prefixes:
            found.append(f"the tokenizer adds a leading space: each token was decoded after {self.prefix!r} and its "
                         "string encoded after it, as magikarp's starting_space_mode does")
        for step, n in self.fallbacks.items():
            if n:
                found.append(f"{n:,} tokens: no start prefix survived the {step}; done without one")
        return tuple(found)
