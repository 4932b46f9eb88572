"""The isotropy measures of the diff: IsoScore against the ``isoscore`` package and its closed form, the partition
function ratio, the random-pair cosine and all-but-the-top recomputed here from their papers' formulas.

The ``isoscore`` package (2.0.1) takes points as rows, (points, dims): its ``IsoScore`` computes
``torch.cov(points.T)``, read before trusting it. It takes ``torch.sqrt`` of the integer dimension, which torch
computes in float32, so its scores agree with float64 arithmetic to about 1e-7, not further.
"""

from __future__ import annotations

import numpy as np
import pytest

import embedlab
from embedlab.engine.table import EmbeddingTable
from embedlab.measure.isotropy import isotropy
from full_sort import self_full_sort


def _anisotropic(seed: int, V: int = 300, D: int = 10) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(V, D)) * np.geomspace(3.0, 0.1, D) + rng.normal(size=D) * 2


@pytest.mark.torch
@pytest.mark.parametrize("seed", [0, 1])
def test_isoscore_is_the_isoscore_packages(seed):
    IsoScore = pytest.importorskip("IsoScore.IsoScore")
    X = _anisotropic(seed)
    expected = float(IsoScore.IsoScore(X))  # points as rows, dims as columns
    assert isotropy(EmbeddingTable(X), k=0).isoscore == pytest.approx(expected, rel=1e-6)  # float32 sqrt(n) there


@pytest.mark.parametrize("k, n", [(1, 6), (3, 6), (6, 6), (5, 16)])
def test_isoscore_of_equal_variance_in_k_of_n_dimensions_is_k_minus_1_over_n_minus_1(k, n):
    X = np.zeros((2 * k, n))
    X[:k, :k] = np.eye(k)
    X[k:, :k] = -np.eye(k)  # mean zero, variance 1/k on each of k axes, none on the rest
    assert isotropy(EmbeddingTable(X), k=0).isoscore == pytest.approx((k - 1) / (n - 1), abs=1e-12)


def test_partition_ratio_first_component_and_mean_row_follow_their_formulas():
    scipy_special = pytest.importorskip("scipy.special")
    X = _anisotropic(2)
    iso = isotropy(EmbeddingTable(X), k=0, block=7)
    _, U = np.linalg.eigh(X.T @ X)
    log_z = scipy_special.logsumexp(X @ np.hstack([U, -U]), axis=0)  # Mu & Viswanath's Z over eigenvectors
    assert iso.partition_ratio == pytest.approx(np.exp(log_z.min() - log_z.max()), rel=1e-9)
    pca = np.linalg.svd(X - X.mean(axis=0), compute_uv=False) ** 2
    assert iso.first_pc_share == pytest.approx(pca[0] / pca.sum(), rel=1e-9)
    assert iso.mean_norm == pytest.approx(np.linalg.norm(X.mean(axis=0)), rel=1e-12)
    assert iso.mean_norm_ratio == pytest.approx(np.linalg.norm(X.mean(axis=0)) / np.linalg.norm(X, axis=1).mean())


def test_the_random_pair_cosine_is_the_mean_over_the_stated_draws():
    X = _anisotropic(3, V=50)
    rng = np.random.default_rng(4)
    drawn = rng.integers(50, size=(500, 2))
    while (same := drawn[:, 0] == drawn[:, 1]).any():
        drawn[same] = rng.integers(50, size=(int(same.sum()), 2))
    x, y = X[drawn[:, 0]], X[drawn[:, 1]]
    expected = np.mean(np.sum(x * y, axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)))
    assert isotropy(EmbeddingTable(X), k=0, seed=4, pairs=500).mean_cosine == pytest.approx(expected, rel=1e-12)


def test_all_but_the_top_overlap_compares_full_sorts_before_and_after():
    X = _anisotropic(5, V=120)
    iso = isotropy(EmbeddingTable(X), k=5)
    centred = X - X.mean(axis=0)
    top = np.linalg.svd(centred, full_matrices=False)[2][:1].T  # (D, 1): d = max(1, D // 100)
    processed = (centred - centred @ top @ top.T).astype(np.float32)
    before, _ = self_full_sort(X, 5, "cosine")
    after, _ = self_full_sort(processed, 5, "cosine")
    expected = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(before, after)])
    assert iso.abtt_d == 1 and iso.abtt_overlap == pytest.approx(expected)


def test_the_diff_measures_both_tables_and_can_leave_them_out():
    X = _anisotropic(6, V=40)
    r = embedlab.diff(X.tolist(), (X * 2).tolist(), k=3)
    assert set(r.geometry) == {"a", "b"}
    assert r.geometry["a"].isoscore == pytest.approx(r.geometry["b"].isoscore)  # scale does not change isotropy
    assert embedlab.diff(X.tolist(), X.tolist(), geometry=False).geometry == {}
