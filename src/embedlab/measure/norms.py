"""Row norms: how long the rows of a table are, and which rows are longest.

Long rows matter because the dot product multiplies in a row's length: the
longest rows climb every dot-product neighbour list and win logits of a tied
head. Norms are accumulated in float64 (``EmbeddingTable.norms``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.table import EmbeddingTable
from ..errors import SizeError

__all__ = ["NormDistribution", "norm_distribution"]


@dataclass(frozen=True)
class NormDistribution:
    """The distribution of row norms of one table.

    Attributes
    ----------
    table : str
        The table's name (``Provenance.display_name``: ``"tiny-llama, output head"``).
    edges : np.ndarray, shape (bins + 1,), float64
        Histogram bin edges, in table units (L2 length).
    counts : np.ndarray, shape (bins,), int64
        Rows per bin.
    longest_ids : list of int
        The ``top`` longest rows, longest first (equal norms: smaller id first).
    longest_norms : list of float
        Their norms.
    longest_labels : list of str
        Their tokens (or ids for a table without vocabulary).
    """

    table: str
    edges: np.ndarray
    counts: np.ndarray
    longest_ids: list[int]
    longest_norms: list[float]
    longest_labels: list[str]


def norm_distribution(table: EmbeddingTable, *, top: int = 10, bins: int = 60) -> NormDistribution:
    """Histogram of the row norms of ``table`` and its ``top`` longest rows.

    Raises ``ValueError`` if ``top`` is not in ``[1, V]`` or ``bins < 1``.
    """
    if not 1 <= top <= table.V:
        raise SizeError(f"top={top} must be in [1, V={table.V}]", parameter="top", value=top,
                        expected=f"an int in [1, V={table.V}]")
    if bins < 1:
        raise SizeError(f"bins={bins} must be at least 1", parameter="bins", value=bins, expected="an int of at least 1")
    norms = table.norms()  # (V,) float64
    counts, edges = np.histogram(norms, bins=bins)
    order = np.lexsort((np.arange(table.V), -norms))[:top]  # longest first, ties by smaller id
    ids = order.tolist()
    return NormDistribution(
        table=table.provenance.display_name, edges=edges, counts=counts, longest_ids=ids,
        longest_norms=norms[order].tolist(),
        longest_labels=[table.token(i) or str(i) for i in ids],
    )
