"""The memory plan of a neighbour search: block sizes and workers that fit a budget.

The front door (``search.Search``) plans each search once, here, and the
rooms that run it follow the plan they are given: ``per_query`` (and each
task of ``cluster``) a ``BlockPlan``, ``self_join`` a ``PairPlan``.

The per-query search cuts its work into blocks of queries (n) x blocks of vocabulary rows
(v), runs blocks of queries on ``workers`` threads, and pools and rescores
candidates a batch at a time. ``plan_search`` picks those sizes so that
everything the search allocates stays under ``memory`` bytes, counting each
part in bytes: the arrays whose size follows V or N and that the search holds
once (``fixed_bytes``: lengths, inverse lengths, the integer screen's per-row
terms, the checks' masks), and each worker's blocks and buffers
(``plan_bytes``). Not counted: the outputs (N, K), and the table and its
codes, which are the table's resident cost (``footprint.ResidentCost``).

Each count is an upper bound of what the code allocates at a time (the
tests trace the search's allocations and compare); the smallest budget that
works is the plan of one query against K + 1 rows on one worker, computed
from the same counts (``BudgetError.minimum``).

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

import numpy as np

from ...errors import BudgetError
from .capability import choose_screen, reason
from .codes import TILE, codes_fit
from ..lengths import norms_bytes
from .pool import pool_slots
from .precision import CHECK_CHUNK, gemm_dtype

__all__ = ["BlockPlan", "plan_search", "plan_blocks", "plan_bytes", "fixed_bytes", "NORMS_BLOCK", "PairPlan",
           "plan_self_join",
           "SCREENS_SELF_JOIN"]

# Preferred score block (queries x rows), measured on 2 cores: big enough
# that per-block overhead is small, small enough to stay in the L3 cache.
_PREFERRED_QUERIES = 1024
_PREFERRED_ROWS = 8192
# Rows spread over the table that set each query's first bar: 1/32 of V, at most 2048
# (it costs a GEMM of its own; a larger sample gained nothing measurable).
_SAMPLE_ROWS = 2048
# Lengths the search measures itself (rows without ``row_norms``, query vectors) are
# widened to float64 a block of this many bytes at a time (``lengths.vector_norms``).
NORMS_BLOCK = 2**16
# Python objects a worker makes per block besides the arrays' data: array headers, index
# tuples, frames (tracemalloc counts them too; about 3 KiB measured at the smallest blocks).
_OBJECTS = 8 * 2**10


@dataclass(frozen=True)
class BlockPlan:
    """How the per-query search (``per_query``) cuts its work to stay within a memory budget.

    Attributes
    ----------
    queries : int
        Queries per block, n.
    rows : int
        Vocabulary rows per block, v.
    sample : int
        Rows spread over the table that set each query's first bar.
    batch : int
        Survivors of the filter pooled at once.
    rescore : int
        Candidates rescored in float64 at once.
    workers : int
        Threads running blocks of queries at once.
    bytes : int
        The most working memory the search needs at a time, in bytes:
        ``fixed`` and every worker's blocks; the outputs (N, K) aside.
    fixed : int
        Of which the arrays held once, whose size follows V or N (``fixed_bytes``).
    screen : str
        ``"float"``, ``"int16"`` or ``"bf16"``: the screen planned for.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    why : str
        Why this screen (``capability.reason``), in words; "" where not said.
    """

    queries: int
    rows: int
    sample: int
    batch: int
    rescore: int
    workers: int
    bytes: int
    fixed: int = 0
    screen: str = "float"
    itemsize: int = 4
    why: str = ""


def plan_search(V: int, D: int, k: int, metric: str, memory: int, *, q_norms: np.ndarray, row_norms: np.ndarray,
                table_dtype: np.dtype, by_id: bool, norms_given: bool = True, codes_given: bool = False,
                screen: str = "auto", workers: int = 1, auto_bf16: bool = True, on_device: bool = False) -> BlockPlan:
    """The plan of one per-query search: its screen, GEMM dtype and blocks, within ``memory`` bytes.

    The screen is ``capability.choose_screen``'s; where ``screen="auto"``
    picked the integer or bf16 screen and its memory does not fit the budget,
    the float screen is planned instead (the result does not depend on the
    screen). The GEMM's dtype is ``precision.gemm_dtype``'s. The bf16 screen
    runs on the plan's workers too: each block on one core's AMX tiles or
    AVX512-BF16 units (``amx_screen``), or torch's matmul on every core (``bf16_screen``).

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    metric : {"cosine", "dot"}
    memory : int
        The budget in bytes.
    q_norms : np.ndarray, shape (N,), float64
        The queries' lengths.
    row_norms : np.ndarray, shape (V,), float64
        The rows' lengths.
    table_dtype : np.dtype
        The table's dtype.
    by_id : bool
        Queries by id (rows of the table gathered a block at a time) or vectors.
    norms_given : bool
        Whether the caller passed ``row_norms`` (else the search measured them: counted).
    codes_given : bool
        Whether the caller passed the table's codes (else the integer screen builds them: counted).
    screen : {"auto", "bf16", "int16", "float"}
    workers : int
        Threads running blocks of queries at most.
    auto_bf16 : bool
        Whether ``"auto"`` may take the bf16 screen (the front door's every-row
        scan, planned apart, keeps its own choice).
    on_device : bool
        Whether the screen runs with torch on a device (``--device``): a bf16
        plan then runs torch's matmul, not embedlab's own bf16 kernel (the ``why``
        says so).

    Raises
    ------
    BudgetError
        (a ``ValueError``) if not even one query against K + 1 rows fits;
        ``minimum`` is the smallest budget that does (for ``"auto"``, the
        smaller of the two screens').
    """
    N = len(q_norms)
    itemsize = np.dtype(gemm_dtype(table_dtype, metric, q_norms, row_norms)).itemsize
    fits = codes_fit(q_norms, row_norms)
    shape = dict(queries=N if auto_bf16 or screen == "bf16" else 0, width=D, rows=V, metric=metric)
    chosen = choose_screen(screen, codes_given=codes_given, fits=fits, **shape)
    tried = [chosen] + (["float"] if screen == "auto" and chosen != "float" else [])
    errors = []
    for one in tried:
        fixed = fixed_bytes(V, N, D, metric, screen=one, by_id=by_id, norms_given=norms_given,
                            codes_given=codes_given, table_itemsize=np.dtype(table_dtype).itemsize)
        why = reason(one, screen, codes_given=codes_given, fits=fits, on_device=on_device, **shape)
        if one != chosen:
            why += f" (the {chosen} screen's memory does not fit the budget)"
        try:
            plan = plan_blocks(V, D, k, 4 if one == "bf16" else itemsize, memory, n_queries=N,
                               workers=workers, fixed=sum(fixed.values()), screen=one)
            return dataclasses.replace(plan, why=why)
        except BudgetError as exc:
            errors.append(exc)
    raise min(errors, key=lambda e: e.minimum)


def plan_blocks(V: int, D: int, k: int, itemsize: int, memory: int, *, n_queries: int | None = None,
                workers: int = 1, fixed: int = 0, screen: str = "float") -> BlockPlan:
    """Block sizes for the per-query search whose working memory fits in ``memory`` bytes.

    Starts from 1024 queries (fewer, so that every worker gets a block) x
    8192 rows, and halves whichever part needs the most memory until
    ``fixed`` and all workers together fit (``plan_bytes`` counts one
    worker). Every part only shrinks on the way, and each count grows with
    its part, so the last plan tried, one query against K + 1 rows on one
    worker, needs the least: a budget below it is refused naming it.

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    memory : int
        The budget in bytes.
    n_queries : int, optional
        N; a block never holds more queries than there are.
    workers : int
        Threads running blocks of queries at once; each needs its own
        working memory, and there are never more than blocks of queries.
    fixed : int
        Bytes held once whatever the blocks (``fixed_bytes``).
    screen : {"float", "int16", "bf16"}
        The screen whose per-worker memory is counted.

    Raises
    ------
    ValueError
        For a budget that is not a positive int.
    BudgetError
        (a ``ValueError``) if even one query against K + 1 rows does not
        fit; ``minimum`` is the smallest budget that does.

    >>> plan = plan_blocks(30522, 384, 10, 4, 256 * 2**20, n_queries=1000, workers=2)
    >>> plan.queries, plan.rows, plan.workers, plan.bytes <= 256 * 2**20
    (500, 8192, 2, True)
    """
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory <= 0:
        raise ValueError(f"memory must be a positive number of bytes, got {memory!r}")
    min_rows = min(V, k + 1)
    N = n_queries or _PREFERRED_QUERIES
    workers = max(1, min(workers, N))
    n = max(1, min(_PREFERRED_QUERIES, -(-N // workers)))  # give every worker a block
    v = max(min_rows, min(V, _PREFERRED_ROWS))
    batch = rescore = 8192
    while True:
        workers = min(workers, -(-N // n))  # no more workers than blocks
        parts = plan_bytes(n, v, D, k, itemsize, batch, rescore, screen)
        need = fixed + workers * sum(parts.values())
        if need <= memory:
            sample = min(v, max(min_rows, 4 * k, min(_SAMPLE_ROWS, V // 32)))
            return BlockPlan(queries=n, rows=v, sample=sample, batch=batch, rescore=rescore, workers=workers,
                             bytes=need, fixed=fixed, screen=screen, itemsize=itemsize)
        largest = max(parts, key=parts.get)
        if largest == "rescore" and rescore > 1:
            rescore //= 2
        elif largest == "pool" and batch > 1:
            batch //= 2
        elif n > 1 and (n * 4 >= v or v == min_rows):
            n //= 2
        elif v > min_rows:
            v = max(min_rows, v // 2)
        elif batch > 1 or rescore > 1:
            batch, rescore = max(1, batch // 2), max(1, rescore // 2)
        elif workers > 1:
            workers -= 1
        else:  # one query, K + 1 rows, one worker: the least any plan needs
            raise BudgetError(f"memory={memory:,} bytes is too small for this search: the smallest that works "
                              f"here is {need:,} bytes ({_kib(need)}), {fixed:,} of them held once "
                              f"(lengths and per-row terms, O(V + N)) and the rest for one query against "
                              f"{v} rows", minimum=need, parameter="memory", value=memory,
                              expected=f"at least {need:,} bytes ({_kib(need)})")


def plan_bytes(n: int, v: int, D: int, k: int, itemsize: int, batch: int, rescore: int,
               screen: str = "float") -> dict[str, int]:
    """Working memory of one worker with blocks (n, v), in bytes, by part (see ``plan_blocks``).

    Per query (both screens): the block's queries gathered from the table
    or widened to float64, their finiteness mask, the nonzero ones copied,
    scaled and cast, the block's results. The float screen adds the score
    block and its mask (or the sample that sets the first bar, with a
    partition copy), one block of scaled rows, the pool and the survivors
    being pooled; the integer screen adds its queries' codes and encoding
    temporaries, candidate slots and the sample of rows (codes, terms) that
    sets the first bar. The bf16 screen counts as the float one, with its
    score block as the bfloat16 product, its float32 widening and the mask
    (or the sample's partition indices), and one block of rows three times
    (gathered, float32 on the way, then bfloat16), each padded to 32 queries,
    rows and entries as the AMX screen holds them, and the padded queries'
    bits twice and in float32.
    All rescore ``rescore`` candidates at once, and make some Python objects
    (``objects``).
    """
    if screen == "int16":
        C = 2 * k + 64  # candidate slots (int16_screen)
        return {
            "block": v * (4 * -(-D // 2) * 2 + 160),  # the sample's codes, tiles, ids and terms
            "queries": n * (D * (33 + 48) + C * 72 + k * 48 + 512),  # copies, codes, slots, results
            "rescore": rescore * (2 * D * 8 + 96),
            "objects": _OBJECTS,
        }
    P = pool_slots(k)
    if screen == "bf16":  # bfloat16 scores widened to float32, and the sample's argpartition (int64) or the mask;
        # rows gathered (the sample), in float32 and in bfloat16. As the AMX screen holds them (``amx_screen``):
        # queries, rows and widths padded to 32 (``amx_kernel.PAIR``, ``WIDTH_STEP``), and the queries' bits twice
        # (``PackedQueries``) and widened for the first bar; torch's screen (``bf16_screen``) holds less.
        n32, v32, D32 = -(-n // 32) * 32, -(-v // 32) * 32, -(-D // 32) * 32
        # The AMX screen's scan: the kernel's output pooled a part at a time, at least one pair of row tiles'
        # worth (32 entries a padded query, ``amx_kernel.screen_parts``) of ``amx_screen.PART_ENTRY_BYTES`` (96).
        sample, scan = n32 * v32 * (2 + 4 + 8), max(n32 * v32 * (2 + 4 + 1) + 8 * v32, n32 * 32 * 96)
        rows = v32 * D32 * (4 + 4 + 2) + n32 * D32 * (2 + 2 + 4)
    else:
        sample = n * v * 2 * itemsize  # the first bar: scores of at most v rows and a partition copy
        scan = n * v * (itemsize + 1) + 8 * v  # the score block and its mask; one query's survivors
        rows = v * D * (itemsize + 8)  # one block of scaled rows
    return {
        "block": max(sample, scan) + rows,
        "queries": n * (D * (33 + itemsize) + P * 16 * 3 + k * 48 + 128),  # copies, pool, results
        "pool": (batch + min(batch, n) * P) * 120,  # survivors and the pools they join, sorted
        "rescore": rescore * (2 * D * 8 + 96),  # the gathered float64 rows and query rows
        "objects": _OBJECTS + 8 * CHECK_CHUNK,  # and the chunk of lengths that finds the longest row
    }


@dataclass(frozen=True)
class PairPlan:
    """How ``self_join`` cuts the whole table's scan (every row a query) to stay within a memory budget.

    Attributes
    ----------
    block : int
        Rows per block, b: query blocks and row blocks are the same blocks, so
        a block pair's scores serve both sides.
    batch : int
        Survivors of the filter pooled at once.
    rescore : int
        Candidates rescored in float64 at once.
    workers : int
        Threads scoring block pairs at once.
    bytes : int
        The most working memory the scan needs at a time, in bytes: the
        pools of all V queries (``pools``) and every worker's block pair.
    pools : int
        Of ``bytes``, what stays for the whole scan: every query's candidate
        pool, bar and margin, waiting survivors, and the rows' inverse lengths, O(V K).
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64).
    screen : str
        ``"float"`` (the GEMM in ``itemsize``) or ``"bf16"``: bfloat16
        products with torch (``bf16_join``), on one Python thread whose
        torch ops use ``workers`` threads.
    whole : bool
        bf16 only: the whole table is rounded to bfloat16 once (V D 2 bytes,
        in ``pools``), else each block as it is scored.
    """

    block: int
    batch: int
    rescore: int
    workers: int
    bytes: int
    pools: int
    itemsize: int = 4
    screen: str = "float"
    whole: bool = False


_PREFERRED_PAIR_BLOCK = 2048  # a 2048 x 2048 float32 score block is 16 MiB (measured: larger gained nothing)
# Candidates the self-join rescores at once: their float64 rows at most 4 MiB. Measured at D = 4,096 on
# 2 cores: 11 us a candidate with 128 at once, 33 us with 256 to 8,192 (larger arrays are fresh pages each time).
_RESCORE_BYTES = 2**22
SCREENS_SELF_JOIN = ("float", "bf16")


def plan_self_join(V: int, D: int, k: int, itemsize: int, memory: int, *, workers: int = 1,
                   block: int | None = None, screen: str = "float") -> PairPlan:
    """Block size for ``self_join`` whose working memory fits in ``memory`` bytes.

    Counted: for the whole scan, every query's pool (``pool_slots(k)`` ids
    and scores, 16 bytes each), its bar and margin, and the inverse lengths
    (8 bytes each per row), and the transposed survivors waiting to be merged
    into the pools (about one per row, 24 bytes); per worker, one score block (b, b) with its
    mask, the two blocks of rows as the GEMM sees them, and one batch of
    survivors; once, one batch of candidates being rescored and the
    block's results. Not counted: the (b, K) results handed out.

    With ``screen="bf16"`` (``bf16_join``) one Python thread scores the
    pairs, torch's ops running on ``workers`` threads: one score block in
    bfloat16 (2 bytes), its float32 scaled copy (cosine; 4) and a mask (1),
    the two blocks of rows in float32 and bfloat16 with room for torch's
    packed copy; and, where it fits beside that plan, the whole table in
    bfloat16 (V D 2 bytes, ``whole``), made once instead of a block per pair.

    Parameters
    ----------
    V, D, k : int
        Table shape and neighbours per query.
    itemsize : int
        Bytes per GEMM score: 4 (float32) or 8 (float64); ``"bf16"`` needs 4.
    memory : int
        The budget in bytes.
    workers : int
        Threads scoring block pairs at once.
    block : int, optional
        Rows per block, instead of the largest that fits up to 2048.
    screen : {"float", "bf16"}
        The products the pairs are scored with.

    Raises
    ------
    SizeError
        (a ``ValueError``) if the pools and one block of ``min(V, K + 1)``
        rows do not fit; the message names the smallest budget that does.
    ValueError
        For ``"bf16"`` with 8-byte scores (lengths float32 cannot scale).

    >>> plan = plan_self_join(30522, 384, 10, 4, 256 * 2**20, workers=2)
    >>> plan.block, plan.bytes <= 256 * 2**20
    (2048, True)
    >>> plan = plan_self_join(128256, 4096, 10, 4, 256 * 2**20, workers=2, screen="bf16")
    >>> plan.block, plan.whole, plan.workers, plan.bytes <= 256 * 2**20
    (1024, False, 2, True)
    """
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory <= 0:
        raise ValueError(f"memory must be a positive number of bytes, got {memory!r}")
    if screen not in SCREENS_SELF_JOIN or (screen == "bf16" and itemsize != 4):
        raise ValueError(f"the self-join scores with {', '.join(SCREENS_SELF_JOIN)} products (bf16 with 4-byte "
                         f"scores), got screen={screen!r} with {itemsize}-byte scores")
    P = pool_slots(k)
    pools = V * (P * 16 + 3 * 8 + 24)  # pool slots; bar, margin, inverse length; about one waiting survivor
    plan, need, b = _pair_plan(V, D, k, itemsize, memory, workers, block, screen, pools)
    if plan is None:
        raise BudgetError(f"memory={memory:,} bytes is too small for the whole table's scan: the pools of its "
                          f"V={V:,} queries and one block of {b} rows need {need:,} bytes ({_kib(need)})",
                          minimum=need, parameter="memory", value=memory,
                          expected=f"at least {need:,} bytes for V={V:,} pools and one block of {b} rows")
    if screen == "bf16" and plan.bytes + V * D * 2 <= memory:  # the table in bfloat16 fits beside the plan
        return replace(plan, bytes=plan.bytes + V * D * 2, pools=plan.pools + V * D * 2, whole=True)
    return plan


def _pair_plan(V: int, D: int, k: int, itemsize: int, memory: int, workers: int, block: int | None, screen: str,
               pools: int) -> tuple[PairPlan | None, int, int]:
    """``plan_self_join``'s search: (the plan, or None where even the smallest does not fit; its bytes; its block).

    Halves the parts that need the most until they fit.
    """
    P = pool_slots(k)
    b = max(1, min(V, block or _PREFERRED_PAIR_BLOCK))
    batch = 8192
    rescore = min(8192, max(1, _RESCORE_BYTES // (8 * D)))
    min_b = min(V, k + 1) if block is None else b
    while True:
        w = max(1, min(workers, -(-V // b)))
        if screen == "bf16":  # one score block on one thread; torch's ops use the w threads
            blocks = b * b * (2 + 4 + 1) + 2 * b * D * (4 + 2 + 2)
            scan = batch * 120
        else:
            blocks = w * (b * b * (itemsize + 1) + 2 * b * D * itemsize)  # score block, mask, two blocks of rows
            scan = w * batch * 120
        parts = {
            "blocks": blocks,
            "batch": scan,  # survivors being pooled, sorted
            "rescore": rescore * (2 * D * 8 + 96),  # gathered float64 rows and query rows
            "lists": b * (P * 16 + D * 8 + 16 * k),  # one block's pools gathered, its float64 rows, its lists
        }
        need = pools + sum(parts.values())
        if need <= memory:
            return PairPlan(block=b, batch=batch, rescore=rescore, workers=w, bytes=need, pools=pools,
                            itemsize=itemsize, screen=screen), need, b
        largest = max(parts, key=parts.get)
        if largest == "rescore" and rescore > 1:
            rescore //= 2
        elif largest == "batch" and batch > 1:
            batch //= 2
        elif b > max(min_b, 512):
            b //= 2
        elif w > 1 and screen == "float":
            workers = w - 1
        elif b > min_b:
            b = max(min_b, b // 2)
        elif batch > 1 or rescore > 1:
            batch, rescore = max(1, batch // 2), max(1, rescore // 2)
        else:
            return None, need, b


def fixed_bytes(V: int, N: int, D: int, metric: str, *, screen: str, by_id: bool, norms_given: bool = True,
                codes_given: bool = True, table_itemsize: int = 4) -> dict[str, int]:
    """Bytes the per-query search holds once, whatever its blocks, by part: each an upper bound of its arrays.

    ``row norms`` (V,) float64 where the search measures them, with the
    block ``vector_norms`` widens; ``query norms`` (N,) and the masks that
    check them; ``checks``: the masks and index arrays of the range checks
    (``precision``: the dot product's longest and shortest rows);
    ``inverse norms`` (V,) for the float screen's cosine; ``bound terms``
    (3, T * 16) and their tile extremes for the integer screen, and
    ``codes`` where it builds them (``codes.encode_rows``: the packed codes
    and its per-row temporaries). Not counted: the outputs (N, K), the table,
    the codes the caller passed (resident cost).

    >>> sorted(fixed_bytes(1000, 10, 8, "cosine", screen="float", by_id=True).items())
    [('checks', 1010), ('inverse norms', 9000), ('query norms', 110), ('row norms', 0)]
    """
    T16 = -(-V // TILE) * TILE  # slots of the packed codes
    parts = {
        "row norms": 0 if norms_given else 8 * V + norms_bytes(V, D, NORMS_BLOCK),
        "query norms": 11 * N + (0 if by_id else norms_bytes(N, D, NORMS_BLOCK)),
        "checks": V + N + (20 * min(V, CHECK_CHUNK) + 48 * N if metric == "dot" else 0),
    }
    if screen == "float":
        parts["inverse norms"] = 9 * V if metric == "cosine" else 0
    elif screen == "bf16":  # the float64 inverse lengths, and the float32 ones the screen scales by
        parts["inverse norms"] = 13 * V if metric == "cosine" else 0
    else:
        parts["bound terms"] = 3 * 8 * T16 + 4 * 8 * (T16 // TILE) * 2 + V
        if not codes_given:
            packed = T16 * (-(-D // 2)) * 2 * 2
            parts["codes"] = packed + 8 * T16 + 64 * V + (4 * V * D if table_itemsize < 4 else 0)
    return parts


def _kib(n: int) -> str:
    """Bytes rounded up, in KiB, MiB or GiB: 123456 -> '121 KiB'."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{-(-n * 10 // size) / 10:g} {unit}"
    return f"{-(-n // 2**10)} KiB"
