"""The bf16 screen (engine.neighbors.bf16_screen) against a float64 full sort, the reference and the float screen.

Expected lists come from a float64 full sort written here (``full_sort``: every
score, then ``np.lexsort`` by (-score, id)), from the reference
(``embed.nearest_by_*``), or from the float GEMM screen (``screen="float"``),
which the bf16 screen must match id for id and bit for bit. ``screen="bf16"``
runs torch's bfloat16 matmul on any CPU: on AMX or AVX512-BF16 where present,
in software elsewhere (and here once more with oneDNN turned off). The margin
is checked against torch's bfloat16 matmul and float64 on adversarial inputs.
No timing here: speed is claimed in benchmarks/ only.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from embedlab import embed
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import capability, dispatch
from embedlab.engine.neighbors.amx_screen import AmxScreen
from embedlab.engine.neighbors.bf16_screen import Bf16Screen, bar32, bf16_rows
from embedlab.engine.neighbors.precision import round_bf16
from embedlab.engine.neighbors.precision import bf16_margin, bf16_value_margin
from embedlab.engine.neighbors.search import ArrayTable, Search
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import BudgetError
from full_sort import full_sort
from searching import search
from strategies import draw_queries, dyadic_tables

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

REFERENCE = {"cosine": embed.nearest_by_cosine, "dot": embed.nearest_by_dot}


@pytest.fixture(scope="module", autouse=True, params=["torch", "amx"])
def bf16_screen_kind(request):
    """Every test here twice: the bf16 screen on torch's matmul (``Bf16Screen``), and on embedlab's own kernel
    (``AmxScreen``: the AMX or AVX512-BF16 kernel where one runs, their NumPy twin elsewhere), both through the
    front door."""
    saved = dispatch.kernel_runs, dispatch.AmxScreen
    if request.param == "torch":
        dispatch.kernel_runs = lambda: False
    else:
        dispatch.kernel_runs = lambda: True
        kernel = capability.bf16_kernel()
        dispatch.AmxScreen = functools.partial(AmxScreen, kernel=kernel, software=kernel is None)
    try:
        yield request.param
    finally:
        dispatch.kernel_runs, dispatch.AmxScreen = saved


@contextlib.contextmanager
def onednn(enabled):
    """torch's oneDNN kernels on or off for the duration (``mkldnn.flags`` warns about TF32 on this build)."""
    was = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = enabled
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = was


def bf16_and_float(W, Q, k, metric, exclude=None, **kwargs):
    """(bf16 ids, bf16 scores), (float ids, float scores) of one search; W, Q and exclude must not change."""
    before = [None if x is None else np.array(x, copy=True) for x in (W, Q, exclude)]
    got = search(W, Q, k, metric, exclude=exclude, screen="bf16", **kwargs)
    plain = search(W, Q, k, metric, exclude=exclude, screen="float", **kwargs)
    for x, was in zip((W, Q, exclude), before):
        assert x is None or np.array_equal(x, was)  # never mutates its arguments
    return got, plain


def check(W, Q, k, metric, exclude=None, **kwargs):
    """The bf16 screen lists what a float64 full sort lists, with the float screen's scores bit for bit."""
    (ids, scores), (ids_f, scores_f) = bf16_and_float(W, Q, k, metric, exclude, **kwargs)
    want_ids, want_scores = full_sort(W, W[exclude] if Q is None else Q, k, metric, exclude)
    assert ids.tolist() == want_ids.tolist()
    assert np.allclose(scores, want_scores, rtol=1e-12, atol=1e-300)
    assert np.array_equal(ids, ids_f) and np.array_equal(scores, scores_f)


