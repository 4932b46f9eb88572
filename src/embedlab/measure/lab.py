"""The lab measurement: one routine over either backend.

``measure(table, settings)`` runs the lab's experiments on one table and
returns a ``LabResult`` of plain values:

1. lookup is a one-hot product (same numbers, ``V * D`` multiplications vs 0);
2. the tied head scores every token with the very table, and tying saves
   ``V * D`` parameters, more at a bigger vocabulary;
3. dot product and cosine rank neighbours differently, and stretching one
   row moves it in the dot list only;
4. multiplying by sqrt(D) (Vaswani et al. 2017, section 3.4) changes size, not
   direction.

The backend is ``ReferenceBackend`` (lists, ``embed.py``: the seed report runs on
a bare Python) or ``ArrayBackend`` (an ``EmbeddingTable``: real tables). Both
give the measurement Python lists and floats, so the routine is written once.
Scalar measures (cosine, rms, the scores beside each listed id) always use the
reference's definitions. ``measure`` also takes an ``EmbeddingTable`` or a
list-of-lists table and wraps it in the backend that fits (``measure.backends``).

The result carries everything its renderers show: the scored lists before and
after the stretch (``StretchComparison``), the lengths and cosines before and
after the sqrt(D) scaling (``ScaleComparison``) and, with ``figures=True``, the
norm distribution and the 2-D projection the report's figures draw
(``LabViews``). No renderer measures again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Sequence

from .. import embed
from ..deprecation import renamed_names
from ..engine.provenance import Provenance, display_name
from ..errors import SizeError
from .backends import ArrayBackend, Backend, ReferenceBackend, as_backend

__all__ = [
    "LabSettings", "REPORT_K", "LabResult", "LabViews", "ReferenceBackend", "ArrayBackend", "as_backend", "measure", "REPORT_KEYS",
    "ScoredList", "StretchComparison", "ScaleComparison", "compare_stretch", "compare_scale",
]

# The backends were called engines, a word that also names the package embedlab.engine: the old names
# still answer, with a DeprecationWarning.
__getattr__ = renamed_names(__name__, globals(), {"ReferenceEngine": "ReferenceBackend",
                                                  "ArrayEngine": "ArrayBackend", "as_engine": "as_backend"})



REPORT_K = 5  # neighbours per list in the lab report when k is not given (V - 1 on a smaller table)


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
    k: int = REPORT_K
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
    ``None`` for the seed table. The fields from ``settings`` on are not part
    of the report's required JSON keys: ``settings`` (what was measured),
    ``stretch`` and ``scale`` (every score, length and cosine behind the lists
    and the rms, for the figures), ``views`` (the norms and the projection,
    measured with ``figures=True``, else ``None``), ``notes`` (what a caller
    adjusted without being asked, e.g. a default k shrunk to fit the table) and
    ``run`` (a ``report.run.Run``: embedlab's version, the date and the call or
    command line; set by ``embedlab.report`` and the CLI, ``None`` from ``measure``).
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
    settings: LabSettings | None = None
    stretch: StretchComparison | None = None
    scale: ScaleComparison | None = None
    views: LabViews | None = None
    notes: tuple[str, ...] = ()
    run: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON object: the lab contract's keys in order (``REPORT_KEYS``), then, for
        tables with a vocabulary, the token strings beside the ids, the source's provenance, the
        notes (what was adjusted without being asked), where there are any, and the run record
        (``run``: version, date, command), where there is one."""
        out = {key: _plain(getattr(self, key)) for key in REPORT_KEYS}
        if self.tokens is not None:
            out.update(self.tokens)
        if self.source is not None:
            out["source"] = dict(self.source)
        if self.notes:
            out["notes"] = list(self.notes)
        if self.run is not None:
            out["run"] = self.run.to_dict()
        return out


# Fields of LabResult that are not part of the report's required JSON keys.
_NOT_REPORTED = ("tokens", "source", "settings", "stretch", "scale", "views", "notes", "run")
# The report's required JSON keys, in order (the lab contract of embed_report.json).
REPORT_KEYS = tuple(f.name for f in fields(LabResult) if f.name not in _NOT_REPORTED)


def _plain(value: Any) -> Any:
    """A JSON-able copy: lists copied, so a caller's edit never reaches the result."""
    return list(value) if isinstance(value, list) else value


