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
from ..engine.input_rule import InputRule
from ..engine.positional import DEFAULT_BASE, sinusoidal_table

__all__ = [
    "family_positions", "DEFAULT_MAX_CONTEXT", "DRAWN_POSITIONS", "HEATMAP_POSITIONS", "SMOOTH_ADJACENT", "TableSimilarity", "Smoothness", "PositionComparison",
    "power_of_two_offsets", "table_similarity", "smoothness", "compare_positions", "compare_table_positions",
    "PositionMaps", "position_maps", "row_notes",
]

# T_max of the sinusoidal table drawn for a table with no position table and no config to give its context.
DEFAULT_MAX_CONTEXT = 512
# A sinusoidal table drawn alone is measured over at most this many positions: its (T, D) float64 rows and
# their unit copy stay under 0.3 GiB at D = 4,096, where Llama 3.1's 131,072 positions would take 8 GiB.
DRAWN_POSITIONS = 4096
# A heatmap shows at most this many positions a side (every s-th beyond): an (H, H) float64 matrix of
# 32 MiB, far more cells than the panel has pixels.
HEATMAP_POSITIONS = 2048

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
    ``T_max`` of the result is the rows measured, the same rows the positions
    figure draws (``position_maps``) and ``encode`` reads.

    Raises ``SourceError`` (a ``ValueError``) for a source without a position
    table (word vectors such as GloVe, the seed table, rotary checkpoints),
    naming the table (``Provenance.display_name``).
    """
    rule = InputRule() if rule is None else rule
    rows = rule.position_rows(table)  # (T_max, D) or None
    if rows is None:
        raise SourceError(f"{table.provenance.display_name} has no position table: positions needs a checkpoint "
                          "with a learned position table, e.g. --model minilm")
    result = compare_positions(rows, base=base, offsets=offsets, source=table.provenance.to_dict())
    return replace(result, position_offset=rule.position_offset, notes=[*result.notes, *row_notes(table, rule)])


def family_positions(table: Any, rule: Any = None) -> tuple[Any, str | None]:
    """The learned position table the family adds, as stored, and a note where it is not the table's own.

    A factorised OPT keeps its positions D wide, added after its Linear E ->
    D (``rule.projection.positions``); every other table has them beside its
    token rows (``table.positions``), or none (``InputRule.position_table``).
    """
    rule = InputRule() if rule is None else rule
    stored = rule.position_table(table)  # (T_max + offset, width) or None
    projection = rule.projection
    if stored is None or projection is None or stored is not projection.positions:
        return stored, None
    return stored, (f"the position table {projection.positions_name} is D={stored.shape[1]} wide, added after "
                    f"{projection.name} (Linear E={projection.weight.shape[1]} -> D={projection.weight.shape[0]})")


def row_notes(table: Any, rule: Any) -> list[str]:
    """Where the rows measured come from, for the reader, one sentence each (English): OPT's D-wide table,
    the family's offset (``rows 0-1 of the 66-row table left out: roberta numbers positions from row 2``);
    ``[]`` where the table has no learned positions or nothing is left out. ``positions`` and
    ``plot positions`` print the same notes."""
    stored, where = family_positions(table, rule)
    notes = [where] if where else []
    if rule.position_offset and stored is not None:
        notes.append(f"rows 0-{rule.position_offset - 1} of the {stored.shape[0]}-row table left out: "
                     f"{rule.family or 'the family'} numbers positions from row {rule.position_offset}")
    return notes


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
        The positions the model takes and the width of its position vectors:
        the rows of the learned table its tokens read (offset rows left out),
        else the config's ``max_position_embeddings``, else the value given
        (``max_context_length``), else ``DEFAULT_MAX_CONTEXT``.
    learned : TableSimilarity or None
        The checkpoint's learned table, measured on the rows its tokens read
        (``InputRule.position_rows``, as ``compare_table_positions``); ``None``
        for a source without one (then only the sinusoidal table is drawn).
    sinusoidal : TableSimilarity
        ``sinusoidal_table(drawn, D, base)``, measured the same way.
    learned_cosines : numpy.ndarray, shape (H, H), float64, or None
        Cosine of every pair of learned positions 0, s, 2s, ... (s = ``heatmap_step``).
    sinusoidal_cosines : numpy.ndarray, shape (H, H), float64
        The same for the sinusoidal table.
    drawn : int
        Positions measured: T_max, or the first ``DRAWN_POSITIONS`` of a
        longer context drawn with the sinusoidal table alone.
    heatmap_step : int
        s: the heatmaps show every s-th position, at most ``HEATMAP_POSITIONS`` a side.
    T_max_from : {"table", "config", "given", "default"}
        Where T_max comes from.
    position_offset : int
        Rows of the stored table before position 0 (RoBERTa: padding_idx + 1; OPT: 2), left out.
    stored_rows : int or None
        Rows of the position table as stored (T_max + position_offset); None without one.
    family : str or None
        The config's ``model_type``, for the note on the rows left out.
    """

    table: str
    T_max: int
    D: int
    learned: TableSimilarity | None
    sinusoidal: TableSimilarity
    learned_cosines: np.ndarray | None
    sinusoidal_cosines: np.ndarray
    drawn: int
    heatmap_step: int = 1
    T_max_from: str = "table"
    position_offset: int = 0
    stored_rows: int | None = None
    family: str | None = None