@settings(max_examples=120, deadline=None)
@given(W=dyadic_tables(dtypes=(np.float64, np.float32, np.float16)), data=st.data())
def test_random_tables_match_a_float64_full_sort(W, data):
    metric = data.draw(st.sampled_from(["cosine", "dot"]))
    memory = data.draw(st.sampled_from([2**16, 2**20, 256 * 2**20]))  # many blocks of rows, or one
    Q, exclude, k = draw_queries(data, W)
    lengths = np.concatenate([vector_norms(W), vector_norms(Q) if Q is not None else []])
    # screen="bf16" certifies lengths in [1e-15, 1e15] only (it refuses others, tested apart)
    assume(bool(np.all((lengths == 0) | ((lengths >= 1e-15) & (lengths <= 1e15)))))
    try:  # 64 KiB, or the smallest budget the bf16 plan takes where that is more (the AMX screen pads to 32)
        search(W, Q, k, metric, exclude=exclude, screen="bf16", memory=memory)
    except BudgetError as exc:
        memory = exc.minimum
    check(W, Q, k, metric, exclude, memory=memory)


@pytest.mark.parametrize("D", [1, 7, 50, 384])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_gaussian_tables_of_every_width(D, metric):
    rng = np.random.default_rng(D)
    W = rng.standard_normal((1500, D)).astype(np.float32)
    W[rng.integers(0, 1500, size=12)] = W[3]  # duplicated rows: exact ties under another id
    W[rng.integers(0, 1500, size=8)] = 0.0  # zero rows
    ids = np.arange(0, 1500, 37)
    check(W, None, 12, metric, ids, memory=2**20)
    check(W, rng.standard_normal((9, D)), 12, metric, memory=2**20)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_near_ties_within_the_margin_are_ordered_exactly(metric):
    # 200 integer rows within 1 of one row of entries near 1,000: their scores differ by about 1e-6 relative,
    # far below bfloat16's 2**-8 (the screen cannot tell them apart) and far above float64's rounding (the
    # full sort orders them exactly); 30 exact copies tie.
    rng = np.random.default_rng(1)
    base = rng.integers(500, 1500, size=64) * rng.choice([-1, 1], size=64)
    near = base + rng.integers(-1, 2, size=(200, 64))
    W = np.concatenate([near, rng.integers(-1500, 1500, size=(800, 64)), near[:30]]).astype(np.float64)
    queries = np.array([0, 5, 250, 1010])
    check(W, None, 40, metric, queries, memory=2**20)
    check(W, base[None, :] * 3.0, 60, metric, memory=2**20)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_exact_ties_beyond_the_pool_and_many_blocks(metric):
    rng = np.random.default_rng(4)
    W = rng.integers(-2, 3, size=(3000, 8)).astype(np.float32)
    W[rng.integers(0, 3000, size=300)] = W[11]  # more exact ties than the pool's slots
    W[rng.integers(0, 3000, size=20)] = 0.0
    queries = np.arange(0, 3000, 13)
    check(W, None, 25, metric, queries, memory=2**20)


@pytest.mark.parametrize("scale", [1e-14, 1e-7, 1e7, 1e14])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_tiny_and_huge_lengths_within_the_guard(scale, metric):
    rng = np.random.default_rng(7)
    W = rng.standard_normal((600, 16))
    W /= np.linalg.norm(W, axis=1)[:, None]
    W[::3] *= scale  # a third of the rows at the extreme length, the others of length 1
    if scale < 1:
        W[1::3] *= 1e-1
    check(W, None, 10, metric, np.arange(0, 600, 29))


def test_lengths_outside_the_guard_are_refused_by_name():
    W = np.eye(3) * np.array([[1.0], [1e20], [1.0]])
    with pytest.raises(ValueError, match="screen='bf16' certifies lengths"):
        search(W, None, 1, "dot", exclude=np.array([0]), screen="bf16")
    # "auto" keeps the float screen there, and lists what the full sort lists
    assert search(W, None, 1, "dot", exclude=np.array([0]))[0].tolist() == [[1]]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_reference_lists_on_the_lab_table(metric):
    table = embed.make_table(128, 24, 3)
    W = np.array(table)
    got = search(W, None, 7, metric, exclude=np.arange(128), screen="bf16")[0]
    assert got.tolist() == [REFERENCE[metric](table, i, 7) for i in range(128)]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_software_bfloat16_without_onednn_lists_the_same(metric):
    # torch's bfloat16 matmul without oneDNN (its own kernels: what a CPU without the units runs)
    rng = np.random.default_rng(9)
    W = rng.standard_normal((2000, 96)).astype(np.float32)
    ids = np.arange(0, 2000, 41)
    with onednn(False):
        check(W, None, 10, metric, ids)


