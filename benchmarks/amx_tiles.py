"""A bfloat16 product with float32 results on the CPU's AMX tiles, for ``products.py`` only (not embedlab's code).

What a first pass on AMX of our own would start from: ``C = bf16(Q) @ bf16(W).T``
accumulated in float32 by ``tdpbf16ps`` (no rounding of the result to
bfloat16, which torch's CPU matmul does), compiled from LLVM IR by llvmlite
(numba's LLVM: its ``.internal`` AMX intrinsics, the tile configuration left to
LLVM). Two by two tiles of C at a time (16 x 16 float32 each), the outer loop
over pairs of column tiles so that their packed rows stay in cache while every
pair of query tiles streams by. ``stored=False`` writes every tile of C over
the same cache lines, as a fused filter would read them and go on: the
product without the cost of writing V x N float32 scores to memory.

Linux asks a process to request the tiles' state first
(``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``); ``available()`` does
and says why not where it cannot. Shapes are padded: N and V to multiples of
32, D to a multiple of 32.
"""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA, SYS_ARCH_PRCTL = 0x1023, 18, 158

IR = r'''
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, i8*, i64)
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tdpbf16ps.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, i8*, i64, x86_amx)

; C (M x N fp32, row stride ldc bytes) = A (M x K bf16, row stride lda bytes) . B^T, B packed:
; packed[nt][kp][n][2]. M multiple of 32, N multiple of 32, K multiple of 32. 2 x 2 tiles of C at a time;
; the outer loop over pairs of N tiles keeps their B panel in cache while every A row pair streams by.
define void @gemm(i8* %A, i64 %lda, i8* %B, i8* %C, i64 %ldc, i64 %M, i64 %N, i64 %K) {
entry:
  %mt = udiv i64 %M, 32
  %nt = udiv i64 %N, 32
  %kt = udiv i64 %K, 32
  %bstride = mul i64 %K, 32   ; bytes of one packed N-tile
  %arow16 = mul i64 %lda, 16
  %crow16 = mul i64 %ldc, 16
  br label %loop_j
loop_j:
  %j = phi i64 [0, %entry], [%j_next, %end_i]
  %bj0 = mul i64 %j, 2
  %bo0 = mul i64 %bj0, %bstride
  %bo1 = add i64 %bo0, %bstride
  br label %loop_i
loop_i:
  %i = phi i64 [0, %loop_j], [%i_next, %end_k]
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 16, i16 64)
  %ar0 = mul i64 %i, 32
  %ao0 = mul i64 %ar0, %lda
  %ao1 = add i64 %ao0, %arow16
  br label %loop_k
loop_k:
  %k = phi i64 [0, %loop_i], [%k_next, %loop_k]
  %c00 = phi x86_amx [%z, %loop_i], [%n00, %loop_k]
  %c01 = phi x86_amx [%z, %loop_i], [%n01, %loop_k]
  %c10 = phi x86_amx [%z, %loop_i], [%n10, %loop_k]
  %c11 = phi x86_amx [%z, %loop_i], [%n11, %loop_k]
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
  %n00 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c00, x86_amx %a0, x86_amx %b0)
  %n01 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c01, x86_amx %a0, x86_amx %b1)
  %n10 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c10, x86_amx %a1, x86_amx %b0)
  %n11 = call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64, x86_amx %c11, x86_amx %a1, x86_amx %b1)
  %k_next = add i64 %k, 1
  %kdone = icmp eq i64 %k_next, %kt
  br i1 %kdone, label %end_k, label %loop_k
end_k:
  %co0 = mul i64 %ar0, %ldc
  %cc0 = mul i64 %bj0, 64
  %co00 = add i64 %co0, %cc0
  %co01 = add i64 %co00, 64
  %co10 = add i64 %co00, %crow16
  %co11 = add i64 %co10, 64
  %p00 = getelementptr i8, i8* %C, i64 %co00
  %p01 = getelementptr i8, i8* %C, i64 %co01
  %p10 = getelementptr i8, i8* %C, i64 %co10
  %p11 = getelementptr i8, i8* %C, i64 %co11
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p00, i64 %ldc, x86_amx %n00)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p01, i64 %ldc, x86_amx %n01)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p10, i64 %ldc, x86_amx %n10)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, i8* %p11, i64 %ldc, x86_amx %n11)
  %i_next = add i64 %i, 1
  %idone = icmp eq i64 %i_next, %mt
  br i1 %idone, label %end_i, label %loop_i
end_i:
  %j_next = add i64 %j, 1
  %jdone = icmp eq i64 %j_next, %nt
  br i1 %jdone, label %exit, label %loop_j
exit:
  ret void
}
'''


def available() -> str | None:
    """None where this process may run AMX tiles, else why not (flags, permission, llvmlite)."""
    try:
        flags = open("/proc/cpuinfo", encoding="utf-8").read().split()
    except OSError:
        return "no /proc/cpuinfo"
    if "amx_bf16" not in flags:
        return "the CPU has no AMX-BF16"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0:
        return f"arch_prctl refused the tiles (errno {ctypes.get_errno()})"
    try:
        import llvmlite.binding  # noqa: F401
    except ImportError:
        return "no llvmlite"
    return None


def _compile() -> Callable:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(IR)
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    gemm = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("gemm"))
    gemm.engine = engine  # keeps the compiled code alive
    return gemm


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 (finite) -> bfloat16 bits, to nearest even: (..., D) uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def product(Q: np.ndarray, W: np.ndarray, threads: int, *, stored: bool) -> tuple[Callable[[], None], np.ndarray]:
    """A run of ``bf16(Q) @ bf16(W).T`` on the tiles over ``threads`` threads (query rows split), and C.

    Q (N, D), W (V, D) float32 -> C (N', V') float32, N' and V' padded to 32 (the
    padding rows and columns hold zeros' products). ``stored=False``: C's
    tiles are written over a small buffer per thread instead (C then holds
    nothing of use).
    """
    gemm = _compile()
    N, D = Q.shape
    V = len(W)
    n, v, d = -(-N // 32) * 32, -(-V // 32) * 32, -(-D // 32) * 32
    q = np.zeros((n, d), np.uint16)
    q[:N, :D] = bf16_bits(Q)
    w = np.zeros((v, d), np.uint16)
    w[:V, :D] = bf16_bits(W)
    packed = np.ascontiguousarray(w.reshape(v // 16, 16, d // 2, 2).transpose(0, 2, 1, 3))  # [vt][d pair][row][2]
    C = np.zeros((n, v), np.float32)
    scratch = [np.zeros(v * 16 + 64, np.float32) for _ in range(threads)]  # one per thread: no shared lines
    step = -(-n // (32 * threads)) * 32
    parts = [(a, min(n, a + step)) for a in range(0, n, step)]

    def part(t: int) -> None:
        a, b = parts[t]
        out, ldc = (C[a:b], v * 4) if stored else (scratch[t], 0)
        gemm(q[a:b].ctypes.data, d * 2, packed.ctypes.data, out.ctypes.data, ldc, b - a, v, d)

    def run() -> None:
        with ThreadPoolExecutor(len(parts)) as pool:
            list(pool.map(part, range(len(parts))))

    return run, C
