"""2-D (or 3-D) projections of chosen rows: PCA, t-SNE, UMAP.

A projection is only a view: distances in 2-D are not the distances in D
dimensions (PCA keeps the two directions of largest variance; t-SNE and UMAP
keep local neighbourhoods and distort everything else). Every call is
deterministic: fixed random seeds, and the same call gives the same points.

Methods (scikit-learn and umap-learn, the ``plots`` extra):

* ``pca``: ``sklearn.decomposition.PCA(n_components=2, svd_solver="full")``
  (``n_components=3`` with ``dims=3``, as for the other two)
  fitted on a larger sample than the rows shown (``PCA_FIT_SAMPLE`` rows drawn
  with the seed, plus the shown rows), then the shown rows transformed: the two
  axes are the table's directions of largest euclidean variance, not those of
  a few dozen chosen rows. PCA keeps euclidean geometry only, so it takes no
  ``metric``.
* ``tsne``: ``sklearn.manifold.TSNE`` (van der Maaten and Hinton 2008) with
  ``metric`` (cosine by default, as the neighbour lists) and ``init="pca"``;
  its perplexity must be below the number of points.
* ``umap``: ``umap.UMAP`` (McInnes et al. 2018) with ``metric``;
  ``n_neighbors`` must be below the number of points.

Determinism: PCA uses the exact solver (sklearn's ``"auto"`` would pick a
randomised one above 500 rows or columns) and sklearn's sign rule (``svd_flip``:
each component's largest loading is positive); t-SNE (and the PCA that starts
it) and UMAP get ``random_state=seed`` (UMAP then runs on one thread). The
fitting sample is sorted by id, so the order of ``ids`` does not change the fit.

Tables with huge or tiny entries (float64 up to 1e308, down to 1e-308) are
divided by a power of two before fitting (see ``project``): the libraries
square the entries (PCA's variances; t-SNE's PCA start and UMAP run in
float32), which overflows or underflows far inside float64's range.

Degenerate rows are left out of the fit and the picture unless asked for
(``keep_degenerate``): all-zero rows, copies of a row already projected, and
rows far longer than the rest (``degenerate.left_out``). OPT's all-zero
padding row sat 75 units out in a t-SNE picture whose median distance was 8,
and squeezed the other 259 points into a corner. The probe is always kept:
the picture is drawn around it. The result names the rows left out
(``Projection.degenerate``, ``notes``).
"""

from __future__ import annotations

import importlib
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ChoiceError, MissingExtraError, SizeError, brief
from ..engine.neighbors.defaults import DEFAULT_K
from ..engine.table import EmbeddingTable
from . import degenerate

__all__ = ["rows_from_lists", "METHODS", "METRICS", "PCA_FIT_SAMPLE", "Projection", "choose_rows", "pca_fit_rows", "sample_bounds",
           "project", "unfit_reason", "degenerate_rows", "left_out_note", "LEFT_OUT_LISTED"]

METHODS = ("pca", "tsne", "umap")
METHOD_NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}  # as the field writes them
# The distances t-SNE and UMAP may keep; cosine first, the default, as in the neighbour lists.
METRICS = ("cosine", "euclidean")
# Rows PCA is fitted on, besides the rows shown: enough that the axes are the table's, not the sample's.
PCA_FIT_SAMPLE = 5000
MIN_POINTS = {"pca": 3, "tsne": 4, "umap": 4}
# Largest |entry| of the chosen rows that a method is given as it is; beyond, the rows are
# divided by a power of two first. PCA works in float64 and squares entries (variances);
# t-SNE starts from a PCA that sklearn casts to float32, and UMAP casts its input to float32,
# whose squares leave float32's range (1.2e-38 .. 3.4e38) beyond about 1e-19 .. 1e19.
SAFE_RANGE = {"pca": (1e-100, 1e100), "tsne": (1e-15, 1e15), "umap": (1e-15, 1e15)}
# PCA finds at most D directions, and t-SNE starts from a PCA (init="pca"); UMAP lays out
# a graph of neighbours, which D = 1 has too.
MIN_D = {"pca": 2, "tsne": 2, "umap": 1}
LEFT_OUT_LISTED = 8  # degenerate rows a note names one by one; the rest are counted