# -- the value-aware bound: bf16-valued tables by id, float32 tables, near ties, cancellation ----------------------

def bf16_valued(shape, rng, scale=1.0):
    """A float32 table whose every entry is a bfloat16 value (a bf16 checkpoint's table, widened)."""
    return round_bf16(rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_bf16_valued_tables_by_id_match_a_float64_full_sort(metric):
    rng = np.random.default_rng(11)
    W = bf16_valued((2500, 96), rng)
    W[rng.integers(0, 2500, size=10)] = W[7]  # exact ties under another id
    W[rng.integers(0, 2500, size=5)] = 0.0
    check(W, None, 10, metric, np.arange(0, 2500, 41), memory=2**20)
    check(W, rng.standard_normal((7, 96)), 10, metric, memory=2**20)  # free queries: rounded, rows not
    check(W.astype(np.float64) * (1 + 2.0**-12), W[:9].astype(np.float64), 10, metric, memory=2**20)  # the reverse


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_near_ties_of_a_bf16_valued_table_by_id(metric):
    # Small integers are bfloat16 values: 300 rows within 1 of one row of entries near 100 score within about
    # 1e-4 relative of each other, far inside bfloat16's 2**-8 and the value-aware bound's gamma_D term.
    rng = np.random.default_rng(12)
    base = rng.integers(60, 120, size=128) * rng.choice([-1, 1], size=128)
    near = base + rng.integers(-1, 2, size=(300, 128))
    W = np.concatenate([near, rng.integers(-120, 120, size=(900, 128)), near[:40]]).astype(np.float32)
    assert np.array_equal(round_bf16(W.astype(np.float64)), W)
    check(W, None, 50, metric, np.array([0, 3, 299, 1200, 1210]), memory=2**20)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_cancellation_by_id_on_bf16_valued_and_float32_tables(metric):
    # Rows of opposite-signed halves: each score is a small difference of large sums, where an error bound
    # taken on the score alone (r |s|) would fail; A must carry gamma_D |q| |w| (and the input roundings).
    rng = np.random.default_rng(13)
    D = 256
    sign = np.where(np.arange(D) < D // 2, 1.0, -1.0)
    W = rng.uniform(0.5, 1.0, size=(1200, D)) * sign
    W[600:] = np.abs(W[600:])  # half the rows all positive: their scores against the others cancel
    for table in (round_bf16(W).astype(np.float32), (W * (1 + 2.0**-9)).astype(np.float32)):
        check(table, None, 12, metric, np.arange(0, 1200, 53), memory=2**20)


def test_the_screen_counts_each_sides_rounding_once():
    # bf16-valued table by id: no rounding on either side (cosine too: the row as it is, scaled after);
    # free queries: the queries' rounding only; a float32 table: both.
    rng = np.random.default_rng(14)
    W = bf16_valued((500, 64), rng)
    norms = np.linalg.norm(W.astype(np.float64), axis=1)

    def screen(W, Q, metric, rows=None):
        Q = np.asarray(Q, dtype=np.float64)
        inv = 1 / np.linalg.norm(W.astype(np.float64), axis=1) if metric == "cosine" else None
        return Bf16Screen(W, Q, np.linalg.norm(Q, axis=1), None, 5, metric, np.linalg.norm(W.astype(np.float64),
                          axis=1), inv, np.float32, rows=rows)

    reach = np.full(3, norms.max())
    for metric in ("cosine", "dot"):
        q = W[:3].astype(np.float64)
        want = bf16_value_margin(metric, 64, np.linalg.norm(q, axis=1), reach, float(norms.min()), exact_inputs=True)
        got = screen(W, q, metric, rows=bf16_rows(W))
        assert np.array_equal(got.A, want[0]) and got.r == want[1] and got.raw == (metric == "cosine")
        assert np.array_equal(screen(W, q, metric).A, want[0])  # a plain array: checked, not assumed
        free = q + 2.0**-12
        one = bf16_value_margin(metric, 64, np.linalg.norm(free, axis=1), reach, float(norms.min()),
                                exact_inputs=True, exact_queries=False)[0]
        assert np.array_equal(screen(W, free, metric).A, one) and one.min() > want[0].max() * 10
    W2 = W * np.float32(1 + 2.0**-10)
    assert not bf16_rows(W2).exact and bf16_rows(W).exact


def value_scores(Q, W, metric, raw):
    """The value-aware screen's arithmetic written out: bf16(q) @ bf16(w).T by torch; cosine either the unit
    query times float32(1 / |w|) (raw False), or the query as it is times float32(1 / |q|), then float32(1 / |w|)."""
    q = np.asarray(Q, dtype=np.float64)
    if metric == "cosine" and not raw:
        q = q / np.linalg.norm(q, axis=1)[:, None]
    qt = torch.from_numpy(round_bf16(q).astype(np.float32)).to(torch.bfloat16)
    wt = torch.from_numpy(round_bf16(np.asarray(W, dtype=np.float64)).astype(np.float32)).to(torch.bfloat16)
    S = (qt @ wt.T).float().numpy()  # (m, V) float32
    if metric == "cosine":
        lengths = np.linalg.norm(np.asarray(W, dtype=np.float64), axis=1)
        inv = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0).astype(np.float32)
        if raw:
            S = S * (1 / np.linalg.norm(np.asarray(Q, dtype=np.float64), axis=1)).astype(np.float32)[:, None]
        S = S * inv[None, :]  # float32 products
    return S.astype(np.float64)


@pytest.mark.parametrize("D", [7, 384, 4096])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("exact", [True, False])
def test_the_value_margin_holds_against_torch_bfloat16_matmul(D, metric, exact):
    rng = np.random.default_rng(D + exact)
    Q, W = adversarial(D, rng)
    if exact:  # a bf16 table asked by id: rows and queries bfloat16 values, no rounding on either side
        W = round_bf16(W)
        Q = W[20:26].copy()
        Q[0] = W[25] * -1
    q_norms, w_norms = np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1)
    shortest = float(w_norms[w_norms > 0].min())
    A, r = bf16_value_margin(metric, D, q_norms, np.full(len(Q), w_norms.max()), shortest, exact_inputs=exact)
    with onednn(True):
        got = value_scores(Q, W, metric, raw=exact)
    err = np.abs(got - exact_scores(Q, W, metric))  # (m, V)
    assert np.all(err <= A[:, None] + r * np.abs(got))
    assert err.max() > 0


