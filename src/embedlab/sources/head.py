"""The output head as a table: how a head's rows meet the vocabulary, and what a tied head says.

The output head ``W_U`` (V_head, D) scores every token: row i is token id i's.
Its vocabulary is the input table's, in id order. Where the two tables differ
in rows (a head cut or padded apart from the table), the head's vocabulary is
fitted to its own rows and a note says how: cut to a shorter head (the ids
past it can never be predicted), or padded past the tokenizer with no token.
A tied head is the input table itself, read once, and says so.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

from ..engine.vocabulary import Vocabulary

__all__ = ["tied_note", "fit_rows"]

Tokens = TypeVar("Tokens", Vocabulary, Sequence)


def tied_note(token: str) -> str:
    """What a tied head's provenance says: it is the input table, read once.

    >>> tied_note("model.embed_tokens.weight")
    'the output head is the input table (tied): model.embed_tokens.weight, read once'
    """
    return f"the output head is the input table (tied): {token}, read once"


def fit_rows(tokens: Tokens | None, V_head: int, V_token: int) -> tuple[Tokens | None, list[str]]:
    """A head's vocabulary from the input table's, fitted to the head's rows, and the note that says how.

    Parameters
    ----------
    tokens : Vocabulary or sequence of (str or None), or None
        The input table's vocabulary, ``max(V_head, V_token)`` long.
    V_head, V_token : int
        Rows of the head and of the input table.

    Returns
    -------
    (tokens, notes)
        ``tokens`` as given where the rows agree or the head has more (its
        rows past the tokenizer hold None), else its first ``V_head`` ids (a
        string whose owner is cut means its smallest id left); ``notes`` empty
        where the rows agree, else one sentence.

    >>> fit_rows(["a", "b", "c"], 2, 3)[0], fit_rows(["a", "b"], 2, 2)
    (['a', 'b'], (['a', 'b'], []))
    """
    if V_head == V_token:
        return tokens, []
    if V_head > V_token:
        return tokens, [f"the output head has {V_head:,} rows and the input table {V_token:,}: its rows past the "
                        "tokenizer have no token"]
    note = (f"the output head has {V_head:,} rows and the input table {V_token:,}: its vocabulary is the input "
            f"table's cut to the head's rows; ids {V_head:,} to {V_token - 1:,} have no row in the head, so the "
            "model can never predict them")
    if isinstance(tokens, Vocabulary):
        owners = {token: i for token, i in tokens.token_to_index.items() if i < V_head}
        cut = Vocabulary(tokens.index_to_token[:V_head], owners=owners, rule=tokens.rule, spell=tokens.spell)
        return cut, [note]
    return (None if tokens is None else list(tokens)[:V_head]), [note]