@renamed(max_positions="max_context_length")
def position_maps(table: Any, *, base: float = DEFAULT_BASE, max_context_length: int | None = None,
                  rule: Any = None) -> PositionMaps:
    """Measure an ``EmbeddingTable``'s position table beside the sinusoidal one.

    The same rows as ``compare_table_positions`` (``embedlab positions``):
    a table with a learned position table is compared on the rows its
    tokens read (``rule.position_rows``: RoBERTa's from padding_idx + 1,
    its zero padding row left out; a factorised OPT's D-wide table). One
    without (rotary or ALiBi checkpoints, word vectors, the seed table) gets
    the sinusoidal table alone, at the model's T_max: ``max_context_length``
    where given, else the config's ``max_position_embeddings``
    (``rule.max_context_length``), else ``DEFAULT_MAX_CONTEXT``; a T_max
    beyond ``DRAWN_POSITIONS`` is measured over its first ``DRAWN_POSITIONS``
    (a (T_max, D) float64 table of Llama 3.1's 131,072 x 4,096 would be 4 GiB).

    Raises ``SizeError`` (a ``ValueError``) for max_context_length < 2 when it is used.
    """
    rule = InputRule() if rule is None else rule
    rows = rule.position_rows(table)
    learned = None if rows is None else position_table(rows)  # (T_max, D)
    if learned is not None:
        T_max, D, source = learned.shape[0], learned.shape[1], "table"
    else:
        T_max, source = _context_length(max_context_length, rule)
        D = table.D
    drawn = T_max if learned is not None else min(T_max, DRAWN_POSITIONS)
    offsets = power_of_two_offsets(drawn)
    sinusoidal = sinusoidal_table(drawn, D, base)  # (drawn, D)
    step = -(-drawn // HEATMAP_POSITIONS)  # ceil: at most HEATMAP_POSITIONS positions a side
    stored = rule.position_table(table)
    return PositionMaps(
        table=table.provenance.display_name, T_max=T_max, D=D,
        learned=None if learned is None else table_similarity(learned, offsets),
        sinusoidal=table_similarity(sinusoidal, offsets),
        learned_cosines=None if learned is None else cosine_matrix(learned[::step]),  # (H, H)
        sinusoidal_cosines=cosine_matrix(sinusoidal[::step]),  # (H, H)
        drawn=drawn, heatmap_step=step, T_max_from=source,
        position_offset=rule.position_offset if learned is not None else 0,
        stored_rows=None if stored is None else int(stored.shape[0]), family=rule.family,
    )


def _context_length(given: int | None, rule: Any) -> tuple[int, str]:
    """T_max for a table without a position table, and where it comes from: given, the config's, the default."""
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 2:
            raise SizeError(f"max_context_length={given!r}: the sinusoidal table needs at least 2 positions "
                            "for an offset", parameter="max_context_length", value=given,
                            expected="an int of at least 2")
        return given, "given"
    if rule.max_context_length is not None and rule.max_context_length >= 2:
        return int(rule.max_context_length), "config"
    return DEFAULT_MAX_CONTEXT, "default"


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
