"""InputRule by hand: position ids with an offset and padding, bfloat16 rounding, LayerNorm."""

from __future__ import annotations

import doctest
import math

import pytest

np = pytest.importorskip("numpy")

from embedlab.engine import input_rule  # noqa: E402
from embedlab.engine.input_rule import InputRule, LayerNorm, round_to_stored  # noqa: E402


def test_doctests():
    assert doctest.testmod(input_rule).failed == 0


def test_position_ids_skip_left_and_right_padding():
    rule = InputRule(position_offset=2, skip_padding=True)  # RoBERTa with padding_idx 1
    assert rule.position_ids([[True, False, False], [False, True, True]]).tolist() == [[1, 2, 3], [2, 1, 1]]
    assert InputRule(position_offset=2).position_ids([[False, True]]).tolist() == [[2, 3]]


def test_scale_rounds_the_product_in_bfloat16():
    # sqrt(3072) in float32 is 55.42562484741211 (C09); bfloat16 holds 55.5 (8 bits of mantissa)
    assert round_to_stored(np.array([math.sqrt(3072)]), "BF16").tolist() == [55.5]
    rule = InputRule(scale=55.5, scale_dtype="BF16")
    assert rule.scale_tokens(np.array([1.0, 3.0])).tolist() == [55.5, 166.0]  # 166.5 ties to the even 166
    assert InputRule().scale_tokens(np.array([2.0])).tolist() == [2.0]


def test_layer_norm_by_hand():
    ln = LayerNorm(np.array([2.0, 2.0]), np.array([1.0, 0.0]), 0.0)
    assert ln.apply(np.array([[0.0, 4.0]])).tolist() == [[-1.0, 2.0]]  # mean 2, std 2: [-1, 1] * 2 + [1, 0]
