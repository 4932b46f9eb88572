"""A few queries times a bf16 table's rows, each row widened to float32 as it is read: one pass over the bits.

``rows @ queries.T`` where the rows are a bf16 checkpoint's table kept as its
bits (``bf16_matrix.Bf16Matrix``) and the queries float32: entry ``(r, i)``
is ``sum_j float32(bits[r, j] << 16) * queries[i, j]``, the products and the
sum in float32. For a few queries the product reads each row once and does
little with it, so its time is the reading: NumPy widens a chunk of rows
into a float32 buffer (written, then read again by the GEMM) and OpenBLAS
multiplies it; this loop widens 16 entries at a time in registers and
multiplies them there, for every query while the row is in the core's L1
cache (a 4,096-wide bf16 row is 8 KiB). Compiled for this CPU by
``jit.Loops`` (LLVM IR, llvmlite); the call lets go of the GIL.

Its sums run in their own order (per query, four vectors of 16 float32
lanes over groups of 64 entries, the rest of the row one entry at a time,
then the lanes added pairwise; LLVM may fuse each multiply with its add, an
FMA, one rounding where there were two): a float32 sum in some order, as a
GEMM's is, so the float screen's certified margin covers it as it covers
OpenBLAS's (``precision.margin``: ``gamma_D sum |q_i w_i|`` for any order,
Higham 2002, section 3.1). Where the loop is not compiled
(``compiled()`` is False, ``status()`` says why), the caller widens and
multiplies in NumPy (``float_screen``).

Glossary: ``s`` rows, ``D`` model width, ``m`` queries.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .jit import Loops

__all__ = ["MOST_QUERIES", "widened_product", "compiled", "status"]

# Up to this many queries the loop is faster than widening into a buffer for OpenBLAS: measured on the Xeon of
# benchmarks/README.md ("A few queries on a bf16 table"), the 128,256 x 4,096 table, 2 threads.
MOST_QUERIES = 32
_LANES = 16  # float32 lanes of one vector
_VECTORS = 4  # vectors summed side by side: a group is 64 entries
CONTRACT = ("contract",)  # LLVM may fuse a multiply and its add (an FMA: one rounding, within the same bound)


def widened_product(bits: np.ndarray, queries: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = widen(bits) @ queries.T``: (s, D) uint16 bfloat16 bits, (m, D) float32 -> (s, m) float32, in place.

    Parameters
    ----------
    bits : np.ndarray, shape (s, D), uint16, C-contiguous
        bfloat16 bit patterns (a run of a ``Bf16Matrix``'s rows; a view of
        its file's map is read as it is).
    queries : np.ndarray, shape (m, D), float32, C-contiguous
    out : np.ndarray, shape (s, m), float32, C-contiguous
        Written; returned.

    Raises
    ------
    RuntimeError
        If the loop is not compiled in this process (ask ``compiled()`` first).
    ValueError
        For arrays of another dtype, shape or layout than the above.

    >>> if compiled():
    ...     bits = np.array([[0x3F80, 0x4000]], dtype=np.uint16)  # 1.0, 2.0
    ...     out = widened_product(bits, np.array([[3.0, 0.5], [1.0, 1.0]], dtype=np.float32),
    ...                           np.empty((1, 2), dtype=np.float32))
    ...     assert out.tolist() == [[4.0, 3.0]]
    """
    for name, array in (("bits", bits), ("queries", queries), ("out", out)):
        if getattr(array, "ndim", None) != 2:
            raise ValueError(f"{name} must be a 2-D array, got shape {np.shape(array)}")
    s, D = bits.shape
    m = queries.shape[0]
    for name, array, dtype, shape in (("bits", bits, np.uint16, (s, D)), ("queries", queries, np.float32, (m, D)),
                                      ("out", out, np.float32, (s, m))):
        if array.dtype != dtype or array.shape != shape or not array.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous {np.dtype(dtype).name} array of shape {shape}, "
                             f"got {array.dtype} {array.shape}{'' if array.flags.c_contiguous else ' (strided)'}")
    functions = _LOOPS.functions()
    if functions is None:
        raise RuntimeError(f"the widened product is not compiled here: {_LOOPS.status()}")
    if s and m:
        functions["widened_product"](bits.ctypes.data, s, D, queries.ctypes.data, m, out.ctypes.data)
    return out


def compiled() -> bool:
    """Whether this process has the compiled loop (compiling it if no call has yet)."""
    return _LOOPS.functions() is not None


def status() -> str:
    """"compiled for <cpu> by llvmlite <version>", or "NumPy (<why not>)"."""
    return _LOOPS.status()