# -- the margin against torch's bfloat16 matmul ------------------------------------------------------------------

def bf16_scores(Q, W, metric):
    """The bf16 screen's arithmetic written out: bf16(q) @ bf16(w).T by torch, cosine times float32(1 / |w|)."""
    q = np.asarray(Q, dtype=np.float64)
    if metric == "cosine":
        q = q / np.linalg.norm(q, axis=1)[:, None]
    qt = torch.from_numpy(round_bf16(q).astype(np.float32)).to(torch.bfloat16)
    wt = torch.from_numpy(round_bf16(np.asarray(W, dtype=np.float64)).astype(np.float32)).to(torch.bfloat16)
    S = (qt @ wt.T).float().numpy()  # (m, V)
    if metric == "cosine":
        lengths = np.linalg.norm(np.asarray(W, dtype=np.float64), axis=1)
        inv = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0).astype(np.float32)
        S = S * inv[None, :]  # float32 products
    return S.astype(np.float64)


def exact_scores(Q, W, metric):
    """float64 scores, the float64 full sort's (exact to far below the margin)."""
    Q, W = np.asarray(Q, dtype=np.float64), np.asarray(W, dtype=np.float64)
    S = Q @ W.T
    if metric == "cosine":
        both = np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1))
        S = np.divide(S, both, out=np.zeros_like(S), where=both > 0)
    return S


