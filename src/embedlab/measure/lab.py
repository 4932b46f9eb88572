"""The lab measurement: one routine over either engine.

``measure(engine, settings)`` runs the lab's experiments on one table and
returns a ``LabResult`` of plain values:

1. lookup is a one-hot product (same numbers, ``V * D`` multiplications vs 0);
2. the tied head scores every token with the very table, and tying saves
   ``V * D`` parameters, more at a bigger vocabulary;
3. dot product and cosine rank neighbours differently, and stretching one
   row moves it in the dot list only;
4. multiplying by sqrt(D) (Vaswani et al. 2017, section 3.4) changes size, not
   direction.

The engine is ``ReferenceEngine`` (lists, ``embed.py``: the seed report runs on
a bare Python) or ``ArrayEngine`` (an ``EmbeddingTable``: real tables). Both
give the measurement Python lists and floats, so the routine is written once.
Scalar measures (cosine, rms) always use the reference's definitions.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields
from typing import Any, Protocol, Sequence

from .. import embed
from ..errors import SizeError

__all__ = [
    "LabSettings", "LabResult", "ReferenceEngine", "ArrayEngine", "measure", "REPORT_KEYS",
    "ScoredList", "StretchComparison", "ScaleComparison", "compare_stretch", "compare_scale",
]

Vector = list[float]


@dataclass(frozen=True)
class LabSettings:
    """What the lab measures.

    Attributes
    ----------
    probe : int
        The token id every experiment is about (137 for the seed table).
    k : int
        Neighbours per list (5), ``>= 1``.
    stretch_rank : int or None
        0-based rank, in the probe's cosine list, of the row to stretch,
        ``0 <= stretch_rank < k``; ``None`` (the default) means the 5th
        (rank 4), or the last one when k < 5. See ``rank``.
    stretch_factor : float
        What that row is multiplied by (4.0): finite and above 0, so the row
        keeps its direction and only its length changes.
    growth_factor : int
        How many times bigger the vocabulary grows in the parameter count (2), ``>= 1``.

    Raises
    ------
    ValueError
        For a setting outside the ranges above (names it).
    """

    probe: int = 137
    k: int = 5
    stretch_rank: int | None = None
    stretch_factor: float = 4.0
    growth_factor: int = 2

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise SizeError(f"k={self.k!r} must be an int of at least 1", parameter="k", value=self.k,
                            expected="an int of at least 1")
        if self.stretch_rank is not None and not 0 <= self.stretch_rank < self.k:
            raise SizeError(f"stretch rank {self.stretch_rank} must be in [0, k={self.k})", parameter="stretch_rank",
                            value=self.stretch_rank, expected=f"an int in [0, k={self.k})")
        factor = self.stretch_factor
        number = isinstance(factor, (int, float)) and not isinstance(factor, bool)
        if not (number and math.isfinite(factor) and factor > 0):
            raise SizeError(f"stretch factor {factor!r} must be a finite number above 0", parameter="stretch_factor",
                            value=factor, expected="a finite number above 0")
        if isinstance(self.growth_factor, bool) or not isinstance(self.growth_factor, int) or self.growth_factor < 1:
            raise SizeError(f"growth factor {self.growth_factor!r} must be a whole number of at least 1",
                            parameter="growth_factor", value=self.growth_factor,
                            expected="a whole number of at least 1")

    @property
    def rank(self) -> int:
        """The 0-based rank of the stretched row: ``stretch_rank``, or the 5th (the last when k < 5)."""
        return min(4, self.k - 1) if self.stretch_rank is None else self.stretch_rank


@dataclass(frozen=True)
class LabResult:
    """Every number of the lab report; field order is the JSON key order.

    Counts are exact ints (parameters, multiplications); lists of token ids
    are best first. ``tokens`` (token strings beside each id list) and
    ``source`` (provenance) are set for tables that have them and left
    ``None`` for the seed table.
    """

    vocab: int
    dim: int
    seed: int | None
    probe: int
    table_shape: list[int]
    params: int
    tied_params: int
    untied_params: int
    saved: int
    bigger_vocab: int
    bigger_tied: int
    bigger_untied: int
    lookup_mults: int
    one_hot_mults: int
    max_abs_diff: float
    repeat_same: bool
    logit_len: int
    logit_argmax: int
    logit_argmax_is_self: bool
    cos_neighbors: list[int]
    dot_neighbors: list[int]
    neighbors_differ: bool
    stretch_target: int
    stretch_factor: float
    cos_after_stretch: list[int]
    dot_after_stretch: list[int]
    cos_unchanged_by_scale: bool
    rms_plain: float
    rms_scaled: float
    rms_ratio: float
    tokens: dict[str, Any] | None = None
    source: dict[str, Any] | None = None


# The report's required JSON keys, in order (every LabResult field but the optional two).
REPORT_KEYS = tuple(f.name for f in fields(LabResult) if f.name not in ("tokens", "source"))


class Engine(Protocol):
    """What ``measure`` needs of a table; every value comes back as Python lists/floats."""

    V: int
    D: int
    eps: float  # machine epsilon of the vectors the engine hands out

    def lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def lookup_via_one_hot(self, ids: Sequence[int]) -> list[Vector]: ...
    def logits(self, hidden: Vector) -> Vector: ...
    def nearest(self, token_id: int, k: int, metric: str) -> list[int]: ...
    def stretch(self, token_id: int, factor: float) -> "Engine": ...
    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]: ...
    def tokens(self, ids: Sequence[int]) -> list[str] | None: ...


def measure(engine: Engine, settings: LabSettings = LabSettings(), *, seed: int | None = None,
            source: dict[str, Any] | None = None) -> LabResult:
    """Run every lab experiment on one table.

    Parameters
    ----------
    engine : ReferenceEngine or ArrayEngine
        The (V, D) table behind the engine interface.
    settings : LabSettings
        Probe, k, stretch and growth settings.
    seed : int, optional
        The seed the table was made with (the seed table), else ``None``.
    source : dict, optional
        Provenance of a real table, carried into the result.

    Returns
    -------
    LabResult

    Raises
    ------
    IndexError
        If the probe is not a token id of the table.
    ValueError
        If k is not in ``[1, V - 1]`` or the stretch rank is not below k.
    """
    s = settings
    V, D, p = engine.V, engine.D, s.probe
    growth = embed.vocab_growth(V, D, s.growth_factor)

    (vec,) = engine.lookup([p])  # (D,)
    (via_one_hot,) = engine.lookup_via_one_hot([p])  # (D,)
    first, again = engine.lookup([p, p])

    scores = engine.logits(vec)  # (V,) the tied head
    argmax = max(range(V), key=lambda t: (scores[t], -t))  # the smaller id wins a tie

    cos_ids = engine.nearest(p, s.k, "cosine")
    dot_ids = engine.nearest(p, s.k, "dot")
    target = cos_ids[s.rank]
    stretched = engine.stretch(target, s.stretch_factor)

    other = cos_ids[0]
    plain_probe, plain_other = engine.lookup([p, other])
    scaled_probe, scaled_other = engine.scaled_lookup([p, other])
    before = embed.cosine(plain_probe, plain_other)
    after = embed.cosine(scaled_probe, scaled_other)
    rms_plain, rms_scaled = embed.rms(plain_probe), embed.rms(scaled_probe)

    result = LabResult(
        vocab=V, dim=D, seed=seed, probe=p, table_shape=[V, D],
        params=embed.param_count(V, D),
        tied_params=growth["tied"], untied_params=growth["untied"], saved=growth["saved"],
        bigger_vocab=growth["bigger_vocab"], bigger_tied=growth["bigger_tied"],
        bigger_untied=growth["bigger_untied"],
        lookup_mults=0, one_hot_mults=embed.one_hot_mults(V, D, 1),
        max_abs_diff=max(abs(a - b) for a, b in zip(vec, via_one_hot)),
        repeat_same=first == again,
        logit_len=len(scores), logit_argmax=argmax, logit_argmax_is_self=argmax == p,
        cos_neighbors=cos_ids, dot_neighbors=dot_ids, neighbors_differ=cos_ids != dot_ids,
        stretch_target=target, stretch_factor=float(s.stretch_factor),
        cos_after_stretch=stretched.nearest(p, s.k, "cosine"),
        dot_after_stretch=stretched.nearest(p, s.k, "dot"),
        cos_unchanged_by_scale=abs(before - after) <= _rounding_bound(engine),
        rms_plain=rms_plain, rms_scaled=rms_scaled,
        rms_ratio=rms_scaled / rms_plain if rms_plain else 0.0,
        source=source,
    )
    return _with_tokens(result, engine)


def _rounding_bound(engine: Engine) -> float:
    """How far two cosines of the same direction may differ by rounding alone.

    A computed dot product of length D is off by at most about ``D * u * |a| |b|``
    (Higham, Accuracy and Stability of Numerical Algorithms, 2002, section 3.1),
    with ``u = eps / 2``; scaled vectors are also rounded to the engine's dtype.
    ``4 * D * eps`` covers both with room; a real change of direction is far larger.
    """
    return 4 * engine.D * engine.eps


def _with_tokens(result: LabResult, engine: Engine) -> LabResult:
    """Add the token string beside every id and id list, where the table has a vocabulary."""
    named = {
        "probe_token": [result.probe],
        "logit_argmax_token": [result.logit_argmax],
        "stretch_target_token": [result.stretch_target],
        "cos_neighbors_tokens": result.cos_neighbors,
        "dot_neighbors_tokens": result.dot_neighbors,
        "cos_after_stretch_tokens": result.cos_after_stretch,
        "dot_after_stretch_tokens": result.dot_after_stretch,
    }
    tokens: dict[str, Any] = {}
    for key, ids in named.items():
        strings = engine.tokens(ids)
        if strings is None:
            return result
        tokens[key] = strings[0] if key.endswith("_token") else strings
    return LabResult(**{**{f.name: getattr(result, f.name) for f in fields(result)}, "tokens": tokens})


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

    def nearest(self, token_id: int, k: int, metric: str) -> list[int]:
        by = {"cosine": embed.nearest_by_cosine, "dot": embed.nearest_by_dot}[metric]
        return by(self.rows, token_id, k)

    def stretch(self, token_id: int, factor: float) -> "ReferenceEngine":
        return ReferenceEngine(embed.stretch(self.rows, token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return embed.scaled_lookup(self.rows, ids, self.D)

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return None


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

    def nearest(self, token_id: int, k: int, metric: str) -> list[int]:
        return self.table.nearest([token_id], k, metric).ids[0].tolist()

    def stretch(self, token_id: int, factor: float) -> "ArrayEngine":
        return ArrayEngine(self.table.stretch(token_id, factor))

    def scaled_lookup(self, ids: Sequence[int]) -> list[Vector]:
        return self.table.scaled_lookup(list(ids)).tolist()

    def tokens(self, ids: Sequence[int]) -> list[str] | None:
        return self.table.tokens(list(ids))


# -- the experiments of sections 4 and 5, with every score (for the figures) --------

@dataclass(frozen=True)
class ScoredList:
    """A neighbour list with the score and the length (norm) of each listed row."""

    ids: list[int]
    scores: list[float]
    norms: list[float]
    tokens: list[str] | None


@dataclass(frozen=True)
class StretchComparison:
    """The probe's cosine and dot lists before and after one row is stretched."""

    probe: int
    probe_token: str | None
    target: int
    factor: float
    cos_before: ScoredList
    dot_before: ScoredList
    cos_after: ScoredList
    dot_after: ScoredList


