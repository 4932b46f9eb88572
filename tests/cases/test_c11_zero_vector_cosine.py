"""C11: zero vectors give NaN cosines that corrupt a ranking."""

import warnings

import numpy as np

from embedlab import embed
from embedlab.engine.table import EmbeddingTable

T = [[1, 0], [0, 0], [0, 1], [0, 0]]


def test_reference_cosine_of_zero_vectors():
    assert embed.cosine([0, 0], [1, 0]) == 0.0
    assert embed.cosine([0, 0], [0, 0]) == 0.0


def test_engine_scores_and_order_without_warnings():
    table = EmbeddingTable(np.array(T, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = table.nearest_to_vector([1, 0], 4, "cosine")
        zero = table.nearest_to_vector([0, 0], 4, "cosine")
    assert got.ids.tolist() == [[0, 1, 2, 3]]
    assert got.scores.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert zero.scores.tolist() == [[0.0, 0.0, 0.0, 0.0]]
    assert not np.isnan(table.nearest([1, 3], 3, "cosine").scores).any()
