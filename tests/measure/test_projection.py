"""2-D projections: points equal scikit-learn's on the chosen rows; parameters
checked against the data before fitting (C20 in tests/cases)."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.decomposition import PCA  # noqa: E402

from embedlab.measure import projection  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402


@pytest.fixture
def table():
    rng = np.random.default_rng(3)
    return EmbeddingTable(rng.normal(size=(40, 6)), vocabulary=[f"t{i}" for i in range(40)])


def test_pca_points_equal_sklearn_on_the_chosen_rows(table):
    ids = [3, 7, 11, 19, 23, 31]
    proj = projection.project(table, ids, "pca")
    expected = PCA(n_components=2).fit_transform(table.W_E[ids])
    assert np.allclose(proj.points, expected)
    assert proj.labels == ["t3", "t7", "t11", "t19", "t23", "t31"]
    assert proj.ids.tolist() == ids


@pytest.mark.parametrize("method", ["tsne", "umap"])
def test_fixed_seed_same_picture(table, method):
    if method == "umap":
        pytest.importorskip("umap")
    ids = list(range(20))
    a = projection.project(table, ids, method, seed=5)
    b = projection.project(table, ids, method, seed=5)
    assert a.points.shape == (20, 2)
    assert np.array_equal(a.points, b.points)


def test_choose_rows_groups(table):
    ids, groups = projection.choose_rows(table, "t0", k=3, sample=5, seed=1)
    assert ids[0] == 0 and groups[0] == "probe"
    cos = table.nearest([0], 3, "cosine").ids[0].tolist()
    dot = table.nearest([0], 3, "dot").ids[0].tolist()
    for i, g in zip(ids.tolist(), groups):
        if g == "both":
            assert i in cos and i in dot
        elif g == "cosine":
            assert i in cos and i not in dot
        elif g == "dot":
            assert i in dot and i not in cos
    assert groups.count("sample") == 5
    assert len(set(ids.tolist())) == len(ids)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "lle"}, "unknown projection method 'lle'"),
    ({"method": "umap", "n_neighbors": 40}, "40.*39|39.*40"),
    ({"method": "pca", "ids": [1, 1, 2, 3]}, "repeat"),
    ({"method": "pca", "ids": [1, 2]}, "at least 3 points, got 2"),
])
def test_bad_input(table, kwargs, match):
    ids = kwargs.pop("ids", list(range(39)))
    with pytest.raises(ValueError, match=match):
        projection.project(table, ids, **kwargs)


def test_unknown_token(table):
    with pytest.raises(KeyError, match="'zz'"):
        projection.project(table, ["t1", "t2", "zz"], "pca")


@pytest.mark.parametrize("method, n, D, reason", [
    ("pca", 10, 1, "a 2-D projection by pca needs D >= 2, got D=1"),
    ("tsne", 10, 1, "a 2-D projection by tsne needs D >= 2, got D=1"),
    ("umap", 10, 1, None),  # UMAP lays out a neighbour graph, which D = 1 has too
    ("pca", 2, 5, "a 2-D projection by pca needs at least 3 points, got 2"),
    ("tsne", 3, 5, "a 2-D projection by tsne needs at least 4 points, got 3"),
    ("pca", 3, 2, None),
])
def test_unfit_reason(method, n, D, reason):
    assert projection.unfit_reason(method, n, D) == reason


def test_a_1_wide_table_is_refused_before_sklearn_sees_it():
    narrow = EmbeddingTable(np.arange(10.0).reshape(10, 1))
    with pytest.raises(ValueError, match=r"^a 2-D projection by pca needs D >= 2, got D=1$"):
        projection.project(narrow, range(10), "pca")


# -- huge and tiny entries: divided by a power of two before fitting (warnings are errors here) --------

@pytest.fixture
def unit_rows():
    """20 rows whose largest |entry| lies in [0.5, 1): the power of two that scales them is 2**0."""
    W = np.random.default_rng(7).uniform(-1, 1, size=(20, 6))
    return W / (np.abs(W).max() * 1.25)  # largest entry 0.8


@pytest.mark.parametrize("exponent", [700, -700, 400, -400])
def test_pca_of_huge_or_tiny_rows_is_the_rows_transform_at_their_own_scale(unit_rows, exponent):
    rows = np.ldexp(unit_rows, exponent)  # exact: 0.8 * 2**exponent at most
    proj = projection.project(EmbeddingTable(rows), range(20), "pca")
    expected = np.ldexp(PCA(n_components=2).fit_transform(unit_rows), exponent)  # (20, 2)
    assert np.array_equal(proj.points, expected)


@pytest.mark.parametrize("method", ["tsne", "umap"])
@pytest.mark.parametrize("exponent", [700, -700, 60, -60])
def test_tsne_and_umap_of_huge_or_tiny_rows_draw_the_unit_rows_picture(unit_rows, method, exponent):
    if method == "umap":
        pytest.importorskip("umap")
    ids = list(range(20))
    scaled = projection.project(EmbeddingTable(np.ldexp(unit_rows, exponent)), ids, method, seed=2)
    assert np.array_equal(scaled.points, projection.project(EmbeddingTable(unit_rows), ids, method, seed=2).points)


def test_entries_of_1e200_and_1e_minus_200_project_without_warnings():
    W = np.random.default_rng(5).normal(size=(30, 8))
    for factor in (1e200, 1e-200):
        for method in ("pca", "tsne"):
            points = projection.project(EmbeddingTable(W * factor), range(30), method).points
            assert np.isfinite(points).all()


def test_ordinary_rows_are_not_rescaled(table):
    ids = list(range(12))
    X = table.W_E[ids]  # largest entry about 2.5
    scaled, exponent = projection._unit_scale(X, *projection.SAFE_RANGE["pca"])
    assert scaled is X and exponent == 0
    assert np.array_equal(projection.project(table, ids, "pca").points, PCA(n_components=2).fit_transform(X))


def test_pca_coordinates_beyond_float64_are_an_error():
    # Every row is shorter than float64's 1.8e308, but the mean is 0.85e308 along the first
    # axis, so row 1 lies at -2.55e308 from it: a coordinate beyond float64.
    rows = np.array([[1.7e308, 0.0], [-1.7e308, 0.0], [1.7e308, 0.0], [1.7e308, 1.0]])
    with pytest.raises(ValueError, match="PCA coordinates of these rows overflow float64"):
        projection.project(EmbeddingTable(rows), range(4), "pca")
