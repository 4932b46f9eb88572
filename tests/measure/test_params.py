"""params: counts and bytes checked against numbers from outside the code.

Sources of the expected values: V*D by hand; GPT-2 small's public sizes
(V=50257, D=768, 1024 learned positions, tied).
"""

from __future__ import annotations

import doctest

import pytest

from embedlab.measure import params
from embedlab.errors import DtypeError, SizeError


def test_doctests() -> None:
    assert doctest.testmod(params).failed == 0


# -- from numbers ----------------------------------------------------------------

def test_seed_numbers():
    # V=512, D=64: 512*64 = 32768 tied, twice that untied; doubled V doubles both.
    tied = params.from_numbers(512, 64).breakdown
    untied = params.from_numbers(512, 64, tied=False).breakdown
    assert (tied.token, tied.head, tied.total, tied.tied) == (32768, 0, 32768, True)
    assert (untied.token, untied.head, untied.total, untied.tied) == (32768, 32768, 65536, False)
    grown = params.growth(tied, growth_factor=2)
    assert (grown.saved, grown.tied_bigger.total, grown.untied_bigger.total) == (32768, 65536, 131072)
    assert (grown.V, grown.bigger_V, grown.bigger_saved) == (512, 1024, 65536)


def test_gpt2_small_from_public_sizes():
    b = params.from_numbers(50257, 768, max_context_length=1024).breakdown
    assert (b.token, b.position, b.head) == (38_597_376, 786_432, 0)
    assert params.from_numbers(50257, 768, max_context_length=1024).positions == "learned"


@pytest.mark.parametrize("kind", ["sinusoidal", "rotary", "none"])
def test_computed_positions_have_no_parameters(kind):
    count = params.from_numbers(100, 8, max_context_length=16, positions=kind)
    assert (count.breakdown.position, count.T_max, count.positions) == (0, 16, kind)


def test_token_type_and_other():
    b = params.from_numbers(10, 4, max_context_length=6, type_vocab=2, other=100).breakdown
    assert (b.token, b.position, b.token_type, b.other) == (40, 24, 8, 100)
    assert (b.tables, b.total, b.non_embedding) == (72, 172, 100)


@pytest.mark.parametrize("dtype, per_param", [("fp32", 4), ("fp16", 2), ("bf16", 2), ("int8", 1)])
def test_bytes_per_dtype(dtype, per_param):
    b = params.from_numbers(512, 64, tied=False, dtype=dtype).breakdown
    assert b.bytes.token == b.bytes.head == 32768 * per_param
    assert b.bytes.total == 65536 * per_param


def test_int4_rounds_up_per_tensor():
    # V=5, D=3: 15 parameters -> 7.5 -> 8 bytes; other 9 -> 5 bytes; total 13, not ceil(24 / 2) = 12.
    b = params.from_numbers(5, 3, other=9, dtype="int4").breakdown
    assert (b.bytes.token, b.bytes.other, b.bytes.total) == (8, 5, 13)
    three = params.Breakdown(5, 3, token=15, position=0, token_type=0, head=0, other=9, tied=True,
                             dtype="int4", other_tensors=(3, 3, 3))
    assert three.bytes.other == 6  # 2 + 2 + 2, each 3-parameter tensor rounded up on its own


def test_bytes_are_exact_past_float_precision():
    # 2**53 + 1 is the first integer a float64 cannot hold; half of 2**53 + 2 is 2**52 + 1.
    assert params.tensor_bytes(2**53 + 1, "int4") == 2**52 + 1
    assert params.tensor_bytes(2**53 + 1, "fp32") == 4 * 2**53 + 4


# -- growth and share ------------------------------------------------------------

def test_share_of_the_tables_and_what_growth_does_to_it():
    # Tables 1000 x 10 = 10,000 beside 10,000 other: half. Doubled V: 20,000 of 30,000.
    grown = params.growth(params.from_numbers(1000, 10, other=10_000).breakdown, growth_factor=2)
    assert grown.tied_now.share == 0.5
    assert grown.tied_bigger.share == 20_000 / 30_000
    assert grown.untied_now.share == 20_000 / 30_000
    assert grown.untied_bigger.share == 40_000 / 50_000


def test_growth_by_target_and_whole_float_factor():
    b = params.from_numbers(512, 64).breakdown
    assert params.growth(b, target_vocab_size=1000).tied_added == (1000 - 512) * 64
    assert params.growth(b, growth_factor=2.0).factor == 2


# -- bad input -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"vocab_size": 0, "d_model": 8}, "vocab_size must be >= 1, got 0"),
    ({"vocab_size": 8, "d_model": -3}, "d_model must be >= 1, got -3"),
    ({"vocab_size": 8, "d_model": 8, "max_context_length": 0}, "max_context_length must be >= 1, got 0"),
    ({"vocab_size": 8, "d_model": 8, "type_vocab": -1}, "type_vocab must be >= 0, got -1"),
    ({"vocab_size": 8, "d_model": 8, "other": -9}, "other must be >= 0, got -9"),
    ({"vocab_size": 8.5, "d_model": 8}, "vocab_size must be a whole number, got 8.5"),
    ({"vocab_size": 8, "d_model": 8, "positions": "learned"}, "learned positions need max_context_length"),
])
def test_bad_sizes_name_the_value(kwargs, message):
    with pytest.raises(SizeError, match=message):
        params.from_numbers(**kwargs)


def test_non_numbers_are_type_errors():
    with pytest.raises(TypeError, match=r"vocab_size must be a whole number, got '512'"):
        params.from_numbers("512", 64)
    with pytest.raises(TypeError, match=r"vocab_size must be a whole number, got True"):
        params.from_numbers(True, 64)
    with pytest.raises(TypeError, match=r"tied must be True or False, got 1"):
        params.from_numbers(8, 8, tied=1)
    with pytest.raises(ValueError, match=r"unknown position kind 'alibi'"):
        params.from_numbers(8, 8, positions="alibi")


@pytest.mark.parametrize("factor, error, message", [
    (1.5, SizeError, "factor must be a whole number, got 1.5"),
    (0, SizeError, "factor must be >= 1, got 0"),
    (-2, SizeError, "factor must be >= 1, got -2"),
    ("2", TypeError, "factor must be a whole number, got '2'"),
])
def test_bad_factor_names_the_value(factor, error, message):
    with pytest.raises(error, match=message):
        params.growth(params.from_numbers(8, 8).breakdown, growth_factor=factor)


def test_growth_needs_exactly_one_of_factor_and_target():
    b = params.from_numbers(8, 8).breakdown
    with pytest.raises(TypeError, match="exactly one"):
        params.growth(b)
    with pytest.raises(TypeError, match="exactly one"):
        params.growth(b, growth_factor=2, target_vocab_size=20)
    with pytest.raises(SizeError, match="target_vocab_size must be >= 1, got 0"):
        params.growth(b, target_vocab_size=0)


@pytest.mark.parametrize("dtype", ["fp8", "float32", "FP32", None])
def test_unknown_dtype_is_named(dtype):
    with pytest.raises(DtypeError, match=rf"unknown dtype {dtype!r}: expected one of fp32, fp16, bf16, int8, int4"):
        params.from_numbers(8, 8, dtype=dtype)
    with pytest.raises(ValueError):
        params.tensor_bytes(8, dtype)
