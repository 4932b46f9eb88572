"""position_similarity: adjacent cosine, mean cosine by offset, the smoothness verdict.

Oracles: hand-checkable tables, and the closed form for the sinusoidal table
(Vaswani et al. 2017, section 3.5): sin a sin b + cos a cos b = cos(a - b), so
the cosine of rows p and p + k is (2 / D) * sum_i cos(k w_i), the same for
every p (even D).
"""

from __future__ import annotations

import doctest
import math

import pytest

np = pytest.importorskip("numpy")

from embedlab.measure import positions as position_similarity  # noqa: E402
from embedlab.errors import SourceError  # noqa: E402
from embedlab.measure.positions import (  # noqa: E402
    SMOOTH_ADJACENT, adjacent_cosine, compare_positions, compare_table_positions, cosine_matrix,
    mean_cosine_by_offset, power_of_two_offsets,
)
from embedlab.engine.positional import sinusoidal_table  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402


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


def test_power_of_two_offsets():
    assert power_of_two_offsets(512) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert power_of_two_offsets(2) == [1]
    assert power_of_two_offsets(5) == [1, 2, 4]


def test_errors():
    with pytest.raises(ValueError, match=r"offset 4 .*T_max = 4"):
        mean_cosine_by_offset(np.ones((4, 2)), [1, 4])
    with pytest.raises(ValueError, match="offset 0"):
        mean_cosine_by_offset(np.ones((4, 2)), [0])
    with pytest.raises(ValueError, match="T_max >= 2"):
        adjacent_cosine(np.ones((1, 2)))
    with pytest.raises(ValueError, match="T_max >= 2"):
        adjacent_cosine(np.ones(5))


def test_sinusoidal_is_smooth_and_random_is_not():
    smooth = compare_positions(sinusoidal_table(256, 64))
    assert smooth.verdict.smooth
    assert smooth.learned.by_offset == pytest.approx(smooth.sinusoidal.by_offset)
    rough = compare_positions(np.random.default_rng(0).normal(0, 0.02, size=(256, 64)))
    assert not rough.verdict.smooth
    assert abs(rough.learned.adjacent_mean) < 3 * rough.verdict.random_spread
    assert rough.verdict.random_spread == pytest.approx(1 / 8)
    assert rough.verdict.threshold == SMOOTH_ADJACENT


def test_a_smooth_table_that_does_not_decay_is_not_smooth():
    # every row the same direction: adjacent cosine 1, but no fall with distance
    result = compare_positions(np.ones((16, 4)))
    assert result.verdict.adjacent_mean == pytest.approx(1.0)
    assert not result.verdict.decays and not result.verdict.smooth


def test_windows_cover_the_table():
    result = compare_positions(sinusoidal_table(101, 8), windows=4)
    windows = result.learned.windows
    assert windows[0][0] == 0 and windows[-1][1] == 100
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:]))
    assert len(result.learned.adjacent) == 100
    assert result.to_dict()["learned"]["offsets"] == [1, 2, 4, 8, 16, 32, 64]


def test_table_without_positions():
    with pytest.raises(SourceError, match="no position table"):
        compare_table_positions(EmbeddingTable(np.eye(3)))
    table = EmbeddingTable(np.eye(3), positions=sinusoidal_table(8, 3))
    assert compare_table_positions(table).T_max == 8


@pytest.mark.parametrize("scale", [1.0, 1e-200, 1e200])
def test_cosines_do_not_depend_on_the_table_scale(scale):
    # By hand: rows [1, 0], [1, 1], [0, 2] have cosines 1/sqrt(2) (0-1), 0 (0-2), 1/sqrt(2) (1-2);
    # scaled by 1e-200 or 1e200 their lengths' squares leave float64, the cosines do not change.
    P = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]) * scale
    h = math.sqrt(0.5)
    assert position_similarity.cosine_matrix(P) == pytest.approx(np.array([[1, h, 0], [h, 1, h], [0, h, 1]]),
                                                                 abs=1e-15)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("measure", [
    adjacent_cosine, cosine_matrix, lambda t: mean_cosine_by_offset(t, [1, 2]), compare_positions,
    lambda t: position_similarity.table_similarity(t, [1, 2]),
])
def test_a_non_finite_row_is_refused_naming_it(measure, bad):
    table = np.eye(4)  # (T_max, D) = (4, 4)
    table[2, 1] = bad
    with pytest.raises(ValueError, match=r"row 2, column 1"):
        measure(table)
