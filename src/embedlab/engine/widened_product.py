"""A few queries times a bf16 or float16 table's rows, each row widened to float32 as it is read: one pass.

``rows @ queries.T`` where the rows are a bf16 checkpoint's table kept as its
bits (``bf16_matrix.Bf16Matrix``), or a float16 table (a GGUF or safetensors
F16 tensor, kept as its file's map), and the queries float32: entry
``(r, i)`` is ``sum_j float32(rows[r, j]) * queries[i, j]`` (a bfloat16's
float32 is its bits shifted left by 16; a half's, ``fpext``), the products
and the sum in float32. For a few queries the product reads each row once and does
little with it, so its time is the reading: NumPy widens a chunk of rows
into a float32 buffer (written, then read again by the GEMM) and OpenBLAS
multiplies it; this loop widens 16 entries at a time in registers and
multiplies them there, for every query while the row is in the core's L1
cache (a 4,096-wide bf16 row is 8 KiB), each vector of 16 entries widened
once for a tile of up to 4 queries. Compiled for this CPU by
``jit.Loops`` (LLVM IR, llvmlite); the call lets go of the GIL.

Its sums run in their own order (per query, two vectors of 16 float32
lanes over groups of 32 entries, the rest of the row one entry at a time,
then the lanes added pairwise; LLVM may fuse each multiply with its add, an
FMA, one rounding where there were two): a float32 sum in some order, as a
GEMM's is, so the float screen's certified margin covers it as it covers
OpenBLAS's (``precision.margin``: ``gamma_D sum |q_i w_i|`` for any order,
Higham 2002, section 3.1). Where the loop is not compiled
(``compiled(dtype)`` is False, ``status(dtype)`` says why), the caller
widens and multiplies in NumPy (``float_screen``). The float16 loop is
compiled only where the CPU converts halves itself (F16C on x86, AArch64):
elsewhere LLVM would call a library function MCJIT does not resolve
(``jit.Loops(leaf=True)`` refuses it).

Glossary: ``s`` rows, ``D`` model width, ``m`` queries.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from .jit import Loops, halves_sum

__all__ = ["MOST_QUERIES", "widened_product", "compiled", "status"]

# Up to this many queries the loop is faster than widening into a buffer for OpenBLAS: measured on the Xeon of
# benchmarks/README.md ("Compiled loops: row lengths and a few queries"), the 128,256 x 4,096 table, 2 threads.
MOST_QUERIES = 32
_LANES = 16  # float32 lanes of one vector
_VECTORS = 2  # vectors of entries a group: 32 entries, two sums a query
TILES = (4, 2, 1)  # queries multiplied by each widened vector at a time: 4 while 4 remain, then 2, then 1
CONTRACT = ("contract",)  # LLVM may fuse a multiply and its add (an FMA: one rounding, within the same bound)


def widened_product(rows: np.ndarray, queries: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = float32(rows) @ queries.T``: (s, D) bf16 bits or float16, (m, D) float32 -> (s, m) float32, in place.

    Parameters
    ----------
    rows : np.ndarray, shape (s, D), uint16 or float16, C-contiguous
        uint16: bfloat16 bit patterns (a run of a ``Bf16Matrix``'s rows);
        float16: IEEE half floats (a float16 table's rows). A view of a
        file's map is read as it is.
    queries : np.ndarray, shape (m, D), float32, C-contiguous
    out : np.ndarray, shape (s, m), float32, C-contiguous
        Written; returned.

    Raises
    ------
    RuntimeError
        If the loop for the rows' dtype is not compiled in this process (ask
        ``compiled(dtype)`` first).
    ValueError
        For arrays of another dtype, shape or layout than the above.

    >>> if compiled(np.uint16):
    ...     bits = np.array([[0x3F80, 0x4000]], dtype=np.uint16)  # 1.0, 2.0
    ...     out = widened_product(bits, np.array([[3.0, 0.5], [1.0, 1.0]], dtype=np.float32),
    ...                           np.empty((1, 2), dtype=np.float32))
    ...     assert out.tolist() == [[4.0, 3.0]]
    """
    for name, array in (("rows", rows), ("queries", queries), ("out", out)):
        if getattr(array, "ndim", None) != 2:
            raise ValueError(f"{name} must be a 2-D array, got shape {np.shape(array)}")
    s, D = rows.shape
    m = queries.shape[0]
    kind = rows.dtype if rows.dtype in _LOOPS else np.dtype(np.uint16)  # named in the error below
    for name, array, dtype, shape in (("rows", rows, kind, (s, D)), ("queries", queries, np.float32, (m, D)),
                                      ("out", out, np.float32, (s, m))):
        if array.dtype != dtype or array.shape != shape or not array.flags.c_contiguous:
            other = " (or float16)" if name == "rows" and kind == np.uint16 else ""  # float16 rows: named once
            raise ValueError(f"{name} must be a C-contiguous {np.dtype(dtype).name} array of shape {shape}{other}, "
                             f"got {array.dtype} {array.shape}"
                             f"{'' if array.flags.c_contiguous else ' (strided)'}")
    loops = _LOOPS[kind]
    functions = loops.functions()
    if functions is None:
        raise RuntimeError(f"the widened product of {kind.name} rows is not compiled here: {loops.status()}")
    if s and m:
        (function,) = functions.values()
        function(rows.ctypes.data, s, D, queries.ctypes.data, m, out.ctypes.data)
    return out


