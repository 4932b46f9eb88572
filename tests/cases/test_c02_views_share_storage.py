"""C02: a returned row shares the table's storage; a caller's edit corrupts the table."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.table import EmbeddingTable


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


def test_a_read_only_view_of_a_writable_array_is_copied():
    # The view cannot be written, but its owner can: the table must not follow it.
    owner = np.array([[1.0, 2.0], [3.0, 4.0]])
    view = owner.view()
    view.flags.writeable = False
    table = EmbeddingTable(view)
    owner[0, 0] = 99.0
    assert table.lookup([0]).tolist() == [[1.0, 2.0]]
    assert not np.shares_memory(table.W_E, owner)


def test_frozen_memory_is_kept_without_a_copy():
    # Read-only all the way down (bytes beneath, or a read-only owner): nobody can
    # write it, so a checkpoint-sized table is not copied.
    data = np.array([[1.0, 2.0], [3.0, 4.0]]).tobytes()
    frozen = np.frombuffer(data, dtype=np.float64).reshape(2, 2)
    assert EmbeddingTable(frozen).W_E is frozen
    owner = np.array([[1.0, 2.0], [3.0, 4.0]])
    owner.flags.writeable = False
    assert EmbeddingTable(owner).W_E is owner
