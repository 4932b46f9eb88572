"""EmbeddingTable.lookup: ids checked once, rows copied straight into the result."""

from __future__ import annotations

import numpy as np
import pytest

from embedlab import embed
from embedlab.errors import ShapeError, TokenIdError
from embedlab.engine.table import EmbeddingTable


def test_a_batch_of_ids_gives_the_reference_rows():
    rows = embed.make_table(50, 6, 3)
    table = EmbeddingTable.from_rows(rows)
    ids = np.array([[0, 49, 7], [7, 7, 1]])
    got = table.lookup(ids)
    assert got.shape == (2, 3, 6)
    assert got.reshape(-1, 6).tolist() == embed.lookup(rows, ids.ravel().tolist())


def test_out_is_filled_and_returned():
    table = EmbeddingTable(np.arange(12, dtype=np.float32).reshape(4, 3))
    out = np.full((2, 2, 3), -1.0, dtype=np.float32)
    got = table.lookup([[3, 0], [1, 1]], out=out)
    assert got is out
    assert out.tolist() == [[[9, 10, 11], [0, 1, 2]], [[3, 4, 5], [3, 4, 5]]]


def test_a_bad_id_writes_nothing():
    table = EmbeddingTable(np.ones((4, 2), dtype=np.float32))
    out = np.zeros((3, 2), dtype=np.float32)
    with pytest.raises(TokenIdError, match="token id 4 is out of range for V=4"):
        table.lookup([0, 4, 1], out=out)
    with pytest.raises(TokenIdError, match="token id -1"):
        table.lookup([0, -1, 1], out=out)
    for bad in (np.array([0, -1, 1]), np.array([0, 4, 1]), np.array([0, -2**63, 1]), np.array([4], dtype=np.int32)):
        with pytest.raises(TokenIdError, match=f"token id {bad.min() if bad.min() < 0 else bad.max()} is out"):
            table.lookup(bad, out=out)
    assert out.tolist() == [[0.0, 0.0]] * 3


@pytest.mark.parametrize("out", [np.zeros((2, 3), np.float32), np.zeros((2, 2), np.float64),
                                 np.zeros((2, 4), np.float32)[:, :2]])
def test_an_out_that_does_not_fit_is_refused(out):
    table = EmbeddingTable(np.ones((4, 2), dtype=np.float32))
    with pytest.raises(ShapeError, match="out must be a C-contiguous float32 array of shape"):
        table.lookup([0, 1], out=out)


def test_a_column_major_table_is_stored_row_major():
    W = np.asfortranarray(np.arange(20, dtype=np.float32).reshape(5, 4))
    W.flags.writeable = False
    table = EmbeddingTable(W)
    assert table.W_E.flags.c_contiguous and not table.W_E.flags.writeable
    assert table.W_E.tolist() == W.tolist()
    assert table.lookup([4, 0]).tolist() == [W[4].tolist(), W[0].tolist()]


def test_a_read_only_row_major_table_is_not_copied():
    W = np.ones((3, 2))
    W.flags.writeable = False
    assert EmbeddingTable(W).W_E is W
