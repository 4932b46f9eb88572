"""float32 scores of (query, row) pairs, read in place: the screens' second look at their survivors.

The bf16 screens (``amx_screen``, ``bf16_screen``) score each entry that
passes their bar again in float32 before pooling it, as the float screen
scores it: ``queries[qi] . W[ids]``, summed in float32. In NumPy that is a
gather of every row (a copy of f x D float32) and an ``einsum``: about 1 us
an entry on minilm (D = 384), more than the product on the tiles itself.
Here a compiled loop (``jit.Loops``, LLVM IR, llvmlite) reads each query and
row where they lie, 16 float32 lanes at a time, the rest one at a time, the
lanes added pairwise; LLVM may fuse each multiply with its add. A float32
sum in some order: within ``gamma_D sum |q_i w_i|`` of the exact product
(Higham 2002, section 3.1), which is all the pool's margin
(``precision.margin``) assumes, as for any GEMM's. Where the loop is not
compiled, or the table is not a C-contiguous float32 array, NumPy's gather
and ``einsum`` run (the same bound).

Glossary: ``V`` vocabulary size, ``D`` model width, ``m`` queries, ``f`` pairs.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..jit import Loops, halves_sum

__all__ = ["pair_dots", "pair_dots64", "compiled", "status", "NUMPY_STEP"]

NUMPY_STEP = 8192  # pairs gathered at a time where NumPy scores them


def pair_dots(W: np.ndarray, queries: np.ndarray, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``out[p] = queries[qi[p]] . W[ids[p]]`` in float32: (V, D), (m, D) float32, (f,), (f,) int64 -> (f,) float32.

    ``W`` any table NumPy can index by rows (a float32 array is read in
    place by the compiled loop; a float16 table, a ``Bf16Matrix`` or a
    float64 one is gathered and converted to float32 a step at a time).
    Raises ``IndexError`` for an id outside the table or a query index
    outside ``queries``, ``ValueError`` for queries that are not an (m, D)
    float32 array.

    >>> W = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    >>> pair_dots(W, np.array([[1.0, 1.0]], dtype=np.float32), np.array([0, 0]), np.array([1, 0])).tolist()
    [7.0, 3.0]
    """
    return _pairs(W, queries, qi, ids, np.float32)


