"""measure.positions: a learned table against the sinusoidal one, the smoothness verdict, the figure's maps.

The array functions it measures with (adjacent cosine, mean cosine by offset)
are tested in tests/engine/test_position_similarity.py. Oracles: the sinusoidal
table, smooth by construction, and independent random rows, which are not.
"""

from __future__ import annotations

import doctest
import math

import pytest

np = pytest.importorskip("numpy")

from embedlab.measure import positions  # noqa: E402
from embedlab.errors import SourceError  # noqa: E402
from embedlab.measure.positions import (  # noqa: E402
    SMOOTH_ADJACENT, compare_positions, compare_table_positions, power_of_two_offsets,
)
from embedlab.engine.positional import sinusoidal_table  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402


def test_doctests():
    assert doctest.testmod(positions).failed == 0


def test_power_of_two_offsets():
    assert power_of_two_offsets(512) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert power_of_two_offsets(2) == [1]
    assert power_of_two_offsets(5) == [1, 2, 4]


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


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("measure", [
    compare_positions, lambda t: positions.table_similarity(t, [1, 2]),
])
def test_a_non_finite_row_is_refused_naming_it(measure, bad):
    table = np.eye(4)  # (T_max, D) = (4, 4)
    table[2, 1] = bad
    with pytest.raises(ValueError, match=r"row 2, column 1"):
        measure(table)
