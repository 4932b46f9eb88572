"""Provenance: where a table came from (source, file, tensor, stored dtype, weight tying).

The loaders fill it in; ``EmbeddingTable`` carries it and names it in its error
messages; reports print it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Provenance"]


@dataclass(frozen=True)
class Provenance:
    """Where a table came from.

    Attributes
    ----------
    source : str
        ``"seed"``, a named source (``"minilm"``, ``"glove"``) or the kind of
        path it was read from (``"safetensors"``, ``"npy"``, ``"text"``).
    path : str or None
        The file or folder read, if any.
    tensor : str or None
        The tensor name inside a checkpoint, if any.
    dtype : str or None
        The dtype as stored in the file (``"F32"``, ``"float32"``, ``"BF16"``).
    tied : bool or None
        Whether the model's output head is this very table (weight tying);
        ``None`` where the source has no output head to speak of (word vectors).
    tie_evidence : str or None
        Why ``tied`` has its value (config key, head key absent, bytes equal, ...).
    package : str or None
        ``"name version"`` of the PyPI package that shipped the data.
    note : str or None
        What the source holds but the table leaves out, and why (OPT's position
        table, wider than its factorised token table).
    """

    source: str
    path: str | None = None
    tensor: str | None = None
    dtype: str | None = None
    tied: bool | None = None
    tie_evidence: str | None = None
    package: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return asdict(self)
