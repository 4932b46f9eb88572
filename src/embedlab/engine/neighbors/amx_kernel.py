"""The bf16 screen's pass on the AMX tiles: bfloat16 products summed in float32, each score filtered while in cache.

A first pass of ``amx_screen``: for a chunk of rows (bfloat16 bits, v x D)
and a block of queries (bfloat16 bits, m x D), every screening score

    s~[r, i] = fl32(fl32(P[r, i] * qinv[i]) * rinv[r]),   P = bf16(W) @ bf16(Q).T summed in float32

is compared with its query's bar, and only the entries at or above it leave
the kernel, as (row, query, score) triples. The product runs on the CPU's
AMX tiles (``tdpbf16ps``: 16 x 16 float32 scores from 16 x 32 bfloat16 of
each side, the products exact, each addition one float32 rounding, inputs
and results below 2**-126 flushed to zero), two by two tiles of scores at
a time (32 rows x 32 queries: four accumulators, two tiles of rows and two
of queries, the 8 tile registers); each block of scores is stored over the
same 4 KiB of the stack and read back by AVX-512 while it is in L1: the
v x m scores are never written to memory. The loop over queries is inside
the loop over rows, so a pair of row tiles (32 rows) stays in L1 while the
queries (packed once, ``PackedQueries``) stream from L2; the next pair of
row tiles is prefetched meanwhile (measured here: 0.088 -> 0.049 s for
1,000 x 30,522 x 384 on one core).

What it computes is what ``screen_rows_software`` computes in NumPy (the
same bfloat16 values, float32 sums in another order, the same two float32
scalings in the same order): both are within ``precision.bf16_value_margin``
(``product_rounded=False``) of the exact score, which is all the screen
relies on; the tests run both on every CPU that has the tiles and the
software one everywhere.

The kernel is LLVM IR compiled for this CPU by ``jit.Loops`` (llvmlite), with
LLVM's ``.internal`` AMX intrinsics (the tile configuration is LLVM's);
Linux lends a process the tiles' state only on request
(``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``, Linux 5.16), which
``status()`` makes once. Where the CPU has no AMX-BF16, Linux refuses, or
llvmlite is missing, ``status()`` says why and the screen is not chosen.

Glossary: ``v`` rows in a chunk, ``m`` queries (``m_pad``: padded to 32),
``D`` model width (``D_pad``: padded to 32).
"""

from __future__ import annotations

import ctypes
import platform
import sys
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..cpu import cpu_flags
from ..jit import Loops, Once
from .precision import round_bf16

__all__ = ["PackedQueries", "pack_queries", "screen_rows", "screen_parts", "screen_rows_software", "status", "compiled",
           "bf16_bits", "scores_software", "kernel_parts", "joined", "PAIR", "WIDTH_STEP"]

PAIR = 32  # rows (and queries) of a pair of tiles: the kernel takes rows and queries 32 at a time
WIDTH_STEP = 32  # bfloat16 entries of a tile's row (64 bytes): D is padded to a multiple of it
ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA, SYS_ARCH_PRCTL = 0x1023, 18, 158  # Linux x86-64, arch/x86/include/uapi
PREFETCH_LINES = 2  # cache lines of the next pair of row tiles prefetched per step of the product


