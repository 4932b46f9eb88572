"""C12 in the NumPy search: "cosine" computed as raw dot, or divided by one norm.

Values from the case: T = [[1,0],[10,1],[0,1]], query vector [1,0]: cosine ids
[0,1,2] with scores [1, 0.9950371902, 0]; dot ids [1,0,2] with [10, 1, 0]; dot
of [0,1]: rows 1 and 2 tie at 1 -> [1, 2, 0]. After stretch(T, 2, 20), query
[0,1]: cosine [2,1,0] with [1, 0.0995037190, 0], dot [2,1,0] with [20, 1, 0].
"""

import numpy as np
import pytest

from embedlab import embed
from embedlab.table import EmbeddingTable

T = [[1, 0], [10, 1], [0, 1]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_case_values(dtype):
    table = EmbeddingTable(np.array(T, dtype=dtype))
    cos = table.nearest_to_vector([1, 0], 3, "cosine")
    dot = table.nearest_to_vector([1, 0], 3, "dot")
    assert cos.ids.tolist() == [[0, 1, 2]]
    assert cos.scores[0] == pytest.approx([1, 0.9950371902, 0], abs=1e-10)
    assert dot.ids.tolist() == [[1, 0, 2]] and dot.scores[0].tolist() == [10, 1, 0]
    assert table.nearest_to_vector([0, 1], 3, "dot").ids.tolist() == [[1, 2, 0]]
    stretched = table.stretch(2, 20)
    cos = stretched.nearest_to_vector([0, 1], 3, "cosine")
    dot = stretched.nearest_to_vector([0, 1], 3, "dot")
    assert cos.ids.tolist() == [[2, 1, 0]]
    assert cos.scores[0] == pytest.approx([1, 0.0995037190, 0], abs=1e-10)
    assert dot.ids.tolist() == [[2, 1, 0]] and dot.scores[0].tolist() == [20, 1, 0]


def test_both_norms_divide_out():
    # A long query: dividing by the row norm only would give 3.0, by the query
    # norm only would keep the dot order [1, 0, 2].
    table = EmbeddingTable(np.array(T, dtype=np.float32))
    got = table.nearest_to_vector([3, 0], 3, "cosine")
    assert got.ids.tolist() == [[0, 1, 2]]
    assert got.scores[0] == pytest.approx([1, 0.9950371902, 0], abs=1e-10)
    assert embed.cosine([2, 0], [3, 0]) == 1.0


def test_every_cosine_lies_in_minus_one_one_even_for_copies():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 9))
    W = np.vstack([base, base * 3.0, -base])  # parallel rows: cosines of exactly +-1 in exact arithmetic
    got = EmbeddingTable(W).nearest(np.arange(len(W)), len(W) - 1, "cosine")
    assert got.scores.min() >= -1.0 and got.scores.max() <= 1.0
