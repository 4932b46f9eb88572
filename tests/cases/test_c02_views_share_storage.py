"""C02: a returned row shares the table's storage; a caller's edit corrupts the table."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.table import EmbeddingTable


def test_reference_hands_out_copies():
    t = [[1, 2], [3, 4]]
    r = embed.lookup(t, [0])
    r[0][0] = 99
    assert t == [[1, 2], [3, 4]]
    embed.nearest_by_cosine(t, 0, 1)
    assert t == [[1, 2], [3, 4]]
    assert embed.stretch(t, 0, 2.0) == [[2, 4], [3, 4]]
    assert t == [[1, 2], [3, 4]]


def test_numpy_engine_hands_out_copies_or_read_only_arrays():
    table = EmbeddingTable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    r = table.lookup([0])
    r[0, 0] = 99.0
    assert table.W_E.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    for read_only in (table.W_E, table.W_E[0], table.norms()):
        with pytest.raises(ValueError):
            read_only[0] = 5.0
    stretched = table.stretch(0, 2.0)
    assert stretched.W_E.tolist() == [[2.0, 4.0], [3.0, 4.0]]
    assert table.W_E.tolist() == [[1.0, 2.0], [3.0, 4.0]]
