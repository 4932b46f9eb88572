"""C12 in the NumPy search: "cosine" computed as raw dot, or divided by one norm.

Values from the case: T = [[1,0],[10,1],[0,1]], query vector [1,0]: cosine ids
[0,1,2] with scores [1, 0.9950371902, 0]; dot ids [1,0,2] with [10, 1, 0]; dot
of [0,1]: rows 1 and 2 tie at 1 -> [1, 2, 0]. After stretch(T, 2, 20), query
[0,1]: cosine [2,1,0] with [1, 0.0995037190, 0], dot [2,1,0] with [20, 1, 0].
"""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.table import EmbeddingTable

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


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_cosine_does_not_depend_on_scale_even_beyond_the_squares_range(scale):
    # The case table scaled by c: every cosine is the case's own value, though
    # |w|^2 (and |q| |w|) over- or underflows float64.
    rows = [[x * scale for x in row] for row in T]
    table = EmbeddingTable(np.array(rows))
    got = table.nearest_to_vector([scale, 0.0], 3, "cosine")
    assert got.ids.tolist() == [[0, 1, 2]]
    assert got.scores[0] == pytest.approx([1, 0.9950371902, 0], abs=1e-10)
    by_id = table.nearest([0], 2, "cosine")
    assert by_id.ids.tolist() == [[1, 2]] and by_id.scores[0] == pytest.approx([0.9950371902, 0], abs=1e-10)
    assert embed.cosine(rows[0], rows[1]) == pytest.approx(0.9950371902, abs=1e-10)
    assert embed.nearest_by_cosine(rows, 0, 2) == [1, 2]


def test_mixed_scales_and_dot_overflow():
    rows = [[1e200, 0.0], [1e200, 1e199], [0.0, 1.0], [1.0, 1.0]]
    # by hand: cos(row0, row1) = 1 / sqrt(1.01), cos(row0, row3) = 1 / sqrt(2), cos(row0, row2) = 0
    assert EmbeddingTable(np.array(rows)).nearest([0], 2, "cosine").ids.tolist() == [[1, 3]]
    assert embed.nearest_by_cosine(rows, 0, 2) == [1, 3]
    assert embed.cosine(rows[0], rows[3]) == pytest.approx(0.5 ** 0.5, rel=1e-15)
    with pytest.raises(ValueError, match="overflow"):
        EmbeddingTable(np.array(rows)).nearest([0], 2, "dot")
    with pytest.raises(ValueError, match="overflow"):
        embed.nearest_by_dot(rows, 0, 2)


def test_dot_products_that_underflow_are_refused_not_ranked_as_ties():
    # Exact dot products of row 0 with rows 1..3: 1e-400, 3e-400, 2e-400, so the right
    # list is [2, 3, 1]; float64 rounds all three to 0.0 and would list [1, 2, 3].
    rows = [[1e-200, 0.0], [1e-200, 0.0], [3e-200, 0.0], [2e-200, 0.0]]
    with pytest.raises(ValueError, match="underflow"):
        embed.nearest_by_dot(rows, 0, 3)
    with pytest.raises(ValueError, match="underflow.*token 0"):
        EmbeddingTable(np.array(rows)).nearest([0], 3, "dot")
    # Their cosines are all 1.0 (same direction): ties by the smaller id.
    assert EmbeddingTable(np.array(rows)).nearest([0], 3, "cosine").ids.tolist() == [[1, 2, 3]]


def test_a_long_query_row_is_left_out_before_its_own_product_overflows():
    # Row 0 times itself would overflow; a query by id never scores itself, so its
    # list is computable: dots with rows 1, 2, 3 are 1e200, 2e200, 0 (by hand).
    rows = np.array([[1e200, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    table = EmbeddingTable(rows)
    got = table.nearest([0, 1], 3, "dot")
    assert got.ids.tolist() == [[2, 1, 3], [0, 2, 3]]
    assert got.scores.tolist() == [[2e200, 1e200, 0.0], [1e200, 2.0, 0.0]]
    assert embed.nearest_by_dot(rows.tolist(), 0, 3) == [2, 1, 3]
    with pytest.raises(ValueError, match="overflow"):  # as a vector query it meets its own row
        table.nearest_to_vector(rows[0], 3, "dot")