def compiled(dtype: Any = np.uint16) -> bool:
    """Whether this process has the loop for rows of ``dtype`` (uint16: bf16 bits; float16), compiling it if
    no call has yet; False for any other dtype."""
    loops = _LOOPS.get(np.dtype(dtype))
    return loops is not None and loops.functions() is not None


def status(dtype: Any = np.uint16) -> str:
    """"compiled for <cpu> by llvmlite <version>", or "NumPy (<why not>)", for rows of ``dtype``.

    >>> status(np.float32)
    'NumPy (no loop reads float32 rows: only uint16 bfloat16 bits and float16)'
    """
    loops = _LOOPS.get(np.dtype(dtype))
    if loops is None:
        return f"NumPy (no loop reads {np.dtype(dtype).name} rows: only uint16 bfloat16 bits and float16)"
    return loops.status()


def _ir(triple: str, kind: str = "bf16") -> str:
    """LLVM IR of ``void widened_product_<kind>(elem *W, i64 s, i64 D, float *Q, i64 m, float *out)``.

    ``kind`` "bf16": W holds bfloat16 bits (i16), widened by a shift; "f16": W holds IEEE half floats,
    widened by ``fpext`` (``vcvtph2ps`` where the CPU has F16C; a library call where it has not, which
    ``jit.Loops(leaf=True)`` refuses).

    For each row r, the queries in tiles of ``TILES`` (4 at a time while 4
    remain, then 2, then 1), all while the row is in L1: over the row's
    whole groups of ``_VECTORS`` x 16 entries, each vector of entries widened
    once (bf16: zero-extend, shift left 16, the bits as float; f16: ``fpext``) and multiplied into
    every query of the tile (``_VECTORS`` <16 x float> sums a query), then a
    float sum a query over the rest of the row, then each query's vectors
    added pairwise to one value, stored at ``out[r m + i]``.
    """
    from llvmlite import ir

    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
    elem = ir.IntType(16) if kind == "bf16" else ir.HalfType()
    vf, vi = ir.VectorType(f32, _LANES), ir.VectorType(i32, _LANES)
    group = _LANES * _VECTORS
    module = ir.Module(name=f"widened_product_{kind}")
    module.triple = triple
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [elem.as_pointer(), i64, i64, f32.as_pointer(),
                                                                   i64, f32.as_pointer()]),
                           name=f"widened_product_{kind}")
    W, rows, D, Q, m, out = function.args
    entry, row_block, next_row, done = (function.append_basic_block(name)
                                        for name in ("entry", "row", "next_row", "done"))
    zero = ir.Constant(vf, [0.0] * _LANES)

    def const(n: int) -> ir.Constant:
        return ir.Constant(i64, n)

    def widen(b: ir.IRBuilder, values: Any, vector: bool) -> Any:
        """bfloat16 bits or halves (elem or <16 x elem>) -> the float32 values (float or <16 x float>), exact."""
        ints, floats = (vi, vf) if vector else (i32, f32)
        if kind == "f16":
            return b.fpext(values, floats)
        return b.bitcast(b.shl(b.zext(values, ints), ir.Constant(ints, [16] * _LANES if vector else 16)), floats)

    b = ir.IRBuilder(entry)
    groups = b.udiv(D, const(group))
    grouped = b.mul(groups, const(group))
    b.cbranch(b.and_(b.icmp_unsigned(">", rows, const(0)), b.icmp_unsigned(">", m, const(0))), row_block, done)

    b.position_at_end(row_block)
    r = b.phi(i64, name="r")
    r.add_incoming(const(0), entry)
    row = b.gep(W, [b.mul(r, D)])  # the row's first entry
    i, came_from = const(0), row_block
    for tile in TILES:  # each tile size loops while that many queries remain, from where the last one stopped
        i, came_from = _query_tiles(b, function, tile, i, came_from, row, r, Q, D, m, out, groups, grouped,
                                    widen, zero, elem)
    b.branch(next_row)

    b.position_at_end(next_row)
    r_next = b.add(r, const(1))
    r.add_incoming(r_next, next_row)
    b.cbranch(b.icmp_unsigned("<", r_next, rows), row_block, done)

    b.position_at_end(done)
    b.ret_void()
    return str(module)


