"""measure.procrustes.align against scipy's ``orthogonal_procrustes``, the field's own implementation.

The rotation, the scale and every aligned cosine are recomputed here from scipy's answer with NumPy, never
taken from embedlab's output.
"""

from __future__ import annotations

import numpy as np
import pytest

scipy_linalg = pytest.importorskip("scipy.linalg")

from embedlab.errors import ShapeError  # noqa: E402
from embedlab.measure.procrustes import align  # noqa: E402


def _pair(seed: int, n: int = 200, D: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, D)) + rng.normal(size=D)  # an offset: centring matters
    B = rng.normal(size=(n, D)) * 0.3 + A @ np.linalg.qr(rng.normal(size=(D, D)))[0] * 2.0
    return A, B


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("scale", [False, True])
def test_the_map_is_scipys_orthogonal_procrustes(center, scale):
    A, B = _pair(3)
    a = align(A, B, center=center, scale=scale, block=37)  # blocks that do not divide n
    A0 = A - A.mean(axis=0) if center else A
    B0 = B - B.mean(axis=0) if center else B
    R, singular_sum = scipy_linalg.orthogonal_procrustes(B0, A0)  # argmin ||B0 R - A0||
    s = singular_sum / np.sum(B0 * B0) if scale else 1.0
    np.testing.assert_allclose(a.rotation, R, atol=1e-12)
    assert a.scale == pytest.approx(s, rel=1e-12)
    aligned = s * B0 @ R + (A.mean(axis=0) if center else 0.0)
    cos = np.sum(A * aligned, axis=1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(aligned, axis=1))
    np.testing.assert_allclose(a.cosines, cos, atol=1e-12)
    np.testing.assert_allclose(a.residuals, np.linalg.norm(A - aligned, axis=1), atol=1e-12)


def test_a_rotated_copy_aligns_exactly_and_a_zero_row_has_cosine_zero():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(30, 6))
    A[4] = 0.0
    Q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    a = align(A, A @ Q.T)
    np.testing.assert_allclose(a.rotation, Q, atol=1e-12)
    expected = np.ones(30)
    expected[4] = 0.0  # the cosine of a zero-length vector is 0.0 (embed.cosine)
    np.testing.assert_allclose(a.cosines, expected, atol=1e-12)


def test_tables_of_different_shapes_are_refused():
    with pytest.raises(ShapeError, match=r"\(3, 2\) and \(3, 4\)"):
        align(np.ones((3, 2)), np.ones((3, 4)))


def test_a_few_rows_that_moved_far_do_not_tilt_the_map_for_the_rest():
    """103 rows the same in A and B, 2 moved far on their own: the map is fitted again without those 2 (the
    identity, by scipy on the 103), the 103 keep aligned cosine 1 and the 2 drift most (found by a reviewer:
    fitted on all rows, the unchanged rows came out drifted)."""
    from scipy.linalg import orthogonal_procrustes

    rng = np.random.default_rng(0)
    A = rng.standard_normal((105, 32)) * 0.01
    B = A.copy()
    B[101] += 0.5
    B[103] = rng.standard_normal(32)
    a = align(A, B)
    keep = np.setdiff1d(np.arange(105), [101, 103])
    R, _ = orthogonal_procrustes(B[keep], A[keep])
    assert a.fitted == 103 and np.allclose(a.rotation, R, atol=1e-12) and np.allclose(R, np.eye(32), atol=1e-12)
    assert np.allclose(a.cosines[keep], 1.0, atol=1e-12)
    assert set(np.argsort(a.cosines)[:2]) == {101, 103}
