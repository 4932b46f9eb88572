"""The bf16 self-join's filter, compiled: both sides of a block of bfloat16 products against their bars in one pass.

``bf16_join`` scores a block pair with torch's bfloat16 matmul; the block
(n, m) is then read here in place (its bits, through a NumPy view of the
tensor's memory: never copied), each entry widened to float32 (exact: a
bfloat16 is the top half of a float32), scaled for cosine exactly as
``bf16_join`` defines the screening score, ``fl32(fl32(s * r_row) * r_col)``,
and compared with its row's bar (block i's queries) and its column's bar
(block j's, the transpose) in the same pass. torch's own ops take five
passes over the block for this (widen, two products, compare, nonzero), and
as many again for the transpose. Compiled by numba (cached on disk), without
the GIL.

Glossary: ``n`` rows and ``m`` columns in the block, ``f`` survivors.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["filter_block"]


@njit(nogil=True, cache=True)
def filter_block(bits, row_inv, col_inv, bar_row, bar_col, start, out_r, out_c, out_v, out_side
                 ):  # pragma: no cover - compiled; exercised through bf16_join
    """Survivors of rows ``start ..`` of a block; returns (count, the row to resume at, n when done).

    bits (n, m) uint16: the bfloat16 scores' bits; row_inv (n,) and col_inv
    (m,) float32: the rows' and columns' ``float32(1 / |w|)`` (cosine), or
    empty (dot: the score as it is); bar_row (n,) and bar_col (m,) float32,
    rounded down (+inf: no side). An entry s~ survives for its row where
    ``s~ >= bar_row[r]`` (out_side bit 1) and for its column where ``s~ >=
    bar_col[c]`` (bit 2). out_r, out_c (cap,) int64, out_v (cap,) float32,
    out_side (cap,) uint8 receive them row by row; the pass stops before a
    row that might not fit (a row yields at most m), so cap >= m.
    """
    n, m = bits.shape
    cap = out_r.size
    scaled = row_inv.size > 0
    wide = np.empty(m, dtype=np.uint32)  # one row's scores as float32 bits
    row = wide.view(np.float32)
    count = 0
    for r in range(start, n):
        if count + m > cap:
            return count, r
        for c in range(m):
            wide[c] = np.uint32(bits[r, c]) << np.uint32(16)
        if scaled:
            ri = row_inv[r]
            for c in range(m):
                row[c] = (row[c] * ri) * col_inv[c]  # float32 products, in the screen's order
        br = bar_row[r]
        for c in range(m):
            x = row[c]
            side = np.uint8(1 if x >= br else 0) | np.uint8(2 if x >= bar_col[c] else 0)
            if side:
                out_r[count], out_c[count], out_v[count], out_side[count] = r, c, x, side
                count += 1
    return count, n
