"""What reading a table from its file cost: the seconds and bytes of each step.

A source that reads a checkpoint (``sources.loaders``) records it on the table
(``EmbeddingTable.load_cost``); the ``--memory`` output prints it beside the
table's resident cost (``footprint.ResidentCost.load``), so a user sees where
the time of a first answer went before any search ran. Seconds are wall-clock
and vary from run to run; bytes are exact.

Glossary: ``V`` vocabulary size, ``D`` model width.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["LoadCost"]


@dataclass(frozen=True)
class LoadCost:
    """The steps of reading one (V, D) table, in the order they ran.

    Attributes
    ----------
    dtype : str
        The file's dtype (``"BF16"``).
    file_bytes : int
        Bytes of the tensor read from the file (``V * D * 2`` for BF16).
    table_bytes : int
        Bytes of the array the table keeps (``V * D * 4`` for BF16 widened to float32).
    scratch_bytes : int
        Most bytes held beside it while reading: one block per thread
        (the file's bytes of a BF16 block and the block's float64 copy for
        the lengths); no full-size intermediate, no copy afterwards.
    threads : int
        Threads the blocks ran on.
    read_seconds : float
        Reading, widening and measuring the row lengths: one pass over the table.
    lengths : bool
        Whether the row lengths were measured in that pass (then the table
        is neither measured nor scanned for NaN again).
    vocabulary_seconds : float or None
        Reading the tokenizer's vocabulary; None where the source has none.

    >>> LoadCost("BF16", 8, 16, 4, 2, 0.5, True, None).to_dict()["table_bytes"]
    16
    """

    dtype: str
    file_bytes: int
    table_bytes: int
    scratch_bytes: int
    threads: int
    read_seconds: float
    lengths: bool
    vocabulary_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-able."""
        return asdict(self)
