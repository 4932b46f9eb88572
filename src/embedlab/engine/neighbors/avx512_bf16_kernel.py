"""The bf16 screen's pass on AVX512-BF16: bfloat16 products summed in float32, each score filtered in registers.

The AMX kernel's peer (``amx_kernel``) for a CPU with AVX512-BF16 and no AMX
(AMD Zen 4 and Zen 5, Intel Cooper Lake): the same arguments, the same
screening scores within the same bound, the same (row, query, score)
triples out. For a chunk of rows (bfloat16 bits, v x D) and a block of
queries (``PackedQueries``), every screening score

    s~[r, i] = fl32(fl32(P[r, i] * qinv[i]) * rinv[r]),   P = bf16(W) @ bf16(Q).T summed in float32

is compared with its query's bar, and only the entries at or above it leave
the kernel.

The product is ``vdpbf16ps`` (Intel SDM, "VDPBF16PS"; AMD implements the
same instruction, and its Zen 4 and 5 were checked here only through the
tests against the exact scores): each of 16 float32 lanes adds the two
products of a pair of bfloat16 entries, the products exact (8-bit
significands), each addition one float32 rounding, subnormal inputs and
results flushed to zero: what the AMX tiles compute, in another order of
summation (a CPU that keeps subnormals or rounds once per pair is only more
exact), so ``precision.bf16_value_margin(...,
product_rounded=False)`` bounds it as it bounds the tiles. A lane is a
query: the queries' packed layout (16 queries' pairs of entries, 64 bytes,
``PackedQueries.packed``) is one register, and a row's pair of entries is
broadcast to the 16 lanes. ``ROWS`` rows by two tiles of 16 queries
are summed at once in ``ROWS * 2`` registers over the whole width, then
scaled and compared with the bars while still in registers (stored once to
a 1 KiB block of the stack, read back from L1): the v x m scores are never
written to memory. The loop over queries runs inside the loop over each 32
rows, which stay in L1 (for D up to about 700) while the queries stream from L2.

It is LLVM IR compiled for this CPU by ``jit.Loops`` (llvmlite). Where the
CPU has no AVX512-BF16 or llvmlite is missing, ``status()`` says why and
the screen is not chosen; ``amx_kernel.screen_rows_software`` computes the
same arithmetic in NumPy on any CPU, which the tests run everywhere.

Glossary: ``v`` rows in a chunk, ``m`` queries (``m_pad``: padded to 32),
``D`` model width (``D_pad``: padded to 32).
"""

from __future__ import annotations

import ctypes
from typing import Any, Iterator

import numpy as np

from ..cpu import cpu_flags
from ..jit import Loops, Once
from .amx_kernel import PAIR, PackedQueries, joined, kernel_parts

__all__ = ["screen_parts", "screen_rows", "status", "compiled", "ROWS"]

ROWS = 8  # rows summed at once: a divisor of PAIR (32), ROWS * 2 registers of sums (the IR's filter is written for
# two tiles of 16 queries, a pair of query tiles, and reads the tile from the lowest bit of the sum's index)
_TILES = 2
assert PAIR % ROWS == 0 and PAIR == 16 * _TILES


