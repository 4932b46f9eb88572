"""2-D projections: points equal scikit-learn's and umap-learn's own calls on the same rows (the
oracles); PCA fitted on a larger sample than the rows shown; parameters checked against the data
before fitting (C20 in tests/cases); the same call gives the same points in fresh processes."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.decomposition import PCA  # noqa: E402

from embedlab.measure import projection  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402

# umap compiles its kernels with numba on its first call in a process (~15 s): every test that runs it is slow.
UMAP = pytest.param("umap", marks=pytest.mark.slow)


@pytest.fixture
def table():
    rng = np.random.default_rng(3)
    return EmbeddingTable(rng.normal(size=(40, 6)), vocabulary=[f"t{i}" for i in range(40)])


def test_pca_axes_are_fitted_on_the_whole_small_table_then_the_chosen_rows_projected(table):
    # V = 40 <= PCA_FIT_SAMPLE: the axes are the whole table's, the points the chosen rows on them.
    ids = [3, 7, 11, 19, 23, 31]
    proj = projection.project(table, ids, "pca")
    expected = PCA(n_components=2, svd_solver="full").fit(table.W_E).transform(table.W_E[ids])  # the oracle
    assert np.array_equal(proj.points, expected)
    assert proj.parameters == {"fitted_rows": 40, "seed": 0}
    assert proj.labels == ["t3", "t7", "t11", "t19", "t23", "t31"]
    assert proj.ids.tolist() == ids


def test_pca_on_a_table_larger_than_its_fitting_sample_says_how_many_rows_it_was_fitted_on():
    rng = np.random.default_rng(11)
    W = rng.normal(size=(6000, 8)) * np.linspace(3.0, 0.5, 8)  # (V, D): clear leading directions
    big = EmbeddingTable(W)
    ids = [5, 17, 4999, 5999]
    proj = projection.project(big, ids, "pca", seed=3)
    # The sample, drawn here as the docs say: 5000 of the 6000 rows with the seed, plus the shown rows.
    drawn = np.random.default_rng(3).choice(6000, size=5000, replace=False)
    rows = np.union1d(drawn, ids)
    assert proj.parameters == {"fitted_rows": rows.size, "seed": 3}
    assert 5000 <= rows.size <= 5004
    assert projection.pca_fit_rows(6000, ids, 5000, 3).tolist() == rows.tolist()
    expected = PCA(n_components=2, svd_solver="full").fit(W[rows]).transform(W[ids])
    assert np.array_equal(proj.points, expected)
    # fitted on the shown rows alone, the axes differ: the larger sample is what was asked for
    alone = projection.project(big, ids, "pca", fit_sample=0)
    assert alone.parameters["fitted_rows"] == 4
    assert np.allclose(alone.points, PCA(n_components=2, svd_solver="full").fit(W[ids]).transform(W[ids]))
    assert not np.allclose(np.abs(alone.points), np.abs(proj.points))


def test_pca_points_do_not_depend_on_the_order_of_the_rows(table):
    ids = [30, 2, 17, 9, 25]
    a = projection.project(table, ids, "pca", fit_sample=12)
    b = projection.project(table, ids[::-1], "pca", fit_sample=12)
    assert np.array_equal(a.points, b.points[::-1])
    assert a.parameters == b.parameters


def test_pca_signs_follow_sklearns_rule_on_the_fitted_rows(table):
    # svd_flip(u_based_decision=False): each axis points so that its largest loading is positive;
    # then the fitted rows' coordinates are their centred rows times those axes.
    proj = projection.project(table, range(40), "pca")
    W = table.W_E
    centred = W - W.mean(axis=0)  # (V, D)
    axes = np.linalg.lstsq(centred, proj.points, rcond=None)[0]  # (D, 2): the map the points came from
    for axis in axes.T:
        assert axis[np.argmax(np.abs(axis))] > 0


def test_to_dict_is_json_and_names_the_fitted_rows(table):
    import json

    proj = projection.project(table, [1, 2, 3, 4], "pca", groups=["probe", "cosine", "dot", "sample"])
    d = json.loads(json.dumps(proj.to_dict()))
    assert d["parameters"] == {"fitted_rows": 40, "seed": 0}
    assert d["ids"] == [1, 2, 3, 4] and d["groups"] == ["probe", "cosine", "dot", "sample"]
    assert np.array_equal(np.array(d["points"]), proj.points)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_tsne_is_sklearns_tsne_with_the_metric(table, metric):
    from sklearn.manifold import TSNE

    ids = list(range(25))
    proj = projection.project(table, ids, "tsne", metric=metric, seed=4)
    oracle = TSNE(n_components=2, perplexity=8.0, metric=metric, init="pca", random_state=4).fit_transform(
        table.W_E[ids])
    assert np.array_equal(proj.points, oracle.astype(np.float64))
    assert proj.points.dtype == np.float64
    assert proj.parameters == {"metric": metric, "perplexity": 8.0, "seed": 4}


@pytest.mark.slow  # umap: see UMAP
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_umap_is_umaps_own_call_with_the_metric(table, metric):
    umap = pytest.importorskip("umap")
    ids = list(range(25))
    proj = projection.project(table, ids, "umap", metric=metric, seed=4)
    oracle = umap.UMAP(n_components=2, n_neighbors=15, metric=metric, random_state=4, n_jobs=1).fit_transform(
        table.W_E[ids])
    assert np.array_equal(proj.points, np.asarray(oracle, dtype=np.float64))
    assert proj.parameters == {"metric": metric, "n_neighbors": 15, "seed": 4}


def test_cosine_is_the_default_and_differs_from_euclidean_where_lengths_differ(table):
    # Rows scaled by very different lengths: cosine ignores the lengths, euclidean does not.
    W = table.W_E * np.geomspace(0.1, 10.0, 40)[:, None]
    scaled = EmbeddingTable(W)
    ids = list(range(30))
    default = projection.project(scaled, ids, "tsne")
    assert default.parameters["metric"] == "cosine"
    assert np.array_equal(default.points, projection.project(scaled, ids, "tsne", metric="cosine").points)
    assert not np.allclose(default.points, projection.project(scaled, ids, "tsne", metric="euclidean").points)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "pca", "metric": "cosine"}, r"metric='cosine' does not apply to method='pca': PCA keeps euclidean"),
    ({"method": "pca", "metric": "euclidean"}, "PCA keeps euclidean variance"),
    ({"method": "tsne", "metric": "manhattan"}, "unknown metric 'manhattan': expected one of cosine, euclidean"),
    ({"method": "tsne", "fit_sample": 100}, "fit_sample=100 applies to method='pca' only"),
    ({"method": "pca", "fit_sample": -1}, "fit_sample=-1 must be an int of at least 0"),
])
def test_options_that_do_not_fit_the_method(table, kwargs, match):
    with pytest.raises(ValueError, match=match):
        projection.project(table, list(range(10)), **kwargs)


@pytest.mark.parametrize("method", ["tsne", UMAP])
def test_fixed_seed_same_picture(table, method):
    if method == "umap":
        pytest.importorskip("umap")
    ids = list(range(20))
    a = projection.project(table, ids, method, seed=5)
    b = projection.project(table, ids, method, seed=5)
    assert a.points.shape == (20, 2)
    assert np.array_equal(a.points, b.points)


def test_choose_rows_groups(table):
    ids, groups = projection.choose_rows(table, "t0", k=3, sample=12, seed=1)
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
    assert len(ids) == 12  # points in all, as --sample counts them in plot and projector
    assert groups.count("sample") == 12 - len({0, *cos, *dot})
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
    expected = np.ldexp(PCA(n_components=2, svd_solver="full").fit(unit_rows).transform(unit_rows), exponent)  # (20, 2)
    assert np.array_equal(proj.points, expected)


@pytest.mark.parametrize("method", ["tsne", UMAP])
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
    pca = PCA(n_components=2, svd_solver="full").fit(table.W_E)  # every row: V = 40 <= PCA_FIT_SAMPLE
    assert np.array_equal(projection.project(table, ids, "pca").points, pca.transform(X))


def test_pca_coordinates_beyond_float64_are_an_error():
    # Every row is shorter than float64's 1.8e308, but the mean is 0.85e308 along the first
    # axis, so row 1 lies at -2.55e308 from it: a coordinate beyond float64.
    rows = np.array([[1.7e308, 0.0], [-1.7e308, 0.0], [1.7e308, 0.0], [1.7e308, 1.0]])
    with pytest.raises(ValueError, match="PCA coordinates of these rows overflow float64"):
        projection.project(EmbeddingTable(rows), range(4), "pca")


# -- the same call, the same points: drawn in two fresh processes, compared exactly ----------------

DRAW_TWICE = """
import sys
import numpy as np
from embedlab.engine.table import EmbeddingTable
from embedlab.measure import projection