def measure(table: Any, settings: LabSettings = LabSettings(), *, seed: int | None = None,
            source: dict[str, Any] | None = None, figures: bool = False) -> LabResult:
    """Run every lab experiment on one table.

    Parameters
    ----------
    table : EmbeddingTable, list of lists of float, ReferenceBackend or ArrayBackend
        The (V, D) table; ``as_backend`` wraps a table in its backend.
    settings : LabSettings
        Probe, k, stretch and growth settings.
    seed : int, optional
        The seed the table was made with (the seed table), else ``None``.
    source : dict, optional
        Provenance of a real table, carried into the result; for an
        ``EmbeddingTable`` its own provenance when not given.
    figures : bool
        Also measure what the report's figures draw beyond the lab's lists
        (``LabViews``: the norm distribution and a PCA projection; needs
        NumPy, and scikit-learn for the projection).

    Returns
    -------
    LabResult

    Raises
    ------
    IndexError
        If the probe is not a token id of the table.
    ValueError
        If k is not in ``[1, V - 1]`` or the stretch rank is not below k.
    TypeError
        If ``table`` is none of the kinds above.
    """
    backend = as_backend(table)
    if source is None and isinstance(backend, ArrayBackend):
        source = backend.table.provenance.to_dict()
    s = settings
    V, D, p = backend.V, backend.D, s.probe
    growth = embed.vocab_growth(V, D, s.growth_factor)

    (vec,) = backend.lookup([p])  # (D,)
    (via_one_hot,) = backend.lookup_via_one_hot([p])  # (D,)
    first, again = backend.lookup([p, p])

    scores = backend.logits(vec)  # (V,) the tied head
    argmax = max(range(V), key=lambda t: (scores[t], -t))  # the smaller id wins a tie

    name = None if source is None else display_name(source)
    stretch = _stretch_experiment(backend, s, name)
    cos_ids, dot_ids = stretch.cos_before.ids, stretch.dot_before.ids
    scale = _scale_experiment(backend, p, list(dict.fromkeys([*cos_ids, *dot_ids])), name)
    other = scale.ids.index(cos_ids[0])  # the probe's nearest token by cosine
    rms_plain, rms_scaled = scale.rms_before, scale.rms_after

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
        cos_neighbors=list(cos_ids), dot_neighbors=list(dot_ids), neighbors_differ=cos_ids != dot_ids,
        stretch_target=stretch.target, stretch_factor=float(s.stretch_factor),
        cos_after_stretch=list(stretch.cos_after.ids), dot_after_stretch=list(stretch.dot_after.ids),
        cos_unchanged_by_scale=abs(scale.cos_before[other] - scale.cos_after[other]) <= _rounding_bound(backend),
        rms_plain=rms_plain, rms_scaled=rms_scaled,
        rms_ratio=rms_scaled / rms_plain if rms_plain else 0.0,
        source=source, settings=s, stretch=stretch, scale=scale,
    )
    result = _with_tokens(result, backend)
    return replace(result, views=_views(backend, result)) if figures else result


def _rounding_bound(backend: Backend) -> float:
    """How far two cosines of the same direction may differ by rounding alone.

    A computed dot product of length D is off by at most about ``D * u * |a| |b|``
    (Higham, Accuracy and Stability of Numerical Algorithms, 2002, section 3.1),
    with ``u = eps / 2``; scaled vectors are also rounded to the backend's dtype.
    ``4 * D * eps`` covers both with room; a real change of direction is far larger.
    """
    return 4 * backend.D * backend.eps


def _with_tokens(result: LabResult, backend: Backend) -> LabResult:
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
        strings = backend.tokens(ids)
        if strings is None:
            return result
        tokens[key] = strings[0] if key.endswith("_token") else strings
    return replace(result, tokens=tokens)


# -- the experiments of sections 4 and 5, with every score (for the figures) --------

@dataclass(frozen=True)
class ScoredList:
    """A neighbour list with the score and the length (norm) of each listed row.

    ``ids`` best first (equal scores: smaller id first); ``scores`` the cosine or
    dot product with the probe (float64); ``norms`` each row's length, in the
    table's units; ``tokens`` the token strings, ``None`` without a vocabulary.
    """

    ids: list[int]
    scores: list[float]
    norms: list[float]
    tokens: list[str] | None


@dataclass(frozen=True)
class StretchComparison:
    """The probe's cosine and dot lists before and after one row is stretched.

    ``table`` is the table's name (``Provenance.display_name``: ``"tiny-llama"``),
    ``None`` for a bare list of rows.
    """

    probe: int
    probe_token: str | None
    target: int
    factor: float
    cos_before: ScoredList
    dot_before: ScoredList
    cos_after: ScoredList
    dot_after: ScoredList
    table: str | None = None


@dataclass(frozen=True)
class ScaleComparison:
    """Rows before and after multiplying by sqrt(D): length changes, cosine with the probe does not.

    ``rms_before``/``rms_after`` are the probe's own rms (``embed.rms``);
    ``norms_*`` and ``cos_*`` hold one value per id of ``ids``; ``table`` the
    table's name (``Provenance.display_name``), ``None`` for a bare list of rows.
    """

    probe: int
    probe_token: str | None
    ids: list[int]
    tokens: list[str] | None
    factor: float
    norms_before: list[float]
    norms_after: list[float]
    cos_before: list[float]
    cos_after: list[float]
    rms_before: float = 0.0
    rms_after: float = 0.0
    table: str | None = None