@dataclass(frozen=True)
class ScaleComparison:
    """Rows before and after multiplying by sqrt(D): length changes, cosine with the probe does not."""

    probe: int
    probe_token: str | None
    ids: list[int]
    tokens: list[str] | None
    factor: float
    norms_before: list[float]
    norms_after: list[float]
    cos_before: list[float]
    cos_after: list[float]


def compare_stretch(table: Any, settings: LabSettings = LabSettings()) -> StretchComparison:
    """The report's stretch experiment on an ``EmbeddingTable``, with scores and norms.

    The row stretched is the probe's cosine neighbour at ``settings.stretch_rank``,
    multiplied by ``settings.stretch_factor``; lists hold ``settings.k`` ids.
    Raises as ``EmbeddingTable.nearest``.
    """
    s = settings
    cos_before = _scored(table, s.probe, s.k, "cosine")
    target = cos_before.ids[s.rank]
    stretched = table.stretch(target, s.stretch_factor)
    return StretchComparison(
        probe=s.probe, probe_token=table.token(s.probe), target=target, factor=float(s.stretch_factor),
        cos_before=cos_before, dot_before=_scored(table, s.probe, s.k, "dot"),
        cos_after=_scored(stretched, s.probe, s.k, "cosine"), dot_after=_scored(stretched, s.probe, s.k, "dot"),
    )


def compare_scale(table: Any, probe: int, ids: Sequence[int]) -> ScaleComparison:
    """Lengths of rows and their cosine with the probe, before and after the sqrt(D) scaling.

    Raises as ``EmbeddingTable.lookup``.
    """
    ids = [int(i) for i in ids]
    plain = table.lookup([probe, *ids]).tolist()
    scaled = table.scaled_lookup([probe, *ids]).tolist()
    return ScaleComparison(
        probe=probe, probe_token=table.token(probe), ids=ids, tokens=table.tokens(ids), factor=math.sqrt(table.D),
        norms_before=[embed.norm(v) for v in plain[1:]], norms_after=[embed.norm(v) for v in scaled[1:]],
        cos_before=[embed.cosine(plain[0], v) for v in plain[1:]],
        cos_after=[embed.cosine(scaled[0], v) for v in scaled[1:]],
    )


def _scored(table: Any, probe: int, k: int, metric: str) -> ScoredList:
    found = table.nearest([probe], k, metric)
    ids = found.ids[0].tolist()
    norms = table.norms()
    return ScoredList(ids=ids, scores=found.scores[0].tolist(), norms=[float(norms[i]) for i in ids],
                      tokens=None if found.tokens is None else found.tokens[0])
