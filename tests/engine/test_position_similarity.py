"""engine.position_similarity: adjacent cosine, mean cosine by offset, the cosine matrix.

Oracles: hand-checkable tables, the closed form for the sinusoidal table
(Vaswani et al. 2017, section 3.5): sin a sin b + cos a cos b = cos(a - b), so
the cosine of rows p and p + k is (2 / D) * sum_i cos(k w_i), the same for
every p (even D), and NumPy's own normalised product for random rows.
"""

from __future__ import annotations

import doctest
import math

import pytest

np = pytest.importorskip("numpy")

from embedlab.engine import position_similarity  # noqa: E402
from embedlab.engine.position_similarity import adjacent_cosine, cosine_matrix, mean_cosine_by_offset  # noqa: E402
from embedlab.engine.positional import sinusoidal_table  # noqa: E402


def test_doctests():
    assert doctest.testmod(position_similarity).failed == 0


def test_hand_table():
    table = [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.0]]
    r = 1 / math.sqrt(2)
    assert adjacent_cosine(table).tolist() == pytest.approx([r, r, 0.0])
    # offset 2: rows (0,2) cos 0, rows (1,3) cos -r; offset 3: rows (0,3) cos -1
    assert mean_cosine_by_offset(table, [1, 2, 3]).tolist() == pytest.approx([2 * r / 3, -r / 2, -1.0])


def test_zero_rows_have_cosine_zero():
    table = [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    with np.errstate(all="raise"):
        assert adjacent_cosine(table).tolist() == [0.0, 0.0]
        assert cosine_matrix(table)[0].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("D", [4, 16, 64, 384])
def test_sinusoidal_closed_form(D):
    T_max = 300
    omegas = [10000.0 ** (-2 * i / D) for i in range(D // 2)]
    offsets = [1, 2, 5, 32, 128]
    expected = [2 / D * sum(math.cos(k * w) for w in omegas) for k in offsets]
    got = mean_cosine_by_offset(sinusoidal_table(T_max, D), offsets)
    assert got.tolist() == pytest.approx(expected, abs=1e-12)
    # and the same at every p
    assert np.ptp(adjacent_cosine(sinusoidal_table(T_max, D))) < 1e-12


def test_cosine_matrix():
    table = np.random.default_rng(0).normal(size=(6, 3))
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(cosine_matrix(table), unit @ unit.T, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e-200, 1e200])
def test_cosines_do_not_depend_on_the_table_scale(scale):
    # By hand: rows [1, 0], [1, 1], [0, 2] have cosines 1/sqrt(2) (0-1), 0 (0-2), 1/sqrt(2) (1-2);
    # scaled by 1e-200 or 1e200 their lengths' squares leave float64, the cosines do not change.
    P = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]) * scale
    h = math.sqrt(0.5)
    assert cosine_matrix(P) == pytest.approx(np.array([[1, h, 0], [h, 1, h], [0, h, 1]]), abs=1e-15)


def test_errors():
    with pytest.raises(ValueError, match=r"offset 4 .*T_max = 4"):
        mean_cosine_by_offset(np.ones((4, 2)), [1, 4])
    with pytest.raises(ValueError, match="offset 0"):
        mean_cosine_by_offset(np.ones((4, 2)), [0])
    with pytest.raises(ValueError, match="T_max >= 2"):
        adjacent_cosine(np.ones((1, 2)))
    with pytest.raises(ValueError, match="T_max >= 2"):
        adjacent_cosine(np.ones(5))


def test_offsets_are_checked_before_any_is_measured():
    with pytest.raises(ValueError, match=r"offset True"):
        mean_cosine_by_offset(np.ones((4, 2)), [1, True])
    with pytest.raises(ValueError, match=r"offset 2.5"):
        mean_cosine_by_offset(np.ones((4, 2)), [2.5])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("measure", [adjacent_cosine, cosine_matrix, lambda t: mean_cosine_by_offset(t, [1, 2])])
def test_a_non_finite_row_is_refused_naming_it(measure, bad):
    table = np.eye(4)  # (T_max, D) = (4, 4)
    table[2, 1] = bad
    with pytest.raises(ValueError, match=r"row 2, column 1"):
        measure(table)
