"""``embedlab diff``: what changed between two tables, and did the new rows train?

Two tables of one lineage (a model and its fine-tune, a table before and after new tokens were added,
two merged models, or a model's token table and its untied output head) compared row by row:

* rows (``match_rows``, ``row_changes``): the rows the two share, by id, and, where both have a
  vocabulary, by token string where the ids differ; rows only A has (removed) and only B has (added);
  for each shared row whether it is exactly equal, its L2 change ``||b - a||`` and its relative change
  ``||b - a|| / ||a||``; the rows that moved most and least (of those that moved at all);
* new rows (``new_rows``): a table grown from n to n + k rows starts its new rows at the mean of the
  old rows (transformers' ``resize_token_embeddings``, whose ``mean_resizing`` is on by default, after
  Hewitt 2021, "Initializing new word embeddings for pretrained language models"; it adds noise of
  covariance 1e-9 times the old rows', some 3e-5 of their spread) or at zero; each added row is
  named as still at one of them (within ``INIT_TOLERANCE`` of the old rows' spread) or moved, with how far;
* alignment-free agreement (``neighbor_overlap``): for every shared token, the overlap of its k nearest
  (cosine) in A and in B, over each whole vocabulary with the exact search (Gonen et al. 2020);
* geometry of each table (``isotropy``): mean cosine of random pairs, first-component share, IsoScore,
  the partition-function ratio, the mean row and what removing it ("all-but-the-top") does to neighbours;
* aligned drift (``procrustes.align``): the orthogonal map that best aligns B to A on the shared rows,
  then each row's aligned cosine; the rows that drifted most after alignment.

A part that cannot run is skipped and the result says why (``skipped``): rows of different widths have
no L2 change and no rotation between them.

Glossary: ``V`` vocabulary size, ``D`` model width, ``n`` shared rows, ``K`` top-k.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from ..engine.neighbors.defaults import DEFAULT_MEMORY
from ..engine.row_blocks import row_edges
from ..errors import SizeError
from .audit import Skipped  # a part that did not run, and why: the audit's record, shared
from .isotropy import Isotropy, isotropy
from .neighbor_overlap import NeighborOverlap, neighbor_overlap
from .procrustes import Alignment, align

__all__ = ["INIT_TOLERANCE", "INITS", "MATCHES", "RowMatch", "RowChanges", "NewRows", "Skipped", "DiffResult",
           "match_rows", "row_changes", "new_rows", "measure_diff"]

# An added row is still at its initialisation when its distance from it is at most this share of the old rows'
# median distance from that point: transformers' mean resizing adds noise of about 3e-5 of it (covariance 1e-9
# times the old rows'), a row trained for one step at a learning rate of 1e-5 moves it further.
INIT_TOLERANCE = 1e-3
INITS = ("mean", "zero")  # the initialisations an added row is compared with, in the order a verdict is given
MATCHES = ("id", "token")  # how a shared row was matched
VALUE_DIGITS = 7  # significant digits of each per-row value in the JSON
ROW_BYTES = 6 * 8  # float64 values held per table entry while a block of rows is compared (two rows, their difference)


@dataclass(frozen=True)
class RowMatch:
    """Which rows of A and B are the same token.

    Attributes
    ----------
    a_ids, b_ids : np.ndarray, shape (n,), int64
        Shared rows: row ``a_ids[j]`` of A is row ``b_ids[j]`` of B; by A's id.
    by_token : np.ndarray, shape (n,), bool
        True where the pair was matched by token string (its ids differ), False where by id.
    removed : np.ndarray, shape (V_a - n,), int64
        A's ids that B does not have.
    added : np.ndarray, shape (V_b - n,), int64
        B's ids that A does not have.
    """

    a_ids: np.ndarray
    b_ids: np.ndarray
    by_token: np.ndarray
    removed: np.ndarray
    added: np.ndarray

    @property
    def n(self) -> int:
        return len(self.a_ids)


@dataclass(frozen=True)
class RowChanges:
    """How each shared row changed (in the order of ``RowMatch``).

    Attributes
    ----------
    equal : np.ndarray, shape (n,), bool
        The row is exactly the same numbers in both (compared as stored, widened to float64 without rounding).
    l2 : np.ndarray, shape (n,), float64
        ``||b - a||``, in the table's units.
    relative : np.ndarray, shape (n,), float64
        ``||b - a|| / ||a||``; 0.0 for an equal row, NaN where ``a`` is all zero and the row changed.
    """

    equal: np.ndarray
    l2: np.ndarray
    relative: np.ndarray

    def most(self, top: int) -> np.ndarray:
        """Positions (into the shared rows) of the ``top`` largest L2 changes among the rows that changed,
        largest first, the smaller A id first on a tie (positions are in A's id order)."""
        moved = np.flatnonzero(~self.equal)
        return moved[np.lexsort((moved, -self.l2[moved]))][:top]

    def least(self, top: int) -> np.ndarray:
        """Positions of the ``top`` smallest L2 changes among the rows that changed (an equal row did not move)."""
        moved = np.flatnonzero(~self.equal)
        return moved[np.lexsort((moved, self.l2[moved]))][:top]


@dataclass(frozen=True)
class NewRows:
    """B's added rows against the initialisations a grown table starts them from.

    Attributes
    ----------
    ids : np.ndarray, shape (k,), int64
        B's added ids.
    distance : dict of str -> np.ndarray, shape (k,), float64
        Per initialisation (``INITS``): each added row's L2 distance from it (A's mean row; the zero vector).
    spread : dict of str -> float
        Per initialisation: the median L2 distance of A's rows from it, the yardstick of ``distance``.
    verdicts : tuple of str
        Per added row: ``"mean"`` or ``"zero"`` (still at that initialisation: ``distance <= INIT_TOLERANCE *
        spread``, mean first) or ``"moved"``.
    tolerance : float
    """

    ids: np.ndarray
    distance: dict[str, np.ndarray]
    spread: dict[str, float]
    verdicts: tuple[str, ...]
    tolerance: float = INIT_TOLERANCE

    def relative(self, init: str) -> np.ndarray:
        """``distance[init] / spread[init]`` (k,): how far each row is from that start, in the old rows' spread."""
        spread = self.spread[init]
        return self.distance[init] / spread if spread > 0 else np.where(self.distance[init] > 0, np.inf, 0.0)

    @property
    def at_init(self) -> np.ndarray:
        """B's ids of the added rows still at an initialisation."""
        return self.ids[[v != "moved" for v in self.verdicts]] if len(self.ids) else self.ids

    @property
    def moved(self) -> np.ndarray:
        """B's ids of the added rows that moved away from every initialisation."""
        return self.ids[[v == "moved" for v in self.verdicts]] if len(self.ids) else self.ids


@dataclass(frozen=True)
class DiffResult:
    """What ``embedlab diff`` found.

    Attributes
    ----------
    source_a, source_b : dict
        Each table's provenance (``Provenance.to_dict``).
    V_a, V_b, D_a, D_b : int
    tokens_a, tokens_b : tuple of (str or None), or None
        Each table's tokens in id order; None without a vocabulary.
    match : RowMatch
    changes : RowChanges or None
        None where the widths differ (``skipped`` says so).
    new : NewRows or None
        B's added rows against their initialisations; None where B added none.
    alignment : Alignment or None
    overlap : NeighborOverlap or None
        None where it was not asked for (``k=0``) or the tables share too few rows.
    geometry : dict of str -> Isotropy
        A's (``"a"``) and B's (``"b"``) isotropy; empty where it was not asked for (``geometry=False``).
    top : int
        Rows listed per ranking.
    skipped : tuple of Skipped
    notes : tuple of str
    run : report.run.Run or None
        Who made the diff, when, with which call or command (set by ``api.diff``).
    """

    source_a: dict[str, Any]
    source_b: dict[str, Any]
    V_a: int
    V_b: int
    D_a: int
    D_b: int
    tokens_a: tuple[str | None, ...] | None
    tokens_b: tuple[str | None, ...] | None
    match: RowMatch
    changes: RowChanges | None
    new: NewRows | None
    alignment: Alignment | None
    overlap: NeighborOverlap | None
    geometry: dict[str, Isotropy]
    top: int
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = ()
    run: Any = None

    def token(self, a_id: int | None = None, b_id: int | None = None) -> str | None:
        """A row's token: A's for ``a_id``, else B's for ``b_id``; None where there is none."""
        if a_id is not None and self.tokens_a is not None and 0 <= a_id < len(self.tokens_a):
            return self.tokens_a[a_id]
        if b_id is not None and self.tokens_b is not None and 0 <= b_id < len(self.tokens_b):
            return self.tokens_b[b_id]
        return None

    @property
    def moved(self) -> np.ndarray:
        """Positions (into the shared rows) of the rows that changed."""
        return np.flatnonzero(~self.changes.equal) if self.changes is not None else np.zeros(0, dtype=np.int64)

    def most_drifted(self, top: int | None = None) -> np.ndarray:
        """Positions of the ``top`` lowest aligned cosines, lowest first, the smaller A id first on a tie."""
        if self.alignment is None:
            return np.zeros(0, dtype=np.int64)
        cos = self.alignment.cosines
        return np.lexsort((np.arange(len(cos)), cos))[:self.top if top is None else top]

    def shared_row(self, j: int) -> dict[str, Any]:
        """One shared row (position ``j``) for the JSON and the renderers."""
        a, b = int(self.match.a_ids[j]), int(self.match.b_ids[j])
        row: dict[str, Any] = {"a_id": a, "b_id": b, "token": self.token(a, b),
                               "by": MATCHES[int(self.match.by_token[j])]}
        if self.changes is not None:
            row.update(equal=bool(self.changes.equal[j]), l2=_rounded(self.changes.l2[j]),
                       relative=_rounded(self.changes.relative[j]))
        if self.alignment is not None:
            row["aligned_cosine"] = _rounded(self.alignment.cosines[j])
        if self.overlap is not None:
            row["overlap"] = _rounded(self.overlap.by_row[j])  # None where the token was not a query
        return row

    def lowest_overlap(self, top: int | None = None) -> np.ndarray:
        """Positions (into the shared rows) of the ``top`` lowest neighbour overlaps, lowest first."""
        if self.overlap is None:
            return np.zeros(0, dtype=np.int64)
        return self.overlap.positions[self.overlap.lowest(self.top if top is None else top)]

    @property
    def counts(self) -> dict[str, int]:
        """Rows shared (by id, by token), added, removed; equal and changed where the rows were compared."""
        m, c = self.match, self.changes
        counts = {"shared": m.n, "by_id": int(m.n - m.by_token.sum()), "by_token": int(m.by_token.sum()),
                  "added": len(m.added), "removed": len(m.removed)}
        if c is not None:
            counts.update(equal=int(c.equal.sum()), changed=int((~c.equal).sum()))
        return counts

    @property
    def change_summary(self) -> dict[str, Any] | None:
        """The changed rows' L2 change (largest, median, mean) and median relative change; None without changes."""
        return None if self.changes is None else _change_summary(self.changes)

    def to_dict(self) -> dict[str, Any]:
        """Everything, every list complete (JSON-able)."""
        m, c = self.match, self.changes
        counts = self.counts
        out: dict[str, Any] = {
            "source_a": self.source_a, "source_b": self.source_b, "V_a": self.V_a, "V_b": self.V_b,
            "D_a": self.D_a, "D_b": self.D_b, "counts": counts, "top": self.top,
            "most_moved": [self.shared_row(int(j)) for j in c.most(self.top)] if c is not None else [],
            "least_moved": [self.shared_row(int(j)) for j in c.least(self.top)] if c is not None else [],
            "changes": self.change_summary,
            "added": [{"b_id": int(i), "token": self.token(b_id=int(i))} for i in m.added],
            "removed": [{"a_id": int(i), "token": self.token(a_id=int(i))} for i in m.removed],
            "new_rows": None if self.new is None else self._new_rows_dict(),
            "alignment": None if self.alignment is None else self._alignment_dict(),
            "overlap": None if self.overlap is None else self._overlap_dict(),
            "geometry": {side: iso.to_dict() for side, iso in self.geometry.items()},
            "rows": [self.shared_row(j) for j in range(m.n)],
            "skipped": [s.to_dict() for s in self.skipped], "notes": list(self.notes),
        }
        if self.run is not None:
            out["run"] = self.run.to_dict()
        return out

    def _new_rows_dict(self) -> dict[str, Any]:
        new = self.new
        relative = {init: new.relative(init) for init in INITS}
        return {"tolerance": new.tolerance, "spread": {k: _rounded(v) for k, v in new.spread.items()},
                "at_init": len(new.at_init), "moved": len(new.moved),
                "rows": [{"b_id": int(i), "token": self.token(b_id=int(i)), "verdict": new.verdicts[j],
                          **{f"distance_from_{init}": _rounded(new.distance[init][j]) for init in INITS},
                          **{f"relative_to_{init}": _rounded(relative[init][j]) for init in INITS}}
                         for j, i in enumerate(new.ids)]}

    def _alignment_dict(self) -> dict[str, Any]:
        a = self.alignment
        return {"center": a.center, "scale": a.scaled, "scale_factor": a.scale, "residual": _rounded(a.residual),
                "fitted_rows": a.fitted,
                "mean_aligned_cosine": _rounded(float(a.cosines.mean())),
                "min_aligned_cosine": _rounded(float(a.cosines.min())),
                # the map itself is D x D (16.7M numbers at D = 4,096): the library result holds it, the JSON its sign
                "determinant": _rounded(float(np.linalg.det(a.rotation))),
                "most_drifted": [self.shared_row(int(j)) for j in self.most_drifted()]}

    def _overlap_dict(self) -> dict[str, Any]:
        o = self.overlap
        return {"k": o.k, "metric": "cosine", "queries": len(o.positions), "every": o.every, "seed": o.seed,
                "mean": _rounded(o.mean), "histogram": o.histogram(),
                "lowest": [self.shared_row(int(j)) for j in self.lowest_overlap()],
                "memory": {side: asdict(m) for side, m in o.memory.items()}}


def measure_diff(a: Any, b: Any, *, top: int, k: int = 0, queries: int | None = None, seed: int = 0,
                 center: bool = False, scale: bool = False, geometry: bool = True, memory: int | None = None,
                 notes: Sequence[str] = ()) -> DiffResult:
    """Compare two tables row by row and after alignment (``embedlab diff``).

    Parameters
    ----------
    a, b : EmbeddingTable
        The table before (A) and after (B): a model and its fine-tune, a table and its grown copy, a
        model's token table and its output head.
    top : int
        Rows listed per ranking (most and least moved, most drifted, lowest overlap), at least 1.
    k : int
        Neighbours per list of the overlap (``neighbor_overlap``); 0 leaves the overlap out.
    queries : int, optional
        The overlap of this many shared tokens, sampled with ``seed``; None: every shared token.
    seed : int
    center, scale : bool
        Options of the alignment (``procrustes.align``).
    geometry : bool
        Measure each table's isotropy (``isotropy.isotropy``, with ``k`` and ``seed``).
    memory : int, optional
        Bytes of working memory: the rows are compared a block at a time within it, and each neighbour search
        plans within it (default ``DEFAULT_MEMORY``).
    notes : sequence of str
        Notes of the caller (a default shrunk), kept first.

    Returns
    -------
    DiffResult

    Raises
    ------
    SizeError
        (a ``ValueError``) for ``top`` below 1; as ``neighbor_overlap`` for ``k``, ``queries``, ``memory``.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise SizeError(f"top={top!r} must be an int of at least 1", parameter="top", value=top,
                        expected="an int of at least 1")
    tokens_a, tokens_b = _tokens(a), _tokens(b)
    match = match_rows(tokens_a, tokens_b, a.V, b.V)
    skipped: list[Skipped] = []
    changes = new = alignment = None
    step = max(1, (DEFAULT_MEMORY if memory is None else memory) // (ROW_BYTES * max(a.D, b.D)))
    if a.D != b.D:
        reason = f"the tables' widths differ (D = {a.D:,} and {b.D:,}): their rows cannot be subtracted or rotated"
        skipped += [Skipped("rows", reason), Skipped("new_rows", reason), Skipped("alignment", reason)]
    else:
        changes = row_changes(a, b, match, step)
        new = new_rows(a, b, match.added, step) if len(match.added) else None
        if match.n:
            alignment = align(_Rows(a, match.a_ids), _Rows(b, match.b_ids), center=center, scale=scale, block=step)
        else:
            skipped.append(Skipped("alignment", "the tables share no row to align on"))
    overlap = None
    if k and match.n:
        overlap = neighbor_overlap(a, b, match.a_ids, match.b_ids, k, queries=queries, seed=seed, memory=memory)
        if len(match.added) or len(match.removed):  # each table is searched whole: its own rows enter its lists
            notes = [*notes, f"neighbour lists are searched over each whole table: B's {len(match.added):,} added "
                             f"and A's {len(match.removed):,} removed rows can enter them, so a token's overlap "
                             "can drop although its row and every shared row are unchanged"]
    elif k:
        skipped.append(Skipped("overlap", "the tables share no token to compare the neighbours of"))
    shapes = {"a": a, "b": b} if geometry else {}
    measured = {side: isotropy(t, k=k, seed=seed, memory=memory) for side, t in shapes.items() if t.V >= 2}
    return DiffResult(source_a=a.provenance.to_dict(), source_b=b.provenance.to_dict(), V_a=a.V, V_b=b.V,
                      D_a=a.D, D_b=b.D, tokens_a=tokens_a, tokens_b=tokens_b, match=match, changes=changes, new=new,
                      alignment=alignment, overlap=overlap, geometry=measured, top=top, skipped=tuple(skipped), notes=tuple(notes))


# -- the parts ---------------------------------------------------------------------------------

def match_rows(tokens_a: Sequence[str | None] | None, tokens_b: Sequence[str | None] | None, V_a: int,
               V_b: int) -> RowMatch:
    """The rows A and B share: by id, then, where both have tokens, by token string.

    An id both tables have is one shared row when both tables hold the same token there (or either has no
    vocabulary, or neither a token: padding rows). A's other tokens are then looked up among B's unmatched
    rows by string, the smallest unmatched B id of that string first (a token repeated in a vocabulary is
    matched copy for copy). The rest of A is removed, the rest of B added.

    >>> m = match_rows(["a", "b", "c"], ["a", "c", "b", "new"], 3, 4)
    >>> m.a_ids.tolist(), m.b_ids.tolist(), m.by_token.tolist(), m.removed.tolist(), m.added.tolist()
    ([0, 1, 2], [0, 2, 1], [False, True, True], [], [3])
    """
    both = min(V_a, V_b)
    if tokens_a is None or tokens_b is None:
        ids = np.arange(both, dtype=np.int64)
        return RowMatch(ids, ids.copy(), np.zeros(both, dtype=bool), np.arange(both, V_a, dtype=np.int64),
                        np.arange(both, V_b, dtype=np.int64))
    pairs = {i: i for i in range(both) if tokens_a[i] == tokens_b[i]}  # A id -> B id
    taken = set(pairs.values())
    free: dict[str, list[int]] = {}  # token -> B's unmatched ids holding it, largest last
    for j in range(V_b - 1, -1, -1):
        if j not in taken and tokens_b[j] is not None:
            free.setdefault(tokens_b[j], []).append(j)
    by_token = set()
    for i in range(V_a):
        if i not in pairs and tokens_a[i] is not None and free.get(tokens_a[i]):
            pairs[i] = free[tokens_a[i]].pop()
            by_token.add(i)
    a_ids = np.array(sorted(pairs), dtype=np.int64)
    b_ids = np.array([pairs[i] for i in a_ids.tolist()], dtype=np.int64)
    matched_b = set(b_ids.tolist())
    return RowMatch(a_ids, b_ids, np.array([i in by_token for i in a_ids.tolist()], dtype=bool),
                    np.array([i for i in range(V_a) if i not in pairs], dtype=np.int64),
                    np.array([j for j in range(V_b) if j not in matched_b], dtype=np.int64))


def row_changes(a: Any, b: Any, match: RowMatch, step: int) -> RowChanges:
    """Equality, L2 and relative change of every shared row, ``step`` rows at a time."""
    n = match.n
    equal, l2, relative = np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n)
    for start, stop in row_edges(n, step):
        x = a.lookup(match.a_ids[start:stop]).astype(np.float64)  # (m, D): float32 and bf16 widen exactly
        y = b.lookup(match.b_ids[start:stop]).astype(np.float64)  # (m, D)
        same = (x == y).all(axis=1)  # (m,)
        change = np.linalg.norm(y - x, axis=1)  # (m,)
        length = np.linalg.norm(x, axis=1)  # (m,)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(length > 0, change / length, np.where(same, 0.0, np.nan))
        equal[start:stop], l2[start:stop], relative[start:stop] = same, change, rel
    return RowChanges(equal=equal, l2=l2, relative=relative)


def new_rows(a: Any, b: Any, added: np.ndarray, step: int) -> NewRows:
    """B's added rows against A's mean row and the zero vector, each in the spread of A's rows around it."""
    mean = np.zeros(a.D)
    for start, stop in row_edges(a.V, step):
        mean += a.lookup(np.arange(start, stop)).astype(np.float64).sum(axis=0)
    mean /= a.V  # (D,): transformers' mean resizing starts new rows here
    from_mean, lengths = np.empty(a.V), np.empty(a.V)
    for start, stop in row_edges(a.V, step):
        x = a.lookup(np.arange(start, stop)).astype(np.float64)  # (m, D)
        from_mean[start:stop], lengths[start:stop] = np.linalg.norm(x - mean, axis=1), np.linalg.norm(x, axis=1)
    spread = {"mean": float(np.median(from_mean)), "zero": float(np.median(lengths))}
    rows = b.lookup(added).astype(np.float64)  # (k, D)
    distance = {"mean": np.linalg.norm(rows - mean, axis=1), "zero": np.linalg.norm(rows, axis=1)}  # (k,) each
    verdicts = tuple(next((init for init in INITS if distance[init][j] <= INIT_TOLERANCE * spread[init]), "moved")
                     for j in range(len(added)))
    return NewRows(ids=added, distance=distance, spread=spread, verdicts=verdicts)


# -- helpers -------------------------------------------------------------------------------------

class _Rows:
    """Rows ``ids`` of a table, gathered a slice at a time: what ``procrustes.align`` reads."""

    def __init__(self, table: Any, ids: np.ndarray) -> None:
        self._table, self._ids = table, ids
        self.shape = (len(ids), table.D)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self._table.lookup(self._ids[rows])  # (m, D)


def _tokens(table: Any) -> tuple[str | None, ...] | None:
    vocabulary = table.vocabulary
    return None if vocabulary is None else tuple(vocabulary.index_to_token)


def _change_summary(c: RowChanges) -> dict[str, Any]:
    moved = c.l2[~c.equal]
    if not len(moved):
        return {"max_l2": 0.0, "median_l2": 0.0, "mean_l2": 0.0, "median_relative": 0.0}
    rel = c.relative[~c.equal]
    rel = rel[np.isfinite(rel)]
    return {"max_l2": _rounded(moved.max()), "median_l2": _rounded(np.median(moved)), "mean_l2": _rounded(moved.mean()),
            "median_relative": _rounded(np.median(rel)) if len(rel) else None}


def _rounded(x: float) -> float | None:
    """A value for the JSON: ``VALUE_DIGITS`` significant digits; None for NaN or infinity."""
    x = float(x)
    return None if not math.isfinite(x) else float(f"{x:.{VALUE_DIGITS}g}")