@dataclass(frozen=True)
class PackedQueries:
    """A block of m queries as bfloat16 bits, in both layouts the two ways read.

    Attributes
    ----------
    bits : np.ndarray, shape (m_pad, D_pad), uint16
        The queries' bfloat16 bits, zero-padded (rows m.., columns D..).
    packed : np.ndarray, shape (m_pad // 16, D_pad // 2, 16, 2), uint16
        The same, laid out as the tiles read the right-hand side (pairs of
        entries of 16 queries, ``VNNI`` order): tile j of step t is
        ``packed[j, 16 t:16 t + 16]``, 1 KiB.
    m : int
        Queries (the rest is padding).
    """

    bits: np.ndarray
    packed: np.ndarray
    m: int


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values (..., D) -> their bfloat16 bits (..., D) uint16, rounded to nearest, ties to even.

    Finite values only (the screens run where every length lies in [1e-15,
    1e15]). A float64 array is rounded once, in float64 (``precision.round_bf16``), before.

    >>> bf16_bits(np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.0], dtype=np.float32)).tolist()
    [16256, 16256, 16258, 49152]
    """
    x = np.asarray(x)
    if x.dtype == np.float64:
        x = round_bf16(x)  # exact in float32 after this
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    t = u >> 16  # one uint32 temporary: (u + 0x7FFF + (u >> 16 & 1)) >> 16, in place
    t &= 1
    t += 0x7FFF
    t += u
    t >>= 16
    return t.astype(np.uint16)


def pack_queries(bits: np.ndarray) -> PackedQueries:
    """Queries' bfloat16 bits (m, D) uint16 -> ``PackedQueries``, padded to 32 queries and 32 entries.

    Raises ``ValueError`` for another dtype or shape.
    """
    if bits.dtype != np.uint16 or bits.ndim != 2:
        raise ValueError(f"queries must be bfloat16 bits, a (m, D) uint16 array; got {bits.dtype} {bits.shape}")
    m, D = bits.shape
    m_pad, D_pad = -(-max(m, 1) // PAIR) * PAIR, -(-max(D, 1) // WIDTH_STEP) * WIDTH_STEP
    padded = np.zeros((m_pad, D_pad), dtype=np.uint16)
    padded[:m, :D] = bits
    packed = np.ascontiguousarray(padded.reshape(m_pad // 16, 16, D_pad // 2, 2).transpose(0, 2, 1, 3))
    return PackedQueries(padded, packed, m)


def screen_rows(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray,
                bars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The entries of a chunk at or above their query's bar, on the AMX tiles: (row, query, score) triples.

    Parameters
    ----------
    rows : np.ndarray, shape (v, D_pad), uint16, C-contiguous
        bfloat16 bits of the chunk's rows; v a multiple of 32, ``D_pad`` the
        queries' (padding columns and rows hold zeros).
    queries : PackedQueries
    rinv : np.ndarray, shape (v,), float32
        Each row's factor (cosine: ``float32(1 / |w|)``; dot: 1).
    qinv : np.ndarray, shape (m_pad,), float32
        Each query's factor, applied first (1 where the query is scaled already).
    bars : np.ndarray, shape (m_pad,), float32
        Each query's bar (+inf for padding: nothing passes).

    Returns
    -------
    rows, queries : np.ndarray, shape (f,), int64
        The entries ``s~ >= bar``, in no particular order.
    scores : np.ndarray, shape (f,), float32
        Their screening scores ``s~``.

    Raises
    ------
    RuntimeError
        Where the kernel is not compiled here (``status()`` says why).
    ValueError
        For arrays of another dtype, shape or layout.
    """
    return joined(screen_parts(rows, queries, rinv, qinv, bars))