def _query_tiles(b: Any, function: Any, tile: int, i_in: Any, came_from: Any, row: Any, r: Any, Q: Any, D: Any,
                 m: Any, out: Any, groups: Any, grouped: Any, widen: Callable[..., Any], zero: Any,
                 elem: Any) -> tuple[Any, Any]:
    """Emit the loop over tiles of ``tile`` queries of one row (while ``i + tile <= m``); returns (i, block) after it.

    ``b`` is positioned in ``came_from``, where query ``i_in`` is the next; on return it is positioned in the
    loop's exit block, where the returned i is the next query.
    """
    from llvmlite import ir

    i64, f32 = ir.IntType(64), ir.FloatType()
    v16, vf = ir.VectorType(elem, _LANES), ir.VectorType(f32, _LANES)
    group = _LANES * _VECTORS
    name = f"tile{tile}"
    head, body, group_block, groups_done, rest, store, exit_block = (
        function.append_basic_block(f"{name}_{part}")
        for part in ("head", "body", "group", "groups_done", "rest", "store", "exit"))

    def const(n: int) -> ir.Constant:
        return ir.Constant(i64, n)

    b.branch(head)
    b.position_at_end(head)  # while i + tile <= m
    i = b.phi(i64, name=f"{name}_i")
    i.add_incoming(i_in, came_from)
    b.cbranch(b.icmp_unsigned("<=", b.add(i, const(tile)), m), body, exit_block)

    b.position_at_end(body)
    queries = [b.gep(Q, [b.mul(b.add(i, const(t)), D)]) for t in range(tile)]  # each query's first entry
    b.cbranch(b.icmp_unsigned(">", groups, const(0)), group_block, groups_done)

    b.position_at_end(group_block)  # sums[t][v] += widen(row[j:j+16]) * query_t[j:j+16], each vector widened once
    g = b.phi(i64, name=f"{name}_g")
    g.add_incoming(const(0), body)
    sums = [[b.phi(vf) for _ in range(_VECTORS)] for _ in range(tile)]  # phis first, as LLVM requires
    at = b.mul(g, const(group))
    summed = [[None] * _VECTORS for _ in range(tile)]
    for v in range(_VECTORS):
        j = b.add(at, const(v * _LANES))
        x = widen(b, b.load(b.bitcast(b.gep(row, [j]), v16.as_pointer()), align=2), True)
        for t in range(tile):
            q = b.load(b.bitcast(b.gep(queries[t], [j]), vf.as_pointer()), align=4)
            summed[t][v] = b.fadd(sums[t][v], b.fmul(x, q, flags=CONTRACT), flags=CONTRACT)
    g_next = b.add(g, const(1))
    for t in range(tile):
        for v in range(_VECTORS):
            sums[t][v].add_incoming(zero, body)
            sums[t][v].add_incoming(summed[t][v], group_block)
    g.add_incoming(g_next, group_block)
    b.cbranch(b.icmp_unsigned("<", g_next, groups), group_block, groups_done)

    b.position_at_end(groups_done)  # each query's vectors added pairwise to one value
    finished = [[b.phi(vf) for _ in range(_VECTORS)] for _ in range(tile)]
    totals = []
    for t in range(tile):
        for v in range(_VECTORS):
            finished[t][v].add_incoming(zero, body)
            finished[t][v].add_incoming(summed[t][v], group_block)
        vectors = finished[t]
        while len(vectors) > 1:
            vectors = [b.fadd(vectors[k], vectors[k + 1]) for k in range(0, len(vectors), 2)]
        totals.append(halves_sum(b, vectors[0], _LANES))
    b.cbranch(b.icmp_unsigned("<", grouped, D), rest, store)

    b.position_at_end(rest)  # the entries past the last whole group, one at a time
    j = b.phi(i64, name=f"{name}_j")
    j.add_incoming(grouped, groups_done)
    partial = [b.phi(f32) for _ in range(tile)]
    x = widen(b, b.load(b.gep(row, [j]), align=2), False)
    partial_next = []
    for t in range(tile):
        partial[t].add_incoming(totals[t], groups_done)
        q = b.load(b.gep(queries[t], [j]), align=4)
        partial_next.append(b.fadd(partial[t], b.fmul(x, q, flags=CONTRACT), flags=CONTRACT))
        partial[t].add_incoming(partial_next[t], rest)
    j_next = b.add(j, const(1))
    j.add_incoming(j_next, rest)
    b.cbranch(b.icmp_unsigned("<", j_next, D), rest, store)

    b.position_at_end(store)
    values = [b.phi(f32) for _ in range(tile)]
    at = b.add(b.mul(r, m), i)  # out[r m + i]
    for t in range(tile):
        values[t].add_incoming(totals[t], groups_done)
        values[t].add_incoming(partial_next[t], rest)
        b.store(values[t], b.gep(out, [b.add(at, const(t))]), align=4)
    i_next = b.add(i, const(tile))
    i.add_incoming(i_next, store)
    b.branch(head)

    b.position_at_end(exit_block)
    return i, exit_block


_SIGNATURE = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)
_LOOPS = {np.dtype(np.uint16): Loops(lambda triple: [_ir(triple, "bf16")], {"widened_product_bf16": _SIGNATURE}),
          np.dtype(np.float16): Loops(lambda triple: [_ir(triple, "f16")], {"widened_product_f16": _SIGNATURE},
                                      leaf=True)}  # (the table's dtype) -> its loop; half floats need F16C on x86