def adversarial(D, rng):
    """Queries and rows whose products cancel: large terms of both signs summing to a small score, entries
    between bfloat16's values, a spread of lengths, subnormal-sized entries."""
    half = D // 2
    big = rng.uniform(0.5, 1.0, size=(40, D))
    sign = np.where(np.arange(D) < half, 1.0, -1.0)
    W = big * sign  # rows of alternating sign halves
    W[:10] *= 1 + 2.0**-9  # entries between bfloat16's values: each one rounds
    W[10:20] = rng.standard_normal((10, D)) * 10.0 ** rng.integers(-6, 7, size=(10, 1))
    W[20, : D // 3] = 1e-39  # subnormal in float32: flushed by the matrix units
    Q = np.abs(rng.uniform(0.5, 1.0, size=(6, D)))  # all positive: q . w cancels between the halves
    Q[0] = 1 + 3 * 2.0**-9
    return Q, W


@pytest.mark.parametrize("D", [1, 7, 50, 384, 4096])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("units", [True, False])
def test_the_margin_holds_against_torch_bfloat16_matmul(D, metric, units):
    rng = np.random.default_rng(D)
    Q, W = adversarial(D, rng)
    q_norms, w_norms = np.linalg.norm(Q, axis=1), np.linalg.norm(W, axis=1)
    with onednn(units):
        got = bf16_scores(Q, W, metric)
    want = exact_scores(Q, W, metric)
    eps = bf16_margin(metric, D, q_norms, np.full(len(Q), w_norms.max()), shortest=float(w_norms[w_norms > 0].min()))
    err = np.abs(got - want)  # (m, V)
    assert np.all(err <= eps[:, None])
    assert err.max() > 0  # the inputs did round: the check is not vacuous


def test_the_margin_is_reached_in_order_of_magnitude():
    # The bound is not loose by orders: on random inputs the error reaches a fair share of it.
    rng = np.random.default_rng(0)
    Q, W = rng.standard_normal((50, 384)), rng.standard_normal((2000, 384))
    err = np.abs(bf16_scores(Q, W, "cosine") - exact_scores(Q, W, "cosine"))
    eps = bf16_margin("cosine", 384, np.ones(50), np.ones(50))[0]
    assert 1e-3 * eps < err.max() <= eps


# -- rounding and the bar ------------------------------------------------------------------------------------------

def test_round_bf16_rounds_to_nearest_even_once():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, size=2000),
                        (1 + 2.0**-8 * np.arange(0, 16) / 2) * 3.0,  # midpoints and the values between
                        -(1 + 2.0**-9 + 2.0**-40) * np.ones(3), [0.0, -0.0]])
    got = round_bf16(x)
    for value, r in zip(x.tolist(), got.tolist()):  # independently: the nearest multiple of the spacing
        if value == 0.0:
            assert r == 0.0
            continue
        spacing = 2.0 ** (math.frexp(abs(value))[1] - 8)  # 8 significant bits
        lo = math.floor(abs(value) / spacing) * spacing
        hi = lo + spacing
        nearest = lo if abs(value) - lo < hi - abs(value) else hi if abs(value) - lo > hi - abs(value) else (
            lo if (lo / spacing) % 2 == 0 else hi)
        assert r == math.copysign(nearest, value), value


def test_bf16_rows_are_the_rows_rounded_once():
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32, np.float16):
        W = (rng.standard_normal((5000, 9)) * 3).astype(dtype)
        bits = bf16_rows(W)
        widened = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # (V, D)
        assert np.array_equal(widened, round_bf16(W.astype(np.float64)))


