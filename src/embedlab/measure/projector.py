"""What the projector page shows: chosen rows, their coordinates, lengths and exact neighbour lists.

``embedlab projector`` draws a cloud of token rows that a user can hover,
search and click. This module measures everything the page needs, so the page
itself computes nothing:

* the rows: the probe, its k nearest by cosine and by dot, and random rows up
  to ``sample`` points in all (``projection.choose_rows``), or the tokens
  given (and the probe, where one is given);
* their 2-D or 3-D coordinates (``projection.project``: PCA, t-SNE or UMAP);
* for every row, its k nearest tokens by cosine AND by dot over the WHOLE
  table, not the sample (``engine.neighbors.search.Search``: exact, the query itself
  left out, equal scores by the smaller id);
* the token string and row length of every id the page names (the rows and
  every listed neighbour), so that a neighbour outside the sample is shown too.

Degenerate rows (all-zero, copies, far longer than the rest:
``projection.degenerate_rows``) are left out of the points unless kept
(``keep_degenerate``), and named in a note; the neighbour lists still list them
(over the whole table), as rows the picture does not show.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` neighbours per list;
``n`` the projected rows, ``m`` the ids the page names (rows and neighbours).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..engine.neighbors.defaults import DEFAULT_K, METRICS
from ..engine.neighbors.search import BY_ID, Search, check_k
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import resolve_ids
from ..errors import brief
from . import degenerate, projection

__all__ = ["ProjectorResult", "measure_projector", "given_rows"]


@dataclass(frozen=True)
class ProjectorResult:
    """The projected rows of one table with their exact neighbour lists.

    Attributes
    ----------
    ids : np.ndarray, shape (n,), int64
        Token ids of the projected rows, no repeats.
    groups : tuple of str, length n
        Why each row is there: ``probe``, ``cosine``, ``dot``, ``both`` (in both
        of the probe's lists), ``sample`` (drawn at random), ``chosen`` (a token given).
    points : np.ndarray, shape (n, dims), float64
        Coordinates from ``method``, in its arbitrary units.
    neighbor_ids : dict of str to np.ndarray, each shape (n, K), int64
        ``"cosine"`` and ``"dot"``: row i's K nearest ids over the whole table, best first.
    neighbor_scores : dict of str to np.ndarray, each shape (n, K), float64
        Their cosines (in [-1, 1]) and dot products.
    named_ids : np.ndarray, shape (m,), int64, sorted
        Every id the page names: the rows and every listed neighbour.
    tokens : tuple of (str or None), length m
        The token string of each of ``named_ids``; None for a table without vocabulary.
    norms : np.ndarray, shape (m,), float64
        The Euclidean length of each of ``named_ids``' rows.
    probe : int or None
        The probe's id; None when only tokens were given.
    method, dims, k, seed : str, int, int, int
        How the points were made (``projection.project``) and the list length.
    parameters : dict
        The method's own settings (t-SNE perplexity, UMAP n_neighbors, seed).
    source : dict
        Where the table came from (``Provenance.to_dict``).
    V, D : int
        The table's size.
    notes : tuple of str
        What was adjusted without being asked (a default sample or k shrunk to
        fit), typed tokens found only as the tokenizer spells them, and the
        degenerate rows left out or kept (``projection.left_out_note``).
    degenerate : degenerate.LeftOut or None
        The degenerate rows among those chosen: not among ``ids`` unless
        ``kept_degenerate``. None for a result built by hand.
    kept_degenerate : bool
        Whether they were kept (``keep_degenerate=True``).
    """

    ids: np.ndarray
    groups: tuple[str, ...]
    points: np.ndarray
    neighbor_ids: dict[str, np.ndarray]
    neighbor_scores: dict[str, np.ndarray]
    named_ids: np.ndarray
    tokens: tuple[str | None, ...]
    norms: np.ndarray
    probe: int | None
    method: str
    dims: int
    k: int
    seed: int
    parameters: dict[str, Any]
    source: dict[str, Any]
    V: int
    D: int
    notes: tuple[str, ...] = field(default=())
    degenerate: degenerate.LeftOut | None = None
    kept_degenerate: bool = False

    def token_of(self, token_id: int) -> str | None:
        """The token string of an id the page names (``named_ids``); KeyError for another id."""
        at = int(np.searchsorted(self.named_ids, token_id))
        if at == self.named_ids.size or self.named_ids[at] != token_id:
            raise KeyError(f"id {token_id} is not among the ids this projector names")
        return self.tokens[at]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values: one entry per row, with its point, length and both neighbour lists."""
        norm_of = dict(zip(self.named_ids.tolist(), self.norms.tolist()))
        token_of = dict(zip(self.named_ids.tolist(), self.tokens))
        rows = []
        for i, token_id in enumerate(self.ids.tolist()):
            lists = {metric: [{"id": j, "token": token_of[j], "score": s}
                              for j, s in zip(self.neighbor_ids[metric][i].tolist(),
                                              self.neighbor_scores[metric][i].tolist())]
                     for metric in self.neighbor_ids}
            rows.append({"id": token_id, "token": token_of[token_id], "group": self.groups[i],
                         "point": self.points[i].tolist(), "norm": norm_of[token_id], "neighbors": lists})
        found = None if self.degenerate is None else {**self.degenerate.to_dict(), "kept": self.kept_degenerate}
        return {"source": dict(self.source), "V": self.V, "D": self.D, "probe": self.probe, "method": self.method,
                "dims": self.dims, "k": self.k, "seed": self.seed, "parameters": dict(self.parameters),
                "rows": rows, "degenerate": found, "notes": list(self.notes)}


def measure_projector(table: EmbeddingTable, *, probe: int | None, tokens: Sequence[int | str] | None = None,
                      sample: int | None = None, method: str = "pca", dims: int = 2, k: int = DEFAULT_K, seed: int = 0,
                      metric: str | None = None, memory: int | None = None, progress: Callable[[int], None] | None = None,
                      notes: Sequence[str] = (), keep_degenerate: bool = False) -> ProjectorResult:
    """Choose the rows, project them and list every row's exact neighbours.

    Parameters
    ----------
    table : EmbeddingTable
        The (V, D) table; never changed.
    probe : int or None
        The probe's checked id (``api.resolve_probe``). With ``sample`` it is
        required; with ``tokens`` it is added to the rows where it is not
        among them, and None leaves it out.
    tokens : sequence of int or str, optional
        The rows to project (group ``chosen``), instead of a sample; no repeats.
    sample : int, optional
        Points in all when no tokens are given: the probe, its k cosine and k dot
        neighbours, then rows drawn at random with ``seed``;
        ``projection.sample_bounds(V, k)`` says the range.
    method : {"pca", "tsne", "umap"}
    dims : {2, 3}
    k : int
        Neighbours per list, ``1 <= k <= V - 1``.
    seed : int
        Seed of the random rows, t-SNE and UMAP.
    metric : {"cosine", "euclidean"}, optional
        The distance t-SNE and UMAP keep (``projection.project``; cosine when None); PCA takes none.
    memory : int, optional
        Working memory of each search, bytes (``engine.neighbors.defaults.DEFAULT_MEMORY`` when None).
    progress : callable, optional
        Called with the number of rows whose lists are done (2 * n in all).
    notes : sequence of str
        Notes of the caller's (defaults it shrank), kept in the result.
    keep_degenerate : bool
        Keep the degenerate rows among those chosen (all-zero, copies, far
        longer than the rest: ``projection.degenerate_rows``) in the fit and
        the points; by default they are left out (the probe never), and a
        note names them.

    Returns
    -------
    ProjectorResult

    Raises
    ------
    SizeError
        (a ``ValueError``) for k outside [1, V - 1] or a sample outside ``projection.sample_bounds``.
    ChoiceError, ValueError
        For an unknown method or dims, repeated tokens, or too few points or
        too narrow a table for the method (``projection.project``).
    TokenIdError, UnknownTokenError, TokenTypeError
        For a token that is not in the table.
    TypeError
        For both or neither of ``tokens`` and ``sample``, or ``sample`` without a probe.

    >>> t = EmbeddingTable(np.eye(4)[[0, 1, 2, 3, 0]] + 0.1 * np.arange(5)[:, None])
    >>> r = measure_projector(t, probe=0, sample=5, k=1)
    >>> r.ids.tolist(), r.groups[:2], r.neighbor_ids["cosine"][0].tolist(), r.points.shape
    ([0, 4, 3, 1, 2], ('probe', 'both'), [4], (5, 2))
    """
    if (tokens is None) == (sample is None):
        raise TypeError("give exactly one of tokens (the rows to project) or sample (points in all)")
    check_k(k, table.V - 1, BY_ID)  # before the rows are chosen: their own check words it otherwise
    if tokens is not None:
        ids, groups = given_rows(table, tokens, probe)
    else:
        if probe is None:
            raise TypeError("a sample is drawn around a probe: give probe= with sample=")
        ids, groups = projection.choose_rows(table, probe, k=k, sample=sample, seed=seed, memory=memory)
    unfit = projection.degenerate_rows(table, ids, groups)
    if unfit.ids and not keep_degenerate:
        shown = ~np.isin(ids, unfit.ids)  # (n,) the rows kept
        ids, groups = ids[shown], [g for g, kept in zip(groups, shown.tolist()) if kept]
    search = Search(table, k, METRICS, ids=ids, memory=memory)  # the rows' lengths and the budget, before projecting
    projected = projection.project(table, ids, method, groups=groups, seed=seed, dims=dims, metric=metric,
                                   keep_degenerate=keep_degenerate)
    left = projection.left_out_note(unfit, [table.token(i) for i in unfit.ids], method, keep_degenerate)
    neighbor_ids, neighbor_scores = {}, {}
    for metric in METRICS:
        found = search.nearest(metric, progress=progress)
        neighbor_ids[metric], neighbor_scores[metric] = found.ids, found.scores  # (n, K) each
    named = np.unique(np.concatenate([ids, *(a.ravel() for a in neighbor_ids.values())]))  # (m,)
    words = table.tokens(named)
    return ProjectorResult(
        ids=ids, groups=tuple(groups), points=projected.points, neighbor_ids=neighbor_ids,
        neighbor_scores=neighbor_scores, named_ids=named,
        tokens=tuple(words) if words is not None else (None,) * named.size,
        norms=np.asarray(table.norms()[named], dtype=np.float64),  # (m,)
        probe=probe, method=method, dims=int(dims), k=k, seed=seed, parameters=dict(projected.parameters),
        source=table.provenance.to_dict(), V=table.V, D=table.D, notes=(*notes, *([left] if left else [])),
        degenerate=unfit, kept_degenerate=keep_degenerate)


def given_rows(table: EmbeddingTable, tokens: Sequence[int | str], probe: int | None) -> tuple[np.ndarray, list[str]]:
    """The tokens' ids (n,) int64 in the order given, the probe first where it is not among them.

    Groups (n,) are ``probe`` for the probe's row and ``chosen`` for the others (the projector's
    and ``plot projection``'s). Raises ``ValueError`` when two tokens name one row, and
    ``resolve_ids``'s errors for an unknown token or an id outside 0..V-1.
    """
    ids = resolve_ids(tokens, table.V, table.vocabulary, parameter="tokens")
    given: dict[int, list[Any]] = {}
    for token, token_id in zip(tokens, ids):
        given.setdefault(token_id, []).append(token)
    repeated = {token_id: named for token_id, named in given.items() if len(named) > 1}
    if repeated:
        token_id, named = next(iter(repeated.items()))
        raise ValueError(f"tokens {' and '.join(brief(t) for t in named)} name the same row (id {token_id}): "
                         "expected each row once")
    groups = ["probe" if i == probe else "chosen" for i in ids]
    if probe is not None and probe not in ids:
        ids, groups = [probe, *ids], ["probe", *groups]
    return np.asarray(ids, dtype=np.int64), groups
