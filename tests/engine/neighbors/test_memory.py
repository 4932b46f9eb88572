"""The search's working memory (engine.neighbors.plan) and the table's resident cost (engine.neighbors.footprint).

The peaks are measured with ``tracemalloc``, which traces NumPy's allocations:
the whole search, every O(V) and O(N) array included, must stay within the
budget plus its outputs (N, K). Expected neighbour lists come from a float64
brute force written here, never from the engine itself.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from embedlab.errors import BudgetError
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors.codes import encode_rows
from embedlab.engine.neighbors.plan import plan_search
from embedlab.engine.neighbors.search import Search
from embedlab.engine.table import EmbeddingTable
from searching import search
from traced_child import TRACED_RUN, traced


def brute_force_ids(W, Q, k, metric, exclude=None):
    """Top-k ids by (-score, id) from a full float64 score matrix."""
    W, Q = np.asarray(W, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    S = Q @ W.T  # (N, V)
    if metric == "cosine":  # 0.0 where a length is 0
        both = np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1))
        S = np.divide(S, both, out=np.zeros_like(S), where=both > 0)
    if exclude is not None:
        S[np.arange(len(Q)), exclude] = -np.inf
    return np.array([np.lexsort((np.arange(len(row)), -row))[:k] for row in S])


def traced_peak(call):
    """(result, bytes) : the call's result and the most bytes it held at once, as tracemalloc sees them."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile (or load) the integer screen's kernels first: numba's own bookkeeping is not the search's.

    Every kind of call the traces below make, each metric, by id and by vector, with read-only lengths
    and codes given, on a table of more than one block of rows (``int16_screen.BLOCK_BYTES``: 384 rows of
    D = 256; a block's slice of the tile extremes is then not contiguous): each is a specialisation of its
    own, compiled inside the first trace on a fresh clone (no numba cache yet) otherwise.
    """
    W = np.random.default_rng(0).standard_normal((400, 256)).astype(np.float32)
    norms = vector_norms(W)
    norms.flags.writeable = False
    codes = encode_rows(W, row_norms=norms)
    for metric in ("cosine", "dot"):
        search(W, None, 3, metric, exclude=np.arange(4), screen="int16")
        for Q, exclude in ((None, np.arange(4)), (W[:4].astype(np.float64), None)):
            search(W, Q, 3, metric, exclude=exclude, row_norms=norms, codes=codes, screen="int16", workers=2)


TABLES = [(20_000, 16, 2**20), (60_000, 24, 4 * 2**20), (200_000, 8, 8 * 2**20)]


# One traced search, run in a fresh interpreter: what a worker process of the suite holds by then (threads,
# caches, imports of other tests) is not the search's. In half of this stop's full runs the four int16 cases of
# the 20,000 x 16 table traced about 6 KB over budget + outputs in one worker; alone, or with only
# tests/engine beside them, never (about 0.76 MB). The same table, queries and call as the parent's.
TRACED_CHILD = """
import json, sys, tracemalloc
import numpy as np
sys.path[:0] = json.loads(sys.argv[1])
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors.codes import encode_rows
from searching import search
V, D, memory, metric, screen, by = json.loads(sys.argv[2])
rng = np.random.default_rng(V + D)
W = rng.standard_normal((V, D)).astype(np.float32)
norms = vector_norms(W)
norms.flags.writeable = False  # as EmbeddingTable.norms hands them out (argmax copies a read-only array)
codes = encode_rows(W, row_norms=norms)  # resident: built before the trace, as EmbeddingTable.codes does
ids = rng.choice(V, 200, replace=False)
Q = rng.standard_normal((200, D)) if by == "vector" else None
run = lambda: search(W, Q, 10, metric, exclude=ids if by == "id" else None, row_norms=norms, memory=memory,
                     codes=codes, screen=screen, workers=2)
run()  # once untraced: numba's kernels compiled or loaded from its cache
""" + TRACED_RUN


@pytest.mark.parametrize("V, D, memory", TABLES)
@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("screen", ["float", "int16"])
@pytest.mark.parametrize("by", ["id", "vector"])
def test_traced_peak_stays_within_the_budget(V, D, memory, metric, screen, by):
    found = traced(TRACED_CHILD, [V, D, memory, metric, screen, by])
    N, k = 200, 10
    outputs = N * k * 16  # ids int64 and scores float64, (N, K): not counted in the budget
    peak = found["peak"]
    assert peak <= memory + outputs, f"traced peak {peak:,} bytes over the budget {memory:,} + outputs {outputs:,}"
    rng = np.random.default_rng(V + D)  # the child's table and queries, made again here for the brute force
    W = rng.standard_normal((V, D)).astype(np.float32)
    ids = rng.choice(V, N, replace=False)
    Q = rng.standard_normal((N, D)) if by == "vector" else None
    some = slice(0, 20)  # a brute force of every query would cost more than the search
    want = brute_force_ids(W, W[ids[some]] if Q is None else Q[some], k, metric,
                           None if by == "vector" else ids[some])
    assert found["ids"] == want.tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_lengths_measured_by_the_search_are_counted_too(metric):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((30_000, 32)).astype(np.float32)
    W[rng.integers(0, 30_000, 500)] = 0.0  # zero rows: measured again, a block at a time
    memory = 2 * 2**20
    (got, _), peak = traced_peak(lambda: search(W, None, 5, metric, exclude=np.arange(100), memory=memory,
                                                screen="float", workers=1))
    assert peak <= memory + 100 * 5 * 16
    assert got[:10].tolist() == brute_force_ids(W, W[:10], 5, metric, np.arange(10)).tolist()


@pytest.mark.slow
@pytest.mark.parametrize("screen", ["float", "int16"])
@pytest.mark.parametrize("by_id", [True, False])
def test_the_named_minimum_is_accepted_and_one_byte_less_refused(screen, by_id):
    rng = np.random.default_rng(1)
    W = rng.standard_normal((5_000, 12)).astype(np.float32)
    norms = vector_norms(W)
    codes = encode_rows(W, row_norms=norms)
    ids = np.arange(40)
    Q = None if by_id else rng.standard_normal((40, 12))
    exclude = ids if by_id else None

    def run(memory):
        return search(W, Q, 7, "cosine", exclude=exclude, row_norms=norms, memory=memory, codes=codes,
                      screen=screen, workers=1)

    with pytest.raises(BudgetError) as refused:
        run(1000)
    minimum = refused.value.minimum
    assert "memory=1,000 bytes is too small" in str(refused.value)
    assert f"the smallest that works here is {minimum:,} bytes" in str(refused.value)
    assert minimum > 1000
    (got, _), peak = traced_peak(lambda: run(minimum))  # accepted, and held to
    assert peak <= minimum + 40 * 7 * 16
    want = brute_force_ids(W, W[ids] if by_id else Q, 7, "cosine", exclude)
    assert got.tolist() == want.tolist()
    with pytest.raises(BudgetError) as again:
        run(minimum - 1)
    assert again.value.minimum == minimum


def test_auto_falls_back_to_the_float_screen_when_the_integer_terms_do_not_fit():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((40_000, 8)).astype(np.float32)
    norms = vector_norms(W)
    q_norms = norms[:50]
    kwargs = dict(q_norms=q_norms, row_norms=norms, table_dtype=W.dtype, by_id=True, codes_given=True)
    # 24 bytes a row of per-row terms (about 960 KB) against 9 of inverse lengths (360 KB)
    assert plan_search(40_000, 8, 5, "cosine", 700_000, screen="float", **kwargs).screen == "float"
    with pytest.raises(BudgetError):
        plan_search(40_000, 8, 5, "cosine", 700_000, screen="int16", **kwargs)
    assert plan_search(40_000, 8, 5, "cosine", 8 * 2**20, screen="int16", **kwargs).screen == "int16"


def test_resident_cost_counts_the_table_its_lengths_and_its_codes():
    W = np.random.default_rng(4).standard_normal((1_000, 6)).astype(np.float32)
    table = EmbeddingTable(W, positions=np.zeros((16, 6), dtype=np.float32))
    before = table.resident()
    assert (before.table, before.positions, before.norms, before.codes) == (1_000 * 6 * 4, 16 * 6 * 4, 0, 0)
    assert not before.mapped
    codes = table.codes()
    after = table.resident()
    packed = 63 * 3 * 16 * 2 * 2  # ceil(1000 / 16) tiles x 3 pairs x 16 rows x 2 codes x int16
    assert after.codes == packed + 63 * 16 * 8 + 2 * 1_000 * 8 == codes.packed.nbytes + codes.ids.nbytes + 16_000
    assert after.norms == 1_000 * 8 and after.total == 24_000 + 384 + 8_000 + after.codes


def test_the_plan_a_search_reports_is_within_its_budget():
    table = EmbeddingTable(np.random.default_rng(5).standard_normal((3_000, 8)))
    plan = Search(table, 5, "dot", ids=[1, 2, 3], memory=2**20).plan("dot")
    assert plan.bytes <= 2**20 and plan.fixed > 3_000  # the O(V) checks are in it
    with pytest.raises(BudgetError, match="too small"):
        Search(table, 5, "dot", ids=[1, 2, 3], memory=10_000)
