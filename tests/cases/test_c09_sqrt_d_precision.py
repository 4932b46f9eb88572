"""C09: sqrt(D) must not be rounded to the tensor's low-precision dtype before use.

A float32 token table of ones, D = 3072, scaled by sqrt(D): every element is
55.42562484741211 (not 55.5 as bf16 rounding gives, not 55.4375 as fp16
gives); D = 768: 27.712812423706055. math.sqrt(3072) == 55.42562584220407.
"""

from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")

EXPECTED = {3072: 55.42562484741211, 768: 27.712812423706055}


def test_stdlib_value():
    assert math.sqrt(3072) == 55.42562584220407


@pytest.mark.torch
@pytest.mark.parametrize("dim", sorted(EXPECTED))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_composer_scaling(dim, dtype):
    torch = pytest.importorskip("torch")
    nn = pytest.importorskip("embedlab.nn")
    tok = nn.TokenEmbedding(2, dim)
    pos = nn.LearnedPositionalEmbedding(3, dim)
    with torch.no_grad():
        tok.embedding.weight.fill_(1.0)
        pos.embedding.weight.zero_()  # float32 positions: the sum is float32
    tok.to(getattr(torch, dtype))  # ones are exact in every dtype
    out = nn.EmbeddingComposer(tok, pos, scale_by_sqrt_d=True)(torch.zeros(1, 3, dtype=torch.long))
    assert out.dtype == torch.float32
    assert set(out.flatten().tolist()) == {EXPECTED[dim]}


@pytest.mark.parametrize("dim", sorted(EXPECTED))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_table_scaled_lookup(dim, dtype):
    from embedlab.engine.table import EmbeddingTable

    out = EmbeddingTable(np.ones((2, dim), dtype=dtype)).scaled_lookup([0, 1])
    assert out.dtype == np.float32
    assert set(out.ravel().tolist()) == {EXPECTED[dim]}
