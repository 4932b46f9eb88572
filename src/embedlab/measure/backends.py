"""The lab's two backends: one interface over the reference (lists) and the array code (NumPy).

``measure.lab`` is written once against ``Backend``; ``ReferenceBackend`` runs it
on a list-of-lists table with ``embed.py`` alone (the seed report on a bare
Python), ``ArrayBackend`` on an ``EmbeddingTable`` (``embedlab.engine``) at full
size. Both hand back Python lists and floats. Token ids follow the reference's
meanings (``0 <= id < V``; the backends raise what ``embed`` and ``EmbeddingTable``
raise). The tests run every case over both through the ``backend`` fixture.

Glossary: ``V`` vocabulary size, ``D`` model width.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, Sequence

from .. import embed

__all__ = ["Backend", "ReferenceBackend", "ArrayBackend", "as_backend"]

Vector = list[float]


class Backend(Protocol):
    """What ``measure`` needs of a table; every value comes back as Python lists/floats."""

    V: int
    D: int
    eps: float  # machine epsilon of the vectors the backend hands out

    def lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def lookup_via_one_hot(self, ids: Sequence[int]) -> list[Vector]: ...
    def logits(self, hidden: Vector) -> Vector: ...
    def scored(self, token_id: int, k: int, metric: str) -> tuple[list[int], list[float]]: ...
    def norms(self, ids: Sequence[int]) -> list[float]: ...
    def stretch(self, token_id: int, factor: float) -> "Backend": ...
    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def tokens(self, ids: Sequence[int]) -> list[str] | None: ...


def as_backend(table: Any) -> "ReferenceBackend | ArrayBackend":
    """The lab's backend for a table: a backend as it is, an ``EmbeddingTable`` in ``ArrayBackend``,
    a list of lists of floats in ``ReferenceBackend`` (standard library only).

    Raises ``TypeError`` for anything else, naming its type.
    """
    if isinstance(table, (ReferenceBackend, ArrayBackend)):
        return table
    if isinstance(table, list):
        return ReferenceBackend(table)
    if type(table).__name__ == "EmbeddingTable":  # not imported here: it needs NumPy
        return ArrayBackend(table)
    raise TypeError(f"the lab measures an EmbeddingTable, a list of lists of floats or a backend, "
                    f"got {type(table).__name__}")


class ReferenceBackend:
    """The backend over the reference module: a table as a list of lists of floats.

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

    def stretch(self, token_id: int, factor: float) -> "ReferenceBackend":
        return ReferenceBackend(embed.stretch(self.rows, token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return embed.scaled_lookup(self.rows, ids, self.D)

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return None

    def array_table(self) -> Any:
        """The same rows as an ``EmbeddingTable`` (NumPy), for the figures' measurements."""
        from ..engine.table import EmbeddingTable

        return EmbeddingTable.from_rows(self.rows)


class ArrayBackend:
    """The backend over an ``EmbeddingTable`` (NumPy): real tables at full size."""

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

    def stretch(self, token_id: int, factor: float) -> "ArrayBackend":
        return ArrayBackend(self.table.stretch(token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return self.table.scaled_lookup(list(ids)).tolist()

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return self.table.tokens(list(ids))

    def array_table(self) -> Any:
        """The table itself."""
        return self.table
