"""C18: ALiBi slopes for head counts that are not a power of two (Press et al. 2022).

alibi_slopes(8) == [1/2, 1/4, ..., 1/256]; alibi_slopes(6) ==
[0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]; with 8 heads, head 0,
query 3, key 0 the bias is -1.5.
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

SLOPES_8 = [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
SLOPES_6 = [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]


def test_numpy():
    from embedlab.engine.positional import alibi_bias, alibi_slopes

    assert alibi_slopes(8).tolist() == SLOPES_8
    assert alibi_slopes(6).tolist() == SLOPES_6
    assert alibi_bias(8, 4)[0, 3, 0] == -1.5


@pytest.mark.torch
def test_torch():
    nn = pytest.importorskip("embedlab.nn")
    assert nn.ALiBi(8).slopes.tolist() == SLOPES_8
    assert nn.ALiBi(6).slopes.tolist() == SLOPES_6
    assert nn.ALiBi(8)(4)[0, 3, 0].item() == -1.5