@dataclass(frozen=True)
class LabViews:
    """What the report's figures draw beyond the lab's lists, measured once with ``figures=True``.

    ``norms`` is a ``measure.norms.NormDistribution`` (the longest
    ``min(10, V)`` rows labelled); ``projection`` a PCA ``Projection`` of the
    probe, its neighbours and a sample of 40 rows, or ``None`` with
    ``left_out["projection"]`` saying why (too few rows, D < 2).
    """

    norms: Any
    projection: Any
    left_out: dict[str, str] = field(default_factory=dict)


REPORT_NORMS_TOP = 10  # longest rows labelled in the report's norms figure, or V when smaller


def compare_stretch(table: Any, settings: LabSettings = LabSettings()) -> StretchComparison:
    """The report's stretch experiment, with scores and norms: ``LabResult.stretch`` alone.

    The row stretched is the probe's cosine neighbour at ``settings.rank``,
    multiplied by ``settings.stretch_factor``; lists hold ``settings.k`` ids.
    ``table`` is what ``measure`` takes. Raises as ``EmbeddingTable.nearest``.
    """
    backend = as_backend(table)
    return _stretch_experiment(backend, settings, _name(backend))


def compare_scale(table: Any, probe: int, ids: Sequence[int]) -> ScaleComparison:
    """Lengths of rows and their cosine with the probe, before and after the sqrt(D) scaling.

    ``table`` is what ``measure`` takes. Raises as ``EmbeddingTable.lookup``.
    """
    backend = as_backend(table)
    return _scale_experiment(backend, probe, [int(i) for i in ids], _name(backend))


def _name(backend: Backend) -> str | None:
    """The table's name for a figure's title (``Provenance.display_name``); None for a bare list of rows."""
    return backend.table.provenance.display_name if isinstance(backend, ArrayBackend) else None


def _stretch_experiment(backend: Backend, s: LabSettings, table: str | None = None) -> StretchComparison:
    cos_before = _scored(backend, s.probe, s.k, "cosine")
    target = cos_before.ids[s.rank]
    stretched = backend.stretch(target, s.stretch_factor)
    (probe_token,) = backend.tokens([s.probe]) or [None]
    return StretchComparison(
        probe=s.probe, probe_token=probe_token, target=target, factor=float(s.stretch_factor),
        cos_before=cos_before, dot_before=_scored(backend, s.probe, s.k, "dot"),
        cos_after=_scored(stretched, s.probe, s.k, "cosine"), dot_after=_scored(stretched, s.probe, s.k, "dot"),
        table=table,
    )


def _scale_experiment(backend: Backend, probe: int, ids: list[int], table: str | None = None) -> ScaleComparison:
    plain = backend.lookup([probe, *ids])  # (1 + n, D)
    scaled = backend.scaled_lookup([probe, *ids])  # (1 + n, D), times sqrt(D)
    (probe_token,) = backend.tokens([probe]) or [None]
    return ScaleComparison(
        probe=probe, probe_token=probe_token, ids=ids, tokens=backend.tokens(ids), factor=math.sqrt(backend.D),
        norms_before=[embed.norm(v) for v in plain[1:]], norms_after=[embed.norm(v) for v in scaled[1:]],
        cos_before=[embed.cosine(plain[0], v) for v in plain[1:]],
        cos_after=[embed.cosine(scaled[0], v) for v in scaled[1:]],
        rms_before=embed.rms(plain[0]), rms_after=embed.rms(scaled[0]), table=table,
    )


def _scored(backend: Backend, probe: int, k: int, metric: str) -> ScoredList:
    ids, scores = backend.scored(probe, k, metric)
    return ScoredList(ids=ids, scores=scores, norms=backend.norms(ids), tokens=backend.tokens(ids))


def _views(backend: Backend, result: LabResult) -> LabViews:
    """The norm distribution and the PCA projection the report's figures draw (NumPy, scikit-learn)."""
    from . import norms, projection

    table = backend.array_table()
    if result.seed is not None:  # the seed table: named so in the figures, not by its in-memory kind ("array")
        from ..engine.table import EmbeddingTable

        table = EmbeddingTable(table.W_E, provenance=Provenance("seed"))
    dist = norms.norm_distribution(table, top=min(REPORT_NORMS_TOP, table.V))
    ids, groups = projection.rows_from_lists(table.V, result.probe, result.cos_neighbors, result.dot_neighbors)
    left_out = projection.degenerate_rows(table, ids, groups).ids  # project leaves them out: count what stays
    unfit = projection.unfit_reason("pca", len(ids) - len(left_out), table.D)
    if unfit is not None:
        return LabViews(norms=dist, projection=None, left_out={"projection": unfit})
    return LabViews(norms=dist, projection=projection.project(table, ids, "pca", groups=groups))