@dataclass(frozen=True)
class Projection:
    """Chosen rows of a table and their 2-D coordinates.

    Attributes
    ----------
    ids : np.ndarray, shape (n,), int64
        Token ids of the projected rows.
    labels : list of str
        What to write beside each point (its token, or its id).
    groups : list of str
        Why each row was chosen: ``probe``, ``cosine``, ``dot``, ``both``
        (in both neighbour lists), ``sample`` or ``chosen``.
    points : np.ndarray, shape (n, dims), float64
        The 2-D (or 3-D, ``project(dims=3)``) coordinates, in the method's arbitrary units.
    method : str
        ``pca``, ``tsne`` or ``umap``.
    parameters : dict
        The settings the method ran with: PCA ``fitted_rows`` (how many rows
        the axes were fitted on) and ``seed`` (of that sample); t-SNE
        ``metric``, ``perplexity``, ``seed``; UMAP ``metric``,
        ``n_neighbors``, ``seed``.
    table : str
        Which table: its name (``Provenance.display_name``).
    degenerate : degenerate.LeftOut or None
        The degenerate rows among those asked for (all-zero, copies, far
        longer than the rest): left out of ``ids`` unless ``kept_degenerate``.
        None for a projection made without looking (``Projection`` built by hand).
    kept_degenerate : bool
        Whether they were kept (``project(keep_degenerate=True)``).
    degenerate_labels : tuple of (str or None)
        The token of each of ``degenerate.ids``; None for a table without vocabulary.
    notes : tuple of str
        What the reader should know about the rows: which were left out or
        kept as degenerate (``left_out_note``).
    """

    ids: np.ndarray
    labels: list[str]
    groups: list[str]
    points: np.ndarray
    method: str
    parameters: dict[str, Any]
    table: str
    degenerate: degenerate.LeftOut | None = None
    kept_degenerate: bool = False
    degenerate_labels: tuple[str | None, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-able dict: ids and points as lists (points ``[x, y]``, float64)."""
        found = None if self.degenerate is None else {**self.degenerate.to_dict(), "kept": self.kept_degenerate,
                                                       "labels": list(self.degenerate_labels)}
        return {"table": self.table, "method": self.method, "parameters": dict(self.parameters),
                "ids": self.ids.tolist(), "labels": list(self.labels), "groups": list(self.groups),
                "points": self.points.tolist(), "degenerate": found, "notes": list(self.notes)}


def choose_rows(table: EmbeddingTable, probe: int | str, *, k: int = DEFAULT_K, sample: int = 60, seed: int = 0,
                memory: int | None = None) -> tuple[np.ndarray, list[str]]:
    """The default rows to project: ``sample`` points in all, the probe, its k cosine and
    k dot neighbours, then random other rows drawn with ``seed``.

    ``sample`` means the same in ``embedlab plot projection`` and ``embedlab projector``:
    the number of points drawn, from ``sample_bounds(V, k)[0]`` (the probe and its 2k
    neighbours) to V. Where the two lists share rows, more random rows fill the count.

    Returns ids (sample,) int64 and the group of each (``probe``, ``cosine``,
    ``dot``, ``both``, ``sample``). Raises ``SizeError`` (a ``ValueError``) for
    k outside [1, V - 1] or a sample outside ``sample_bounds``, and as
    ``EmbeddingTable.nearest`` for a bad probe. ``memory`` is the search's working
    memory in bytes (``EmbeddingTable.nearest``'s default when None).

    >>> t = EmbeddingTable(np.eye(6) + 0.1)
    >>> ids, groups = choose_rows(t, 0, k=1, sample=4)
    >>> len(ids), groups[0], groups.count("sample")
    (4, 'probe', 2)
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= table.V - 1:
        raise SizeError(f"k={k!r} must be an int from 1 to V - 1 = {table.V - 1}", parameter="k", value=k,
                        expected=f"an int from 1 to V - 1 = {table.V - 1:,}")
    low, high = sample_bounds(table.V, int(k))
    if isinstance(sample, bool) or not isinstance(sample, numbers.Integral) or not low <= sample <= high:
        raise SizeError(f"sample={sample!r} points: expected an int from {low} (the probe and its k = {k} cosine "
                        f"and {k} dot neighbours) to V = {high}", parameter="sample", value=sample,
                        expected=f"an int from {low:,} (the probe and its {k} + {k} neighbours) to V = {high:,}")
    search = {} if memory is None else {"memory": memory}
    p = table.token_id(probe)
    cos = table.nearest([p], int(k), "cosine", **search).ids[0].tolist()  # (K,)
    dot = table.nearest([p], int(k), "dot", **search).ids[0].tolist()  # (K,)
    core = len({p, *cos, *dot})
    return rows_from_lists(table.V, p, cos, dot, sample=int(sample) - core, seed=seed)


def sample_bounds(V: int, k: int) -> tuple[int, int]:
    """(fewest, most) points a sample may hold: the probe and its 2k neighbours, and V.

    A sample never drops the probe's neighbours to fit, and never repeats a
    row; on a table of fewer than 2k + 1 rows the fewest is V.

    >>> sample_bounds(400_000, 10)
    (21, 400000)
    """
    return min(2 * k + 1, V), V


def rows_from_lists(V: int, probe: int, cos_ids: Sequence[int], dot_ids: Sequence[int], *, sample: int = 40,
                    seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """The rows ``choose_rows`` picks, from neighbour lists already measured.

    The probe, then its cosine and dot neighbours (``both`` where a row is in
    both lists), then ``sample`` other rows of the V drawn with ``seed``
    (capped at the rows left). Returns ids (n,) int64 and the group of each.

    >>> ids, groups = rows_from_lists(6, 0, [1, 2], [2, 3], sample=1, seed=0)
    >>> ids.tolist()[:4], groups
    ([0, 1, 2, 3], ['probe', 'cosine', 'both', 'dot', 'sample'])
    """
    groups = {int(probe): "probe"}
    for i in cos_ids:
        groups[int(i)] = "cosine"
    for i in dot_ids:
        groups[int(i)] = "both" if groups.get(int(i)) == "cosine" else "dot"
    rest = np.setdiff1d(np.arange(V), np.fromiter(groups, dtype=np.int64))
    rng = np.random.default_rng(seed)
    for i in rng.choice(rest, size=min(sample, rest.size), replace=False).tolist():
        groups[i] = "sample"
    return np.fromiter(groups, dtype=np.int64), list(groups.values())


def project(table: EmbeddingTable, ids: Sequence[int], method: str = "pca", *, groups: Sequence[str] | None = None,
            seed: int = 0, perplexity: float | None = None, n_neighbors: int | None = None,
            dims: int = 2, metric: str | None = None, fit_sample: int | None = None,
            keep_degenerate: bool = False) -> Projection:
    """Project the rows ``ids`` of a table to 2-D (or 3-D), degenerate rows left out unless kept.

    Parameters
    ----------
    table : EmbeddingTable
    ids : sequence of int, length n
        Token ids of the rows, no repeats.
    method : {"pca", "tsne", "umap"}
    groups : sequence of str, optional
        Why each row was chosen (see ``Projection``); ``chosen`` by default.
    seed : int
        Random seed of t-SNE and UMAP, and of the sample PCA is fitted on.
    perplexity : float, optional
        t-SNE perplexity, ``0 < perplexity < n``; default ``min(30, (n - 1) / 3)``.
    n_neighbors : int, optional
        UMAP neighbourhood size, ``2 <= n_neighbors < n``; default ``min(15, n - 1)``.
    dims : {2, 3}
        Coordinates per point (``n_components`` of each method).
    metric : {"cosine", "euclidean"}, optional
        The distance t-SNE and UMAP keep; default ``"cosine"`` (the neighbour
        lists' own). PCA takes none: it keeps euclidean variance.
    fit_sample : int, optional
        PCA only: rows drawn with ``seed`` to fit the axes on, besides the
        rows shown; default ``PCA_FIT_SAMPLE`` (5000), capped at V.
    keep_degenerate : bool
        Keep the degenerate rows (``degenerate_rows``: all-zero, copies, far
        longer than the rest) in the fit and the picture. By default they
        are left out of both (the probe, group ``probe``, is always kept),
        and for PCA out of the rows drawn to fit on as well; the result names
        them (``degenerate``, ``notes``).

    Returns
    -------
    Projection
        The rows kept, in the order given. For PCA, the points are
        ``PCA(n_components=2, svd_solver="full").fit(table[F]).transform(table[ids])``
        with F = ``pca_fit_rows(V, ids, fit_sample, seed)`` less its
        degenerate rows other than ``ids``; ``parameters`` says
        ``fitted_rows = len(F)``, and ``fit_left_out``, where rows were left
        out of F. When the fitted rows' largest |entry|
        lies outside ``SAFE_RANGE[method]`` (PCA: [1e-100, 1e100]), the rows
        are divided by the power of two ``2**e`` that brings it into
        [0.5, 1) before fitting, which is exact (only entries 2**1022 times
        smaller than the largest become subnormal or zero); PCA's points are
        then multiplied by ``2**e``, the transform up to that exact scale.
        t-SNE and UMAP pictures do not depend on a common scale of the rows,
        so their points stay as fitted (arbitrary units either way).

    Raises
    ------
    ValueError
        For an unknown method, dims or metric, a metric with PCA (it keeps
        euclidean variance only), a fit_sample with t-SNE or UMAP or below 0,
        repeated ids, too few points for the method (also once degenerate rows
        are left out: the message says so), a table too narrow for it
        (PCA and t-SNE need D >= dims), or a perplexity / n_neighbors that does
        not fit the number of points (checked before fitting; the message
        names both numbers); for PCA points that overflow float64 once
        multiplied back (entries near 1e308).
    MissingExtraError
        When scikit-learn or umap-learn is not installed.
    """
    if method not in METHODS:
        raise ChoiceError(f"unknown projection method {method!r}: expected one of {', '.join(METHODS)}",
                          parameter="method", value=method, expected=f"one of {', '.join(METHODS)}")
    if isinstance(dims, bool) or not isinstance(dims, numbers.Integral) or dims not in (2, 3):
        raise ChoiceError(f"dims={dims!r}: a projection has 2 or 3 coordinates per point", parameter="dims",
                          value=dims, expected="2 or 3")
    metric = _check_metric(metric, method)
    ids = np.asarray([table.token_id(i) for i in ids], dtype=np.int64)  # (n,)
    if len(set(ids.tolist())) != ids.size:
        raise ValueError("the rows to project must not repeat a token id")
    groups = list(groups or ["chosen"] * ids.size)
    reason = unfit_reason(method, ids.size, table.D, dims)
    if reason is not None:
        raise ValueError(reason)
    found = degenerate_rows(table, ids, groups)
    if not keep_degenerate:
        ids, groups = _without(table.D, ids, groups, found, method, dims)
    n = ids.size
    if method == "pca":
        points, params = _pca_points(table, ids, _check_fit_sample(fit_sample), seed, dims,
                                     None if keep_degenerate else found.limit)
    else:
        if fit_sample is not None:
            raise ValueError(f"fit_sample={fit_sample} applies to method='pca' only, not method={method!r}: "
                             f"{method} is fitted on the rows it shows")
        X, _ = _unit_scale(table.lookup(ids).astype(np.float64), *SAFE_RANGE[method])  # (n, D), rows / 2**e
        if method == "tsne":
            perplexity = _check_perplexity(perplexity, n)
            points = _tsne(X, perplexity, metric, seed, dims)
            params = {"metric": metric, "perplexity": perplexity, "seed": seed}
        else:
            n_neighbors = _check_neighbors(n_neighbors, n)
            points = _umap(X, n_neighbors, metric, seed, dims)
            params = {"metric": metric, "n_neighbors": n_neighbors, "seed": seed}
    labels = [table.token(int(i)) or str(int(i)) for i in ids]
    named = tuple(table.token(i) for i in found.ids)
    note = left_out_note(found, named, method, keep_degenerate)
    return Projection(ids=ids, labels=labels, groups=groups, points=points, method=method, parameters=params,
                      table=table.provenance.display_name, degenerate=found, kept_degenerate=keep_degenerate,
                      degenerate_labels=named, notes=() if note is None else (note,))


def _without(D: int, ids: np.ndarray, groups: list[str], found: degenerate.LeftOut, method: str,
             dims: int) -> tuple[np.ndarray, list[str]]:
    """``ids`` (n,) and their groups less the degenerate rows ``found``; ``ValueError`` where too few are left."""
    if not found.ids:
        return ids, groups
    kept = ~np.isin(ids, found.ids)  # (n,)
    ids, groups = ids[kept], [g for g, k in zip(groups, kept.tolist()) if k]
    reason = unfit_reason(method, ids.size, D, dims)
    if reason is not None:
        raise ValueError(f"{reason}: {len(found.ids)} degenerate row{'s' * (len(found.ids) != 1)} (all-zero, "
                         "copies, far longer than the rest) left out; keep_degenerate=True keeps them")
    return ids, groups


def _pca_points(table: EmbeddingTable, ids: np.ndarray, fit_sample: int, seed: int, dims: int,
                limit: float | None) -> tuple[np.ndarray, dict[str, Any]]:
    """PCA's points (n, dims) of the rows ``ids`` and its parameters: fitted on ``pca_fit_rows`` less their
    degenerate rows other than ``ids`` (rows longer than ``limit``; none left out where ``limit`` is None)."""
    fit_ids = pca_fit_rows(table.V, ids, fit_sample, seed)  # (m,) sorted, m >= n
    X = table.lookup(fit_ids).astype(np.float64)  # (m, D)
    left: dict[str, Any] = {}
    if limit is not None:  # the rows drawn to fit on, less their degenerate ones (the shown rows stay)
        unfit = degenerate.left_out(X, fit_ids, table.norms()[fit_ids], limit, keep=ids).ids
        if unfit:
            fitted = ~np.isin(fit_ids, unfit)  # (m,)
            fit_ids, X = fit_ids[fitted], X[fitted]  # (m', D)
            left["fit_left_out"] = len(unfit)
    X, exponent = _unit_scale(X, *SAFE_RANGE["pca"])  # (m, D)
    shown = np.searchsorted(fit_ids, ids)  # (n,) where each shown row sits among the fitted rows
    return _scale_back(_pca(X, X[shown], dims), exponent), {"fitted_rows": int(fit_ids.size), "seed": seed, **left}


def degenerate_rows(table: EmbeddingTable, ids: Sequence[int], groups: Sequence[str] = ()) -> degenerate.LeftOut:
    """The degenerate rows among ``ids`` that ``project`` leaves out: all-zero rows, copies of a row asked
    before them, and rows longer than ``degenerate.long_limit`` of the table's row lengths; the probe (group
    ``probe`` in ``groups``) never.

    >>> t = EmbeddingTable(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    >>> found = degenerate_rows(t, [0, 1, 2, 3], ["probe", "sample", "sample", "sample"])
    >>> found.zero, found.copies, found.ids
    ((1,), ((2, 0),), (1, 2))
    """
    ids = np.asarray(ids, dtype=np.int64)  # (n,)
    norms = table.norms()  # (V,)
    keep = [int(i) for i, g in zip(ids.tolist(), groups) if g == "probe"]
    return degenerate.left_out(table.lookup(ids), ids.tolist(), norms[ids], degenerate.long_limit(norms), keep=keep)


def left_out_note(found: degenerate.LeftOut, labels: Sequence[str | None], method: str, kept: bool) -> str | None:
    """One sentence naming the degenerate rows of a projection, left out or kept; None where there are none.

    ``labels``: the token of each of ``found.ids`` (None without vocabulary). The first ``LEFT_OUT_LISTED`` rows are named,
    each with why, the rest counted.

    >>> found = degenerate.LeftOut(zero=(1,), copies=((7, 3),), long=(), limit=2.5)
    >>> left_out_note(found, ["<pad>", "x"], "tsne", False)
    "2 degenerate rows left out of the t-SNE fit and the picture (--keep-degenerate, keep_degenerate=True, keeps them): id 1 '<pad>' (all zeros), id 7 'x' (a copy of id 3)"
    """
    if not found.ids:
        return None
    why = {i: "all zeros" for i in found.zero}
    why |= {i: f"a copy of id {of}" for i, of in found.copies}
    why |= {i: f"longer than {found.limit:.4g}, median + {degenerate.LONG_MADS:g} MAD of the row lengths"
            for i in found.long}
    named = [f"id {i}{'' if label is None else ' ' + brief(label)} ({why[i]})"
             for i, label in zip(found.ids, labels)][:LEFT_OUT_LISTED]
    more = len(found.ids) - len(named)
    rows = ", ".join(named) + (f" and {more:,} more" if more else "")
    count = f"{len(found.ids):,} degenerate row{'s' * (len(found.ids) != 1)}"
    name = METHOD_NAMES.get(method, method)
    if kept:
        return f"{count} kept in the {name} fit and the picture (--keep-degenerate, keep_degenerate=True): {rows}"
    return (f"{count} left out of the {name} fit and the picture (--keep-degenerate, keep_degenerate=True, keeps "
            f"them): {rows}")


def pca_fit_rows(V: int, ids: Sequence[int], sample: int = PCA_FIT_SAMPLE, seed: int = 0) -> np.ndarray:
    """The rows PCA is fitted on: ``min(sample, V)`` of the V rows drawn with ``seed``
    (all V when ``sample >= V``), together with the shown ``ids``; sorted, no repeats.

    Returns an int64 array of shape (m,), ``len(ids) <= m <= min(V, sample + len(ids))``.
    The same (V, ids, sample, seed) gives the same rows in any process, and the
    order of ``ids`` does not matter.

    >>> pca_fit_rows(10, [7, 2], sample=3, seed=0).tolist()
    [2, 5, 6, 7, 9]
    >>> pca_fit_rows(5, [4], sample=5000).tolist()
    [0, 1, 2, 3, 4]
    """
    shown = np.asarray(ids, dtype=np.int64)  # (n,)
    if sample >= V:
        return np.arange(V, dtype=np.int64)
    drawn = np.random.default_rng(seed).choice(V, size=sample, replace=False)  # (sample,)
    return np.union1d(drawn, shown).astype(np.int64)


def unfit_reason(method: str, n: int, D: int, dims: int = 2) -> str | None:
    """Why ``method`` cannot project n rows of width D to ``dims``-D, or None when it can.

    Checked before fitting, so that a caller can leave a figure out instead
    of failing: PCA needs 3 points, t-SNE 4, UMAP dims + 2 (its spectral
    start needs more points than coordinates + 1); PCA and t-SNE need
    D >= dims.

    >>> unfit_reason("pca", 10, 1)
    'a 2-D projection by pca needs D >= 2, got D=1'
    >>> unfit_reason("umap", 10, 1) is None
    True
    """
    min_points = MIN_POINTS[method] + (dims - 2 if method == "umap" else 0)
    min_D = MIN_D[method] if method == "umap" else max(MIN_D[method], dims)
    if n < min_points:
        return f"a {dims}-D projection by {method} needs at least {min_points} points, got {n}"
    if D < min_D:
        return f"a {dims}-D projection by {method} needs D >= {min_D}, got D={D}"
    return None


def _unit_scale(X: np.ndarray, low: float, high: float) -> tuple[np.ndarray, int]:
    """``(X / 2**e, e)``: X (n, D) with its largest |entry| brought into [0.5, 1) when it lies
    outside [low, high]; else ``(X, 0)``, untouched. Dividing by a power of two is exact."""
    largest = float(np.max(np.abs(X), initial=0.0))
    if largest == 0.0 or low <= largest <= high:
        return X, 0
    exponent = int(np.frexp(largest)[1])  # largest = f * 2**exponent, 0.5 <= f < 1
    return np.ldexp(X, -exponent), exponent  # (n, D)


def _scale_back(points: np.ndarray, exponent: int) -> np.ndarray:
    """PCA points (n, 2) of rows divided by 2**exponent, in the rows' own units again."""
    if exponent == 0:
        return points
    with np.errstate(over="ignore"):
        scaled = np.ldexp(points, exponent)  # (n, 2)
    if not np.isfinite(scaled).all():
        raise ValueError(f"the PCA coordinates of these rows overflow float64 (their entries reach "
                         f"2**{exponent}); divide the table by a power of two first")
    return scaled


def _check_metric(metric: str | None, method: str) -> str | None:
    """The metric t-SNE or UMAP runs with (cosine by default); None for PCA, which refuses one."""
    if method == "pca":
        if metric is not None:
            raise ValueError(f"metric={metric!r} does not apply to method='pca': PCA keeps euclidean variance "
                             f"(its axes are directions of largest variance); use method='tsne' or 'umap' "
                             f"to keep {metric} distances")
        return None
    if metric is None:
        return METRICS[0]
    if metric not in METRICS:
        raise ChoiceError(f"unknown metric {metric!r}: expected one of {', '.join(METRICS)}", parameter="metric",
                          value=metric, expected=f"one of {', '.join(METRICS)}")
    return metric


def _check_fit_sample(fit_sample: int | None) -> int:
    if fit_sample is None:
        return PCA_FIT_SAMPLE
    if isinstance(fit_sample, bool) or not isinstance(fit_sample, (int, np.integer)) or fit_sample < 0:
        raise SizeError(f"fit_sample={fit_sample!r} must be an int of at least 0", parameter="fit_sample",
                        value=fit_sample, expected="an int of at least 0")
    return int(fit_sample)


def _check_perplexity(perplexity: float | None, n: int) -> float:
    if perplexity is None:
        return min(30.0, (n - 1) / 3)
    if not 0 < perplexity < n:
        raise SizeError(f"t-SNE perplexity {perplexity:g} must be above 0 and below the number of points ({n} rows)",
                        parameter="perplexity", value=perplexity,
                        expected=f"above 0 and below the number of points ({n} rows)")
    return float(perplexity)


def _check_neighbors(n_neighbors: int | None, n: int) -> int:
    if n_neighbors is None:
        return min(15, n - 1)
    if not 2 <= n_neighbors < n:
        raise SizeError(f"UMAP n_neighbors {n_neighbors} must be at least 2 and below the number of points ({n} rows)",
                        parameter="n_neighbors", value=n_neighbors,
                        expected=f"at least 2 and below the number of points ({n} rows)")
    return int(n_neighbors)


def _pca(X_fit: np.ndarray, X_shown: np.ndarray, dims: int) -> np.ndarray:
    """PCA axes fitted on X_fit (m, D), the rows X_shown (n, D) projected onto them: (n, dims)."""
    decomposition = _sklearn("decomposition")
    # "full": the exact LAPACK SVD, no random start. sklearn's "auto" picks a randomised
    # solver (seeded by random_state=None: a new picture each run) above 500 rows or columns.
    pca = decomposition.PCA(n_components=dims, svd_solver="full").fit(X_fit)
    return pca.transform(X_shown)  # (n, dims)


def _tsne(X: np.ndarray, perplexity: float, metric: str, seed: int, dims: int) -> np.ndarray:
    manifold = _sklearn("manifold")
    # init="pca" works with any metric but "precomputed" (sklearn's TSNE docs); the PCA start
    # is seeded by random_state too.
    tsne = manifold.TSNE(n_components=dims, perplexity=perplexity, metric=metric, init="pca", random_state=seed)
    return np.asarray(tsne.fit_transform(X), dtype=np.float64)  # (n, dims); sklearn returns float32


def _umap(X: np.ndarray, n_neighbors: int, metric: str, seed: int, dims: int) -> np.ndarray:
    try:
        with warnings.catch_warnings():
            # umap-learn warns at import that TensorFlow (for ParametricUMAP) is absent.
            warnings.filterwarnings("ignore", category=ImportWarning)
            import umap
    except ImportError:
        raise MissingExtraError.for_module("umap-learn", "UMAP projections", ("plots",)) from None
    # n_jobs=1: a fixed random_state runs single-threaded anyway (umap warns otherwise).
    reducer = umap.UMAP(n_components=dims, n_neighbors=n_neighbors, metric=metric, random_state=seed, n_jobs=1)
    return np.asarray(reducer.fit_transform(X), dtype=np.float64)  # (n, dims)


def _sklearn(name: str) -> Any:
    try:
        return importlib.import_module(f"sklearn.{name}")
    except ImportError:
        raise MissingExtraError.for_module("scikit-learn", "projections", ("plots",)) from None