small = EmbeddingTable(np.random.default_rng(3).normal(size=(40, 6)))
wide = EmbeddingTable(np.random.default_rng(4).normal(size=(700, 120)))
np.savez(sys.argv[1],
         pca=projection.project(small, range(30), "pca").points,
         pca_wide=projection.project(wide, range(0, 700, 7), "pca").points,
         pca_sampled=projection.project(wide, range(0, 700, 7), "pca", fit_sample=300, seed=9).points,
         tsne=projection.project(small, range(30), "tsne").points,
         umap=projection.project(small, range(30), "umap").points)
"""


@pytest.mark.slow
def test_the_same_call_draws_the_same_points_in_fresh_processes(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("umap")
    import embedlab

    env = {**os.environ, "PYTHONPATH": str(Path(embedlab.__file__).parents[1])}
    outs = [tmp_path / "first.npz", tmp_path / "second.npz"]
    # The two processes run side by side (each spends ~20 s compiling umap's kernels); neither sees the other.
    children = [subprocess.Popen([sys.executable, "-c", DRAW_TWICE, str(out)], env=env) for out in outs]
    try:
        assert [child.wait(timeout=600) for child in children] == [0, 0]
    finally:
        for child in children:
            child.kill()  # no-op for one that has exited
            child.wait()
    first, second = (np.load(out) for out in outs)
    assert sorted(first.files) == ["pca", "pca_sampled", "pca_wide", "tsne", "umap"]
    for key in first.files:
        assert first[key].shape[1] == 2 and np.array_equal(first[key], second[key]), key
    # The wide table is where sklearn's default would have picked its randomised solver (unseeded,
    # random_state=None): 700 rows > 500 and D = 120 too wide for "covariance_eigh" (V < 10 D).
    W = np.random.default_rng(4).normal(size=(700, 120))
    assert PCA(n_components=2).fit(W)._fit_svd_solver == "randomized"
    exact = PCA(n_components=2, svd_solver="full").fit(W).transform(W[::7])  # the oracle: exact SVD
    assert np.array_equal(first["pca_wide"], exact)


# -- degenerate rows: left out of the fit and the picture by default, named, kept on request ---------------------

ZERO, COPY, ORIGINAL, LONG = 4, 9, 2, 13


@pytest.fixture
def degenerate_table():
    """30 gaussian rows and three that wreck a projection: an all-zero row (OPT's padding row), an exact copy
    of another row, and a row 100 times longer than its neighbours."""
    rng = np.random.default_rng(5)
    W = rng.normal(size=(30, 6))  # (V, D)
    W[ZERO] = 0.0
    W[COPY] = W[ORIGINAL]
    W[LONG] *= 100.0
    return EmbeddingTable(W, vocabulary=[f"t{i}" for i in range(30)])


def degenerate_by_hand(W, ids):
    """The rows the docs say a projection leaves out, written out with NumPy: all-zero rows, a row equal to one
    asked before it, and rows longer than median + 10 MAD of every row's length (MAD at least 0.1% of the median)."""
    norms = np.sqrt((np.asarray(W, dtype=np.float64) ** 2).sum(axis=1))  # (V,)
    median = np.median(norms)
    limit = median + 10 * max(np.median(np.abs(norms - median)), 1e-3 * median)
    out = set()
    for n, i in enumerate(ids):
        if not W[i].any() or norms[i] > limit or any(np.array_equal(W[i], W[j]) for j in ids[:n]):
            out.add(i)
    return out, limit


def test_the_rule_by_hand_finds_the_three_planted_rows(degenerate_table):
    out, limit = degenerate_by_hand(degenerate_table.W_E, list(range(30)))
    assert out == {ZERO, COPY, LONG}
    found = projection.degenerate_rows(degenerate_table, range(30))
    assert (found.zero, found.copies, found.long) == ((ZERO,), ((COPY, ORIGINAL),), (LONG,))
    assert found.limit == pytest.approx(limit, rel=1e-12)


def test_tsne_leaves_degenerate_rows_out_of_the_fit_and_names_them(degenerate_table):
    from sklearn.manifold import TSNE

    W, ids = degenerate_table.W_E, list(range(30))
    out, _ = degenerate_by_hand(W, ids)
    kept = [i for i in ids if i not in out]
    proj = projection.project(degenerate_table, ids, "tsne", seed=4)
    assert proj.ids.tolist() == kept
    oracle = TSNE(n_components=2, perplexity=(len(kept) - 1) / 3, metric="cosine", init="pca",
                  random_state=4).fit_transform(W[kept])
    assert np.array_equal(proj.points, oracle.astype(np.float64))
    assert proj.degenerate.ids == tuple(sorted(out)) and not proj.kept_degenerate
    (note,) = proj.notes
    assert note.startswith("3 degenerate rows left out of the t-SNE fit and the picture")
    assert "--keep-degenerate" in note
    for named in (f"id {ZERO} 't{ZERO}' (all zeros)", f"id {COPY} 't{COPY}' (a copy of id {ORIGINAL})",
                  f"id {LONG} 't{LONG}' (longer"):
        assert named in note
    d = proj.to_dict()
    assert d["degenerate"]["zero"] == [ZERO] and d["degenerate"]["copies"] == [[COPY, ORIGINAL]]
    assert d["degenerate"]["long"] == [LONG] and d["degenerate"]["kept"] is False
    assert d["notes"] == [note]


def test_keep_degenerate_fits_every_row_asked(degenerate_table):
    from sklearn.manifold import TSNE

    W, ids = degenerate_table.W_E, list(range(30))
    proj = projection.project(degenerate_table, ids, "tsne", seed=4, keep_degenerate=True)
    assert proj.ids.tolist() == ids
    oracle = TSNE(n_components=2, perplexity=29 / 3, metric="cosine", init="pca", random_state=4).fit_transform(W)
    assert np.array_equal(proj.points, oracle.astype(np.float64))
    assert proj.kept_degenerate and proj.notes[0].startswith("3 degenerate rows kept in the t-SNE fit and the picture")


def test_pca_leaves_them_out_of_the_rows_it_is_fitted_on_too(degenerate_table):
    W = degenerate_table.W_E
    shown = [0, 1, 3, 5, 7, ZERO]  # V = 30: the axes are fitted on every row but the degenerate ones
    out, _ = degenerate_by_hand(W, list(range(30)))
    fitted = [i for i in range(30) if i not in out]
    proj = projection.project(degenerate_table, shown, "pca")
    assert proj.ids.tolist() == [0, 1, 3, 5, 7]
    expected = PCA(n_components=2, svd_solver="full").fit(W[fitted]).transform(W[[0, 1, 3, 5, 7]])
    assert np.allclose(proj.points, expected, rtol=0, atol=1e-12)
    assert proj.parameters == {"fitted_rows": 27, "seed": 0, "fit_left_out": 3}
    kept = projection.project(degenerate_table, shown, "pca", keep_degenerate=True)
    assert kept.parameters == {"fitted_rows": 30, "seed": 0}
    assert np.array_equal(kept.points, PCA(n_components=2, svd_solver="full").fit(W).transform(W[shown]))


def test_the_probe_is_never_left_out(degenerate_table):
    ids = [ZERO, 0, 1, 3, 5, 7, 8]
    proj = projection.project(degenerate_table, ids, "pca", groups=["probe"] + ["sample"] * 6)
    assert proj.ids.tolist() == ids and proj.degenerate.ids == ()
    # the probe is a copy: the row it copies is the one left out, named as the probe's copy
    ids = [COPY, ORIGINAL, 0, 1, 3, 5]
    proj = projection.project(degenerate_table, ids, "pca", groups=["probe"] + ["sample"] * 5)
    assert proj.ids.tolist() == [COPY, 0, 1, 3, 5] and proj.degenerate.copies == ((ORIGINAL, COPY),)


def test_unit_rows_have_no_long_outlier_by_rounding():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(200, 8))
    W /= np.linalg.norm(W, axis=1, keepdims=True)  # every length 1, up to rounding (MAD ~1e-17)
    assert projection.degenerate_rows(EmbeddingTable(W), range(200)).ids == ()
    W[7] *= 1.05  # 5% longer than every other row: beyond median + 10 x (0.1% of the median)
    assert projection.degenerate_rows(EmbeddingTable(W), range(200)).long == (7,)


def test_too_few_rows_left_says_why_and_how_to_keep_them(degenerate_table):
    with pytest.raises(ValueError, match=r"needs at least 4 points, got 3: 1 degenerate row .* left out; "
                                         r"keep_degenerate=True keeps them"):
        projection.project(degenerate_table, [0, 1, 3, ZERO], "tsne", perplexity=1.0)
