"""The k nearest's defaults, each written once: the metrics, k, and a search's working-memory budget.

Standard library only: the CLI and the Python API read them without NumPy.
The front door (``search.Search``) applies them; measurements, the API and
the CLI import them from here, never restate them.

>>> METRICS, DEFAULT_K, DEFAULT_MEMORY // 2**20
(('cosine', 'dot'), 10, 256)
"""

__all__ = ["METRICS", "DEFAULT_K", "DEFAULT_MEMORY"]

METRICS = ("cosine", "dot")  # the two scores a neighbour list ranks by, in the order lists are shown
DEFAULT_K = 10  # neighbours per list when k is not given (V - 1 on a smaller table, said in a note)
DEFAULT_MEMORY = 256 * 2**20  # bytes of working memory for one search, when --memory / memory= is not given
