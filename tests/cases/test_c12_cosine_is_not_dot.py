"""C12: "cosine" neighbours computed as raw dot, or divided by one norm."""

import numpy as np
import pytest

from embedlab import embed
from embedlab.engine.table import EmbeddingTable

T = [[1, 0], [10, 1], [0, 1]]


def test_vector_queries():
    table = EmbeddingTable(np.array(T, dtype=np.float64))
    cos = table.nearest_to_vector([1, 0], 3, "cosine")
    dot = table.nearest_to_vector([1, 0], 3, "dot")
    assert cos.ids.tolist() == [[0, 1, 2]]
    assert cos.scores[0] == pytest.approx([1, 0.9950371902, 0], abs=1e-10)
    assert dot.ids.tolist() == [[1, 0, 2]]
    assert dot.scores[0].tolist() == [10, 1, 0]
    assert table.nearest_to_vector([0, 1], 3, "dot").ids.tolist() == [[1, 2, 0]]


def test_after_stretch():
    table = EmbeddingTable(np.array(T, dtype=np.float64)).stretch(2, 20)
    cos = table.nearest_to_vector([0, 1], 3, "cosine")
    dot = table.nearest_to_vector([0, 1], 3, "dot")
    assert cos.ids.tolist() == [[2, 1, 0]]
    assert cos.scores[0] == pytest.approx([1, 0.0995037190, 0], abs=1e-10)
    assert dot.ids.tolist() == [[2, 1, 0]]
    assert dot.scores[0].tolist() == [20, 1, 0]
    assert embed.stretch(T, 2, 20) == [[1, 0], [10, 1], [0, 20]]


def test_cosine_range():
    assert embed.cosine([2, 0], [3, 0]) == 1.0
    table = EmbeddingTable(np.random.default_rng(0).normal(size=(50, 7)))
    scores = table.nearest(list(range(50)), 49, "cosine").scores
    assert scores.min() >= -1.0 and scores.max() <= 1.0
