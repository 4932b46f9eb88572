"""C05: the sinusoidal table must work for odd D.

sinusoidal_table(8, 5): shape (8, 5); the last column is a sine with no cosine
partner. Expected rows from cases.md (computed independently of embedlab),
within 1e-6 (float32).
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

ROWS = {
    0: [0.0, 1.0, 0.0, 1.0, 0.0],
    1: [0.8414709848, 0.5403023059, 0.0251162229, 0.9996845379, 0.0006309573],
    3: [0.1411200081, -0.9899924966, 0.0752852930, 0.9971620353, 0.0018928709],
}


def _check(table):
    assert tuple(table.shape) == (8, 5)
    for p, row in ROWS.items():
        np.testing.assert_allclose(np.asarray(table[p], dtype=np.float64), row, rtol=0, atol=1e-6)
    # the last column is a sine: sin(p / 10000 ** (4 / 5)), no cosine partner
    np.testing.assert_allclose(np.asarray(table[:, 4], dtype=np.float64),
                               np.sin(np.arange(8) / 10000 ** 0.8), rtol=0, atol=1e-6)


def test_numpy_table():
    from embedlab.engine.positional import sinusoidal_table

    _check(sinusoidal_table(8, 5))
    _check(sinusoidal_table(8, 5).astype(np.float32))


@pytest.mark.torch
def test_torch_module():
    nn = pytest.importorskip("embedlab.nn")
    module = nn.SinusoidalPositionalEmbedding(8, 5)
    _check(module.pe.numpy())
    _check(module(8).numpy())
    assert nn.count_parameters(module) == 0


def test_wavelengths_have_a_lone_last_band():
    from embedlab.engine.positional import wavelengths

    assert len(wavelengths(5)) == 3  # pairs (0,1), (2,3) and the lone column 4
