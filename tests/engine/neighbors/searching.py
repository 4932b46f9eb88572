"""The front door as one call, the way the wing's tests ask it: ``search(W, Q, k, metric, ...)`` -> (ids, scores).

``Q`` None queries the rows ``exclude`` by id; vectors ``Q`` leave out ``exclude``
where given. ``row_norms`` and ``codes`` are lent to the search as a table's
cache (``ArrayTable``: resident, outside the budget); without them a plain
array is searched (its lengths measured and counted by the search). The other
options are ``Search``'s (memory, workers, screen, device).
"""

from __future__ import annotations

from embedlab.engine.neighbors.search import ArrayTable, Search


def search(W, Q, k, metric, *, exclude=None, row_norms=None, codes=None, **options):
    table = W if row_norms is None and codes is None else ArrayTable(W, norms=row_norms, codes=codes)
    if Q is None:
        found = Search(table, k, metric, ids=exclude, **options).nearest(metric)
    else:
        found = Search(table, k, metric, vectors=Q, exclude=exclude, **options).nearest(metric)
    return found.ids, found.scores