def screen_parts(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray, bars: np.ndarray,
                 entries: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``screen_rows``' triples a part at a time: at most ``entries`` of them each, the kernel's output reused.

    ``entries`` is at least what one pair of row tiles can yield
    (``PAIR * m_pad``; default four times that): the kernel stops before a
    pair of row tiles whose entries might not fit, hands its part over, and
    goes on from there at the next step, so a caller that pools each part
    before asking for the next holds one part at a time however many entries
    reach the bar (a table of equal rows: all of them). ``bars`` is read at
    each step: a caller may raise it between parts (never lower it). Same
    arguments and errors as ``screen_rows``; each part's arrays are the
    caller's (copies).
    """
    function = _function()
    if function is None:
        raise RuntimeError(f"the AMX kernel does not run here: {status()}")
    yield from kernel_parts(function, WIDTH_STEP, rows, queries, rinv, qinv, bars, entries)


def kernel_parts(function: Any, step: int, rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray,
                 qinv: np.ndarray, bars: np.ndarray, entries: int | None
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``screen_parts`` through a compiled kernel ``function`` of ``amx_screen``'s arguments (this module's, or
    ``avx512_bf16_kernel``'s), whose loop over the width takes ``step`` bfloat16 entries at a time: the arrays
    checked (``ValueError``), the output allocated once, the kernel called again where it stopped."""
    v, m_pad = _check(rows, queries, rinv, qinv, bars)
    D_pad = queries.bits.shape[1]
    need = PAIR * m_pad  # the most entries one pair of row tiles yields
    cap = 4 * need if entries is None else max(need, int(entries))  # 12 bytes an entry
    out_r, out_q = np.empty(cap, dtype=np.int32), np.empty(cap, dtype=np.int32)
    out_s, state = np.empty(cap, dtype=np.float32), np.zeros(2, dtype=np.int64)
    start, pairs = 0, v // PAIR
    while start < pairs:  # the kernel stops before a pair of row tiles that might not fit; go on from there
        function(rows.ctypes.data, D_pad * 2, start, pairs, queries.packed.ctypes.data, m_pad // PAIR,
                 D_pad // step, rinv.ctypes.data, qinv.ctypes.data, bars.ctypes.data, out_r.ctypes.data,
                 out_q.ctypes.data, out_s.ctypes.data, cap, state.ctypes.data)
        count, start = int(state[0]), int(state[1])
        yield out_r[:count].astype(np.int64), out_q[:count].astype(np.int64), out_s[:count].copy()


def joined(parts: Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A kernel's parts (``screen_parts``) as one (rows, queries, scores) triple: int64, int64, float32, each (f,)."""
    parts = list(parts)
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    r, q, s = (np.concatenate(column) for column in zip(*parts))
    return r, q, s


def screen_rows_software(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray,
                         bars: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``screen_rows`` in NumPy, on any CPU: the same bfloat16 values, float32 sums (OpenBLAS's order), the same
    scalings; returns the same (row, query, score) triples, by row then query. Same arguments and errors (no
    ``RuntimeError``)."""
    _check(rows, queries, rinv, qinv, bars)
    S = scores_software(rows, queries, rinv, qinv)  # (v, m_pad)
    r, q = np.nonzero(S >= bars[None, :])
    return r.astype(np.int64), q.astype(np.int64), S[r, q]


def scores_software(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray) -> np.ndarray:
    """Every screening score of ``screen_rows``' arithmetic, in NumPy: rows (v, D_pad) uint16 bits, queries,
    factors (v,) and (m_pad,) float32 -> (v, m_pad) float32, ``fl32(fl32(P * qinv) * rinv)`` with P the
    float32 product of the widened bits (OpenBLAS's order of summation)."""
    wide_rows = (rows.astype(np.uint32) << 16).view(np.float32)  # (v, D_pad) exact
    wide_queries = (queries.bits.astype(np.uint32) << 16).view(np.float32)  # (m_pad, D_pad) exact
    S = wide_rows @ wide_queries.T  # (v, m_pad) float32 sums
    S *= qinv[None, :]  # the query's factor first, then the row's: as the kernel, one rounding each
    S *= rinv[:, None]
    return S


def _check(rows: np.ndarray, queries: PackedQueries, rinv: np.ndarray, qinv: np.ndarray,
           bars: np.ndarray) -> tuple[int, int]:
    """(v, m_pad) after checking every array's dtype, shape and layout; ``ValueError`` naming the first wrong one.

    The queries too: a ``PackedQueries`` built by hand, not by ``pack_queries``, whose bits and packed layout
    disagree would send a kernel reading outside its arrays."""
    bits, packed = queries.bits, queries.packed
    if (not isinstance(bits, np.ndarray) or bits.dtype != np.uint16 or bits.ndim != 2 or not bits.flags.c_contiguous
            or bits.shape[0] <= 0 or bits.shape[0] % PAIR or bits.shape[1] <= 0 or bits.shape[1] % WIDTH_STEP):
        raise ValueError(f"queries.bits must be a C-contiguous (m_pad, D_pad) uint16 array, both positive multiples of "
                         f"{PAIR} (pack_queries builds it); got {getattr(bits, 'dtype', type(bits))} "
                         f"{getattr(bits, 'shape', '')}")
    m_pad, D_pad = bits.shape
    layout = (m_pad // 16, D_pad // 2, 16, 2)
    if (not isinstance(packed, np.ndarray) or packed.dtype != np.uint16 or packed.shape != layout
            or not packed.flags.c_contiguous):
        raise ValueError(f"queries.packed must be a C-contiguous {layout} uint16 array (pack_queries builds it); got "
                         f"{getattr(packed, 'dtype', type(packed))} {getattr(packed, 'shape', '')}")
    if rows.dtype != np.uint16 or rows.ndim != 2 or rows.shape[1] != D_pad or len(rows) % PAIR \
            or not rows.flags.c_contiguous:
        raise ValueError(f"rows must be a C-contiguous (v, {D_pad}) uint16 array of bfloat16 bits with v a multiple "
                         f"of {PAIR}; got {rows.dtype} {rows.shape}")
    for name, array, size in (("rinv", rinv, len(rows)), ("qinv", qinv, m_pad), ("bars", bars, m_pad)):
        if array.dtype != np.float32 or array.shape != (size,) or not array.flags.c_contiguous:
            raise ValueError(f"{name} must be a contiguous ({size},) float32 array; got {array.dtype} {array.shape}")
    return len(rows), m_pad


# The kernel, LLVM IR. One call screens pairs of row tiles [rp0, rp1) against every pair of query tiles; it stops
# before a pair of row tiles whose entries might not fit in the output (cap), or at rp1, and says where in state[1]
# (the entries written in state[0]).
_HEAD = r'''
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, i8*, i64)
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tdpbf16ps.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, i8*, i64, x86_amx)
declare i64 @llvm.cttz.i64(i64, i1)
declare void @llvm.prefetch.p0i8(i8*, i32, i32, i32)

define void @amx_screen(i8* %A, i64 %lda, i64 %rp0, i64 %rp1, i8* %B, i64 %qpairs, i64 %kt,
                        float* %rinv, float* %qinv, float* %bars, i32* %out_r, i32* %out_q, float* %out_s,
                        i64 %cap, i64* %state) {
entry:
  %block = alloca [1024 x float], align 64
  %buf8 = bitcast [1024 x float]* %block to i8*
  %buf = bitcast [1024 x float]* %block to float*
  %need = mul i64 %qpairs, 1024
  %bstride = mul i64 %kt, 1024
  %arow16 = mul i64 %lda, 16
  %plines = udiv i64 %lda, 2
  br label %loop_r
loop_r:
  %rp = phi i64 [%rp0, %entry], [%rp_next, %end_q]
  %count = phi i64 [0, %entry], [%cnt_out3, %end_q]
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
  %rbase0 = mul i64 %rp, 32
  %rbase1 = add i64 %rbase0, 16
  %ao0 = mul i64 %rbase0, %lda
  %ao1 = add i64 %ao0, %arow16
  %next = add i64 %ao1, %arow16
  br label %loop_q
loop_q:
  %qp = phi i64 [0, %go_r], [%qp_next, %after_filter]
  %countq = phi i64 [%count, %go_r], [%cnt_out3, %after_filter]
  %q2 = mul i64 %qp, 32
  %bt0 = mul i64 %qp, 2
  %bo0 = mul i64 %bt0, %bstride
  %bo1 = add i64 %bo0, %bstride
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 16, i16 64)
  br label %loop_k
loop_k:
  %k = phi i64 [0, %loop_q], [%k_next, %loop_k]
  %c00 = phi x86_amx [%z, %loop_q], [%n00, %loop_k]
  %c01 = phi x86_amx [%z, %loop_q], [%n01, %loop_k]
  %c10 = phi x86_amx [%z, %loop_q], [%n10, %loop_k]
  %c11 = phi x86_amx [%z, %loop_q], [%n11, %loop_k]
  %kb = mul i64 %k, 64
  %kb2 = mul i64 %k, 1024
  %pa0o = add i64 %ao0, %kb
  %pa1o = add i64 %ao1, %kb
  %pa0 = getelementptr i8, i8* %A, i64 %pa0o
  %pa1 = getelementptr i8, i8* %A, i64 %pa1o
  %pb0o = add i64 %bo0, %kb2
  %pb1o = add i64 %bo1, %kb2
  %pb0 = getelementptr i8, i8* %B, i64 %pb0o
  %pb1 = getelementptr i8, i8* %B, i64 %pb1o
  %a0 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, i8* %pa0, i64 %lda)
  %a1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, i8* %pa1, i64 %lda)
  %b0 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, i8* %pb0, i64 64)
  %b1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, i8* %pb1, i64 64)
  ; prefetch the next pair of row tiles (32 rows, lda / 2 cache lines), a few lines a step (never faults)
  %qk = mul i64 %qp, %kt
  %step = add i64 %qk, %k
  %line0 = mul i64 %step, PREFETCH
  %line = urem i64 %line0, %plines
  %lineb = mul i64 %line, 64
  %pfo = add i64 %next, %lineb
  %pf = getelementptr i8, i8* %A, i64 %pfo
  call void @llvm.prefetch.p0i8(i8* %pf, i32 0, i32 3, i32 1)
  %pf2 = getelementptr i8, i8* %pf, i64 64
  call void @llvm.prefetch.p0i8(i8* %pf2, i32 0, i32 3, i32 1)
  %n00 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c00, x86_amx %a0, x86_amx %b0)
  %n01 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c01, x86_amx %a0, x86_amx %b1)
  %n10 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c10, x86_amx %a1, x86_amx %b0)
  %n11 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c11, x86_amx %a1, x86_amx %b1)
  %k_next = add i64 %k, 1
  %kdone = icmp eq i64 %k_next, %kt
  br i1 %kdone, label %end_k, label %loop_k
end_k:
  %p1 = getelementptr i8, i8* %buf8, i64 1024
  %p2 = getelementptr i8, i8* %buf8, i64 2048
  %p3 = getelementptr i8, i8* %buf8, i64 3072
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %buf8, i64 64, x86_amx %n00)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p1, i64 64, x86_amx %n01)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p2, i64 64, x86_amx %n10)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p3, i64 64, x86_amx %n11)
  br label %f0_pre
'''

# The filter of tile t of the block (row tile t >> 1, query tile t & 1): each of its 16 rows of scores times the
# queries' factors, times the row's factor, compared with the queries' bars; the entries at or above leave.
_FILTER = r'''
f{t}_pre:
  %cnt_in{t} = phi i64 [{count_in}]
  %bq{t} = add i64 %q2, {q_off}
  %barp{t} = getelementptr float, float* %bars, i64 %bq{t}
  %barpv{t} = bitcast float* %barp{t} to <16 x float>*
  %barv{t} = load <16 x float>, <16 x float>* %barpv{t}, align 4
  %qip{t} = getelementptr float, float* %qinv, i64 %bq{t}
  %qipv{t} = bitcast float* %qip{t} to <16 x float>*
  %qiv{t} = load <16 x float>, <16 x float>* %qipv{t}, align 4
  br label %f{t}_row
f{t}_row:
  %r{t} = phi i64 [0, %f{t}_pre], [%r{t}n, %f{t}_next]
  %c{t} = phi i64 [%cnt_in{t}, %f{t}_pre], [%cnt_out{t}, %f{t}_next]
  %row{t} = add i64 %rbase{row_tile}, %r{t}
  %fo{t} = add i64 %r{t}, {t16}
  %fo{t}b = mul i64 %fo{t}, 16
  %vp{t} = getelementptr float, float* %buf, i64 %fo{t}b
  %vpv{t} = bitcast float* %vp{t} to <16 x float>*
  %v{t} = load <16 x float>, <16 x float>* %vpv{t}, align 64
  %v{t}a = fmul <16 x float> %v{t}, %qiv{t}
  %ri{t}p = getelementptr float, float* %rinv, i64 %row{t}
  %ri{t} = load float, float* %ri{t}p
  %ri{t}v0 = insertelement <16 x float> undef, float %ri{t}, i32 0
  %ri{t}v = shufflevector <16 x float> %ri{t}v0, <16 x float> undef, <16 x i32> zeroinitializer
  %v{t}b = fmul <16 x float> %v{t}a, %ri{t}v
  %m{t} = fcmp oge <16 x float> %v{t}b, %barv{t}
  %mi{t} = bitcast <16 x i1> %m{t} to i16
  %mz{t} = zext i16 %mi{t} to i64
  %any{t} = icmp ne i64 %mz{t}, 0
  br i1 %any{t}, label %f{t}_emit, label %f{t}_next
f{t}_emit:
  %em{t} = phi i64 [%mz{t}, %f{t}_row], [%em{t}n, %f{t}_emit]
  %ec{t} = phi i64 [%c{t}, %f{t}_row], [%ec{t}n, %f{t}_emit]
  %bit{t} = call i64 @llvm.cttz.i64(i64 %em{t}, i1 true)
  %bit{t}32 = trunc i64 %bit{t} to i32
  %s{t} = extractelement <16 x float> %v{t}b, i32 %bit{t}32
  %qid{t} = add i64 %bq{t}, %bit{t}
  %qid{t}32 = trunc i64 %qid{t} to i32
  %row{t}32 = trunc i64 %row{t} to i32
  %orp{t} = getelementptr i32, i32* %out_r, i64 %ec{t}
  store i32 %row{t}32, i32* %orp{t}
  %oqp{t} = getelementptr i32, i32* %out_q, i64 %ec{t}
  store i32 %qid{t}32, i32* %oqp{t}
  %osp{t} = getelementptr float, float* %out_s, i64 %ec{t}
  store float %s{t}, float* %osp{t}
  %ec{t}n = add i64 %ec{t}, 1
  %em{t}m = sub i64 %em{t}, 1
  %em{t}n = and i64 %em{t}, %em{t}m
  %emz{t} = icmp eq i64 %em{t}n, 0
  br i1 %emz{t}, label %f{t}_next, label %f{t}_emit
f{t}_next:
  %cnt_out{t} = phi i64 [%c{t}, %f{t}_row], [%ec{t}n, %f{t}_emit]
  %r{t}n = add i64 %r{t}, 1
  %rd{t} = icmp eq i64 %r{t}n, 16
  br i1 %rd{t}, label %{after}, label %f{t}_row
'''

_TAIL = r'''
after_filter:
  %qp_next = add i64 %qp, 1
  %qdone = icmp eq i64 %qp_next, %qpairs
  br i1 %qdone, label %end_q, label %loop_q
end_q:
  %rp_next = add i64 %rp, 1
  br label %loop_r
}
'''


def _build(triple: str) -> list[str]:
    """The kernel's module for ``triple``: ``_HEAD``, the four tiles' filters, ``_TAIL``."""
    filters = "".join(_FILTER.format(
        t=t, row_tile=t >> 1, q_off=(t & 1) * 16, t16=t * 16,
        count_in="%countq, %end_k" if t == 0 else f"%cnt_out{t - 1}, %f{t - 1}_next",
        after=f"f{t + 1}_pre" if t < 3 else "after_filter") for t in range(4))
    head = _HEAD.replace("PREFETCH", str(PREFETCH_LINES))
    return [f'target triple = "{triple}"\n' + head + filters + _TAIL]


_P, _I = ctypes.c_void_p, ctypes.c_int64
_LOOPS = Loops(_build, {"amx_screen": (_P, _I, _I, _I, _P, _I, _I, _P, _P, _P, _P, _P, _P, _I, _P)})
_state: dict[str, Any] = {}


def _function() -> Any:
    """The compiled kernel where it runs here, else None (``status`` says why)."""
    return _state.get("function") if _READY.get() is None else None


def _why_not() -> str | None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"AMX tiles are asked of Linux on x86-64 only (this is {sys.platform} on {platform.machine()})"
    flags = cpu_flags()
    if not {"amx_bf16", "amx_tile"} <= flags:
        return "the CPU has no AMX-BF16 (/proc/cpuinfo flags amx_tile, amx_bf16)"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0:
        return f"Linux refused the AMX tiles' state (arch_prctl ARCH_REQ_XCOMP_PERM: errno {ctypes.get_errno()})"
    functions = _LOOPS.functions()
    if functions is None:  # jit.Loops says "NumPy (why)": the kernel has no NumPy way, its screen is not chosen
        why = _LOOPS.status()
        return f"not compiled ({why[len('NumPy ('):-1] if why.startswith('NumPy (') else why})"
    _state["function"] = functions["amx_screen"]
    return None


# None where the kernel runs here, else why not: asked once per process (thread-safe; a forked child asks again).
_READY = Once(_why_not)


def compiled() -> bool:
    """Whether ``screen_rows`` runs here: AMX-BF16, the tiles lent by Linux, the kernel compiled."""
    return _READY.get() is None


def status() -> str:
    """"AMX tiles (<how it was compiled>)", or why the kernel does not run here."""
    why = _READY.get()
    return f"AMX tiles, {_LOOPS.status()}" if why is None else why
