"""embedlab compress (issue 14, section 2): each reduction against its oracle, recall against plain NumPy.

Oracles: sentence-transformers' ``quantize_embeddings`` for the int8 and
binary codes, scikit-learn's ``PCA`` for the projection, faiss for pq, and
recall computed here by a full NumPy sort (score descending, equal scores by
the smaller id) on small tables, one of them small enough to check by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from embedlab import EmbeddingTable, compress as api_compress
from embedlab.engine import compression
from embedlab.errors import ChoiceError, SizeError
from embedlab.measure.compress import compress, default_dims


def _lists(rows: np.ndarray, queries: np.ndarray, k: int, metric: str, query_rows: np.ndarray | None = None):
    """Top-k of each query by a full float64 sort, leaving the query out; (N, k) ids."""
    R = rows.astype(np.float64)
    Q = R[queries] if query_rows is None else query_rows.astype(np.float64)
    S = Q @ R.T  # (N, V)
    if metric == "cosine":
        lengths = np.linalg.norm(Q, axis=1)[:, None] * np.linalg.norm(R, axis=1)[None, :]
        S = np.divide(S, lengths, out=np.zeros_like(S), where=lengths > 0)
    out = []
    for i, q in enumerate(queries):
        ids = np.arange(len(R))
        keep = ids != q
        order = np.lexsort((ids[keep], -S[i, keep]))
        out.append(ids[keep][order][:k])
    return np.array(out)


def _recall(found, truth):
    return np.mean([len(set(f) & set(t)) / truth.shape[1] for f, t in zip(found, truth)])


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(11)
    return rng.standard_normal((300, 16)).astype(np.float32)  # (V, D)


# -- by hand ---------------------------------------------------------------

HAND = np.array([[2.0, 1.0], [1.0, 2.0], [-1.0, 1.0], [3.0, -2.0]])
# exact dot top-1 (query left out, ties by id): 0 -> 1 (4 ties 4 with row 3: smaller id), 1 -> 0, 2 -> 1, 3 -> 0


def test_truncation_by_hand():
    # first coordinates 2, 1, -1, 3: top-1 by dot becomes 0 -> 3 (6), 1 -> 3 (3), 2 -> 1 (-1), 3 -> 0 (6)
    r = compress(EmbeddingTable(HAND), methods=["truncate"], dims=[1], k=1, queries=4)
    dot = r.rows[0].metrics["dot"]
    assert (dot.recall, dot.top1) == (0.5, 0.5)


def test_binary_by_hand():
    # signs: ++, ++, -+, +-; +-1 dot: 0 -> 1 (2), 1 -> 0 (2), 2 -> 0 (0, tied with 1: smaller id), 3 -> 0 (0 tie)
    r = compress(EmbeddingTable(HAND), methods=["binary"], k=1, queries=4)
    dot = r.rows[0].metrics["dot"]
    assert dot.recall == 0.75
    assert dot.rescored_recall == 1.0  # the shortlist (4 x 1, cut to V - 1 = 3) is every other row
    assert r.rows[0].bytes_per_token == 1.0


def test_keeping_every_dimension_loses_nothing(table):
    r = compress(EmbeddingTable(table), methods=["truncate"], dims=[16], k=5, queries=40)
    for s in r.rows[0].metrics.values():
        assert (s.recall, s.top1, s.spearman) == (1.0, 1.0, 1.0)


# -- the oracles -------------------------------------------------------------

def test_int8_and_binary_codes_are_sentence_transformers(table):
    st = pytest.importorskip("sentence_transformers.util.quantization")
    np.testing.assert_array_equal(compression.int8(table).rows.astype(np.int8),
                                  st.quantize_embeddings(table, precision="int8"))
    ranges = np.vstack([table.min(axis=0), table.max(axis=0)])
    np.testing.assert_array_equal(compression.int8_codes(table[:7], ranges),
                                  st.quantize_embeddings(table[:7], precision="int8", ranges=ranges))
    np.testing.assert_array_equal(compression.binary_codes(table), st.quantize_embeddings(table, precision="ubinary"))


def test_pca_is_scikit_learns(table):
    from sklearn.decomposition import PCA

    fit = compression.fit_pca(table, 8)
    expected = PCA(n_components=4, svd_solver="full").fit_transform(table.astype(np.float64))  # (V, 4)
    np.testing.assert_allclose(compression.pca(table, fit, 4).rows, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", ["pca", "truncate", "int8", "binary"])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_recall_matches_a_full_numpy_sort(table, method, metric):
    from sklearn.decomposition import PCA

    k, d = 5, 6
    r = compress(EmbeddingTable(table), methods=[method], dims=[d], k=k, queries=60, seed=3)
    queries = np.sort(np.random.default_rng(3).choice(300, 60, replace=False))
    reduced = {"pca": lambda: PCA(n_components=d, svd_solver="full").fit_transform(table.astype(np.float64)),
               "truncate": lambda: table[:, :d],
               "int8": lambda: compression.int8_codes(table, np.vstack([table.min(0), table.max(0)])),
               "binary": lambda: np.where(table > 0, 1.0, -1.0)}[method]()
    exact = _lists(table, queries, k, metric)
    found = _lists(reduced, queries, k, "dot" if method == "binary" else metric)
    assert r.rows[0].metrics[metric].recall == pytest.approx(_recall(found, exact), abs=1e-12)
    assert r.rows[0].metrics[metric].top1 == pytest.approx(np.mean(found[:, 0] == exact[:, 0]), abs=1e-12)


def test_pq_decodes_as_faiss_and_recalls_something(table):
    faiss = pytest.importorskip("faiss")
    reduced = compression.pq(table, 4)
    index = faiss.IndexPQ(16, 4, 8)
    index.pq.cp.seed = 0
    index.pq.cp.min_points_per_centroid = 1
    faiss.omp_set_num_threads(1)
    index.train(table)
    np.testing.assert_array_equal(reduced.rows, index.pq.decode(index.pq.compute_codes(table)))
    r = compress(EmbeddingTable(table), methods=["pq"], pq_m=4, k=5, queries=30)
    assert r.rows[0].bytes_per_token == 4 and 0.0 < r.rows[0].metrics["dot"].recall <= 1.0


# -- sizes, defaults, errors -------------------------------------------------

def test_bytes_per_token_and_table(table):
    r = compress(EmbeddingTable(table), methods=["pca", "int8", "binary"], dims=[4], k=3, queries=10)
    by = {row.method: row for row in r.rows}
    assert r.full_bytes_per_token == 16 * 4 and r.full_table_bytes == 300 * 16 * 4
    assert (by["pca"].bytes_per_token, by["int8"].bytes_per_token, by["binary"].bytes_per_token) == (16, 16, 2)
    assert by["int8"].table_bytes == 300 * 16 + by["int8"].side_bytes
    assert r.pca_rows == 300 and any("fitted on 300 rows" in n for n in r.notes)


def test_defaults_shrink_to_the_table_and_say_so():
    W = np.random.default_rng(0).standard_normal((8, 4))
    r = compress(EmbeddingTable(W), methods=["truncate"])
    assert (r.k, r.n_queries) == (7, 8) and any("shrunk" in n for n in r.notes)
    assert default_dims(4) == [2, 1] and [row.dims for row in r.rows] == [2, 1]


@pytest.mark.parametrize("kwargs, error, parameter", [
    ({"dims": [17]}, SizeError, "dims"),
    ({"dims": [0]}, SizeError, "dims"),
    ({"methods": ["pca", "zip"]}, ChoiceError, "methods"),
    ({"methods": ["int8", "int8"]}, ChoiceError, "methods"),
    ({"k": 300}, SizeError, "k"),
    ({"queries": 301}, SizeError, "queries"),
    ({"rescore": 0}, SizeError, "rescore"),
    ({"methods": ["pq"], "pq_m": 5}, SizeError, "pq_m"),
])
def test_bad_input_names_the_parameter(table, kwargs, error, parameter):
    with pytest.raises(error) as caught:
        compress(EmbeddingTable(table), **kwargs)
    assert caught.value.parameter == parameter


def test_pq_needs_256_rows():
    pytest.importorskip("faiss")
    with pytest.raises(SizeError, match="V >= 256"):
        compress(EmbeddingTable(np.eye(10)), methods=["pq"], pq_m=2)


def test_the_api_and_json(table):
    r = api_compress(EmbeddingTable(table), methods=["binary"], k=2, queries=5)
    d = r.to_dict()
    assert d["rows"][0]["metrics"]["cosine"]["rescored_recall"] is not None and d["k"] == 2


def test_side_bytes_count_in_what_a_method_costs_a_token(table):
    """On a small table pq's codebooks outweigh its codes: 300 tokens of 4 one-byte codes (1,200 bytes) beside
    4 sub-quantisers of 256 centroids of 4 floats (16,384 bytes, read from faiss's own trained IndexPQ), so a
    token costs (1,200 + 16,384) / 300 = 58.6 bytes in all, not 4: in the JSON, in the note and on the plot."""
    faiss = pytest.importorskip("faiss")
    pytest.importorskip("matplotlib")
    import json

    from embedlab.report import formats, plots

    index = faiss.IndexPQ(16, 4, 8)
    index.pq.cp.min_points_per_centroid = 1
    index.train(table)
    codebooks = faiss.vector_to_array(index.pq.centroids).nbytes  # 4 x 256 x 4 float32
    assert codebooks == 4 * 256 * 4 * 4
    V = len(table)
    r = compress(EmbeddingTable(table), methods=["pq", "int8"], pq_m=4, k=3, queries=10)
    pq, int8 = (json.loads(formats.to_json(r))["rows"][i] for i in (0, 1))
    assert (pq["bytes_per_token"], pq["side_bytes"]) == (4, codebooks)
    assert pq["total_bytes_per_token"] == pytest.approx((V * 4 + codebooks) / V)
    assert int8["total_bytes_per_token"] == pytest.approx((V * 16 + 2 * 16 * 4) / V)  # a min and a max a dimension
    assert any(n.startswith(f"pq m=4: its side data ({codebooks:,} bytes: the codebooks) outweigh its codes "
                            f"({V * 4:,} bytes): 58.61 bytes a token in all, not 4") for n in r.notes)
    fig = plots.compress_figure(r, lang="en")
    for ax in fig.axes[:2]:
        xs = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines()}
        assert xs["pq (m=4)"] == pytest.approx((V * 4 + codebooks) / V)
        assert "codebooks" in ax.get_xlabel()
