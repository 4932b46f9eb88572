"""Learned positions against sinusoidal ones: how alike nearby positions are, and a verdict.

A position table (T_max, D) is *smooth* when the vectors of neighbouring
positions point the same way and the likeness fades with the distance between
positions. The sinusoidal table (Vaswani et al. 2017, section 3.5) is smooth by
construction: the cosine of rows p and p + k is ``(2 / D) * sum_i cos(k w_i)``,
the same for every p, and it falls as k grows. A learned table starts as
independent random rows (cosine ~0 +- 1/sqrt(D) at any offset) and is smooth
only if training made it so. This module measures that:

* ``table_similarity``: the adjacent cosine along one table and its mean cosine
  by offset (``engine.position_similarity``, the array functions);
* ``compare_positions``: a learned table against the sinusoidal table of the
  same size, with a smoothness verdict (``Smoothness``);
* ``position_maps``: what the positions figure draws.

Cosine follows the lab's rule: a zero-length row has cosine 0.0 with anything.
A row holding NaN or infinity is refused (``ValueError`` naming the row), never
measured. Everything is computed in float64.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..deprecation import renamed
from ..errors import SizeError, SourceError
from ..engine.position_similarity import adjacent_cosine, cosine_matrix, mean_cosine_by_offset, position_table
from ..engine.positional import DEFAULT_BASE, sinusoidal_table

__all__ = [
    "family_positions", "SMOOTH_ADJACENT", "TableSimilarity", "Smoothness", "PositionComparison",
    "power_of_two_offsets", "table_similarity", "smoothness", "compare_positions", "compare_table_positions",
    "PositionMaps", "position_maps",
]

# A table is called smooth when neighbouring rows have a mean cosine of at least
# this (they point mostly the same way; independent random rows give ~0) and the
# likeness at offset 1 is above the likeness at the largest offset measured.
SMOOTH_ADJACENT = 0.5


@dataclass(frozen=True)
class TableSimilarity:
    """Similarity measured along one position table.

    Attributes
    ----------
    adjacent : list of float, length T_max - 1
        ``adjacent[p]`` is the cosine of rows p and p + 1.
    adjacent_mean, adjacent_min : float
        Mean and smallest of ``adjacent``.
    adjacent_min_position : int
        The p where ``adjacent`` is smallest (rows p and p + 1 least alike).
    windows : list of [start, stop, mean]
        Mean of ``adjacent[start:stop]`` over equal windows along the table.
    offsets : list of int
        The offsets k measured.
    by_offset : list of float
        Mean cosine of rows p and p + k, one per offset.
    decreasing_steps : int
        How many successive offsets have a lower mean cosine than the one before.
    """

    adjacent: list[float]
    adjacent_mean: float
    adjacent_min: float
    adjacent_min_position: int
    windows: list[list[float]]
    offsets: list[int]
    by_offset: list[float]
    decreasing_steps: int


@dataclass(frozen=True)
class Smoothness:
    """Whether a table has the smooth structure of the sinusoidal one.

    ``smooth`` is True when ``adjacent_mean >= SMOOTH_ADJACENT`` and the mean
    cosine at the smallest offset is above the one at the largest offset
    (``decays``). ``random_spread`` = 1/sqrt(D) is the standard deviation of
    the cosine of two independent random directions: what an untrained
    table's neighbours would show.
    """

    smooth: bool
    adjacent_mean: float
    threshold: float
    random_spread: float
    decays: bool
    decreasing_steps: int
    steps: int


@dataclass(frozen=True)
class PositionComparison:
    """A learned position table against the sinusoidal table of the same size."""

    T_max: int
    D: int
    base: float
    learned: TableSimilarity
    sinusoidal: TableSimilarity
    verdict: Smoothness
    source: dict[str, Any] | None = None
    position_offset: int = 0  # rows of the checkpoint's table before position 0, left out of T_max
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return asdict(self)


def compare_table_positions(table: Any, *, base: float = DEFAULT_BASE, offsets: Sequence[int] | None = None,
                            rule: Any = None) -> PositionComparison:
    """``compare_positions`` on the learned position table of an ``EmbeddingTable``.

    ``rule`` (an ``engine.input_rule.InputRule``) says where the family's
    positions start: rows before ``rule.position_offset`` (RoBERTa's unused
    row 0 and padding row 1; OPT's first 2) hold no position and are left
    out, so position 0 is compared with the sinusoidal table's row 0.
    ``T_max`` of the result is the rows measured.

    Raises ``SourceError`` (a ``ValueError``) for a source without a position
    table (word vectors such as GloVe, the seed table, rotary checkpoints).
    """
    positions, where = family_positions(table, rule)
    if positions is None:
        raise SourceError(f"{table.provenance.display_name} has no position table: positions needs a checkpoint "
                          "with a learned position table, e.g. --model minilm")
    offset = 0 if rule is None else rule.position_offset
    result = compare_positions(positions[offset:], base=base, offsets=offsets,  # (T_max - offset, D)
                               source=table.provenance.to_dict())
    notes = [*result.notes, *([where] if where else [])]
    if offset:
        notes.append(f"rows 0-{offset - 1} of the {positions.shape[0]}-row table left out: "
                     f"{rule.family or 'the family'} numbers positions from row {offset}")
    return replace(result, position_offset=offset, notes=notes)


def family_positions(table: Any, rule: Any = None) -> tuple[Any, str | None]:
    """The learned position table the family adds, and a note where it is not the table's own.

    A factorised OPT keeps its positions D wide, added after its Linear E ->
    D (``rule.projection.positions``); every other table has them beside its
    token rows (``table.positions``), or none.
    """
    if table.positions is not None:
        return table.positions, None  # (T_max, D)
    projection = getattr(rule, "projection", None)
    if projection is not None and projection.positions is not None:
        return projection.positions, (f"the position table {projection.positions_name} is D="
                                      f"{projection.positions.shape[1]} wide, added after {projection.name} "
                                      f"(Linear E={projection.weight.shape[1]} -> D={projection.weight.shape[0]})")
    return None, None


def compare_positions(learned: Any, *, base: float = DEFAULT_BASE, offsets: Sequence[int] | None = None,
                      windows: int = 8, source: dict[str, Any] | None = None) -> PositionComparison:
    """Measure a learned (T_max, D) table beside ``sinusoidal_table(T_max, D, base)``.

    Parameters
    ----------
    learned : array_like, shape (T_max, D), floating, T_max >= 2
    base : float
        Base of the sinusoidal table compared against.
    offsets : sequence of int, optional
        Offsets k for the mean cosine; default 1, 2, 4, ... below T_max.
    windows : int
        Number of equal windows for the adjacent cosine along the table.
    source : dict, optional
        Provenance of the learned table, carried into the result.

    Returns
    -------
    PositionComparison

    Raises
    ------
    ShapeError
        (a ``ValueError``) for a table that is not 2-D with at least 2 rows.
    ValueError
        For an offset outside ``[1, T_max)``, windows < 1, or a table holding
        NaN or infinity (names the row and column).
    """
    P = position_table(learned)  # (T_max, D)
    T_max, D = P.shape
    offsets = power_of_two_offsets(T_max) if offsets is None else [int(k) for k in offsets]
    mine = table_similarity(P, offsets, windows)
    reference = table_similarity(sinusoidal_table(T_max, D, base), offsets, windows)
    return PositionComparison(T_max=T_max, D=D, base=float(base), learned=mine, sinusoidal=reference,
                              verdict=smoothness(mine, D), source=source)


@dataclass(frozen=True)
class PositionMaps:
    """Everything the position figures draw, for one table's positions.

    Attributes
    ----------
    table : str
        The table's name (``Provenance.display_name``).
    T_max, D : int
        Size of the position tables compared.
    learned : TableSimilarity or None
        The checkpoint's learned table, measured; ``None`` for a source
        without one (then only the sinusoidal table is drawn).
    sinusoidal : TableSimilarity
        ``sinusoidal_table(T_max, D, base)``, measured the same way.
    learned_cosines : numpy.ndarray, shape (T_max, T_max), float64, or None
        Cosine of every pair of learned rows.
    sinusoidal_cosines : numpy.ndarray, shape (T_max, T_max), float64
        Cosine of every pair of sinusoidal rows.
    """

    table: str
    T_max: int
    D: int
    learned: TableSimilarity | None
    sinusoidal: TableSimilarity
    learned_cosines: np.ndarray | None
    sinusoidal_cosines: np.ndarray


@renamed(max_positions="max_context_length")
def position_maps(table: Any, *, base: float = DEFAULT_BASE, max_context_length: int = 512,
                  rule: Any = None) -> PositionMaps:
    """Measure an ``EmbeddingTable``'s position table beside the sinusoidal one.

    A table with a learned position table is compared at its own (T_max, D)
    (a factorised OPT's D-wide one, with ``rule``: ``family_positions``);
    one without (word vectors, the seed table) gets the sinusoidal table of
    ``(max_context_length, D)`` alone.

    Raises ``SizeError`` (a ``ValueError``) for max_context_length < 2 when it is used.
    """
    positions, _ = family_positions(table, rule)
    learned = None if positions is None else position_table(positions)  # (T_max, D)
    if learned is None and int(max_context_length) < 2:
        raise SizeError(f"max_context_length={max_context_length!r}: the sinusoidal table needs at least 2 positions "
                        "for an offset", parameter="max_context_length", value=max_context_length,
                        expected="an int of at least 2")
    T_max = learned.shape[0] if learned is not None else int(max_context_length)
    D = learned.shape[1] if learned is not None else table.D
    offsets = power_of_two_offsets(T_max)
    sinusoidal = sinusoidal_table(T_max, D, base)  # (T_max, D)
    return PositionMaps(
        table=table.provenance.display_name, T_max=T_max, D=D,
        learned=None if learned is None else table_similarity(learned, offsets),
        sinusoidal=table_similarity(sinusoidal, offsets),
        learned_cosines=None if learned is None else cosine_matrix(learned),
        sinusoidal_cosines=cosine_matrix(sinusoidal),
    )


def table_similarity(table: Any, offsets: Sequence[int], windows: int = 8) -> TableSimilarity:
    """Adjacent cosine along a (T_max, D) table and mean cosine by offset.

    Raises ``ShapeError`` for fewer than 2 rows and ``ValueError`` for a bad
    offset, windows < 1, or NaN or infinity in the table (names the row).
    """
    P = position_table(table)  # (T_max, D)
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"windows must be an int >= 1, got {windows!r}")
    adjacent = adjacent_cosine(P)  # (T_max - 1,)
    by_offset = mean_cosine_by_offset(P, offsets)  # (len(offsets),)
    edges = np.linspace(0, adjacent.size, min(windows, adjacent.size) + 1).round().astype(int)
    return TableSimilarity(
        adjacent=adjacent.tolist(),
        adjacent_mean=float(adjacent.mean()),
        adjacent_min=float(adjacent.min()),
        adjacent_min_position=int(adjacent.argmin()),
        windows=[[int(a), int(b), float(adjacent[a:b].mean())] for a, b in zip(edges[:-1], edges[1:])],
        offsets=[int(k) for k in offsets],
        by_offset=by_offset.tolist(),
        decreasing_steps=int(np.sum(np.diff(by_offset) < 0)),
    )


def smoothness(similarity: TableSimilarity, d_model: int) -> Smoothness:
    """The verdict on a measured table of width D (see ``Smoothness``)."""
    decays = len(similarity.by_offset) >= 2 and similarity.by_offset[0] > similarity.by_offset[-1]
    smooth = similarity.adjacent_mean >= SMOOTH_ADJACENT and decays
    return Smoothness(smooth=bool(smooth), adjacent_mean=similarity.adjacent_mean, threshold=SMOOTH_ADJACENT,
                      random_spread=1.0 / math.sqrt(d_model), decays=bool(decays),
                      decreasing_steps=similarity.decreasing_steps, steps=max(len(similarity.by_offset) - 1, 0))


@renamed(num_positions="max_context_length")
def power_of_two_offsets(max_context_length: int) -> list[int]:
    """1, 2, 4, ... up to the largest power of two below ``max_context_length`` (T_max, the table's rows).

    >>> power_of_two_offsets(512)
    [1, 2, 4, 8, 16, 32, 64, 128, 256]
    """
    if max_context_length < 2:
        raise SizeError(f"a table needs at least 2 positions for an offset, got {max_context_length}",
                        parameter="max_context_length", value=max_context_length, expected="an int of at least 2")
    return [1 << i for i in range((max_context_length - 1).bit_length())]