def test_the_bar_rounds_down_so_no_comparison_changes():
    rng = np.random.default_rng(5)
    bars = rng.standard_normal(3000) * 10.0 ** rng.integers(-20, 20, size=3000)
    down = bar32(bars)
    assert np.all(down.astype(np.float64) <= bars)
    up = np.nextafter(down, np.float32(np.inf))
    assert np.all(up.astype(np.float64) > bars)  # the largest float32 at or below the bar


# -- the choice: capability and shape -------------------------------------------------------------------------------

def test_auto_takes_bf16_by_capability_and_shape(monkeypatch):
    monkeypatch.setattr(capability, "bf16_kernel", lambda: None)  # torch's matmul: embedlab's kernel in test_amx_screen
    monkeypatch.setattr(capability, "fast_bf16", lambda: True)
    pick = capability.choose_screen
    minilm = dict(queries=1000, width=384, rows=30522)
    assert pick("auto", codes_given=False, fits=True, **minilm) == "bf16"  # torch loaded here: its import is paid
    assert pick("auto", codes_given=True, fits=True, **minilm) == "bf16"
    assert pick("auto", codes_given=False, fits=True, queries=2, width=4096, rows=128256) == "float"  # 2 queries
    assert pick("auto", codes_given=False, fits=False, **minilm) == "float"
    assert pick("auto", codes_given=False, fits=True, queries=1000, width=capability.BF16_WIDTH["cosine"] - 1,
                rows=30522) == "float"
    assert pick("auto", codes_given=False, fits=True, metric="dot", **minilm) == "bf16"  # dot: from D = 384
    assert pick("auto", codes_given=False, fits=True, metric="dot", queries=1000, width=capability.BF16_WIDTH["dot"] - 1,
                rows=30522) == "float"
    assert pick("auto", codes_given=False, fits=True, metric="dot", queries=1000, width=4096, rows=128256) == "bf16"
    monkeypatch.setattr(capability, "_torch_loaded", lambda: False)  # a fresh process: loading torch must pay
    assert pick("auto", codes_given=False, fits=True, **minilm) == "float"
    assert pick("auto", codes_given=False, fits=True, queries=1000, width=4096, rows=128256) == "bf16"
    monkeypatch.setattr(capability, "fast_bf16", lambda: False)
    assert pick("auto", codes_given=False, fits=True, queries=1000, width=4096, rows=128256) == "float"
    assert pick("bf16", codes_given=False, fits=True) == "bf16"  # forced: runs everywhere


def test_fast_bf16_needs_the_units(monkeypatch):
    monkeypatch.setattr(capability, "bf16_kernel", lambda: None)  # torch's matmul: embedlab's kernel in test_amx_screen
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert capability.fast_bf16() is False
    assert "no AMX-BF16 or AVX512-BF16" in capability.describe()
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16", "amx_tile"}))
    assert capability.fast_bf16() is torch.backends.mkldnn.is_available()


def test_the_plan_says_which_screen_and_why(monkeypatch):
    monkeypatch.setattr(capability, "bf16_kernel", lambda: None)  # torch's matmul: embedlab's kernel in test_amx_screen
    monkeypatch.setattr(capability, "fast_bf16", lambda: True)
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    W = np.random.default_rng(0).standard_normal((3000, 256)).astype(np.float32)
    table = EmbeddingTable(W)
    search = Search(table, 5, ids=np.arange(300))
    plan = search.plan("cosine")
    assert plan.screen == "bf16" and plan.why.startswith("bf16 on AMX (amx_bf16, torch ")
    assert f"D=256 >= {capability.BF16_WIDTH['cosine']}, N=300 >= {capability.BF16_QUERIES}, torch loaded" in plan.why
    assert search.plan("dot").screen != "bf16"  # dot: bf16 from D = 384
    assert search.nearest("cosine").ids.tolist() == full_sort(W, W[:300], 5, "cosine", np.arange(300))[0].tolist()
    memory = search.memory()
    assert memory.plans["cosine"]["why"] == plan.why
    assert memory.resident["bf16"] == 3000 * 256 * 2  # the table's bfloat16 rows, resident like its codes
    assert table.resident().codes == 0  # no int16 codes built beside them
    few = Search(table, 5, ids=[1, 2]).plan("cosine")
    assert few.screen != "bf16" and f"bf16 does not pay for N=2 < {capability.BF16_QUERIES} queries" in few.why


