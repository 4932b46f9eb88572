"""C01: ids outside [0, V) accepted (negative wraps, too large gives zeros or garbage)."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.table import EmbeddingTable

T = [[1, 1, 1], [2, 2, 2]]


@pytest.mark.parametrize("ids, bad", [([0, 1, -1], -1), ([2], 2)])
def test_reference_lookup_names_id_and_v(ids, bad):
    with pytest.raises(IndexError, match=rf"{bad}.*V=2"):
        embed.lookup(T, ids)


@pytest.mark.parametrize("ids, bad", [([0, 1, -1], -1), ([2], 2)])
def test_table_lookup_names_id_and_v(ids, bad):
    with pytest.raises(IndexError, match=rf"{bad}.*V=2"):
        EmbeddingTable(np.array(T, dtype=np.float32)).lookup(ids)


def test_eight_rows():
    rows = [[float(i)] * 2 for i in range(8)]
    with pytest.raises(IndexError, match="100.*V=8"):
        embed.lookup(rows, [3, 100])
    assert embed.lookup(rows, [7]) == [[7.0, 7.0]]
    table = EmbeddingTable.from_rows(rows)
    with pytest.raises(IndexError, match="100.*V=8"):
        table.lookup([3, 100])
    assert table.lookup([7]).tolist() == [[7.0, 7.0]]


@pytest.mark.torch
def test_token_embedding_names_id_and_v_and_returns_nothing():
    torch = pytest.importorskip("torch")
    from embedlab.nn import TokenEmbedding

    module = TokenEmbedding(2, 3)
    for ids, bad in (([[0, 1, -1]], -1), ([[2]], 2)):
        with pytest.raises(IndexError, match=rf"{bad}.*V=2"):
            module(torch.tensor(ids, dtype=torch.int64))
    eight = TokenEmbedding(8, 2)
    with pytest.raises(IndexError, match="100.*V=8"):
        eight(torch.tensor([[3, 100]], dtype=torch.int64))
    assert torch.equal(eight(torch.tensor([[7]], dtype=torch.int64))[0, 0], eight.embedding.weight[7])
