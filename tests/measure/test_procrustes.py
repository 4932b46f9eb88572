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
