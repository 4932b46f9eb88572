"""Rows with the very same values: every row's lists from a table that holds each of them once.

A checkpoint may hold many rows of one value: tokens never trained and set
to one value, new tokens initialised to one mean. Each such copy scores
exactly what its original scores, so under the tie rule (equal scores by
the smaller id) a query's pool meets them all as exact ties of its k-th
best: none can be dropped on its screening score, and a pool overflows every
``pool_slots(k) - k`` copies, each overflow settled in float64 through
Python. Where the copies are themselves queries (every row), that cost grows
as the square of the group (``benchmarks/copies.py``: 20,000 x 64, hubs with
one row copied 5,000 times, 63 s with every copy screened, 1.3 s set aside).

So where a group holds more rows than a pool (``find_copies``), every row's
lists come from the table without its copies (``Copies.table``: the first id
of each group and every row without a copy, in id order), searched as any
table, and are expanded (``Copies.expand``):

- a listed row stands for its whole group, every member with its score;
  the expanded list, ordered by ``(-score, id)``, is cut to k;
- a member of a group of g rows also lists the group's other members, with
  the score of a member against another (``Rescorer.scores``, the bits the
  search computes for that pair).

Exact: a row x of another group is listed for query q when fewer than k
rows precede it by ``(-score, id)``; the first id of x's group precedes x or
is x, and each row of the smaller table listed before that first id precedes
x too and is not q, so that first id is among the smaller table's k nearest
of q's group's first id (which leaves out only itself). So the k nearest
are among the expanded lists, and the cut keeps them. Where the smaller table
has k rows or fewer, its every row lists all the others (k - 1 at most). This
rests on a score depending on the two rows' bytes and lengths alone, which
holds of the float64 rescoring (``rescore``, ``pair_scores.pair_dots64``): q
against x in the table scores what q's first id scores against x's.

Glossary: ``V`` vocabulary size, ``D`` model width, ``K`` top-k; ``V'`` rows
of the table without its copies, ``g`` rows in a group.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .rescore import Rescorer
from .self_join import ListBlock

__all__ = ["Copies", "find_copies"]

_BLOCK = 4096  # rows of every row's lists expanded and handed out at a time


@dataclass(frozen=True)
class Copies:
    """A table's groups of identical rows, and the table without its copies.

    Attributes
    ----------
    keep : np.ndarray, shape (V',), int64
        Ascending: the first id of each group and every row without a copy.
    first : np.ndarray, shape (V,), int64
        Each row's place in ``keep``: its group's first id's (its own where it has no copy).
    groups : dict of int to np.ndarray
        The place in ``keep`` of each group of two rows or more -> its ids (g,) int64, ascending.
    """

    keep: np.ndarray
    first: np.ndarray
    groups: dict[int, np.ndarray]

    @property
    def largest(self) -> int:
        """Rows in the largest group."""
        return max(len(g) for g in self.groups.values())

    @property
    def copies(self) -> int:
        """Rows left out of the smaller table: V - V'."""
        return len(self.first) - len(self.keep)

    def table(self, W: np.ndarray) -> np.ndarray:
        """The table without its copies, W[keep]: (V', D), a new array of W's dtype."""
        return np.ascontiguousarray(W[self.keep])

    def expand(self, W: np.ndarray, row_norms: np.ndarray, k: int, metric: str,
               lists: Iterator[ListBlock] | None) -> Iterator[ListBlock]:
        """Every row's exact top-k of W from the smaller table's every-row lists, in blocks of rows in order.

        Parameters
        ----------
        W : np.ndarray, shape (V, D)
            The table; ``row_norms`` (V,) float64 its row lengths.
        k : int
            Neighbours per row, ``1 <= k <= V - 1``.
        metric : {"cosine", "dot"}
        lists : iterator of (start, stop, ids, scores), or None
            The smaller table's every-row lists (ids in ``[0, V')``), in
            order, with ``min(k, V' - 1)`` neighbours each; None where V' = 1.

        Yields
        ------
        start, stop : int
            The rows ``[start, stop)``, from 0 to V.
        ids : np.ndarray, shape (stop - start, K), int64
        scores : np.ndarray, shape (stop - start, K), float64
            As the search of W itself lists them, id for id and score for score.
        """
        V, n = len(W), len(self.keep)
        width = min(k, n - 1)
        small_ids = np.empty((n, width), dtype=np.int64)  # (V', K') in ids of W
        small_scores = np.empty((n, width))
        for start, stop, ids, scores in lists or ():
            small_ids[start:stop], small_scores[start:stop] = self.keep[ids], scores
        places = np.fromiter(self.groups, dtype=np.int64, count=len(self.groups))
        own = self._own_scores(W, row_norms, metric, places, k)  # {place: score of a member against another}
        in_group = np.zeros(V, dtype=bool)  # (V,) rows of a group of two or more
        in_group[np.concatenate(list(self.groups.values()))] = True
        grouped = np.zeros(V, dtype=bool)  # (V,) first ids of groups: a list that holds one is expanded
        grouped[self.keep[places]] = True
        for start in range(0, V, _BLOCK):
            stop = min(V, start + _BLOCK)
            base = self.first[start:stop]  # (n,) each row's place in the smaller table
            ids, scores = small_ids[base], small_scores[base]  # (n, K') copies, in ids of W
            out_ids = np.empty((stop - start, k), dtype=np.int64)
            out_scores = np.empty((stop - start, k))
            # (n,) nothing to expand: a row without copies listing none (and the smaller table's lists are k long)
            plain = ~in_group[start:stop] & ~grouped[ids].any(axis=1) & (width == k)
            if width == k:
                out_ids[plain], out_scores[plain] = ids[plain], scores[plain]
            for r in np.flatnonzero(~plain):
                out_ids[r], out_scores[r] = self._expanded(start + r, ids[r], scores[r], own, k)
            yield start, stop, out_ids, out_scores

    def _expanded(self, q: int, ids: np.ndarray, scores: np.ndarray, own: dict[int, float],
                  k: int) -> tuple[np.ndarray, np.ndarray]:
        """Row q's list: each listed row's group (its first k members) and q's own group but q, cut to k."""
        got_ids, got_scores = [], []
        for i, s in zip(ids.tolist(), scores.tolist()):
            members = self.groups.get(int(self.first[i]))
            members = np.array([i]) if members is None else members[:k]
            got_ids.append(members)
            got_scores.append(np.full(len(members), s))
        place = int(self.first[q])
        if place in self.groups:
            members = self.groups[place][:k + 1]  # (k + 1,) at most: q is one of them or none
            members = members[members != q][:k]
            got_ids.append(members)
            got_scores.append(np.full(len(members), own[place]))
        cand, cand_scores = np.concatenate(got_ids), np.concatenate(got_scores)
        order = np.lexsort((cand, -cand_scores))[:k]
        return cand[order], cand_scores[order]

    def _own_scores(self, W: np.ndarray, row_norms: np.ndarray, metric: str, places: np.ndarray,
                    k: int) -> dict[int, float]:
        """Each group's score of a member against another: its first id against itself, as the search rescores it."""
        if not places.size:
            return {}
        firsts = self.keep[places]  # (h,) ids
        q64 = np.asarray(W[firsts], dtype=np.float64)  # (h, D)
        rescorer = Rescorer(W, q64, row_norms[firsts], row_norms, metric, None, k)
        scores = rescorer.scores(np.arange(len(firsts)), firsts)  # (h,)
        return dict(zip(places.tolist(), (float(s) + 0.0 for s in scores)))


def find_copies(W: np.ndarray, row_norms: np.ndarray, *, larger_than: int) -> Copies | None:
    """The groups of rows of W with the very same bits, where one holds more than ``larger_than`` rows; else None.

    Rows of a group have the same float64 length, so only rows whose length
    another row shares are compared: by a digest of their bytes (BLAKE2b),
    then byte for byte. ``larger_than``: ``pool.pool_slots(k)``, the rows a
    query's pool holds before it settles ties in float64.

    Parameters
    ----------
    W : np.ndarray, shape (V, D)
    row_norms : np.ndarray, shape (V,), float64
        ``vector_norms(W)``.
    larger_than : int

    Returns
    -------
    Copies or None

    >>> W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    >>> c = find_copies(W, np.linalg.norm(W, axis=1), larger_than=2)
    >>> c.keep.tolist(), c.first.tolist(), {p: g.tolist() for p, g in c.groups.items()}
    ([0, 1], [0, 1, 0, 0], {0: [0, 2, 3]})
    >>> find_copies(W, np.linalg.norm(W, axis=1), larger_than=3) is None
    True
    """
    V = len(W)
    _, inverse, counts = np.unique(row_norms, return_inverse=True, return_counts=True)
    candidates = np.flatnonzero(counts[inverse.ravel()] > 1)  # (c,) ascending: rows whose length repeats
    if candidates.size <= larger_than:
        return None
    by_digest: dict[bytes, list[int]] = {}
    for i in candidates.tolist():
        row = np.ascontiguousarray(W[i])
        by_digest.setdefault(hashlib.blake2b(row.tobytes(), digest_size=32).digest() + row_norms[i].tobytes(),
                             []).append(i)
    found = []
    for members in by_digest.values():
        first = np.ascontiguousarray(W[members[0]]).view(np.uint8)
        same = [i for i in members if np.array_equal(np.ascontiguousarray(W[i]).view(np.uint8), first)]
        if len(same) > 1:
            found.append(np.array(same, dtype=np.int64))
    if not found or max(len(g) for g in found) <= larger_than:
        return None
    dropped = np.zeros(V, dtype=bool)
    first_id = np.arange(V, dtype=np.int64)
    for members in found:
        dropped[members[1:]] = True
        first_id[members] = members[0]
    keep = np.flatnonzero(~dropped)  # (V',) ascending
    place = np.full(V, -1, dtype=np.int64)
    place[keep] = np.arange(len(keep))
    first = place[first_id]  # (V,)
    return Copies(keep=keep, first=first, groups={int(place[g[0]]): g for g in found})