def _ir(triple: str) -> str:
    """LLVM IR of ``void widened_product(i16 *W, i64 s, i64 D, float *Q, i64 m, float *out)``.

    For each row r and query i: four <16 x float> sums over the row's whole
    groups of 64 entries (each entry widened: zero-extend, shift left 16,
    the bits as float), a float sum over the rest, then the vectors added
    pairwise to one value, stored at ``out[r m + i]``.
    """
    from llvmlite import ir

    i16, i32, i64, f32 = ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.FloatType()
    v16, vf = ir.VectorType(i16, _LANES), ir.VectorType(f32, _LANES)
    group = _LANES * _VECTORS
    module = ir.Module(name="widened_product")
    module.triple = triple
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [i16.as_pointer(), i64, i64, f32.as_pointer(),
                                                                   i64, f32.as_pointer()]), name="widened_product")
    W, rows, D, Q, m, out = function.args
    blocks = {name: function.append_basic_block(name) for name in
              ("entry", "row", "query", "group", "groups_done", "rest", "store", "next_row", "done")}

    def const(n: int) -> ir.Constant:
        return ir.Constant(i64, n)

    def widen(builder: ir.IRBuilder, bits: Any, kind: Any, shift: Any, floats: Any) -> Any:
        return builder.bitcast(builder.shl(builder.zext(bits, kind), shift), floats)

    b = ir.IRBuilder(blocks["entry"])
    groups = b.udiv(D, const(group))
    grouped = b.mul(groups, const(group))
    b.cbranch(b.and_(b.icmp_unsigned(">", rows, const(0)), b.icmp_unsigned(">", m, const(0))),
              blocks["row"], blocks["done"])

    b.position_at_end(blocks["row"])
    r = b.phi(i64, name="r")
    r.add_incoming(const(0), blocks["entry"])
    row = b.gep(W, [b.mul(r, D)])  # the row's first entry
    b.branch(blocks["query"])

    b.position_at_end(blocks["query"])
    i = b.phi(i64, name="i")
    i.add_incoming(const(0), blocks["row"])
    query = b.gep(Q, [b.mul(i, D)])
    b.cbranch(b.icmp_unsigned(">", groups, const(0)), blocks["group"], blocks["groups_done"])

    b.position_at_end(blocks["group"])  # four vectors of 16: sums += widen(row[j:j+16]) * query[j:j+16]
    g = b.phi(i64, name="g")
    g.add_incoming(const(0), blocks["query"])
    zero = ir.Constant(vf, [0.0] * _LANES)
    sums = [b.phi(vf, name=f"sum{v}") for v in range(_VECTORS)]  # phis first, as LLVM requires
    at = b.mul(g, const(group))
    summed = []
    ints, shift = ir.VectorType(i32, _LANES), ir.Constant(ir.VectorType(i32, _LANES), [16] * _LANES)
    for v, total in enumerate(sums):
        total.add_incoming(zero, blocks["query"])
        j = b.add(at, const(v * _LANES))
        x = widen(b, b.load(b.bitcast(b.gep(row, [j]), v16.as_pointer()), align=2), ints, shift, vf)
        q = b.load(b.bitcast(b.gep(query, [j]), vf.as_pointer()), align=4)
        summed.append(b.fadd(total, b.fmul(x, q, flags=CONTRACT), flags=CONTRACT))
    g_next = b.add(g, const(1))
    for total, new in zip(sums, summed):
        total.add_incoming(new, blocks["group"])
    g.add_incoming(g_next, blocks["group"])
    b.cbranch(b.icmp_unsigned("<", g_next, groups), blocks["group"], blocks["groups_done"])

    b.position_at_end(blocks["groups_done"])  # the four vectors added pairwise to one value
    finished = [b.phi(vf) for _ in sums]
    for total, new in zip(finished, summed):
        total.add_incoming(zero, blocks["query"])
        total.add_incoming(new, blocks["group"])
    t, width = b.fadd(b.fadd(finished[0], finished[1]), b.fadd(finished[2], finished[3])), _LANES
    while width > 1:
        half = width // 2
        low = b.shuffle_vector(t, t, ir.Constant(ir.VectorType(i32, half), list(range(half))))
        high = b.shuffle_vector(t, t, ir.Constant(ir.VectorType(i32, half), list(range(half, width))))
        t, width = b.fadd(low, high), half
    vectors_sum = b.extract_element(t, ir.Constant(i32, 0))
    b.cbranch(b.icmp_unsigned("<", grouped, D), blocks["rest"], blocks["store"])

    b.position_at_end(blocks["rest"])  # the entries past the last whole group, one at a time
    j = b.phi(i64, name="j")
    j.add_incoming(grouped, blocks["groups_done"])
    rest = b.phi(f32, name="rest")
    rest.add_incoming(vectors_sum, blocks["groups_done"])
    x = widen(b, b.load(b.gep(row, [j]), align=2), i32, ir.Constant(i32, 16), f32)
    rest_next = b.fadd(rest, b.fmul(x, b.load(b.gep(query, [j]), align=4), flags=CONTRACT), flags=CONTRACT)
    j_next = b.add(j, const(1))
    j.add_incoming(j_next, blocks["rest"])
    rest.add_incoming(rest_next, blocks["rest"])
    b.cbranch(b.icmp_unsigned("<", j_next, D), blocks["rest"], blocks["store"])

    b.position_at_end(blocks["store"])
    value = b.phi(f32)
    value.add_incoming(vectors_sum, blocks["groups_done"])
    value.add_incoming(rest_next, blocks["rest"])
    b.store(value, b.gep(out, [b.add(b.mul(r, m), i)]), align=4)
    i_next = b.add(i, const(1))
    i.add_incoming(i_next, blocks["store"])
    b.cbranch(b.icmp_unsigned("<", i_next, m), blocks["query"], blocks["next_row"])

    b.position_at_end(blocks["next_row"])
    r_next = b.add(r, const(1))
    r.add_incoming(r_next, blocks["next_row"])
    b.cbranch(b.icmp_unsigned("<", r_next, rows), blocks["row"], blocks["done"])

    b.position_at_end(blocks["done"])
    b.ret_void()
    return str(module)


_LOOPS = Loops(lambda triple: [_ir(triple)],
               {"widened_product": (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_void_p)})
