"""C02 in the NumPy engine: a returned array shares the table's storage.

Case values: t = [[1,2],[3,4]]; editing what lookup returned leaves t unchanged;
so do nearest and stretch (which returns [[2,4],[3,4]]). The NumPy engine hands
out copies or read-only arrays (assignment raises ValueError).
"""

import numpy as np
import pytest

from embedlab.engine.table import EmbeddingTable

T = [[1.0, 2.0], [3.0, 4.0]]


def test_lookup_nearest_and_stretch_leave_the_table_alone():
    source = np.array(T)
    table = EmbeddingTable(source)
    source[0, 0] = 99.0  # the caller's array is not the table
    assert table.W_E.tolist() == T
    r = table.lookup([0])
    r[0, 0] = 99.0
    out = np.zeros((1, 2))
    table.lookup([1], out=out)[0, 0] = 99.0
    got = table.nearest([0], 1, "cosine")
    got.ids[0, 0] = 0
    got.scores[0, 0] = 99.0
    vec = table.nearest_to_vector([1.0, 2.0], 2, "dot")
    vec.scores[:] = 0.0
    assert table.W_E.tolist() == T
    assert table.stretch(0, 2.0).W_E.tolist() == [[2.0, 4.0], [3.0, 4.0]]
    assert table.W_E.tolist() == T
    assert table.nearest([0], 1, "cosine").ids.tolist() == [[1]]


def test_what_the_engine_keeps_is_read_only():
    table = EmbeddingTable(np.array(T, dtype=np.float32))
    for read_only in (table.W_E, table.W_E[1], table.norms()):
        with pytest.raises(ValueError):
            read_only[0] = 5.0