def test_a_plain_array_caches_nothing_beyond_the_search():
    W = np.random.default_rng(1).standard_normal((500, 32)).astype(np.float32)
    table = ArrayTable(W)
    search = Search(table, 3, ids=np.arange(50), screen="bf16")
    assert table.resident().bf16 == 500 * 32 * 2  # a table lends its cache
    assert search.memory().resident["bf16"] == 500 * 32 * 2
    plain = Search(W, 3, ids=np.arange(50), screen="bf16")
    assert plain.memory().resident["bf16"] == 0  # a plain array: rounded a block at a time, in the budget
    assert np.array_equal(plain.nearest("dot").ids, search.nearest("dot").ids)
    assert all(p.bytes <= plain.budget for p in (plain.plan("dot"), plain.plan("cosine")))


def test_forced_bf16_runs_on_a_device():
    W = np.random.default_rng(2).standard_normal((400, 12))
    ids = np.arange(0, 400, 9)
    got = search(W, None, 4, "cosine", exclude=ids, screen="bf16", device="cpu")
    assert got[0].tolist() == full_sort(W, W[ids], 4, "cosine", ids)[0].tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_the_plan_travels_to_the_cluster_workers(local_cluster, metric):
    pytest.importorskip("distributed")
    rng = np.random.default_rng(6)
    W = rng.integers(-3, 4, size=(700, 24)).astype(np.float32)
    W[rng.integers(0, 700, size=30)] = W[5]  # exact ties
    queries = np.arange(0, 700, 11)
    with Search(W, 8, metric, ids=queries, scheduler=local_cluster.scheduler_address, screen="bf16") as search_:
        assert search_.plan(metric).screen == "bf16"  # the plan each task runs (cluster._block_task)
        found = search_.nearest(metric)
    assert found.ids.tolist() == full_sort(W, W[queries], 8, metric, queries)[0].tolist()
    assert np.array_equal(found.scores, search(W, None, 8, metric, exclude=queries, screen="float")[1])


def test_the_neighbors_command_says_which_screen_ran_and_why(capsys, monkeypatch):
    from embedlab import cli

    # the reason on a CPU without AMX or AVX512-BF16 (embedlab's kernels: test_amx_screen)
    monkeypatch.setattr(capability, "bf16_kernel", lambda: None)
    flags = capability.cpu_flags() - {"amx_bf16", "amx_tile", "avx512_bf16"}
    monkeypatch.setattr(capability, "cpu_flags", lambda: flags)
    assert cli.main(["neighbors", "137", "--k", "4", "--memory", "1M"]) == 0
    out = capsys.readouterr().out
    line = next(text for text in out.splitlines() if text.startswith("screen: "))
    assert line.startswith("screen: cosine: float GEMM: ")  # the seed table: D=64, one query
    assert f"bf16 does not pay at D=64 < {capability.BF16_WIDTH['cosine']}" in line
    assert cli.main(["neighbors", "137", "--k", "4", "--memory", "1M", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["memory"]["plans"]
    assert line == "screen: " + "; ".join(f"{m}: {p['why']}" for m, p in plans.items())
    monkeypatch.setattr(capability, "cpu_flags", lambda: flags | {"avx512_bf16"})  # embedlab's AVX512-BF16 kernel
    if importlib.util.find_spec("llvmlite") is not None:
        assert cli.main(["neighbors", "137", "--k", "4", "--memory", "1M"]) == 0
        line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith("screen: "))
        assert "bf16 on AVX512-BF16 does not pay for N=1 at D=64 (from N >= 256 at D >= 50" in line
