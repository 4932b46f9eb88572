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
        Bytes of the tensor in the file (``V * D * 2`` for BF16), read or mapped.
    table_bytes : int
        Bytes of the array the table keeps: ``V * D * 2`` for BF16 kept as its bits
        (``engine.bf16_matrix.Bf16Matrix``), ``V * D * 4`` where it was widened to float32.
    scratch_bytes : int
        Most bytes held beside it while reading: one block per thread
        (the file's bytes of a BF16 block and what measuring its lengths may
        hold, ``lengths.norms_bytes``: an upper bound); no full-size
        intermediate, no copy afterwards.
    threads : int
        Threads the blocks ran on.
    read_seconds : float
        Reading (or mapping), widening and measuring the row lengths: one pass over the table.
    lengths : bool
        Whether the row lengths were measured in that pass (then the table
        is not measured again, nor, but a float64 one, scanned for NaN).
    vocabulary_seconds : float or None
        Reading the tokenizer's vocabulary; None where the source has none.
    widened : bool
        False where a BF16 table was kept as its bits and is widened to
        float32 as it is read (a search of a few queries never widens it
        whole); True where the table holds the values in their own dtype.
    mapped : bool
        True where the table (or the kept bits) is the file's own bytes, mapped read-only
        (``tensor_data.map_tensor``: nothing copied; ``read_seconds`` is
        then the lengths' pass alone); False where they were read into memory.

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
    widened: bool = True
    mapped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-able."""
        return asdict(self)
