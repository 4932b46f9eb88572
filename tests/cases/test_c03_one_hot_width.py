"""C03: one-hot width inferred from the batch; out-of-range classes dropped."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.table import EmbeddingTable

T = [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]


def test_width_is_the_tables_vocabulary():
    vec = embed.one_hot(2, len(T))
    assert len(vec) == 5 and vec == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert embed.row_times_matrix(vec, T) == [5, 6] == embed.lookup(T, [2])[0]
    assert embed.lookup_via_one_hot(T, [2]) == [[5, 6]]
    assert EmbeddingTable.from_rows(T).lookup_via_one_hot([2]).tolist() == [[5.0, 6.0]]


def test_out_of_range_class_raises():
    with pytest.raises(IndexError):
        embed.one_hot(5, 5)
    with pytest.raises(IndexError):
        embed.lookup_via_one_hot(T, [5])
    with pytest.raises(IndexError):
        EmbeddingTable(np.array(T, dtype=np.float64)).lookup_via_one_hot([5])
