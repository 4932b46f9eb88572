"""C06: the frequency exponent is per sin/cos pair, not per column.

sinusoidal_table(2, 4) row 1 = [sin 1, cos 1, sin 0.01, cos 0.01]; the wrong
per-column exponent gives [0.8414709848, 0.9999500004, 0.0001, 1.0].
Property: col[2i]^2 + col[2i+1]^2 == 1 within 1e-6.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

RIGHT = [0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004]
WRONG = [0.8414709848, 0.9999500004, 0.0001, 1.0]


def _check(table):
    row = np.asarray(table[1], dtype=np.float64)
    np.testing.assert_allclose(row, RIGHT, rtol=0, atol=1e-6)
    assert not np.allclose(row, WRONG, rtol=0, atol=1e-3)


def _pairs_on_unit_circle(table):
    t = np.asarray(table, dtype=np.float64)
    np.testing.assert_allclose(t[:, 0::2] ** 2 + t[:, 1::2] ** 2, 1.0, rtol=0, atol=1e-6)


def test_numpy():
    from embedlab.engine.positional import sinusoidal_table

    _check(sinusoidal_table(2, 4))
    _pairs_on_unit_circle(sinusoidal_table(64, 16))
    _pairs_on_unit_circle(sinusoidal_table(512, 384))


@pytest.mark.torch
def test_torch():
    nn = pytest.importorskip("embedlab.nn")
    _check(nn.SinusoidalPositionalEmbedding(2, 4).pe.numpy())
    _pairs_on_unit_circle(nn.SinusoidalPositionalEmbedding(512, 384).pe.numpy())
