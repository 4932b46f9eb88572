"""The sum of a row's squares in float64, in one fixed order, compiled for this CPU or in NumPy: the same bits.

A row's length is ``sqrt(sum_j x_j ** 2)`` with the squares and the sum in
float64 (``lengths.vector_norms``). A float64 sum depends on its order, so
this module fixes one, and both ways of running it follow it to the bit:

1. *Lanes.* Entry ``j`` of the row goes to lane ``j % 32``; each of the 32
   lanes sums its entries' squares in float64, in increasing ``j``, from 0.0
   (``lane[l] = ((x_l**2 + x_(l+32)**2) + x_(l+64)**2) + ...``; a lane with no
   entry stays 0.0).
2. *Tree.* The lanes are combined pairwise, always the same way: eight at a
   time, ``t = (lane[0:8] + lane[8:16]) + (lane[16:24] + lane[24:32])``, then
   halves, ``t[0:4] + t[4:8]``, ``[0:2] + [2:4]``, ``[0] + [1]``.

Every square and every sum is one IEEE 754 float64 operation, rounded to
nearest, never fused (no FMA) nor reordered, so the result depends on the row
alone, on every CPU: a float32, float16 or bfloat16 entry becomes the float64
of the same value first (exact). Its error is that of any float64 sum of D
nonnegative terms, at most ``(D - 1) u`` relative with ``u = 2**-53``
(Higham 2002, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
section 4.2); the 32 lanes make it ``(D / 32 + 4) u`` in practice. A row
holding a NaN sums to a NaN either way, but not always the same NaN: where it
holds two, which one's sign and payload the sum passes on may differ (LLVM may
swap an addition's operands; the x86 instruction keeps its first NaN operand).

The two ways:

- *compiled* (``_ir``): the loop above as LLVM IR, built with llvmlite
  (numba's LLVM, in the ``models`` extra) and compiled for this CPU once per
  process (``jit.Loops``: about 0.06 s with llvmlite's import, measured).
  The 32 lanes are four vectors of 8 float64, which LLVM maps onto the
  CPU's registers (one AVX-512 register each, two AVX2 ones); bfloat16 bits
  (and float16 halves, where the CPU converts them: a loop of its own,
  ``_HALF_LOOPS``) are widened in the loop, so a bf16 table's rows are read once, from the file
  or its map, as 2 bytes an entry. 0.22 ns an entry of a 4,096-wide bf16 row on
  one core of a Xeon (AVX-512), where NumPy's float64 copy and ``einsum``
  took 1.0 ns; the call runs without the GIL (ctypes), so blocks run
  side by side on the cores;
- *NumPy* (``_numpy_sums``): the same lanes and tree as array operations,
  used where llvmlite is missing or the kernel could not be compiled
  (``kernel_status`` says which and why), and by the tests as the second
  implementation.

Glossary: ``b`` rows of a block, ``D`` model width, ``u`` float64's unit
roundoff.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .jit import Loops, halves_sum

__all__ = ["LANES", "sums_of_squares", "compiled", "kernel_status"]

LANES = 32  # entry j is summed in lane j % LANES; four vectors of 8 float64
_VECTOR = 8  # float64 lanes of one vector of the compiled loop
# Bytes ``_chunk_sums`` holds a row of its chunk, at most: the lanes and one group of 32 columns as float64 (2 x 32 x
# 8), the tree's three (8,) sums at its widest (3 x 8 x 8) and the row's result (8).
_CHUNK_ROW_BYTES = 2 * LANES * 8 + 3 * 8 * 8 + 8
KINDS = ("bf16", "float32", "float64")  # element kinds the compiled loop reads (float16: ``_HALF_LOOPS``)


def sums_of_squares(rows: np.ndarray, out: np.ndarray | None = None, *, bf16: bool = False,
                    compiled: bool = True) -> np.ndarray:
    """Each row's sum of squares in float64, in the module's fixed order: (b, D) -> (b,) float64.

    Parameters
    ----------
    rows : np.ndarray, shape (b, D)
        Real numbers (any float or integer dtype), or, where ``bf16``, uint16
        bfloat16 bit patterns (a bf16 checkpoint's table as stored). Not
        changed; a non-contiguous block is copied, an integer one converted
        to float64, a float16 one read as it is where the CPU converts
        halves itself (F16C, AArch64) and copied to float32 elsewhere (exact).
    out : np.ndarray, shape (b,), float64, optional
        Written in place where given (C-contiguous); else a fresh array.
    bf16 : bool
        ``rows`` are bfloat16 bits: entry ``(i, j)`` is the float32 with bits
        ``rows[i, j] << 16``.
    compiled : bool
        Run the compiled loop where this process has it (False: NumPy's; the
        bits are the same either way).

    Returns
    -------
    np.ndarray, shape (b,), float64
        ``out`` or a fresh array. inf where a sum leaves float64's range, NaN
        where a row holds NaN (or inf and a NaN).

    Raises
    ------
    TypeError
        If ``bf16`` is given bits that are not uint16, or ``out`` is not a
        C-contiguous float64 array of shape (b,).
    ValueError
        If ``rows`` is not 2-D.

    >>> sums_of_squares(np.array([[3.0, 4.0], [1e200, 0.0]])).tolist()
    [25.0, inf]
    >>> sums_of_squares(np.array([[0x3F80, 0xC000]], dtype=np.uint16), bf16=True).tolist()  # 1.0, -2.0
    [5.0]
    """
    if rows.ndim != 2:
        raise ValueError(f"rows must be 2-D (b, D), got shape {rows.shape}")
    if bf16 and rows.dtype != np.uint16:
        raise TypeError(f"bfloat16 bits must be uint16, got dtype {rows.dtype}")
    b, D = rows.shape
    if out is None:
        out = np.empty(b, dtype=np.float64)  # (b,)
    elif out.shape != (b,) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise TypeError(f"out must be a C-contiguous float64 array of shape {(b,)}, got {out.dtype} {out.shape}"
                        f"{'' if out.flags.c_contiguous else ' (strided)'}")
    if b == 0:
        return out
    kind, block = _as_kind(rows, bf16, half=compiled and _HALF_LOOPS.functions() is not None)
    if compiled and _LOOPS.functions() is not None:
        _run(kind, block, out)
    else:
        out[...] = _numpy_sums(_widened(block) if kind == "bf16" else block)
    return out


def compiled() -> bool:
    """Whether this process sums squares with the compiled loop (compiling it if no call has yet)."""
    return _LOOPS.functions() is not None


def kernel_status() -> str:
    """How this process sums squares: "compiled for <cpu> by llvmlite <version>" or "NumPy (<why>)", then how
    float16 rows are read: "; float16 rows: read as they are" or "; float16 rows: copied to float32 (<why>)".

    Compiles the loops if no call has yet (``sums_of_squares``).
    """
    half = ("read as they are" if _HALF_LOOPS.functions() is not None and _LOOPS.functions() is not None
            else f"copied to float32 ({_HALF_LOOPS.status()})")
    return f"{_LOOPS.status()}; float16 rows: {half}"


# --- the order in NumPy -------------------------------------------------------------------------------------------


def _numpy_sums(rows: np.ndarray) -> np.ndarray:
    """The fixed order in NumPy, float32 or float64 rows (b, D) -> (b,) float64, a chunk of rows at a time.

    Holds, for a chunk of c rows, its lanes and one group of 32 columns in
    float64 (two (c, LANES) arrays) and the tree's (c, 8) sums: at most
    ``_CHUNK_ROW_BYTES`` a row of the chunk, c chosen so
    that together they are no larger than one float64 copy of the block
    (``8 b D`` bytes: what ``lengths.norms_bytes`` counts for them).
    """
    b, D = rows.shape
    out = np.empty(b, dtype=np.float64)  # (b,)
    chunk = max(1, min(b, 8 * b * D // _CHUNK_ROW_BYTES))  # rows whose lanes are summed together
    with np.errstate(over="ignore", under="ignore"):  # a sum beyond float64's range is inf, as compiled
        for c0 in range(0, b, chunk):
            out[c0:c0 + chunk] = _chunk_sums(rows[c0:c0 + chunk])
    return out


def _chunk_sums(part: np.ndarray) -> np.ndarray:
    """The fixed order over a chunk of rows (c, D): the lanes in float64, then the tree -> (c,) float64."""
    D = part.shape[1]
    lanes = np.zeros((len(part), LANES), dtype=np.float64)  # (c, 32) lane[l] of each row
    group = lanes  # the first group is squared in the lanes themselves: 0.0 + x**2 is x**2, bit for bit
    for j in range(0, D, LANES):  # one group of 32 entries, in increasing j
        width = min(LANES, D - j)
        if j == LANES:
            group = np.empty_like(lanes)  # (c, 32) one group in float64 (exact), then its squares
        np.copyto(group[:, :width], part[:, j:j + width])  # exact
        if width < LANES and group is not lanes:  # the last group's lanes with no entry add +0.0: unchanged
            group[:, width:] = 0.0  # (whole rows: NumPy copies a strided view it reads and writes in place)
        np.multiply(group, group, out=group)
        if group is not lanes:
            np.add(lanes, group, out=lanes)
    return _tree(lanes)


def _tree(lanes: np.ndarray) -> np.ndarray:
    """The lanes (c, 32) combined as the compiled loop combines them: (c,) float64."""
    t = (lanes[:, 0:8] + lanes[:, 8:16]) + (lanes[:, 16:24] + lanes[:, 24:32])  # (c, 8)
    t = t[:, 0:4] + t[:, 4:8]  # (c, 4)
    t = t[:, 0:2] + t[:, 2:4]  # (c, 2)
    return t[:, 0] + t[:, 1]  # (c,)


def _widened(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits (b, D) uint16 -> the float32 values they are (b, D), exact."""
    out = np.empty(bits.shape, dtype=np.float32)  # (b, D)
    np.left_shift(bits, 16, out=out.view(np.uint32), dtype=np.uint32)
    return out


def _as_kind(rows: np.ndarray, bf16: bool, half: bool) -> tuple[str, np.ndarray]:
    """The block as one of ``KINDS`` (float16 where ``half``: its loop is compiled), C-contiguous and in this
    machine's byte order, copied only where needed."""
    if bf16:
        return "bf16", np.ascontiguousarray(rows, dtype=np.uint16)
    native = rows.dtype.newbyteorder("=")  # a big-endian float is read as the same float in this machine's order
    if native == np.float64 or native == np.float32 or (half and native == np.float16):
        return native.name, np.ascontiguousarray(rows, dtype=native)
    if native == np.float16:
        return "float32", rows.astype(np.float32)  # exact
    return "float64", np.ascontiguousarray(rows, dtype=np.float64)


# --- the compiled loop --------------------------------------------------------------------------------------------

_SIGNATURE = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)  # X, b, D, out
_LOOPS = Loops(lambda triple: [_ir(kind, triple) for kind in KINDS], {f"sums_{kind}": _SIGNATURE for kind in KINDS})
# float16 rows read as they are, where the CPU converts halves itself (F16C, AArch64); elsewhere LLVM would call a
# library function, which ``leaf`` refuses, and float16 blocks are copied to float32 first (exact: the same bits).
_HALF_LOOPS = Loops(lambda triple: [_ir("float16", triple)], {"sums_float16": _SIGNATURE}, leaf=True)


