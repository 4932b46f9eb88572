"""C10: a sum of squares overflows float16."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.lengths import rms
from embedlab.engine.table import EmbeddingTable


def test_rms_of_float16_accumulates_wide():
    assert float(rms(np.array([300, 300, 300, 300], dtype=np.float16))) == 300.0
    assert float(rms(np.array([1000, -1000, 1000, -1000], dtype=np.float16))) == 1000.0


def test_norms_of_a_float16_table():
    table = EmbeddingTable(np.array([[300, 300, 300, 300], [1000, -1000, 1000, -1000]], dtype=np.float16))
    assert table.norms().tolist() == [600.0, 2000.0]


def test_reference_values():
    assert embed.rms([3, 4]) == 3.5355339059327378
    assert embed.rms([1, 2, 3]) == 2.160246899469287
    assert embed.rms([]) == 0.0


# The same fault one size up: squares of float64 entries beyond ~1e154 overflow
# and below ~1e-154 underflow. Right values by hand: rms([c, c]) == c, and
# |[3c, 4c]| == 5c.

def test_reference_lengths_at_the_edges_of_float64():
    assert embed.rms([1e200, 1e200]) == 1e200
    assert embed.rms([1e-200]) == 1e-200
    assert embed.norm([0.0, -1e200]) == 1e200
    assert embed.norm([3e-200, 4e-200]) == pytest.approx(5e-200, rel=1e-15)
    assert embed.norm([3e200, 4e200]) == pytest.approx(5e200, rel=1e-15)
    assert embed.norm([1e-200, 1e200]) == 1e200


def test_numpy_lengths_at_the_edges_of_float64():
    assert rms(np.array([[1e200, 1e200], [1e-200, 1e-200], [3.0, 4.0]])).tolist() == pytest.approx(
        [1e200, 1e-200, 3.5355339059327378], rel=1e-15)
    table = EmbeddingTable(np.array([[3e200, 4e200], [3e-200, 4e-200]]))
    assert table.norms().tolist() == pytest.approx([5e200, 5e-200], rel=1e-15)


def test_sqrt_d_scaling_that_overflows_float32_is_refused():
    table = EmbeddingTable(np.array([[3e38, 0.0], [1.0, 1.0]], dtype=np.float32))
    with pytest.raises(ValueError, match=r"overflows float32.*3e\+38"):
        table.scaled_lookup([0])
    assert table.scaled_lookup([1]).tolist() == [[pytest.approx(2 ** 0.5)] * 2]
    with pytest.raises(ValueError, match="overflows to infinity"):
        embed.scaled_lookup([[1e308, 1.0]], [0], 4)


def test_numpy_rms_of_one_vector_at_the_edges():
    assert float(rms(np.array([1e200, 1e200]))) == 1e200
    assert float(rms(np.array([1e-200]))) == 1e-200


def test_rows_whose_length_overflows_float64_are_refused():
    # Entries 1.5e308 are finite, but sqrt(2) * 1.5e308 is beyond float64's 1.8e308.
    with pytest.raises(ValueError, match=r"row 1 is too long for float64.*1\.5e\+308"):
        EmbeddingTable(np.array([[1.0, 0.0], [1.5e308, 1.5e308]]))
    assert float(rms(np.array([1.7e308] * 4))) == 1.7e308  # the rms itself is in range


def test_logits_that_overflow_name_the_token():
    table = EmbeddingTable(np.array([[1.0, 0.0], [1e200, 0.0]]))
    with pytest.raises(ValueError, match="logits overflow float64: token 1"):
        table.logits([1e200, 0.0])
    assert table.logits([1.0, 0.0]).tolist() == [1.0, 1e200]


def test_rows_and_queries_whose_length_is_subnormal_are_refused():
    # 5e-324 is the smallest float64; a length this small has one significant bit,
    # so a cosine divided by it would be far off (0.9487 came out as 1.0).
    with pytest.raises(ValueError, match=r"row 1 is too short for float64.*subnormal"):
        EmbeddingTable(np.array([[1.0, 0.0], [5e-324, 1e-323]]))
    ok = EmbeddingTable(np.array([[1.0, 1e-320], [0.0, 1.0]]))  # a subnormal entry in a normal row is fine
    assert ok.nearest([0], 1, "cosine").ids.tolist() == [[1]]
    with pytest.raises(ValueError, match="query vector 0 is too short for float64"):
        ok.nearest_to_vector([5e-324, 1e-323], 1, "cosine")


def test_a_table_of_one_row_has_no_neighbour():
    with pytest.raises(ValueError, match="one row has no other token"):
        EmbeddingTable(np.array([[1.0, 2.0]])).nearest([0], 1, "cosine")
