"""positional: sinusoidal table, wavelengths, RoPE, ALiBi against outside oracles.

Oracles: the worked example in the issue (Vaswani et al. 2017, section 3.5),
loops over the ``math`` module written from the papers' formulas, the ALiBi
reference code of Press et al. 2022 (transcribed below), and RoPE's defining
properties (Su et al. 2021).
"""

from __future__ import annotations

import doctest
import math

import pytest

np = pytest.importorskip("numpy")

from embedlab.engine import positional  # noqa: E402
from embedlab.engine.positional import (  # noqa: E402
    alibi_bias, alibi_slopes, apply_rope, rope_angles, sinusoidal_table, wavelengths,
)


def test_doctests():
    assert doctest.testmod(positional).failed == 0


# -- sinusoidal --------------------------------------------------------------

def test_worked_example_d4():
    table = sinusoidal_table(6, 4)
    assert table.round(2)[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert table.round(2)[1].tolist() == [0.84, 0.54, 0.01, 1.00]
    assert table.round(2)[5].tolist() == [-0.96, 0.28, 0.05, 1.00]


def _sinusoidal_by_hand(num_positions, d_model, base=10000.0):
    rows = []
    for p in range(num_positions):
        row = []
        for i in range(d_model):
            angle = p / base ** (2 * (i // 2) / d_model)
            row.append(math.sin(angle) if i % 2 == 0 else math.cos(angle))
        rows.append(row)
    return rows


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (7, 5), (50, 16), (33, 9)])
@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_sinusoidal_matches_formula(shape, base):
    table = sinusoidal_table(*shape, base=base)
    assert table.shape == shape and table.dtype == np.float64
    np.testing.assert_allclose(table, _sinusoidal_by_hand(*shape, base=base), rtol=0, atol=1e-12)


def test_angles_are_float64_at_large_positions():
    # at p = 20000 a float32 or float16 angle is visibly off; float64 matches math.sin
    table = sinusoidal_table(20001, 2)
    assert table[20000, 0] == pytest.approx(math.sin(20000.0), abs=1e-12)


@pytest.mark.parametrize("bad", [0, -3])
def test_sinusoidal_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match=str(bad)):
        sinusoidal_table(bad, 4)
    with pytest.raises(ValueError, match=str(bad)):
        sinusoidal_table(4, bad)
    with pytest.raises(TypeError):
        sinusoidal_table(4.0, 4)
    with pytest.raises(ValueError, match="base"):
        sinusoidal_table(4, 4, base=1.0)


def test_wavelengths():
    got = wavelengths(64)
    assert got.shape == (32,)
    assert got.tolist() == pytest.approx([2 * math.pi * 10000 ** (2 * k / 64) for k in range(32)], rel=1e-12)
    # halving D keeps the shortest band (2 pi) and halves the number of bands
    half = wavelengths(32)
    assert half.shape == (16,) and half[0] == pytest.approx(2 * math.pi)
    assert half.tolist() == pytest.approx(got[0::2].tolist(), rel=1e-12)


def test_wavelength_is_the_period_of_each_pair():
    table = sinusoidal_table(200, 8, base=100.0)
    w = wavelengths(8, base=100.0)
    # column 2k is sin(2 pi p / w[k]): check it against that, pair by pair
    for k, wk in enumerate(w):
        np.testing.assert_allclose(table[:, 2 * k], np.sin(2 * math.pi * np.arange(200) / wk), atol=1e-12)


# -- rotary --------------------------------------------------------------------

def _rope_by_hand(vec, m, base, pairing):
    d = len(vec)
    out = list(vec)
    for i in range(d // 2):
        theta = m * base ** (-2 * i / d)
        j, k = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + d // 2)
        a, b = vec[j], vec[k]
        out[j] = a * math.cos(theta) - b * math.sin(theta)
        out[k] = a * math.sin(theta) + b * math.cos(theta)
    return out


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_matches_formula(pairing):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 5, 8))  # (B, H, T, Dh)
    got = apply_rope(x, base=100.0, pairing=pairing)
    for b in range(2):
        for h in range(3):
            for t in range(5):
                assert got[b, h, t].tolist() == pytest.approx(_rope_by_hand(x[b, h, t].tolist(), t, 100.0, pairing))


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_properties(pairing):
    rng = np.random.default_rng(2)
    q = rng.normal(size=(16,))
    k = rng.normal(size=(16,))
    # position 0 is the identity
    np.testing.assert_array_equal(apply_rope(q[None], positions=[0], pairing=pairing)[0], q)
    # the norm is preserved
    rotated = apply_rope(np.tile(q, (40, 1)), pairing=pairing)  # positions 0..39
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=1), np.linalg.norm(q), rtol=1e-12)

    # rope(q, m) . rope(k, n) depends only on m - n
    def score(m, n):
        return apply_rope(q[None], [m], pairing=pairing)[0] @ apply_rope(k[None], [n], pairing=pairing)[0]

    for shift in (0, 1, 7, 100):
        assert score(5 + shift, 2 + shift) == pytest.approx(score(5, 2), rel=1e-10)
    assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)


def test_half_is_interleaved_with_channels_permuted():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 8))
    order = [0, 4, 1, 5, 2, 6, 3, 7]  # half channel i and i+4 -> adjacent
    np.testing.assert_allclose(apply_rope(x, pairing="half")[:, order], apply_rope(x[:, order]), atol=1e-12)


def test_rope_angles():
    angles = rope_angles([0, 1, 3], 4, base=100.0)
    assert angles.shape == (3, 2)
    np.testing.assert_allclose(angles, [[0, 0], [1, 0.1], [3, 0.3]], rtol=1e-12)


def test_rope_keeps_float32():
    x = np.ones((3, 4), dtype=np.float32)
    assert apply_rope(x).dtype == np.float32


def test_rope_errors():
    with pytest.raises(ValueError, match="Dh=5"):
        apply_rope(np.ones((2, 5)))
    with pytest.raises(ValueError, match="head_dim=3"):
        rope_angles([0], 3)
    with pytest.raises(ValueError, match="'diagonal'"):
        apply_rope(np.ones((2, 4)), pairing="diagonal")
    with pytest.raises(ValueError, match=r"\(2,\)"):
        apply_rope(np.ones((2, 4)), positions=[0, 1, 2])
    with pytest.raises(ValueError, match="-1"):
        apply_rope(np.ones((2, 4)), positions=[-1, 0])
    with pytest.raises(ValueError):
        apply_rope(np.ones((2, 4)), positions=[0.5, 1.0])


# -- ALiBi ----------------------------------------------------------------------

def _paper_slopes(n):
    """Press et al. 2022, the reference code's get_slopes (github.com/ofirpress/attention_with_linear_biases)."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + _paper_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 40, 64, 96])
def test_alibi_slopes_match_the_paper(heads):
    assert alibi_slopes(heads).tolist() == pytest.approx(_paper_slopes(heads), rel=1e-12)


def test_alibi_bias():
    bias = alibi_bias(3, 4)
    assert bias.shape == (3, 4, 4)
    slopes = _paper_slopes(3)
    for h in range(3):
        for i in range(4):
            for j in range(4):
                if j > i:
                    assert bias[h, i, j] == -math.inf
                else:
                    assert bias[h, i, j] == pytest.approx(-slopes[h] * (i - j))


@pytest.mark.parametrize("call", [lambda: alibi_slopes(0), lambda: alibi_bias(2, 0), lambda: alibi_bias(-1, 3)])
def test_alibi_errors(call):
    with pytest.raises(ValueError, match=">= 1"):
        call()
