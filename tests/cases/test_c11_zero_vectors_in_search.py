"""C11 in the NumPy search: zero vectors give NaN cosines that corrupt a ranking.

Values from the case: table [[1,0],[0,0],[0,1],[0,0]], query [1,0] -> cosine
scores [1, 0, 0, 0], ids [0, 1, 2, 3] (ties at 0 by the smaller id); a zero
query -> all zeros. The same holds whatever the dtype, the block size, and
whether the zero vector is a query, a row, or both.
"""

import warnings

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.neighbors.search import Search
from embedlab.engine.table import EmbeddingTable

T = [[1, 0], [0, 0], [0, 1], [0, 0]]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_case_values_every_dtype(dtype, metric):
    table = EmbeddingTable(np.array(T, dtype=dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from 0/0
        got = table.nearest_to_vector([[1, 0], [0, 0]], 4, metric)
        by_id = table.nearest([1, 3], 3, metric)  # the zero rows as queries
    assert got.ids.tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    assert got.scores.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    assert by_id.ids.tolist() == [[0, 2, 3], [0, 1, 2]]  # each leaves out only itself
    assert by_id.scores.tolist() == [[0.0, 0.0, 0.0]] * 2
    assert embed.cosine([0, 0], [1, 0]) == embed.cosine([0, 0], [0, 0]) == 0.0


def test_many_zero_rows_across_blocks_never_give_nan():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((2000, 4)).astype(np.float32)
    W[rng.integers(0, 2000, 400)] = 0.0
    Q = np.vstack([np.zeros((5, 4)), rng.standard_normal((20, 4))])  # zero queries among others
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Blocks far smaller than V (a few queries x 51 rows); the budget also holds the row lengths the
        # search measures itself (about 0.26 MB here: plan.fixed_bytes).
        found = Search(W, 50, "cosine", vectors=Q, memory=400_000).nearest("cosine")
    ids, scores = found.ids, found.scores
    assert not np.isnan(scores).any()
    assert ids[:5].tolist() == [list(range(50))] * 5 and (scores[:5] == 0.0).all()
    zero_row = ~W.any(axis=1)  # (V,)
    assert (scores[5:][zero_row[ids[5:]]] == 0.0).all()  # a zero row scores exactly 0.0


def test_the_c11_search_runs_in_blocks_far_smaller_than_the_table():
    from embedlab.engine.lengths import vector_norms
    from embedlab.engine.neighbors.plan import plan_search

    W = np.random.default_rng(0).standard_normal((2000, 4)).astype(np.float32)
    plan = plan_search(2000, 4, 50, "cosine", 400_000, q_norms=np.ones(25), row_norms=vector_norms(W),
                       table_dtype=W.dtype, by_id=False, norms_given=False)
    assert plan.rows < 200 and plan.queries < 25
