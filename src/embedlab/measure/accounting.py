"""Row accounting: does the vocabulary agree with the table and the head, row for row?

A model has three counts of its vocabulary that should agree and often do not:
the config's ``vocab_size``, the rows of the token table (and of the output
head), and the tokenizer's ids (its base vocabulary plus added tokens). T5
ships 32,100 tokens for 32,128 rows; CodeLlama's tokenizer has ids up to 32,003
for 32,000 rows (the last four index past the table: an error at the first
lookup); Qwen2.5 151,665 tokens for 151,936 rows; CamemBERT has no token for
id 3. ``account`` lays the counts side by side and names the ids that do not
fit; ``resize`` says what ``model.resize_token_embeddings(len(tokenizer))``
would do to the table (transformers keeps rows ``[0, len)``, drops the rest,
and adds rows from the old rows' mean and covariance when ``len`` is larger),
and whether any row it would drop looks trained (``looks_trained``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["TokenRow", "TrainedRule", "Resize", "Accounting", "account", "resize", "looks_trained", "NORM_FACTOR"]

# A row looks trained when it is finite, not all zero, not an exact copy of another row (rows never trained
# are often one shared value), and its L2 length is within a factor NORM_FACTOR of the median length of the
# rows tokens map to, tokens known to be unused left out (the median, unlike a low percentile, stays put when
# some tokens are under-trained), in the table or, untied, in the head. The renderers word the rule
# (``locales.AUDIT_WORDS[lang]["trained_rule"]``) from ``TrainedRule``'s numbers.
NORM_FACTOR = 4.0


@dataclass(frozen=True)
class TokenRow:
    """One special or added token and where its rows are: ``in_table``, ``in_head`` (None when tied)."""

    id: int
    token: str | None
    special: bool
    added: bool
    in_table: bool
    in_head: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "special": self.special, "added": self.added,
                "in_table": self.in_table, "in_head": self.in_head}


@dataclass(frozen=True)
class TrainedRule:
    """The numbers of the rule by which a row looks trained (the comment at ``NORM_FACTOR``).

    ``factor``: ``NORM_FACTOR``; ``lengths``: for each table (``"input"``, ``"head"``), the range
    ``(median / factor, median * factor)`` of L2 lengths a trained-looking row lies in (``(inf, -inf)``
    where the table has no length to take a median of: no row looks trained there).
    """

    factor: float
    lengths: dict[str, tuple[float, float]]

    def to_dict(self) -> dict[str, Any]:
        return {"factor": self.factor,
                "lengths": {part: [_finite(low), _finite(high)] for part, (low, high) in self.lengths.items()}}


@dataclass(frozen=True)
class Resize:
    """What ``resize_token_embeddings(length)`` would do to a table of ``rows`` rows.

    ``dropped``: the ids of the rows it would drop (``length`` to ``rows - 1``);
    ``tokens_dropped``: those a token maps to; ``trained``: those that look
    trained by ``rule``; ``added``: rows it would add (``length - rows`` when positive).
    """

    length: int
    rows: int
    dropped: tuple[int, ...]
    tokens_dropped: tuple[int, ...]
    trained: tuple[int, ...]
    added: int
    rule: TrainedRule

    def to_dict(self, tokens: Sequence[str | None] = ()) -> dict[str, Any]:
        return {"length": self.length, "rows": self.rows, "added": self.added, "dropped": list(self.dropped),
                "tokens_dropped": _named(self.tokens_dropped, tokens), "trained": _named(self.trained, tokens),
                "rule": self.rule.to_dict()}


@dataclass(frozen=True)
class Accounting:
    """The vocabulary's counts side by side, and the ids that do not fit.

    Attributes
    ----------
    vocab_size, vocab_size_key : int or None, str or None
        The config's declared size and where it was read.
    table_rows, head_rows : int, int or None
        Rows of the token table and of a separate output head (None when tied or absent).
    tokenizer_length : int or None
        ``len(tokenizer)``: base vocabulary plus added tokens.
    base_vocabulary : int or None
        The tokenizer's base vocabulary.
    id_span : int or None
        The largest id with a token, plus one.
    holes : tuple of int, or None
        Ids below ``id_span`` with no token.
    past_table, past_head : tuple of int, or None
        Ids with a token at or past the rows of the table (of the head): a lookup of them fails.
    padding : tuple of int, or None
        Rows of the table that no token maps to.
    listed : tuple of TokenRow, or None
        The special and added tokens, with their rows.

    Without a tokenizer, what only a tokenizer can tell (``holes``, ``past_table``, ``past_head``,
    ``padding``, ``listed``) is None, not known, rather than empty: no token is not no fault.
    resize : Resize or None
        What ``resize_token_embeddings(len(tokenizer))`` would do; None without a tokenizer.
    """

    vocab_size: int | None
    vocab_size_key: str | None
    table_rows: int
    head_rows: int | None
    tokenizer_length: int | None = None
    base_vocabulary: int | None = None
    id_span: int | None = None
    holes: tuple[int, ...] | None = None
    past_table: tuple[int, ...] | None = None
    past_head: tuple[int, ...] | None = None
    padding: tuple[int, ...] | None = None
    listed: tuple[TokenRow, ...] | None = None
    resize: Resize | None = None

    def to_dict(self, tokens: Sequence[str | None] = ()) -> dict[str, Any]:
        return {"vocab_size": self.vocab_size, "vocab_size_key": self.vocab_size_key, "table_rows": self.table_rows,
                "head_rows": self.head_rows, "tokenizer_length": self.tokenizer_length,
                "base_vocabulary": self.base_vocabulary, "id_span": self.id_span, "holes": _listed(self.holes),
                "past_table": _named(self.past_table, tokens), "past_head": _named(self.past_head, tokens),
                "padding": _listed(self.padding),
                "special_and_added": None if self.listed is None else [row.to_dict() for row in self.listed],
                "resize": None if self.resize is None else self.resize.to_dict(tokens)}


def account(tokens: Sequence[str | None] | None, *, table_rows: int, head_rows: int | None,
            vocab_size: int | None = None, vocab_size_key: str | None = None, tokenizer_length: int | None = None,
            base_vocabulary: int | None = None, special: frozenset[int] = frozenset(),
            added: frozenset[int] = frozenset()) -> Accounting:
    """The counts of a vocabulary (``tokens``, id order, None for a hole) against a table and a head.

    Without ``tokens`` (no tokenizer) only the counts of rows are filled in; the rest is None, not known.

    >>> a = account(["a", None, "b", "c", "d"], table_rows=4, head_rows=None, tokenizer_length=4)
    >>> a.holes, a.past_table, a.padding
    ((1,), (4,), (1,))
    >>> account(None, table_rows=4, head_rows=None).holes is None
    True
    """
    if tokens is None:
        return Accounting(vocab_size, vocab_size_key, table_rows, head_rows)
    held = np.array([t is not None for t in tokens], dtype=bool)  # (span,)
    span = int(np.flatnonzero(held)[-1]) + 1 if held.any() else 0
    has_token = np.zeros(max(table_rows, span), dtype=bool)  # (max(V, span),)
    has_token[:span] = held[:span]
    holes = np.flatnonzero(~held[:span])
    past_table = np.flatnonzero(has_token[table_rows:]) + table_rows
    past_head = np.flatnonzero(has_token[head_rows:]) + head_rows if head_rows is not None else np.array([], int)
    listed = tuple(TokenRow(i, tokens[i] if i < len(tokens) else None, i in special, i in added, i < table_rows,
                            None if head_rows is None else i < head_rows) for i in sorted(special | added))
    return Accounting(vocab_size, vocab_size_key, table_rows, head_rows, tokenizer_length=tokenizer_length,
                      base_vocabulary=base_vocabulary, id_span=span, holes=tuple(holes.tolist()),
                      past_table=tuple(past_table.tolist()), past_head=tuple(past_head.tolist()),
                      padding=tuple(np.flatnonzero(~has_token[:table_rows]).tolist()), listed=listed)


def resize(length: int, rows: int, tokens: Sequence[str | None], scans: Sequence[Any],
           unused: frozenset[int] = frozenset()) -> Resize:
    """What ``resize_token_embeddings(length)`` would do to a table (and head) of ``rows`` rows.

    Parameters
    ----------
    length : int
        ``len(tokenizer)``.
    rows : int
        Rows of the token table.
    tokens : sequence of str or None
        Each id's token (None for none).
    scans : sequence of degenerate.RowScan
        The table's scan, and the head's for an untied model: a dropped row
        looks trained (``looks_trained``) in either.
    unused : frozenset of int
        Tokens known to be unused (``[unusedN]``, reserved tokens), left out of the lengths of trained rows.
    """
    dropped = np.arange(length, rows)  # (n,) transformers keeps rows [0, length)
    tokens_dropped = [int(i) for i in dropped if i < len(tokens) and tokens[i] is not None]
    trained, rule = looks_trained(dropped, tokens, scans, unused)
    return Resize(length=length, rows=rows, dropped=tuple(dropped.tolist()), tokens_dropped=tuple(tokens_dropped),
                  trained=trained, added=max(0, length - rows), rule=rule)


def looks_trained(ids: Sequence[int] | np.ndarray, tokens: Sequence[str | None], scans: Sequence[Any],
                  unused: frozenset[int] = frozenset()) -> tuple[tuple[int, ...], TrainedRule]:
    """Which of ``ids`` look trained (the rule at ``NORM_FACTOR``) in any of the tables scanned, and the rule's
    numbers.

    Parameters
    ----------
    ids : sequence of int
        Row ids, ascending.
    tokens, scans, unused
        As ``resize`` takes them.

    Returns
    -------
    tuple of int, TrainedRule
        The ids that look trained, ascending; the rule with each table's range of lengths.
    """
    ids = np.asarray(ids, dtype=np.int64)  # (n,)
    trained = np.zeros(len(ids), dtype=bool)
    lengths = {}
    for scan in scans:
        looks, lengths[scan.degenerate.part] = _looks_trained(scan, ids, tokens, unused)
        trained |= looks
    return tuple(ids[trained].tolist()), TrainedRule(NORM_FACTOR, lengths)


def _looks_trained(scan: Any, ids: np.ndarray, tokens: Sequence[str | None],
                   unused: frozenset[int]) -> tuple[np.ndarray, tuple[float, float]]:
    """Which of ``ids`` (ascending) look trained in one table, and the range of lengths.

    An id past the table's rows has no row there, and does not look trained in it.
    """
    V = len(scan.norms)
    inside = ids[ids < V]  # (n,) a prefix of ids: they ascend
    token_rows = np.array([i for i in range(min(V, len(tokens))) if tokens[i] is not None and i not in unused],
                          dtype=np.int64)
    lengths = scan.norms[token_rows] if token_rows.size else scan.norms
    lengths = lengths[np.isfinite(lengths)]
    median = float(np.median(lengths)) if lengths.size else float("nan")
    low, high = (median / NORM_FACTOR, median * NORM_FACTOR) if lengths.size else (np.inf, -np.inf)
    degenerate = scan.degenerate
    bad = set(degenerate.zero) | set(degenerate.nonfinite) | degenerate.copied
    norms = scan.norms[inside]
    looks = np.zeros(len(ids), dtype=bool)
    looks[:len(inside)] = np.array([i not in bad for i in inside.tolist()], dtype=bool) & (norms >= low) & (norms <= high)
    return looks, (low, high)


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _named(ids: Sequence[int] | None, tokens: Sequence[str | None]) -> list[dict[str, Any]] | None:
    return None if ids is None else [{"id": i, "token": tokens[i] if i < len(tokens) else None} for i in ids]


def _listed(ids: Sequence[int] | None) -> list[int] | None:
    return None if ids is None else list(ids)