def screen_parts(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray, bars: np.ndarray,
                 entries: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``amx_kernel.screen_parts`` on AVX512-BF16: the entries at or above their query's bar, a part at a time.

    Same arguments, output and errors as ``amx_kernel.screen_parts``: rows
    (v, D_pad) uint16 bfloat16 bits, C-contiguous, v a multiple of 32;
    ``queries``; ``rinv`` (v,), ``qinv`` and ``bars`` (m_pad,) float32.
    Yields (rows, queries) int64 and scores float32, each (f,), at most
    ``entries`` (at least ``32 * m_pad``) a part, ``bars`` read again at each
    part. ``RuntimeError`` where the kernel is not compiled here
    (``status()`` says why); ``ValueError`` for arrays of another dtype,
    shape or layout.
    """
    function = _function()
    if function is None:
        raise RuntimeError(f"the AVX512-BF16 kernel does not run here: {status()}")
    yield from kernel_parts(function, 2, rows, queries, rinv, qinv, bars, entries)


def screen_rows(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray,
                bars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``amx_kernel.screen_rows`` on AVX512-BF16: every entry at or above its query's bar, in one triple (the same
    arguments, output and errors)."""
    return joined(screen_parts(rows, queries, rinv, qinv, bars))


# The kernel, LLVM IR. One call screens groups of 32 rows [rp0, rp1) against every pair of query tiles (32
# queries); it stops before 32 rows whose entries might not fit in the output (cap), or at rp1, and says where in
# state[1] (the entries written in state[0]). Within 32 rows and a pair of query tiles: ROWS rows at a time, the
# ROWS x 2 sums in registers over every pair of entries (kt = D_pad / 2 steps), stored to the stack, filtered.
_HEAD = r'''
declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, BF16VEC, BF16VEC)
declare i64 @llvm.cttz.i64(i64, i1)

define void @avx512_bf16_screen(i8* %A, i64 %lda, i64 %rp0, i64 %rp1, i8* %B, i64 %qpairs, i64 %kt,
                                float* %rinv, float* %qinv, float* %bars, i32* %out_r, i32* %out_q, float* %out_s,
                                i64 %cap, i64* %state) {
entry:
  %block = alloca [NSUMS x <16 x float>], align 64
  %buf = bitcast [NSUMS x <16 x float>]* %block to <16 x float>*
  %need = mul i64 %qpairs, 1024
  %tstride = mul i64 %kt, 64
  br label %loop_r
loop_r:
  %rp = phi i64 [%rp0, %entry], [%rp_next, %end_q]
  %count = phi i64 [0, %entry], [%cnt_q, %end_q]
  %atend = icmp eq i64 %rp, %rp1
  br i1 %atend, label %exit, label %room_r
room_r:
  %room = sub i64 %cap, %count
  %full = icmp ult i64 %room, %need
  br i1 %full, label %exit, label %go_r
exit:
  store i64 %count, i64* %state
  %st1 = getelementptr i64, i64* %state, i64 1
  store i64 %rp, i64* %st1
  ret void
go_r:
  %rbase = mul i64 %rp, 32
  br label %loop_q
loop_q:
  %qp = phi i64 [0, %go_r], [%qp_next, %end_s]
  %cnt_q0 = phi i64 [%count, %go_r], [%cnt_s, %end_s]
  %q2 = mul i64 %qp, 32
  %bt0 = mul i64 %qp, 2
  %bo0 = mul i64 %bt0, %tstride
  %bo1 = add i64 %bo0, %tstride
  %barp0 = getelementptr float, float* %bars, i64 %q2
  %barv0p = bitcast float* %barp0 to <16 x float>*
  %barv0 = load <16 x float>, <16 x float>* %barv0p, align 4
  %barp1 = getelementptr float, float* %barp0, i64 16
  %barv1p = bitcast float* %barp1 to <16 x float>*
  %barv1 = load <16 x float>, <16 x float>* %barv1p, align 4
  %qip0 = getelementptr float, float* %qinv, i64 %q2
  %qiv0p = bitcast float* %qip0 to <16 x float>*
  %qiv0 = load <16 x float>, <16 x float>* %qiv0p, align 4
  %qip1 = getelementptr float, float* %qip0, i64 16
  %qiv1p = bitcast float* %qip1 to <16 x float>*
  %qiv1 = load <16 x float>, <16 x float>* %qiv1p, align 4
  br label %loop_s
loop_s:
  %s = phi i64 [0, %loop_q], [%s_next, %f_done]
  %cnt_s0 = phi i64 [%cnt_q0, %loop_q], [%cnt_f, %f_done]
  %sr = mul i64 %s, ROWS
  %srow = add i64 %rbase, %sr
  %ao = mul i64 %srow, %lda
  br label %loop_k
loop_k:
  %k = phi i64 [0, %loop_s], [%k_next, %loop_k]
PHIS
  %kb = mul i64 %k, 64
  %kb4 = mul i64 %k, 4
  %pb0o = add i64 %bo0, %kb
  %pb1o = add i64 %bo1, %kb
  %pb0 = getelementptr i8, i8* %B, i64 %pb0o
  %pb1 = getelementptr i8, i8* %B, i64 %pb1o
  %pb0v = bitcast i8* %pb0 to BF16VEC*
  %pb1v = bitcast i8* %pb1 to BF16VEC*
  %b0 = load BF16VEC, BF16VEC* %pb0v, align 2
  %b1 = load BF16VEC, BF16VEC* %pb1v, align 2
  %pa = add i64 %ao, %kb4
PRODUCTS
  %k_next = add i64 %k, 1
  %kdone = icmp eq i64 %k_next, %kt
  br i1 %kdone, label %end_k, label %loop_k
end_k:
STORES
  br label %f_row
f_row:
  %i = phi i64 [0, %end_k], [%i_next, %f_next]
  %c = phi i64 [%cnt_s0, %end_k], [%cnt_out, %f_next]
  %ri = lshr i64 %i, 1
  %row = add i64 %srow, %ri
  %tile = and i64 %i, 1
  %odd = icmp eq i64 %tile, 1
  %qiv = select i1 %odd, <16 x float> %qiv1, <16 x float> %qiv0
  %barv = select i1 %odd, <16 x float> %barv1, <16 x float> %barv0
  %bq0 = mul i64 %tile, 16
  %bq = add i64 %q2, %bq0
  %vp = getelementptr <16 x float>, <16 x float>* %buf, i64 %i
  %v = load <16 x float>, <16 x float>* %vp, align 64
  %va = fmul <16 x float> %v, %qiv
  %rip = getelementptr float, float* %rinv, i64 %row
  %riv0 = load float, float* %rip
  %riv1 = insertelement <16 x float> undef, float %riv0, i32 0
  %riv = shufflevector <16 x float> %riv1, <16 x float> undef, <16 x i32> zeroinitializer
  %vb = fmul <16 x float> %va, %riv
  %m = fcmp oge <16 x float> %vb, %barv
  %mi = bitcast <16 x i1> %m to i16
  %mz = zext i16 %mi to i64
  %any = icmp ne i64 %mz, 0
  br i1 %any, label %f_emit, label %f_next
f_emit:
  %em = phi i64 [%mz, %f_row], [%emn, %f_emit]
  %ec = phi i64 [%c, %f_row], [%ecn, %f_emit]
  %bit = call i64 @llvm.cttz.i64(i64 %em, i1 true)
  %bit32 = trunc i64 %bit to i32
  %sc = extractelement <16 x float> %vb, i32 %bit32
  %qid = add i64 %bq, %bit
  %qid32 = trunc i64 %qid to i32
  %row32 = trunc i64 %row to i32
  %orp = getelementptr i32, i32* %out_r, i64 %ec
  store i32 %row32, i32* %orp
  %oqp = getelementptr i32, i32* %out_q, i64 %ec
  store i32 %qid32, i32* %oqp
  %osp = getelementptr float, float* %out_s, i64 %ec
  store float %sc, float* %osp
  %ecn = add i64 %ec, 1
  %emm = sub i64 %em, 1
  %emn = and i64 %em, %emm
  %emz = icmp eq i64 %emn, 0
  br i1 %emz, label %f_next, label %f_emit
f_next:
  %cnt_out = phi i64 [%c, %f_row], [%ecn, %f_emit]
  %i_next = add i64 %i, 1
  %idone = icmp eq i64 %i_next, NSUMS
  br i1 %idone, label %f_done, label %f_row
f_done:
  %cnt_f = phi i64 [%cnt_out, %f_next]
  %s_next = add i64 %s, 1
  %sdone = icmp eq i64 %s_next, GROUPS
  br i1 %sdone, label %end_s, label %loop_s
end_s:
  %cnt_s = phi i64 [%cnt_f, %f_done]
  %qp_next = add i64 %qp, 1
  %qdone = icmp eq i64 %qp_next, %qpairs
  br i1 %qdone, label %end_q, label %loop_q
end_q:
  %cnt_q = phi i64 [%cnt_s, %end_s]
  %rp_next = add i64 %rp, 1
  br label %loop_r
}
'''


def _build(triple: str) -> list[str]:
    """The kernel's module for ``triple``: ``_HEAD`` with its ``ROWS`` x 2 sums written out.

    The intrinsic's bfloat16 operands are ``<32 x bfloat>`` from LLVM 17, ``<16 x i32>`` before it.
    """
    import llvmlite.binding as llvm

    vec = "<32 x bfloat>" if llvm.llvm_version_info >= (17,) else "<16 x i32>"
    lanes = "<16 x i32>"
    phis, products, stores = [], [], []
    for r in range(ROWS):
        products += [f"  %pa{r}x = mul i64 {r}, %lda",
                     f"  %pa{r}y = add i64 %pa, %pa{r}x",
                     f"  %pa{r}p = getelementptr i8, i8* %A, i64 %pa{r}y",
                     f"  %pa{r}i = bitcast i8* %pa{r}p to i32*",
                     f"  %pa{r}w = load i32, i32* %pa{r}i, align 2",
                     f"  %pa{r}v0 = insertelement {lanes} undef, i32 %pa{r}w, i32 0",
                     f"  %pa{r}v1 = shufflevector {lanes} %pa{r}v0, {lanes} undef, <16 x i32> zeroinitializer",
                     f"  %a{r} = bitcast {lanes} %pa{r}v1 to {vec}"]
        for t in range(_TILES):
            n = r * _TILES + t
            phis.append(f"  %c{n} = phi <16 x float> [zeroinitializer, %loop_s], [%n{n}, %loop_k]")
            products.append(f"  %n{n} = call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float> %c{n}, "
                            f"{vec} %a{r}, {vec} %b{t})")
            stores += [f"  %sp{n} = getelementptr <16 x float>, <16 x float>* %buf, i64 {n}",
                       f"  store <16 x float> %n{n}, <16 x float>* %sp{n}, align 64"]
    text = (_HEAD.replace("BF16VEC", vec).replace("NSUMS", str(ROWS * _TILES)).replace("GROUPS", str(PAIR // ROWS))
            .replace("ROWS", str(ROWS)).replace("PHIS", "\n".join(phis)).replace("PRODUCTS", "\n".join(products))
            .replace("STORES", "\n".join(stores)))
    return [f'target triple = "{triple}"\n' + text]


_P, _I = ctypes.c_void_p, ctypes.c_int64
_LOOPS = Loops(_build, {"avx512_bf16_screen": (_P, _I, _I, _I, _P, _I, _I, _P, _P, _P, _P, _P, _P, _I, _P)},
               leaf=True)
_state: dict[str, Any] = {}


def _function() -> Any:
    """The compiled kernel where it runs here, else None (``status`` says why)."""
    return _state.get("function") if _READY.get() is None else None


def _why_not() -> str | None:
    if "avx512_bf16" not in cpu_flags():
        return "the CPU has no AVX512-BF16 (/proc/cpuinfo flag avx512_bf16)"
    functions = _LOOPS.functions()
    if functions is None:  # "NumPy (why)": the kernel has no NumPy way of its own, its screen is not chosen
        why = _LOOPS.status()
        return f"not compiled ({why[len('NumPy ('):-1] if why.startswith('NumPy (') else why})"
    _state["function"] = functions["avx512_bf16_screen"]
    return None


# None where the kernel runs here, else why not: asked once per process (thread-safe; a forked child asks again).
_READY = Once(_why_not)


def compiled() -> bool:
    """Whether ``screen_parts`` runs here: AVX512-BF16 and the kernel compiled."""
    return _READY.get() is None


def status() -> str:
    """"AVX512-BF16, <how it was compiled>", or why the kernel does not run here."""
    why = _READY.get()
    return f"AVX512-BF16, {_LOOPS.status()}" if why is None else why
