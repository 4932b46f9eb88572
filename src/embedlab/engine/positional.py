"""Position formulas in NumPy: sinusoidal tables, rotary angles, ALiBi slopes and bias.

Token ids carry no order; these formulas give the model a second signal that
tells position 1 from position 17. Three families:

* additive, fixed: the sinusoidal table of Vaswani et al. 2017, section 3.5,
  added to the token vectors (``sinusoidal_table``, ``wavelengths``);
* rotary (RoPE, Su et al. 2021): each pair of channels of a query or key is
  rotated by an angle proportional to its position (``rope_angles``,
  ``apply_rope``), so q . k depends on the positions only through m - n;
* ALiBi (Press et al. 2022): no position vector at all, a bias on the
  attention scores that grows linearly with the distance (``alibi_slopes``,
  ``alibi_bias``).

Angles are always formed in float64: at position 10000 a float16 angle is off
by several radians. Positions are 0-based ints; angles are in radians;
wavelengths are in positions. The torch modules in ``embedlab.nn`` use these
very functions, so the array code and the torch modules share one formula.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..deprecation import renamed
from ..errors import ShapeError, SizeError

__all__ = [
    "DEFAULT_BASE", "PAIRINGS",
    "sinusoidal_table", "wavelengths", "rope_angles", "apply_rope", "alibi_slopes", "alibi_bias",
]

DEFAULT_BASE = 10000.0  # Vaswani et al. 2017, section 3.5; Su et al. 2021 keep it
PAIRINGS = ("interleaved", "half")


@renamed(num_positions="max_context_length")
def sinusoidal_table(max_context_length: int, d_model: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """The fixed sinusoidal position table of Vaswani et al. 2017, section 3.5.

    For position ``p`` and feature ``i``::

        angle = p / base ** (2 * (i // 2) / D)      # one frequency per sin/cos pair
        PE[p, 2k]     = sin(angle)
        PE[p, 2k + 1] = cos(angle)

    The layout is interleaved (sin, cos, sin, cos, ...), as in the paper. An
    odd D works: the last column is a sine with no cosine partner.

    Parameters
    ----------
    max_context_length : int
        ``T_max``, rows of the table (positions 0 .. T_max - 1), >= 1 (``num_positions=``, its old
        name, still works with a ``DeprecationWarning``).
    d_model : int
        ``D``, columns, >= 1.
    base : float
        The wavelength base, > 1 (10000.0 in the paper).

    Returns
    -------
    numpy.ndarray, shape (T_max, D), float64
        Angles and values are computed in float64.

    Raises
    ------
    ValueError
        For max_context_length < 1, d_model < 1 or base <= 1 (names the value).
    TypeError
        For a count that is not an int.

    >>> sinusoidal_table(2, 4).round(2).tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.84, 0.54, 0.01, 1.0]]
    """
    _check_count(max_context_length, "max_context_length")
    _check_count(d_model, "d_model")
    _check_base(base)
    pair = np.arange(d_model) // 2  # (D,) the pair index k of each column: 0, 0, 1, 1, ...
    inv_freq = base ** (-2.0 * pair / d_model)  # (D,) per pair, never per column
    angle = np.arange(max_context_length, dtype=np.float64)[:, None] * inv_freq  # (T_max, D) radians
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))  # (T_max, D)


def wavelengths(d_model: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """The wavelength, in positions, of each sin/cos pair of the sinusoidal table.

    Pair ``k`` (columns 2k and 2k+1) repeats every ``2 * pi * base ** (2k / D)``
    positions (Vaswani et al. 2017, section 3.5: "the wavelengths form a
    geometric progression from 2 pi to 10000 * 2 pi"). Halving D keeps the
    shortest and longest band and halves the number of bands in between.

    Parameters
    ----------
    d_model : int
        ``D``, >= 1. An odd D has a last band of one sine column.
    base : float
        The wavelength base, > 1.

    Returns
    -------
    numpy.ndarray, shape (ceil(D / 2),), float64
        Increasing; the first is 2 pi.

    Raises
    ------
    ValueError
        For d_model < 1 or base <= 1.

    >>> wavelengths(4).round(2).tolist()
    [6.28, 628.32]
    """
    _check_count(d_model, "d_model")
    _check_base(base)
    k = np.arange((d_model + 1) // 2, dtype=np.float64)  # (ceil(D/2),)
    return 2.0 * math.pi * base ** (2.0 * k / d_model)


def rope_angles(positions: Any, head_dim: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """Rotary angles ``theta[m, i] = m * base ** (-2i / Dh)`` (Su et al. 2021, eq. 15).

    Parameters
    ----------
    positions : array_like of int, shape (T,)
        0-based positions ``m``.
    head_dim : int
        ``Dh``, channels per head; even, >= 2.
    base : float
        The frequency base, > 1 (10000.0 in the paper).

    Returns
    -------
    numpy.ndarray, shape (T, Dh / 2), float64
        Radians; column i is the angle of channel pair i.

    Raises
    ------
    ValueError
        For an odd or non-positive head_dim, base <= 1, or positions that are
        not a 1-D array of non-negative ints.

    >>> rope_angles([0, 1, 2], 4).round(2).tolist()
    [[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]]
    """
    if isinstance(head_dim, bool) or not isinstance(head_dim, (int, np.integer)) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"rotary head size must be an even int >= 2, got head_dim={head_dim!r}")
    _check_base(base)
    m = _positions(positions)  # (T,)
    inv_freq = base ** (-2.0 * np.arange(head_dim // 2, dtype=np.float64) / head_dim)  # (Dh/2,)
    return m[:, None].astype(np.float64) * inv_freq  # (T, Dh/2)


def apply_rope(x: Any, positions: Any = None, base: float = DEFAULT_BASE, pairing: str = "interleaved") -> np.ndarray:
    """Rotate queries or keys by their position (RoPE, Su et al. 2021, eq. 34).

    Each channel pair ``(a, b)`` of the vector at position ``m`` is rotated by
    ``theta = m * base ** (-2i / Dh)``::

        a' = a cos(theta) - b sin(theta)
        b' = a sin(theta) + b cos(theta)

    so ``rope(q, m) . rope(k, n)`` depends on m and n only through m - n, the
    norm of every vector is unchanged and position 0 is the identity.

    Pairing says which channels form pair i:

    * ``"interleaved"``: channels (2i, 2i + 1), adjacent, as in the paper (and
      GPT-J, Meta's original LLaMA code);
    * ``"half"``: channels (i, i + Dh/2), the two halves (GPT-NeoX and
      Hugging Face LLaMA's ``rotate_half``).

    Both give the same properties; a checkpoint trained with one must be run
    with the same one.

    Parameters
    ----------
    x : array_like, shape (..., T, Dh), floating
        Queries or keys; any leading axes (B, H) broadcast.
    positions : array_like of int, shape (T,), optional
        0-based positions of the T rows; ``0 .. T-1`` by default.
    base : float
        The frequency base, > 1.
    pairing : {"interleaved", "half"}

    Returns
    -------
    numpy.ndarray, shape (..., T, Dh)
        A new array, x's dtype for a floating x (float64 otherwise); the
        rotation itself is computed in float64.

    Raises
    ------
    ValueError
        For an odd head size Dh, an unknown pairing, or positions whose length
        is not T (``ShapeError``).

    >>> apply_rope([[1.0, 0.0]], positions=[1]).round(4).tolist()
    [[0.5403, 0.8415]]
    """
    if pairing not in PAIRINGS:
        raise ValueError(f"unknown rotary pairing {pairing!r}: expected one of {', '.join(PAIRINGS)}")
    arr = np.asarray(x)
    if arr.ndim < 2:
        raise ShapeError(f"x has shape {arr.shape}, expected (..., T, Dh)")
    T, Dh = arr.shape[-2:]
    if Dh % 2:
        raise ValueError(f"rotary embedding needs an even head size, got Dh={Dh}")
    m = np.arange(T) if positions is None else _positions(positions)  # (T,)
    if m.shape != (T,):
        raise ShapeError(f"positions have shape {m.shape}, expected ({T},) for x of shape {arr.shape}")
    angle = rope_angles(m, Dh, base)  # (T, Dh/2)
    cos, sin = np.cos(angle), np.sin(angle)  # (T, Dh/2) each
    v = arr.astype(np.float64)  # (..., T, Dh)
    a, b = (v[..., 0::2], v[..., 1::2]) if pairing == "interleaved" else (v[..., : Dh // 2], v[..., Dh // 2:])
    out = np.empty_like(v)  # (..., T, Dh)
    first, second = (out[..., 0::2], out[..., 1::2]) if pairing == "interleaved" else (out[..., : Dh // 2], out[..., Dh // 2:])
    first[...] = a * cos - b * sin
    second[...] = a * sin + b * cos
    return out.astype(arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.float64, copy=False)


def alibi_slopes(num_heads: int) -> np.ndarray:
    """The per-head slopes of ALiBi (Press et al. 2022, section 3).

    For H a power of two the slopes are the geometric sequence that starts at
    ``2 ** (-8 / H)`` with that same ratio: ``2 ** (-8 (h + 1) / H)``. For
    any other H, the paper's reference code takes the slopes of the closest
    power of two below, ``n = 2 ** floor(log2 H)``, then every other slope of
    ``2n`` (the 1st, 3rd, 5th, ...) until there are H.

    Parameters
    ----------
    num_heads : int
        ``H``, >= 1.

    Returns
    -------
    numpy.ndarray, shape (H,), float64
        Exact powers of two.

    Raises
    ------
    ValueError
        For num_heads < 1 (names the value).

    >>> alibi_slopes(6).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]
    """
    _check_count(num_heads, "num_heads")
    n = 1 << (num_heads.bit_length() - 1)  # the closest power of two <= H
    slopes = _power_of_two_slopes(n)  # (n,)
    if n == num_heads:
        return slopes
    extra = _power_of_two_slopes(2 * n)[0::2][: num_heads - n]  # (H - n,)
    return np.concatenate([slopes, extra])  # (H,)


def alibi_bias(num_heads: int, seq_len: int) -> np.ndarray:
    """The causal ALiBi bias added to attention scores (Press et al. 2022).

    ``bias[h, i, j] = -slope[h] * (i - j)`` for a key j at or before the query
    i, and ``-inf`` for a key after it, so adding the bias also applies the
    causal mask. Head 0 of 8 (slope 1/2), query 3, key 0: -1.5.

    Parameters
    ----------
    num_heads : int
        ``H``, >= 1.
    seq_len : int
        ``T``, >= 1 (queries and keys).

    Returns
    -------
    numpy.ndarray, shape (H, T, T), float64

    Raises
    ------
    ValueError
        For num_heads < 1 or seq_len < 1.

    >>> alibi_bias(1, 3)[0].tolist()
    [[0.0, -inf, -inf], [-0.00390625, 0.0, -inf], [-0.0078125, -0.00390625, 0.0]]
    """
    slopes = alibi_slopes(num_heads)  # (H,)
    _check_count(seq_len, "seq_len")
    distance = np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :]  # (T, T) i - j
    bias = slopes[:, None, None] * -distance  # (H, T, T) -slope * (i - j), +0.0 on the diagonal
    return np.where(distance >= 0, bias, -np.inf)  # (H, T, T) keys after the query masked


# -- helpers -----------------------------------------------------------------

def _power_of_two_slopes(n: int) -> np.ndarray:
    return np.exp2(-8.0 * np.arange(1, n + 1) / n)  # (n,) 2 ** (-8 (h+1) / n)


def _positions(positions: Any) -> np.ndarray:
    m = np.asarray(positions)
    if m.ndim != 1 or m.dtype == np.bool_ or not (np.issubdtype(m.dtype, np.integer) or m.size == 0):
        raise ValueError(f"positions must be a 1-D array of ints, got dtype {m.dtype} and shape {m.shape}")
    if m.size and m.min() < 0:
        raise ValueError(f"position {int(m.min())} is negative: positions are 0-based")
    return m.astype(np.int64)


def _check_count(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < 1:
        raise SizeError(f"{name} must be >= 1, got {value}", parameter=name, value=value, expected="an int >= 1")


def _check_base(base: Any) -> None:
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 1:
        raise SizeError(f"base must be a finite number > 1, got {base!r}", parameter="base", value=base,
                        expected="a finite number > 1")
