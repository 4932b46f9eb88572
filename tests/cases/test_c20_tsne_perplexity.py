"""C20: t-SNE perplexity not below the number of points."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from embedlab.measure import projection  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402

TABLE = EmbeddingTable(np.random.default_rng(0).normal(size=(5, 3)))


def test_perplexity_30_on_5_rows_is_refused_before_fitting(monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("t-SNE must not be fitted")

    monkeypatch.setattr(projection, "_tsne", no_fit)
    with pytest.raises(ValueError, match=r"perplexity 30.*5 rows"):
        projection.project(TABLE, range(5), "tsne", perplexity=30)


def test_perplexity_4_works():
    assert projection.project(TABLE, range(5), "tsne", perplexity=4).points.shape == (5, 2)


def test_perplexity_0_is_refused():
    with pytest.raises(ValueError, match="perplexity 0"):
        projection.project(TABLE, range(5), "tsne", perplexity=0)
