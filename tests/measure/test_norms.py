"""Row-norm distribution: counts and the longest rows, checked by hand."""

import numpy as np
import pytest

from embedlab.measure.norms import norm_distribution
from embedlab.engine.table import EmbeddingTable


def test_longest_rows_and_counts():
    # norms: 5, 1, 5, 0, 13 -> longest 13 (id 4), then the tie at 5 by smaller id: 0, 2
    W = np.array([[3.0, 4.0], [1.0, 0.0], [4.0, 3.0], [0.0, 0.0], [5.0, 12.0]])
    dist = norm_distribution(EmbeddingTable(W, vocabulary=list("abcde")), top=3, bins=13)
    assert dist.longest_ids == [4, 0, 2]
    assert dist.longest_norms == [13.0, 5.0, 5.0]
    assert dist.longest_labels == ["e", "a", "c"]
    assert dist.counts.sum() == 5 and dist.edges[0] == 0.0 and dist.edges[-1] == 13.0
    assert dist.counts[5] == 2  # both rows of norm 5 in the bin [5, 6)


def test_bad_top():
    with pytest.raises(ValueError, match="top=0"):
        norm_distribution(EmbeddingTable(np.eye(2)), top=0)
    with pytest.raises(ValueError, match="top=3"):
        norm_distribution(EmbeddingTable(np.eye(2)), top=3)