def pair_dots64(W: np.ndarray, queries: np.ndarray, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``out[p] = queries[qi[p]] . W[ids[p]]`` in float64: (V, D), (m, D) float64, (f,), (f,) int64 -> (f,) float64.

    The rescoring's dot products (``rescore.Rescorer.scores``): each row
    widened to float64 (exact from float32, float16 or bfloat16), products
    and sums in float64, the sum in a fixed order (8 lanes, added pairwise,
    then the rest), no multiply fused with its add; within ``gamma_D sum |q_i
    w_i|`` (float64's gamma) of the exact product (Higham 2002, section 3.1),
    as NumPy's ``einsum`` is. A C-contiguous float32 table is read in place by
    the compiled loop (no f x D float64 gather); any other table (or a process
    without the loop) is gathered a step at a time and summed by NumPy in the
    loop's order, so a pair scores the same bits whatever the table's layout. Raises as ``pair_dots``, for
    queries that are not an (m, D) float64 array.

    >>> W = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    >>> pair_dots64(W, np.array([[0.5, 0.25]]), np.array([0, 0]), np.array([1, 0])).tolist()
    [2.5, 1.0]
    """
    return _pairs(W, queries, qi, ids, np.float64)


def _pairs(W: np.ndarray, queries: np.ndarray, qi: np.ndarray, ids: np.ndarray, dtype: type) -> np.ndarray:
    """``pair_dots`` (dtype float32) and ``pair_dots64`` (float64): checks, then the compiled loop or NumPy."""
    queries = np.asarray(queries)
    name = np.dtype(dtype).name
    if queries.dtype != dtype or queries.ndim != 2 or queries.shape[1] != W.shape[1]:
        raise ValueError(f"queries must be a (m, {W.shape[1]}) {name} array, got {queries.dtype} {queries.shape}")
    qi = np.ascontiguousarray(qi, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    f = ids.size
    if qi.size != f:
        raise ValueError(f"qi and ids must be as long as each other, got {qi.size} and {f}")
    out = np.empty(f, dtype=dtype)
    if not f:
        return out
    for label, index, size in (("ids", ids, len(W)), ("qi", qi, len(queries))):
        low, high = int(index.min()), int(index.max())
        if low < 0 or high >= size:
            raise IndexError(f"{label} must lie in [0, {size}), got {low if low < 0 else high}")
    functions = _LOOPS.functions()
    if (functions is not None and isinstance(W, np.ndarray) and W.dtype == np.float32 and W.flags.c_contiguous
            and queries.flags.c_contiguous):
        loop = functions["pair_dots_f32" if dtype is np.float32 else "pair_dots_f64"]
        loop(W.ctypes.data, queries.ctypes.data, qi.ctypes.data, ids.ctypes.data, f, W.shape[1], out.ctypes.data)
        return out
    for s in range(0, f, NUMPY_STEP):
        rows = np.asarray(W[ids[s:s + NUMPY_STEP]], dtype=dtype)  # (p, D)
        if dtype is np.float64:  # the loop's own order: the same scores whatever the table's layout
            products = queries[qi[s:s + NUMPY_STEP]]  # (p, D) a gathered copy, multiplied in place
            products *= rows
            out[s:s + NUMPY_STEP] = _in_loop_order(products)
        else:
            out[s:s + NUMPY_STEP] = np.einsum("ij,ij->i", queries[qi[s:s + NUMPY_STEP]], rows)
    return out


def _in_loop_order(products: np.ndarray) -> np.ndarray:
    """Each row of products (p, D) float64 summed as ``pair_dots_f64`` sums it -> (p,): 8 lanes, lane j adding
    entries j, j + 8, ... of the whole vectors in turn; the lanes added pairwise (``[0:4] + [4:8]``, then
    ``[0:2] + [2:4]``, then ``[0] + [1]``); then the rest one at a time."""
    lanes_n = _LANES["f64"]
    whole = products.shape[1] // lanes_n * lanes_n
    lanes = np.zeros((len(products), lanes_n))
    for j in range(0, whole, lanes_n):
        lanes += products[:, j:j + lanes_n]
    while lanes.shape[1] > 1:
        half = lanes.shape[1] // 2
        lanes = lanes[:, :half] + lanes[:, half:]
    total = lanes[:, 0]
    for t in range(whole, products.shape[1]):
        total = total + products[:, t]
    return total


def compiled() -> bool:
    """Whether this process has the compiled loop (compiling it on the first call)."""
    return _LOOPS.functions() is not None


def status() -> str:
    """"compiled for <cpu> by llvmlite <version>", or "NumPy (<why not>)"."""
    return _LOOPS.status()


_LANES = {"f32": 16, "f64": 8}  # one 512-bit vector of the sum's type


def _ir(triple: str) -> list[str]:
    """LLVM IR of the two loops, one module:

    - ``void pair_dots_f32(float *W, float *Q, i64 *qi, i64 *ids, i64 f, i64 D, float *out)``: float32 sums, each
      multiply free to fuse with its add (``contract``);
    - ``void pair_dots_f64(float *W, double *Q, i64 *qi, i64 *ids, i64 f, i64 D, double *out)``: float32 rows
      widened to float64 (exactly), float64 queries, float64 products and sums, none fused (the same sums on
      every CPU with or without FMA).

    For each pair p, the row ``ids[p]`` and the query ``qi[p]`` (rows of D entries each), a vector of lanes at a
    time over the whole vectors, then the lanes added pairwise (``halves_sum``), then the rest one at a time."""
    from llvmlite import ir

    module = ir.Module(name="pair_scores")
    module.triple = triple
    _pair_loop(module, "f32")
    _pair_loop(module, "f64")
    return [str(module)]


def _pair_loop(module, kind: str) -> None:
    """Add ``pair_dots_<kind>`` to ``module`` (``_ir``)."""
    from llvmlite import ir

    i64, f32 = ir.IntType(64), ir.FloatType()
    acc_t = f32 if kind == "f32" else ir.DoubleType()
    lanes_n = _LANES[kind]
    vec, row_vec = ir.VectorType(acc_t, lanes_n), ir.VectorType(f32, lanes_n)
    flags = ("contract",) if kind == "f32" else ()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32.as_pointer(), acc_t.as_pointer(), i64.as_pointer(),
                                                            i64.as_pointer(), i64, i64, acc_t.as_pointer()]),
                     name=f"pair_dots_{kind}")
    W, Q, qi, ids, f, D, out = fn.args
    entry, pair, vloop, vdone, tail, tbody, store, done = (fn.append_basic_block(name) for name in (
        "entry", "pair", "vloop", "vdone", "tail", "tbody", "store", "done"))
    b = ir.IRBuilder(entry)
    whole = b.and_(D, ir.Constant(i64, -lanes_n))  # entries in whole vectors
    b.cbranch(b.icmp_signed(">", f, ir.Constant(i64, 0)), pair, done)

    b.position_at_end(pair)
    p = b.phi(i64, "p")
    p.add_incoming(ir.Constant(i64, 0), entry)
    q_row = b.gep(Q, [b.mul(b.load(b.gep(qi, [p])), D)])
    w_row = b.gep(W, [b.mul(b.load(b.gep(ids, [p])), D)])
    zero = ir.Constant(vec, [0.0] * lanes_n)
    b.cbranch(b.icmp_signed(">", whole, ir.Constant(i64, 0)), vloop, vdone)

    def widened(value, wide):
        return value if kind == "f32" else b.fpext(value, wide)

    b.position_at_end(vloop)
    j = b.phi(i64, "j")
    acc = b.phi(vec, "acc")
    j.add_incoming(ir.Constant(i64, 0), pair)
    acc.add_incoming(zero, pair)
    a = b.load(b.bitcast(b.gep(q_row, [j]), vec.as_pointer()), align=4)
    c = widened(b.load(b.bitcast(b.gep(w_row, [j]), row_vec.as_pointer()), align=4), vec)
    acc_next = b.fadd(acc, b.fmul(a, c, flags=flags), flags=flags)
    j_next = b.add(j, ir.Constant(i64, lanes_n))
    j.add_incoming(j_next, vloop)
    acc.add_incoming(acc_next, vloop)
    b.cbranch(b.icmp_signed("<", j_next, whole), vloop, vdone)

    b.position_at_end(vdone)
    lanes = b.phi(vec, "lanes")
    lanes.add_incoming(zero, pair)
    lanes.add_incoming(acc_next, vloop)
    first = halves_sum(b, lanes, lanes_n)
    b.branch(tail)

    b.position_at_end(tail)
    t = b.phi(i64, "t")
    total = b.phi(acc_t, "total")
    t.add_incoming(whole, vdone)
    total.add_incoming(first, vdone)
    b.cbranch(b.icmp_signed("<", t, D), tbody, store)

    b.position_at_end(tbody)
    term = b.fmul(b.load(b.gep(q_row, [t])), widened(b.load(b.gep(w_row, [t])), acc_t), flags=flags)
    t.add_incoming(b.add(t, ir.Constant(i64, 1)), tbody)
    total.add_incoming(b.fadd(total, term, flags=flags), tbody)
    b.branch(tail)

    b.position_at_end(store)
    b.store(total, b.gep(out, [p]))
    p_next = b.add(p, ir.Constant(i64, 1))
    p.add_incoming(p_next, store)
    b.cbranch(b.icmp_signed("<", p_next, f), pair, done)

    b.position_at_end(done)
    b.ret_void()


_P, _I = ctypes.c_void_p, ctypes.c_int64
_LOOPS = Loops(_ir, {"pair_dots_f32": (_P, _P, _P, _P, _I, _I, _P),
                     "pair_dots_f64": (_P, _P, _P, _P, _I, _I, _P)})
