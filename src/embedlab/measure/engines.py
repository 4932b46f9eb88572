"""The lab's two engines: one interface over the reference (lists) and the array engine (NumPy).

``measure.lab`` is written once against ``Engine``; ``ReferenceEngine`` runs it
on a list-of-lists table with ``embed.py`` alone (the seed report on a bare
Python), ``ArrayEngine`` on an ``EmbeddingTable`` at full size. Both hand back
Python lists and floats. Token ids follow the reference's meanings
(``0 <= id < V``; the engines raise what ``embed`` and ``EmbeddingTable`` raise).

Glossary: ``V`` vocabulary size, ``D`` model width.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, Sequence

from .. import embed

__all__ = ["Engine", "ReferenceEngine", "ArrayEngine", "as_engine"]

Vector = list[float]


class Engine(Protocol):
    """What ``measure`` needs of a table; every value comes back as Python lists/floats."""

    V: int
    D: int
    eps: float  # machine epsilon of the vectors the engine hands out

    def lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def lookup_via_one_hot(self, ids: Sequence[int]) -> list[Vector]: ...
    def logits(self, hidden: Vector) -> Vector: ...
    def scored(self, token_id: int, k: int, metric: str) -> tuple[list[int], list[float]]: ...
    def norms(self, ids: Sequence[int]) -> list[float]: ...
    def stretch(self, token_id: int, factor: float) -> "Engine": ...
    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def tokens(self, ids: Sequence[int]) -> list[str] | None: ...


def as_engine(table: Any) -> "ReferenceEngine | ArrayEngine":
    """The lab engine for a table: an engine as it is, an ``EmbeddingTable`` in ``ArrayEngine``,
    a list of lists of floats in ``ReferenceEngine`` (standard library only).

    Raises ``TypeError`` for anything else, naming its type.
    """
    if isinstance(table, (ReferenceEngine, ArrayEngine)):
        return table
    if isinstance(table, list):
        return ReferenceEngine(table)
    if type(table).__name__ == "EmbeddingTable":  # not imported here: it needs NumPy
        return ArrayEngine(table)
    raise TypeError(f"the lab measures an EmbeddingTable, a list of lists of floats or an engine, "
                    f"got {type(table).__name__}")


class ReferenceEngine:
    """The engine over the reference module: a table as a list of lists of floats.

    Needs nothing beyond the standard library. Raises ``ValueError`` for a
    ragged table.
    """

    def __init__(self, rows: list[list[float]]) -> None:
        self.rows = rows
        self.V, self.D = embed.shape(rows)
        self.eps = sys.float_info.epsilon  # Python floats are IEEE doubles

    def lookup(self, ids: Sequence[int]) -> list[Vector]:
        return embed.lookup(self.rows, ids)

    def lookup_via_one_hot(self, ids: Sequence[int]) -> list[Vector]:
        return embed.lookup_via_one_hot(self.rows, ids)

    def logits(self, hidden: Vector) -> Vector:
        return embed.logits(self.rows, hidden)

    def scored(self, token_id: int, k: int, metric: str) -> tuple[list[int], list[float]]:
        by, score = {"cosine": (embed.nearest_by_cosine, embed.cosine), "dot": (embed.nearest_by_dot, embed.dot)}[metric]
        ids = by(self.rows, token_id, k)
        query = self.rows[token_id]
        return ids, [score(query, self.rows[i]) for i in ids]

    def norms(self, ids: Sequence[int]) -> list[float]:
        return [embed.norm(self.rows[i]) for i in ids]

    def stretch(self, token_id: int, factor: float) -> "ReferenceEngine":
        return ReferenceEngine(embed.stretch(self.rows, token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return embed.scaled_lookup(self.rows, ids, self.D)

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return None

    def array_table(self) -> Any:
        """The same rows as an ``EmbeddingTable`` (NumPy), for the figures' measurements."""
        from ..engine.table import EmbeddingTable

        return EmbeddingTable.from_rows(self.rows)


class ArrayEngine:
    """The engine over an ``EmbeddingTable`` (NumPy): real tables at full size."""

    def __init__(self, table: Any) -> None:
        import numpy as np

        self.table = table
        self.V, self.D = table.V, table.D
        # scaled_lookup hands out float32 at least
        self.eps = float(np.finfo(np.result_type(table.dtype, np.float32)).eps)

    def lookup(self, ids: Sequence[int]) -> list[Vector]:
        return self.table.lookup(list(ids)).tolist()

    def lookup_via_one_hot(self, ids: Sequence[int]) -> list[Vector]:
        return self.table.lookup_via_one_hot(list(ids)).tolist()

    def logits(self, hidden: Vector) -> Vector:
        return self.table.logits(hidden).tolist()

    def scored(self, token_id: int, k: int, metric: str) -> tuple[list[int], list[float]]:
        found = self.table.nearest([token_id], k, metric)
        return found.ids[0].tolist(), found.scores[0].tolist()

    def norms(self, ids: Sequence[int]) -> list[float]:
        return self.table.norms()[list(ids)].tolist()

    def stretch(self, token_id: int, factor: float) -> "ArrayEngine":
        return ArrayEngine(self.table.stretch(token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return self.table.scaled_lookup(list(ids)).tolist()

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return self.table.tokens(list(ids))

    def array_table(self) -> Any:
        """The table itself."""
        return self.table
