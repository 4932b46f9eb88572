"""A candidate pool's entries put in place one at a time by a compiled loop: the AMX screen's survivors pooled.

``pool.CandidatePool.add`` merges a batch of survivors into the pool with
NumPy: a sort of the batch and the pool's rows by query and score, each
query's k-th best, a filter. Where each batch is tens of thousands of
entries, a few per query (the AMX screen's parts of output), that costs
about 0.4 us an entry, more than the entries' float32 scores. Here a
compiled loop (``jit.Loops``, LLVM IR text, llvmlite) takes the entries in
order and keeps the same invariant as ``add``: each query's slots hold its
best screening scores in descending order, and an entry more than two
margins below the k-th best of them (the query's *floor*, ``kth - 2 eps``)
is dropped, for good, as ``add`` drops it.

For each entry (query q, row id, score s):

- ``s`` below q's floor (or NaN): dropped;
- q's slots all filled: the entry is handed back (``insert`` returns its
  place) for ``CandidatePool.add``, which settles more near-ties than slots
  exactly;
- else it goes into its place among the slots (the lower ones move down one),
  and where q has k entries, the floor rises to ``kth - 2 eps`` if that is
  higher, and the slots below it are emptied.

Every row left out is beaten, in exact ``(-score, id)`` order, by the k rows
that set the floor (``pool``'s ``2 eps`` rule), so the pool's exact top-k is
that of the rows it has seen, whatever the order of the entries.

Glossary: ``m`` queries, ``P`` slots a query (``pool.pool_slots``), ``K`` top-k, ``f`` entries.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..jit import Loops
from .pool import CandidatePool

__all__ = ["insert", "compiled", "status"]


def insert(pool: CandidatePool, qi: np.ndarray, ids: np.ndarray, scores: np.ndarray,
           eps: np.ndarray) -> np.ndarray | None:
    """Put the entries (f,) into ``pool`` in place, in order -> the places (g,) int64 of those left for
    ``CandidatePool.add`` (their queries' slots were full), or None where the loop is not compiled (nothing
    done: ``add`` them all).

    ``qi`` (f,) the entries' query places (any order), ``ids`` (f,) their
    row ids, ``scores`` (f,) float32 or float64 screening scores, ``eps``
    (m,) float64 each query's margin (``kth - 2 eps`` is its floor). Raises
    ``IndexError`` for a query place outside the pool, ``ValueError`` for
    arrays of other lengths and a pool whose ids and scores are not
    C-contiguous (m, P) int64 and float64 arrays (the loop writes them).

    >>> pool = CandidatePool(1, 1)
    >>> insert(pool, np.array([0, 0, 0]), np.array([5, 6, 7]), np.array([0.5, 0.9, 0.1]), np.array([0.25])).size
    0
    >>> pool.ids[0, :3].tolist(), pool.scores[0, :2].tolist()
    ([6, 5, -1], [0.9, 0.5])
    """
    functions = _LOOPS.functions()
    if functions is None:
        return None
    m, P = pool.ids.shape
    qi = np.ascontiguousarray(qi, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    eps2 = np.ascontiguousarray(2 * np.asarray(eps, dtype=np.float64))
    f = qi.size
    if ids.size != f or scores.size != f or eps2.size != m:
        raise ValueError(f"qi, ids and scores must be as long as each other and eps as the pool's {m} queries, "
                         f"got {qi.size}, {ids.size}, {scores.size} and {eps2.size}")
    over = np.empty(f, dtype=np.int64)
    if not f:
        return over
    low, high = int(qi.min()), int(qi.max())
    if low < 0 or high >= m:
        raise IndexError(f"qi must lie in [0, {m}), got {low if low < 0 else high}")
    for name, a, dtype in (("ids", pool.ids, np.int64), ("scores", pool.scores, np.float64)):
        if a.dtype != dtype or a.shape != (m, P) or not a.flags.c_contiguous:  # the loop writes (m, P) of them
            raise ValueError(f"the pool's {name} must be a C-contiguous ({m}, {P}) {np.dtype(dtype).name} array, got "
                             f"{a.dtype} {a.shape}{'' if a.flags.c_contiguous else ' not C-contiguous'}")
    k = pool.k
    with np.errstate(invalid="ignore"):  # -inf - inf: no floor yet
        floor = np.ascontiguousarray(pool.scores[:, k - 1] - eps2)  # (m,) each query's floor
    count = np.zeros(1, dtype=np.int64)
    functions["pool_insert"](qi.ctypes.data, ids.ctypes.data, scores.ctypes.data, f, pool.ids.ctypes.data,
                             pool.scores.ctypes.data, P, k, eps2.ctypes.data, floor.ctypes.data, over.ctypes.data,
                             count.ctypes.data)
    return over[:int(count[0])]


def compiled() -> bool:
    """Whether this process has the compiled loop (compiling it on the first call)."""
    return _LOOPS.functions() is not None


def status() -> str:
    """"compiled for <cpu> by llvmlite <version>", or "NumPy (<why not>)"."""
    return _LOOPS.status()


# The loop, with its locals on the stack (loads and stores of a few bytes: the loop is scalar).
_IR = """
define void @pool_insert(i64* %qi, i64* %ids, double* %s, i64 %f, i64* %pid, double* %psc, i64 %P, i64 %k,
                         double* %eps2, double* %floor, i64* %over, i64* %nover) {
entry:
  %p = alloca i64
  %j = alloca i64
  %n = alloca i64
  store i64 0, i64* %p
  store i64 0, i64* %n
  %last = sub i64 %P, 1
  %kl = sub i64 %k, 1
  br label %loop
loop:
  %pv = load i64, i64* %p
  %more = icmp slt i64 %pv, %f
  br i1 %more, label %body, label %done
body:
  %qa = getelementptr i64, i64* %qi, i64 %pv
  %qq = load i64, i64* %qa
  %ia = getelementptr i64, i64* %ids, i64 %pv
  %id = load i64, i64* %ia
  %sa = getelementptr double, double* %s, i64 %pv
  %sv = load double, double* %sa
  %fa = getelementptr double, double* %floor, i64 %qq
  %fl = load double, double* %fa
  %pass = fcmp oge double %sv, %fl
  br i1 %pass, label %check, label %next
check:
  %base = mul i64 %qq, %P
  %lasti = add i64 %base, %last
  %lastp = getelementptr i64, i64* %pid, i64 %lasti
  %lastid = load i64, i64* %lastp
  %full = icmp sge i64 %lastid, 0
  br i1 %full, label %overflow, label %shiftinit
overflow:
  %nv = load i64, i64* %n
  %oa = getelementptr i64, i64* %over, i64 %nv
  store i64 %pv, i64* %oa
  %nv1 = add i64 %nv, 1
  store i64 %nv1, i64* %n
  br label %next
shiftinit:
  store i64 %last, i64* %j
  br label %shift
shift:
  %jv = load i64, i64* %j
  %atstart = icmp eq i64 %jv, 0
  br i1 %atstart, label %place, label %shiftcheck
shiftcheck:
  %jm = sub i64 %jv, 1
  %bm = add i64 %base, %jm
  %idmp = getelementptr i64, i64* %pid, i64 %bm
  %idm = load i64, i64* %idmp
  %scmp = getelementptr double, double* %psc, i64 %bm
  %sm = load double, double* %scmp
  %empty = icmp slt i64 %idm, 0
  %lower = fcmp olt double %sm, %sv
  %moves = or i1 %empty, %lower
  br i1 %moves, label %doshift, label %place
doshift:
  %bj = add i64 %base, %jv
  %idjp = getelementptr i64, i64* %pid, i64 %bj
  store i64 %idm, i64* %idjp
  %scjp = getelementptr double, double* %psc, i64 %bj
  store double %sm, double* %scjp
  store i64 %jm, i64* %j
  br label %shift
place:
  %jp = load i64, i64* %j
  %bp = add i64 %base, %jp
  %idpp = getelementptr i64, i64* %pid, i64 %bp
  store i64 %id, i64* %idpp
  %scpp = getelementptr double, double* %psc, i64 %bp
  store double %sv, double* %scpp
  %bk = add i64 %base, %kl
  %kidp = getelementptr i64, i64* %pid, i64 %bk
  %kid = load i64, i64* %kidp
  %has = icmp sge i64 %kid, 0
  br i1 %has, label %raise, label %next
raise:
  %kscp = getelementptr double, double* %psc, i64 %bk
  %kth = load double, double* %kscp
  %ea = getelementptr double, double* %eps2, i64 %qq
  %e = load double, double* %ea
  %nf = fsub double %kth, %e
  %higher = fcmp ogt double %nf, %fl
  br i1 %higher, label %setfloor, label %next
setfloor:
  store double %nf, double* %fa
  store i64 %last, i64* %j
  br label %trunc
trunc:
  %jt = load i64, i64* %j
  %inrange = icmp sge i64 %jt, %k
  br i1 %inrange, label %truncbody, label %next
truncbody:
  %bt = add i64 %base, %jt
  %tidp = getelementptr i64, i64* %pid, i64 %bt
  %tid = load i64, i64* %tidp
  %filled = icmp sge i64 %tid, 0
  br i1 %filled, label %trunccmp, label %truncnext
trunccmp:
  %tscp = getelementptr double, double* %psc, i64 %bt
  %ts = load double, double* %tscp
  %below = fcmp olt double %ts, %nf
  br i1 %below, label %truncclear, label %next
truncclear:
  store i64 -1, i64* %tidp
  store double 0xFFF0000000000000, double* %tscp
  br label %truncnext
truncnext:
  %jt1 = sub i64 %jt, 1
  store i64 %jt1, i64* %j
  br label %trunc
next:
  %pv1 = add i64 %pv, 1
  store i64 %pv1, i64* %p
  br label %loop
done:
  %nfinal = load i64, i64* %n
  store i64 %nfinal, i64* %nover
  ret void
}
"""


def _ir(triple: str) -> list[str]:
    """The loop's module for ``triple``."""
    return [f'target triple = "{triple}"\n' + _IR]


_P, _I = ctypes.c_void_p, ctypes.c_int64
_LOOPS = Loops(_ir, {"pool_insert": (_P, _P, _P, _I, _P, _P, _I, _I, _P, _P, _P, _P)})