def _run(kind: str, block: np.ndarray, out: np.ndarray) -> None:
    """``out[i]`` = row i's sum, compiled; ``block`` (b, D) C-contiguous of ``kind``. ctypes lets go of the GIL."""
    b, D = block.shape
    loops = _HALF_LOOPS if kind == "float16" else _LOOPS
    loops.functions()[f"sums_{kind}"](block.ctypes.data, b, D, out.ctypes.data)  # type: ignore[index]


def _ir(kind: str, triple: str) -> str:
    """LLVM IR of ``void sums_<kind>(elem *X, i64 b, i64 D, double *out)``: the fixed order, row by row.

    Per row: whole groups of 32 entries into four vectors of 8 lanes (entry j
    of a group into lane j), then the rest of the row one entry at a time
    into the lanes it belongs to (through the lanes' memory), then the tree.
    ``fmul`` and ``fadd`` carry no fast-math flag: LLVM keeps each rounding
    and the order, and fuses no multiply-add.
    """
    from llvmlite import ir

    i16, i32, i64, f32, f64 = ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.DoubleType()
    elem = {"bf16": i16, "float16": ir.HalfType(), "float32": f32, "float64": f64}[kind]
    size = {"bf16": 2, "float16": 2, "float32": 4, "float64": 8}[kind]
    vf64 = ir.VectorType(f64, _VECTOR)
    module = ir.Module(name=f"sums_{kind}")
    module.triple = triple
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [elem.as_pointer(), i64, i64, f64.as_pointer()]),
                           name=f"sums_{kind}")
    X, rows, D, out = function.args
    blocks = {name: function.append_basic_block(name) for name in
              ("entry", "row", "group", "groups_done", "rest", "tree", "done")}

    def widen(builder: ir.IRBuilder, value: Any, lanes: int) -> Any:
        """elem (or <lanes x elem>) -> double (or <lanes x double>), exact."""
        kind_of = (lambda t: ir.VectorType(t, lanes)) if lanes else (lambda t: t)
        if kind == "bf16":  # the bits are a float32's top half
            value = builder.shl(builder.zext(value, kind_of(i32)), ir.Constant(kind_of(i32), 16))
            value = builder.bitcast(value, kind_of(f32))
        return value if kind == "float64" else builder.fpext(value, kind_of(f64))

    def const(n: int) -> ir.Constant:
        return ir.Constant(i64, n)

    b = ir.IRBuilder(blocks["entry"])
    lane_memory = b.alloca(f64, size=LANES)  # (32,) the lanes, for the rest of a row and the tree
    groups = b.udiv(D, const(LANES))
    grouped = b.mul(groups, const(LANES))  # entries in whole groups
    b.cbranch(b.icmp_unsigned(">", rows, const(0)), blocks["row"], blocks["done"])

    b.position_at_end(blocks["row"])
    r = b.phi(i64, name="r")
    r.add_incoming(const(0), blocks["entry"])
    start = b.mul(r, D)  # the row's first entry
    b.cbranch(b.icmp_unsigned(">", groups, const(0)), blocks["group"], blocks["groups_done"])

    b.position_at_end(blocks["group"])  # lanes += the squares of one group of 32, 8 lanes a vector
    g = b.phi(i64, name="g")
    g.add_incoming(const(0), blocks["row"])
    zero = ir.Constant(vf64, [0.0] * _VECTOR)
    lanes = [b.phi(vf64, name=f"lanes{v}") for v in range(LANES // _VECTOR)]  # phis first, as LLVM requires
    summed = []
    at = b.add(start, b.mul(g, const(LANES)))
    for v, lane in enumerate(lanes):
        lane.add_incoming(zero, blocks["row"])
        where = b.bitcast(b.gep(X, [b.add(at, const(v * _VECTOR))]), ir.VectorType(elem, _VECTOR).as_pointer())
        x = widen(b, b.load(where, align=size), _VECTOR)
        summed.append(b.fadd(lane, b.fmul(x, x)))
    g_next = b.add(g, const(1))
    for lane, total in zip(lanes, summed):
        lane.add_incoming(total, blocks["group"])
    g.add_incoming(g_next, blocks["group"])
    b.cbranch(b.icmp_unsigned("<", g_next, groups), blocks["group"], blocks["groups_done"])

    b.position_at_end(blocks["groups_done"])  # the four vectors into the lanes' memory
    finished = [b.phi(vf64) for _ in summed]  # phis first
    for v, (done, total) in enumerate(zip(finished, summed)):
        done.add_incoming(zero, blocks["row"])
        done.add_incoming(total, blocks["group"])
        b.store(done, b.bitcast(b.gep(lane_memory, [const(v * _VECTOR)]), vf64.as_pointer()), align=8)
    b.cbranch(b.icmp_unsigned("<", grouped, D), blocks["rest"], blocks["tree"])

    b.position_at_end(blocks["rest"])  # entries past the last whole group: entry j into lane j - grouped
    j = b.phi(i64, name="j")
    j.add_incoming(grouped, blocks["groups_done"])
    x = widen(b, b.load(b.gep(X, [b.add(start, j)]), align=size), 0)
    lane = b.gep(lane_memory, [b.sub(j, grouped)])
    b.store(b.fadd(b.load(lane, align=8), b.fmul(x, x)), lane, align=8)
    j_next = b.add(j, const(1))
    j.add_incoming(j_next, blocks["rest"])
    b.cbranch(b.icmp_unsigned("<", j_next, D), blocks["rest"], blocks["tree"])

    b.position_at_end(blocks["tree"])  # (l[0:8] + l[8:16]) + (l[16:24] + l[24:32]), then halves
    v = [b.load(b.bitcast(b.gep(lane_memory, [const(k * _VECTOR)]), vf64.as_pointer()), align=8)
         for k in range(LANES // _VECTOR)]
    t = b.fadd(b.fadd(v[0], v[1]), b.fadd(v[2], v[3]))  # <8 x double>
    b.store(halves_sum(b, t, _VECTOR), b.gep(out, [r]), align=8)
    r_next = b.add(r, const(1))
    r.add_incoming(r_next, blocks["tree"])
    b.cbranch(b.icmp_unsigned("<", r_next, rows), blocks["row"], blocks["done"])

    b.position_at_end(blocks["done"])
    b.ret_void()
    return str(module)
