"""What shrinking the vectors costs: neighbours lost against bytes saved (``embedlab compress``).

For each deployment-time reduction (``engine.compression``: PCA, Matryoshka
truncation, int8 and binary quantisation, product quantisation) and size,
N query rows of the table are searched twice, over the whole table: exactly
on the full vectors (``engine.neighbors``, float64 rescoring, ties by the
smaller id) and on the reduced ones, each query leaving itself out. Per
metric (cosine and dot):

* ``recall@k``: the share of the exact top k found in the reduced top k,
  averaged over queries;
* ``top-1``: the share of queries whose reduced first neighbour is the
  exact one;
* Spearman's rho between full and reduced scores over each query's exact top
  ``SPEARMAN_TOP`` (100) rows (ranks with ties averaged, Pearson's r of the
  ranks), averaged over the queries where it is defined;
* for int8 and binary, the way they are deployed: the reduced top
  ``rescore * k`` (the shortlist, 4 x k by default, as sentence-transformers
  rescores) scored again exactly in float64, and its top k's recall.

Bytes: a token's code (d' float32 values; D int8 codes; ceil(D / 8) bytes of
sign bits; m one-byte pq codes) and the whole table's (V codes plus what is
stored once: PCA mean and axes, int8 ranges, pq codebooks). What a method costs
a token in all is the whole table's bytes over V, its code and its share of the
side data: on a small table pq's codebooks (256 centroids of D floats) can
outweigh its codes many times over, and the plot places each method there.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from scipy.stats import rankdata

from ..deprecation import renamed
from ..engine import compression
from ..engine.neighbors.defaults import DEFAULT_K, METRICS
from ..engine.neighbors.search import Search, check_k
from ..engine.table import EmbeddingTable
from ..errors import ChoiceError, SizeError
from .defaults import fit_default

__all__ = ["METHODS", "MetricScores", "CompressionRow", "CompressResult", "compress", "default_dims",
           "DEFAULT_QUERIES", "DEFAULT_K", "DEFAULT_RESCORE", "SPEARMAN_TOP"]

METHODS = ("pca", "truncate", "int8", "binary", "pq")
RESCORED = ("int8", "binary")  # deployed with an exact rescoring of a shortlist
DEFAULT_QUERIES = 1000
DEFAULT_RESCORE = 4  # shortlist = rescore * k (sentence-transformers' rescore_multiplier)
SPEARMAN_TOP = 100  # rows of each query's exact list the reduced scores are ranked on
PCA_MAX_ROWS = 100_000  # PCA is fitted on the table, or on this many of its rows (seeded)
SIDE_DATA = {"pca": "the mean and the axes", "truncate": "none", "int8": "the ranges", "binary": "none",
             "pq": "the codebooks"}  # what each method stores once beside its codes


@dataclass(frozen=True)
class MetricScores:
    """One reduction under one metric; fractions in [0, 1], rho in [-1, 1].

    ``spearman`` is None where it is defined for no query (every reduced
    score equal); ``rescored_recall`` None for a method not rescored.
    """

    recall: float
    top1: float
    spearman: float | None
    rescored_recall: float | None = None


@dataclass(frozen=True)
class CompressionRow:
    """One method at one size.

    Attributes
    ----------
    method, size : str
        ``"pca"`` and ``"d'=128"``, ``"int8"`` and ``"384 x int8"``, ...
    dims : int or None
        d' for pca and truncate; None for the others.
    bytes_per_token : float
        Bytes of one token's code.
    table_bytes : int
        ``ceil(V * bytes_per_token)`` plus ``side_bytes``.
    side_bytes : int
        Stored once beside the codes (PCA mean and axes, int8 ranges, pq codebooks).
    total_bytes_per_token : float
        ``table_bytes / V``: a token's code and its share of ``side_bytes``, what the method costs a
        token in all (the compress plot's x).
    metrics : dict of str -> MetricScores
        ``"cosine"`` and ``"dot"``.
    seconds : float
        Time to reduce, search and score, both metrics.
    """

    method: str
    size: str
    dims: int | None
    bytes_per_token: float
    table_bytes: int
    side_bytes: int
    total_bytes_per_token: float
    metrics: dict[str, MetricScores]
    seconds: float


@dataclass(frozen=True)
class CompressResult:
    """What ``compress`` measured; plain values (``to_dict`` for JSON)."""

    V: int
    D: int
    k: int
    n_queries: int
    seed: int
    rescore: int
    shortlist: int
    spearman_top: int
    full_bytes_per_token: int
    full_table_bytes: int
    dtype: str
    rows: list[CompressionRow]
    pca_rows: int | None
    notes: list[str] = field(default_factory=list)
    source: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values (rows as dicts, metrics keyed by name)."""
        return asdict(self)


def default_dims(D: int) -> list[int]:
    """D / 2, D / 4 and D / 8 (rounded down, at least 1), each once, largest first.

    >>> default_dims(384), default_dims(50), default_dims(2)
    ([192, 96, 48], [25, 12, 6], [1])
    """
    return sorted({max(D // 2, 1), max(D // 4, 1), max(D // 8, 1)}, reverse=True)


@renamed(n_queries="queries")
def compress(table: EmbeddingTable, *, methods: Sequence[str] | None = None, dims: Sequence[int] | None = None,
             queries: int | None = None, k: int | None = None, rescore: int = DEFAULT_RESCORE,
             pq_m: int | None = None, seed: int = 0, memory: int | None = None,
             progress: Callable[[int], None] | None = None) -> CompressResult:
    """Measure neighbours kept against bytes for each reduction of a table.

    Parameters
    ----------
    table : EmbeddingTable
        The (V, D) table, V >= 2.
    methods : sequence of str, optional
        Of ``METHODS``; default all of them (pq only where faiss is installed,
        else left out with a note).
    dims : sequence of int, optional
        d' for pca and truncate, each in [1, D] (pca: [1, min(V, D)]);
        default ``default_dims(D)``.
    queries : int, optional
        N rows sampled as queries (``numpy.random.default_rng(seed)``, without
        replacement), 1 <= N <= V; default 1,000, shrunk to V with a note
        (``n_queries=``, its old name, still works, with a ``DeprecationWarning``).
    k : int, optional
        Neighbours compared, 1 <= k <= V - 1; default 10, shrunk with a note.
    rescore : int
        The shortlist of int8 and binary is ``rescore * k`` (at most V - 1), >= 1.
    pq_m : int, optional
        pq's sub-quantisers, dividing D; default ``compression.pq_subquantizers(D)``.
    seed : int
        Seed of the query sample, the PCA row sample and faiss's k-means, >= 0.
    memory : int, optional
        Working memory budget of each search, in bytes (default
        ``engine.neighbors.defaults.DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with 1 after each search (exact and reduced, per metric).

    Returns
    -------
    CompressResult

    Raises
    ------
    ChoiceError
        For an unknown or repeated method (names it and the choices).
    SizeError
        For a d' outside [1, D], k outside [1, V - 1], N outside [1, V],
        rescore < 1, seed < 0, or pq_m not dividing D; pq on V < 256.
    MissingExtraError
        For pq asked for without faiss, pca without scikit-learn.
    """
    W = table.W_E  # (V, D)
    V, D = W.shape
    notes: list[str] = []
    chosen = _methods(methods, notes)
    d_list = _dims(dims, D, min(V, D) if "pca" in chosen else D)
    k, k_notes = fit_default(k, DEFAULT_K, V - 1, "k", "V - 1")
    check_k(k, V - 1, "V - 1 (each query leaves itself out)")
    queries, n_notes = fit_default(queries, DEFAULT_QUERIES, V, "queries", "V")
    notes[:0] = [*k_notes, *n_notes]
    for name, value, low in (("rescore", rescore, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise SizeError(f"{name} must be an int >= {low}, got {value!r}", parameter=name, value=value,
                            expected=f"an int >= {low}")
    m = compression.pq_subquantizers(D) if pq_m is None else pq_m
    queries = _queries(V, queries, seed)  # (N,) the query ids
    shortlist = min(rescore * k, V - 1)
    top = min(max(k, SPEARMAN_TOP), V - 1)
    exact_search = Search(table, top, METRICS, ids=queries, memory=memory)  # the full vectors: the truth
    exact = {metric: _found(exact_search.nearest(metric)) for metric in METRICS}
    if progress is not None:
        progress(2)
    rows: list[CompressionRow] = []
    fit = None
    if "pca" in chosen:
        fit = compression.fit_pca(W, max(d_list), max_rows=PCA_MAX_ROWS, seed=seed)
    for method in chosen:
        sizes = d_list if method in ("pca", "truncate") else [None]
        for d in sizes:
            start = time.perf_counter()
            reduced = _reduce(method, W, d, fit, m, seed)
            scores = {metric: _score(method, reduced, W, queries, exact[metric], metric, k, shortlist, memory, seed, m)
                      for metric in METRICS}
            if progress is not None:
                progress(2)
            r = reduced["cosine"]
            table_bytes = math.ceil(V * r.bytes_per_token) + r.side_bytes
            rows.append(CompressionRow(method=method, size=r.size, dims=d, bytes_per_token=r.bytes_per_token,
                                       table_bytes=table_bytes, side_bytes=r.side_bytes,
                                       total_bytes_per_token=table_bytes / V, metrics=scores,
                                       seconds=time.perf_counter() - start))
    notes += _method_notes(chosen, fit, shortlist, k, rescore, rows, V)
    itemsize = W.dtype.itemsize
    return CompressResult(V=V, D=D, k=k, n_queries=len(queries), seed=seed, rescore=rescore, shortlist=shortlist,
                          spearman_top=top, full_bytes_per_token=D * itemsize, full_table_bytes=V * D * itemsize,
                          dtype=str(W.dtype), rows=rows, pca_rows=None if fit is None else fit.n_rows, notes=notes,
                          source=table.provenance.to_dict())


# -- the steps ---------------------------------------------------------------

def _found(neighbors: Any) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of a search's ``Neighbors``: (N, K) each."""
    return neighbors.ids, neighbors.scores


def _reduce(method: str, W: np.ndarray, d: int | None, fit: Any, m: int, seed: int) -> dict[str, Any]:
    """metric -> Reduced: one reduction for both metrics, but pq (its cosine codebooks are trained on unit rows)."""
    if method == "pq":
        return {"cosine": compression.pq(W, m, unit=True, seed=seed), "dot": compression.pq(W, m, seed=seed)}
    one = {"pca": lambda: compression.pca(W, fit, d), "truncate": lambda: compression.truncate(W, d),
           "int8": lambda: compression.int8(W), "binary": lambda: compression.binary(W)}[method]()
    return {"cosine": one, "dot": one}


def _score(method: str, reduced: dict[str, Any], W: np.ndarray, queries: np.ndarray,
           exact: tuple[np.ndarray, np.ndarray], metric: str, k: int, shortlist: int, memory: int | None, seed: int,
           m: int) -> MetricScores:
    """recall@k, top-1, Spearman's rho and (int8, binary) the rescored recall of one reduction under one metric."""
    R = reduced[metric].rows  # (V, d) float32
    exact_ids, exact_scores = exact  # (N, top)
    # binary: +-1 rows, whose dot product is D - 2 * Hamming, rank both metrics alike
    reduced_metric = "dot" if method == "binary" else metric
    if method == "pq":  # asymmetric: full-precision queries against the decoded rows
        Q = np.asarray(W[queries], dtype=np.float32)
        if metric == "cosine":
            Q = Q / np.where((n := np.linalg.norm(Q, axis=1, keepdims=True)) > 0, n, 1.0)
    else:
        Q = R[queries]  # (N, d): the query's own reduced row
    depth = shortlist if method in RESCORED else k
    # The reduced rows as a table of their own; each query vector stands for its id, which is left out.
    ids = Search(R, depth, reduced_metric, vectors=Q, exclude=queries, memory=memory).nearest(reduced_metric).ids
    recall = _recall(ids[:, :k], exact_ids[:, :k])
    top1 = float(np.mean(ids[:, 0] == exact_ids[:, 0]))
    rho = _spearman(exact_scores, _reduced_scores(Q, R, exact_ids, reduced_metric))
    rescored = None
    if method in RESCORED:
        rescored = _recall(_rescore(W, queries, ids, metric, k), exact_ids[:, :k])
    return MetricScores(recall=recall, top1=top1, spearman=rho, rescored_recall=rescored)


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over rows of |found_i & truth_i| / k; (N, k) ids each."""
    k = truth.shape[1]
    hits = [np.intersect1d(f, t, assume_unique=True).size for f, t in zip(found, truth)]
    return float(np.mean(hits) / k)


def _reduced_scores(Q: np.ndarray, R: np.ndarray, ids: np.ndarray, metric: str, chunk: int = 64) -> np.ndarray:
    """Reduced scores of each query against its exact list's rows; (N, d), (V, d), (N, top) -> (N, top) float64."""
    out = np.empty(ids.shape, dtype=np.float64)
    for start in range(0, len(ids), chunk):
        q = Q[start:start + chunk].astype(np.float64)  # (n, d)
        rows = R[ids[start:start + chunk]].astype(np.float64)  # (n, top, d)
        s = np.einsum("nd,ntd->nt", q, rows)  # (n, top)
        if metric == "cosine":
            lengths = np.linalg.norm(q, axis=1)[:, None] * np.linalg.norm(rows, axis=2)  # (n, top)
            s = np.divide(s, lengths, out=np.zeros_like(s), where=lengths > 0)
        out[start:start + chunk] = s
    return out


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Mean over rows of Spearman's rho of a[i] and b[i] (ranks with ties averaged); None if no row has one.

    A row whose values are all equal has no rho and is left out of the mean.
    """
    ra = rankdata(a, axis=1)  # (N, top)
    rb = rankdata(b, axis=1)
    ra -= ra.mean(axis=1, keepdims=True)
    rb -= rb.mean(axis=1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=1) * (rb * rb).sum(axis=1))  # (N,)
    ok = den > 0
    if not ok.any():
        return None
    return float(np.mean((ra * rb).sum(axis=1)[ok] / den[ok]))


def _rescore(W: np.ndarray, queries: np.ndarray, shortlist: np.ndarray, metric: str, k: int) -> np.ndarray:
    """The shortlist scored exactly in float64 and cut to k: score descending, equal scores by the smaller id."""
    out = np.empty((len(queries), k), dtype=np.int64)
    for i, (q, ids) in enumerate(zip(queries, shortlist)):
        rows = W[ids].astype(np.float64)  # (S, D)
        qv = W[q].astype(np.float64)  # (D,)
        s = rows @ qv  # (S,)
        if metric == "cosine":
            lengths = np.linalg.norm(rows, axis=1) * np.linalg.norm(qv)
            s = np.divide(s, lengths, out=np.zeros_like(s), where=lengths > 0)
        out[i] = ids[np.lexsort((ids, -s))[:k]]
    return out


# -- arguments ---------------------------------------------------------------

def _methods(methods: Sequence[str] | None, notes: list[str]) -> list[str]:
    if methods is None:
        chosen = list(METHODS)
        if importlib.util.find_spec("faiss") is None:
            chosen.remove("pq")
            notes.append("pq left out: faiss is not installed (pip install 'embedlab[compress]')")
        return chosen
    if isinstance(methods, str) or not all(isinstance(x, str) for x in methods) or not methods:
        raise ChoiceError(f"methods must be a list of method names, got {methods!r}", parameter="methods",
                          value=methods, expected=f"some of {', '.join(METHODS)}")
    for name in methods:
        if name not in METHODS:
            raise ChoiceError(f"unknown method {name!r}: expected some of {', '.join(METHODS)}", parameter="methods",
                              value=name, expected=f"some of {', '.join(METHODS)}")
    repeated = sorted({x for x in methods if list(methods).count(x) > 1})
    if repeated:
        raise ChoiceError(f"method {repeated[0]!r} is given twice", parameter="methods", value=repeated[0],
                          expected="each method once")
    return list(methods)


def _dims(dims: Sequence[int] | None, D: int, limit: int) -> list[int]:
    if dims is None:
        return [d for d in default_dims(D) if d <= limit] or [1]
    if isinstance(dims, (str, bytes)) or not len(dims):
        raise SizeError(f"dims must be a list of widths, got {dims!r}", parameter="dims", value=dims,
                        expected=f"widths from 1 to {limit}")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 1 <= d <= limit:
            what = "D" if limit == D else "min(V, D)"
            raise SizeError(f"d'={d!r} is out of range: a reduced width from 1 to {what} = {limit}", parameter="dims",
                            value=d, expected=f"1 to {limit}")
    return sorted({int(d) for d in dims}, reverse=True)


def _queries(V: int, n: int, seed: int) -> np.ndarray:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= V:
        raise SizeError(f"queries must be a number from 1 to V={V}, got {n!r}", parameter="queries", value=n,
                        expected=f"a number from 1 to V={V}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SizeError(f"seed must be an int >= 0, got {seed!r}", parameter="seed", value=seed,
                        expected="an int >= 0")
    return np.sort(np.random.default_rng(seed).choice(V, size=int(n), replace=False))


def _method_notes(chosen: list[str], fit: Any, shortlist: int, k: int, rescore: int,
                  rows: list[CompressionRow], V: int) -> list[str]:
    notes = []
    if fit is not None:
        notes.append(f"pca: fitted on {fit.n_rows:,} rows, centred (as scikit-learn fits it); cosine and dot are "
                     "computed on the centred projections")
    if "truncate" in chosen:
        notes.append("truncate: the first d' coordinates (Matryoshka); only models trained for it (Matryoshka "
                     "representation learning) are meant to be cut this way")
    if "int8" in chosen:
        notes.append("int8: scores are the codes' own dot products and cosines, as a search over "
                     "sentence-transformers' int8 codes computes them; each dimension's shift (its minimum maps to "
                     "-128) moves dot products more than cosines")
    if "binary" in chosen:
        notes.append("binary: codes are compared by Hamming distance, which stands for both metrics")
    rescored = [m for m in chosen if m in RESCORED]
    if rescored:
        notes.append(f"{' and '.join(rescored)}: rescored = the reduced top {shortlist} ({rescore} x k"
                     + (", cut to V - 1" if shortlist < rescore * k else "") + ") scored again exactly in float64")
    if "pq" in chosen:
        notes.append(f"pq: faiss IndexPQ, {compression.PQ_BITS}-bit codes, queries at full precision; for cosine "
                     "the codebooks are trained on unit rows")
        advised = compression.PQ_ADVISED_POINTS * 2 ** compression.PQ_BITS
        if V < advised:
            notes.append(f"pq: trained on all V={V:,} rows; faiss advises at least {advised:,} "
                         f"({compression.PQ_ADVISED_POINTS} a centroid), so its centroids are rough here")
    for r in rows:
        if r.side_bytes > r.table_bytes - r.side_bytes:  # what is stored once outweighs the V codes
            notes.append(f"{r.method} {r.size}: its side data ({r.side_bytes:,} bytes: "
                         f"{SIDE_DATA[r.method]}) outweigh its codes ({r.table_bytes - r.side_bytes:,} bytes): "
                         f"{r.total_bytes_per_token:,.4g} bytes a token in all, not {r.bytes_per_token:,.4g}")
    undefined = [f"{r.method} {r.size} ({metric})" for r in rows for metric, s in r.metrics.items()
                 if s.spearman is None]
    if undefined:
        notes.append("Spearman's rho undefined (every reduced score equal) for " + ", ".join(undefined))
    return notes
