"""C08: positions are added along the time axis, never the batch axis.

E = [[10,0],[0,10],[10,10],[0,0]], P = [[1,1],[2,2],[3,3]], ids = [[0,1,2],[3,0,1]]:
out[b, t] = E[ids[b, t]] + P[t] = [[[11,1],[2,12],[13,13]],[[1,1],[12,2],[3,13]]].
The batch-axis bug gives [[[11,1],[1,11],[11,11]],[[2,2],[12,2],[2,12]]].
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

E = [[10.0, 0.0], [0.0, 10.0], [10.0, 10.0], [0.0, 0.0]]
P = [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
IDS = [[0, 1, 2], [3, 0, 1]]
RIGHT = [[[11, 1], [2, 12], [13, 13]], [[1, 1], [12, 2], [3, 13]]]
WRONG = [[[11, 1], [1, 11], [11, 11]], [[2, 2], [12, 2], [2, 12]]]


@pytest.mark.torch
def test_composer():
    torch = pytest.importorskip("torch")
    nn = pytest.importorskip("embedlab.nn")
    tok = nn.TokenEmbedding(4, 2)
    pos = nn.LearnedPositionalEmbedding(3, 2)
    with torch.no_grad():
        tok.embedding.weight.copy_(torch.tensor(E))
        pos.embedding.weight.copy_(torch.tensor(P))
    out = nn.EmbeddingComposer(tok, pos)(torch.tensor(IDS))
    assert out.tolist() == RIGHT
    assert out.tolist() != WRONG


def test_numpy_compose():
    from embedlab.measure.encode import compose
    from embedlab.engine.table import EmbeddingTable

    out = compose(EmbeddingTable(E, positions=P), IDS)
    assert out.tolist() == RIGHT
