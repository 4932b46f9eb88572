"""Hypothesis strategies shared by the tests: tables on which float64 computes every score exactly.

The neighbour screens (float GEMM, integer codes, torch, the self-join) are checked against a float64
full sort (``full_sort.py``). That oracle is exact, and so is the tie rule's test, only where no score
is rounded: here every entry is a multiple of 1/4 in [-2, 2] times a power of two per row, so every
product and every sum of a row's products is exact in float64, rows repeat (exact ties), zero rows
appear, and row lengths reach 2**40 and 2**-40 (the screens' certified range and beyond).

Each test file passes its own sizes; the draws come in the same order for every caller, so a file's
examples do not change when it moves here. Import them by name (``tests/`` is on pytest's path)::

    from strategies import dyadic_tables

Nothing here calls embedlab.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

# Row scales, as powers of two: mostly 1, some 2 and 1/8, some huge (2**40) and tiny (2**-40) lengths.
EXPONENTS = (0, 0, 0, 1, -3, 40, -40)

# float16 holds neither 2**40 nor 2**-40: its tables are clipped to this size (2**10, exact in float16).
FLOAT16_LIMIT = 2.0**10


def dyadic_values() -> st.SearchStrategy[float]:
    """One entry: a multiple of 1/4 in [-2, 2] (17 values; products and sums of a few are exact)."""
    return st.integers(-8, 8).map(lambda x: x / 4)


@st.composite
def dyadic_tables(draw, max_rows: int = 60, max_dim: int = 9, max_pool: int = 4,
                  dtypes: tuple = (np.float64, np.float32)) -> np.ndarray:
    """A table W (V, D) of multiples of 1/4, rows scaled by 2**e: duplicates, zero rows, huge and tiny lengths.

    Parameters
    ----------
    max_rows : int
        Largest V drawn (V is drawn from [2, max_rows]).
    max_dim : int
        Largest D drawn (D is drawn from [1, max_dim]).
    max_pool : int
        Largest number of distinct rows that repeat (a pool of 1 to max_pool rows is drawn; each row is
        either from the pool or fresh).
    dtypes : tuple of NumPy dtypes
        The dtypes the table may have; a float16 table is clipped to [-2**10, 2**10] first.

    Returns
    -------
    numpy.ndarray
        (V, D), of one of ``dtypes``.
    """
    V = draw(st.integers(2, max_rows))
    D = draw(st.integers(1, max_dim))
    value = dyadic_values()
    pool = draw(st.lists(st.lists(value, min_size=D, max_size=D), min_size=1, max_size=max_pool))
    rows = draw(st.lists(st.sampled_from(pool) | st.lists(value, min_size=D, max_size=D), min_size=V, max_size=V))
    W = np.array(rows, dtype=np.float64).reshape(V, D)  # (V, D)
    exponents = draw(st.lists(st.sampled_from(list(EXPONENTS)), min_size=V, max_size=V))
    W *= np.ldexp(1.0, np.array(exponents))[:, None]  # huge (2**40) and tiny (2**-40) lengths, exactly
    dtype = draw(st.sampled_from(list(dtypes)))
    if dtype == np.float16:
        W = np.clip(W, -FLOAT16_LIMIT, FLOAT16_LIMIT)
    return W.astype(dtype)


def draw_queries(data, W):
    """Queries for a search of W (V, D), drawn from ``data`` (``st.data()``): (Q, exclude, k).

    Either ids of W (``Q`` None, ``exclude`` their ids, ``1 <= k <= V - 1``) or vectors (copies of rows of W
    in float64, the first scaled by 1, 0 or 2**8: a zero or a long query; ``exclude`` None, ``1 <= k <= V``).
    """
    V = len(W)
    if data.draw(st.booleans()):
        exclude = np.array(data.draw(st.lists(st.integers(0, V - 1), min_size=1, max_size=6)), dtype=np.int64)
        return None, exclude, data.draw(st.integers(1, V - 1))
    k = data.draw(st.integers(1, V))
    Q = W[data.draw(st.lists(st.integers(0, V - 1), min_size=1, max_size=6))].astype(np.float64)
    Q[0] *= data.draw(st.sampled_from([1.0, 0.0, 2.0**8]))  # a zero or a long query vector
    return Q, None, k
