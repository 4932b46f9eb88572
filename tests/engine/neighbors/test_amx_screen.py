"""The bf16 screen on embedlab's kernels (AMX, AVX512-BF16): the kernels, their NumPy twin, the lists, the pair scores.

Oracles: float64 products of the same bfloat16 values (each product of two
8-bit significands exact in float64, the sums off by float64's rounding,
far below the float32 bounds tested), torch's own float32 -> bfloat16
conversion, the float64 full sort (``full_sort``), /proc/cpuinfo read here. The AMX kernel runs where the CPU has
AMX-BF16 (``amx_kernel.compiled``), the AVX512-BF16 kernel where it has AVX512-BF16
(``avx512_bf16_kernel.compiled``); their NumPy twin (``screen_rows_software``: the same
bfloat16 values and scalings, float32 sums in OpenBLAS's order) runs
everywhere, and the screen's lists are checked through each.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from embedlab.engine.bf16_matrix import Bf16Matrix
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import amx_kernel, avx512_bf16_kernel, capability, dispatch
from embedlab.engine.neighbors.amx_kernel import bf16_bits, pack_queries, screen_rows_software
from embedlab.engine.neighbors.amx_screen import AmxScreen, bf16_exact
from embedlab.engine.neighbors.bf16_screen import bf16_rows
from embedlab.engine.neighbors.pair_scores import pair_dots, pair_dots64
from embedlab.engine.neighbors.plan import plan_blocks
from embedlab.engine.neighbors.search import Search
from embedlab.engine.neighbors.precision import bf16_value_margin, round_bf16
from full_sort import full_sort
from searching import search
from traced_child import TRACED_RUN, traced

KERNEL = amx_kernel.compiled()
KERNELS = {"amx": amx_kernel, "avx512_bf16": avx512_bf16_kernel}
HERE = capability.bf16_kernel()  # the kernel the screen takes here, or None
needs_kernel = pytest.mark.skipif(not KERNEL, reason=f"the AMX kernel does not run here: {amx_kernel.status()}")
needs_any = pytest.mark.skipif(HERE is None, reason="neither of embedlab's bf16 kernels runs here")
# Each kernel where it runs here, and their NumPy twin everywhere.
KERNEL_WAYS = [pytest.param(name, id=name, marks=pytest.mark.skipif(
    not kernel.compiled(), reason=f"the {name} kernel does not run here: {kernel.status()}"))
    for name, kernel in KERNELS.items()]
WAYS = [pytest.param("software", id="software")] + KERNEL_WAYS
U32 = 2.0**-24


def widened(bits):
    """bfloat16 bits (...) uint16 -> their values, float64 (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def chunk(W, D_pad):
    """Rows (v, D) float -> their bfloat16 bits (v_pad, D_pad), zero-padded, v_pad a multiple of 32."""
    v, D = W.shape
    out = np.zeros((-(-v // 32) * 32, D_pad), dtype=np.uint16)
    out[:v, :D] = bf16_bits(W)
    return out


# -- bfloat16 bits and the queries' layout --------------------------------------------------------------------------

def test_bf16_bits_round_as_torch_does():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, 20000)
    ties = (np.arange(1, 300, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exact midpoints, both parities
    x = np.concatenate([x, ties, -ties, [0.0, -0.0, 3.0e38, 1e-40]]).astype(np.float32)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bf16_bits(x), want)


def test_bf16_bits_of_float64_round_once():
    # 1 + 2**-8 + 2**-30: above the midpoint in float64, a tie once rounded to float32 (then to even: 1.0)
    x = np.array([1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-8, -(1 + 3 * 2.0**-8)])
    assert widened(bf16_bits(x)).tolist() == [1 + 2.0**-7, 1.0, -(1 + 2.0**-6)]


@pytest.mark.parametrize("m, D", [(1, 1), (5, 33), (40, 384), (32, 64)])
def test_pack_queries_lays_pairs_of_entries_of_16_queries(m, D):
    bits = np.random.default_rng(m).integers(0, 2**16, size=(m, D)).astype(np.uint16)
    p = pack_queries(bits)
    m_pad, D_pad = p.bits.shape
    assert m_pad % 32 == 0 and D_pad % 32 == 0 and m_pad >= m and D_pad >= D and m_pad - m < 32 and D_pad - D < 32
    assert np.array_equal(p.bits[:m, :D], bits) and not p.bits[m:].any() and not p.bits[:, D:].any()
    last = (m_pad // 16 - 1, D_pad // 2 - 1, 15, 1)
    for j, t, n, e in [(0, 0, 0, 0), (0, 0, 1, 1), last, (0, 3 % (D_pad // 2), 7, 0)]:
        assert p.packed[j, t, n, e] == p.bits[16 * j + n, 2 * t + e]
    assert p.m == m


# -- the kernel and its NumPy twin keep what reaches the bar ---------------------------------------------------------

def case(v, m, D, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((v, D)) * scale
    Q = rng.standard_normal((m, D))
    queries = pack_queries(bf16_bits(Q))
    rows = chunk(W, queries.bits.shape[1])
    rinv = np.zeros(len(rows), dtype=np.float32)
    rinv[:v] = rng.uniform(0.25, 4.0, v).astype(np.float32)
    qinv = np.ones(len(queries.bits), dtype=np.float32)
    qinv[:m] = rng.uniform(0.5, 2.0, m).astype(np.float32)
    # each query's bar near its 10th best exact score: entries on both sides, some within rounding of it
    exact = (widened(rows) @ widened(queries.bits).T) * qinv.astype(np.float64)[None, :] \
        * rinv.astype(np.float64)[:, None]
    bars = np.full(len(queries.bits), np.inf, dtype=np.float32)
    bars[:m] = np.sort(exact[:v, :m], axis=0)[-min(v, 10)].astype(np.float32)
    return rows, queries, rinv, qinv, bars, exact


def bound(rows, queries, rinv, qinv):
    """|screening score - exact| for every entry: the float32 sum (gamma_D of sum |q_i w_i|) and the two scalings."""
    D = rows.shape[1]
    gamma = D * U32 / (1 - D * U32)
    absolute = np.abs(widened(rows)) @ np.abs(widened(queries.bits)).T
    return (gamma * absolute + 4 * U32 * np.abs(widened(rows) @ widened(queries.bits).T)) \
        * np.abs(qinv.astype(np.float64))[None, :] * np.abs(rinv.astype(np.float64))[:, None] * (1 + 1e-6)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("v, m, D", [(32, 1, 32), (64, 5, 384), (96, 40, 64), (256, 33, 50), (1024, 100, 7)])
def test_the_entries_that_pass_are_those_at_or_above_the_bar(way, v, m, D):
    rows, queries, rinv, qinv, bars, exact = case(v, m, D, v + m + D)
    run = screen_rows_software if way == "software" else KERNELS[way].screen_rows
    r, q, s = run(rows, queries, rinv, qinv, bars)
    err = bound(rows, queries, rinv, qinv)
    assert np.all(np.abs(s - exact[r, q]) <= err[r, q])  # each score within the float32 bound of the exact one
    assert np.all(s >= bars[q])  # and at or above its bar
    assert len(set(zip(r.tolist(), q.tolist()))) == r.size  # each entry once
    got = np.zeros(exact.shape, dtype=bool)
    got[r, q] = True
    sure_in = exact >= bars[None, :].astype(np.float64) + err
    sure_out = exact < bars[None, :].astype(np.float64) - err
    assert not np.any(sure_in & ~got) and not np.any(sure_out & got)
    assert sure_in.sum() > 0 and (~sure_in & ~sure_out).sum() < 0.01 * exact.size


@pytest.mark.parametrize("way", KERNEL_WAYS)
@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30])
def test_the_kernel_agrees_with_its_numpy_twin(way, scale):
    rows, queries, rinv, qinv, bars, exact = case(512, 64, 384, 3, scale)
    a = KERNELS[way].screen_rows(rows, queries, rinv, qinv, bars)
    b = screen_rows_software(rows, queries, rinv, qinv, bars)
    err = bound(rows, queries, rinv, qinv)
    near = np.abs(exact - bars[None, :]) <= 2 * err  # entries on the bar's edge may fall either way
    pairs = {(int(x), int(y)) for x, y in zip(a[0], a[1]) if not near[x, y]}
    assert pairs == {(int(x), int(y)) for x, y in zip(b[0], b[1]) if not near[x, y]}
    assert len(pairs) > 100


@pytest.mark.parametrize("way", KERNEL_WAYS)
def test_the_kernel_resumes_where_its_output_is_full(way):
    # 4,096 rows x 32 queries all passing: 131,072 entries, twice what the kernel's output holds at once
    rng = np.random.default_rng(5)
    queries = pack_queries(bf16_bits(rng.standard_normal((32, 64))))
    rows = chunk(rng.standard_normal((4096, 64)), 64)
    ones = np.ones(4096, dtype=np.float32)
    r, q, s = KERNELS[way].screen_rows(rows, queries, ones, np.ones(32, dtype=np.float32),
                                       np.full(32, -np.inf, dtype=np.float32))
    assert r.size == 4096 * 32 and len(set(zip(r.tolist(), q.tolist()))) == r.size
    exact = widened(rows) @ widened(queries.bits).T
    assert np.allclose(s, exact[r, q], rtol=0, atol=64 * 2**-24 * np.abs(exact).max())


@pytest.mark.parametrize("way", WAYS)
def test_wrong_arrays_are_refused_by_name(way):
    run = screen_rows_software if way == "software" else KERNELS[way].screen_rows
    queries = pack_queries(np.zeros((3, 40), dtype=np.uint16))
    rows = np.zeros((64, 64), dtype=np.uint16)
    f32 = np.ones(64, dtype=np.float32)
    q32 = np.ones(32, dtype=np.float32)
    for bad, match in [((rows[:40], queries, f32[:40], q32, q32), "v a multiple of 32"),
                       ((rows[:, :32], queries, f32, q32, q32), r"\(v, 64\)"),
                       ((rows[:, ::1].T.copy()[:64, :64].astype(np.int16), queries, f32, q32, q32), "uint16"),
                       ((np.zeros((64, 128), np.uint16)[:, ::2], queries, f32, q32, q32), "C-contiguous"),
                       ((rows, queries, f32[:32], q32, q32), "rinv"),
                       ((rows, queries, f32, q32.astype(np.float64), q32), "qinv"),
                       ((rows, queries, f32, q32, q32[:16]), "bars")]:
        with pytest.raises(ValueError, match=match):
            run(*bad)


@pytest.mark.parametrize("way", WAYS)
def test_queries_built_by_hand_are_refused_by_name(way):
    # A PackedQueries whose bits and packed layout disagree would send a kernel reading outside its arrays
    # (found in review: a segfault with 16 queries of padding, an endless loop with D_pad = 0).
    run = screen_rows_software if way == "software" else KERNELS[way].screen_rows
    rows, f32 = np.zeros((32, 32), dtype=np.uint16), np.ones(32, dtype=np.float32)
    good = pack_queries(np.zeros((3, 32), dtype=np.uint16))
    for bits, packed, match in [
            (np.zeros((16, 32), np.uint16), np.zeros((1, 16, 16, 2), np.uint16), "multiples of 32"),
            (np.zeros((32, 0), np.uint16), np.zeros((2, 0, 16, 2), np.uint16), "multiples of 32"),
            (np.zeros((0, 32), np.uint16), np.zeros((0, 16, 16, 2), np.uint16), "multiples of 32"),
            (np.zeros((4096, 32), np.uint16), good.packed, r"queries.packed must be a C-contiguous \(256, 16, 16, 2\)"),
            (good.bits, good.packed[:1], "queries.packed"),
            (good.bits, good.packed.astype(np.float32), "queries.packed"),
            (good.bits.astype(np.int16), good.packed, "queries.bits")]:
        queries = amx_kernel.PackedQueries(bits, packed, 1)
        m_pad = max(len(bits), 1)
        with pytest.raises(ValueError, match=match):
            run(rows, queries, f32, np.ones(m_pad, dtype=np.float32), np.zeros(m_pad, dtype=np.float32))


def test_status_says_why_or_where():
    text = amx_kernel.status()
    assert ("AMX tiles, compiled for" in text) == KERNEL
    if not KERNEL:
        assert any(word in text for word in ("AMX", "Linux", "llvmlite", "NumPy"))
    text = avx512_bf16_kernel.status()
    assert ("AVX512-BF16, compiled for" in text) == avx512_bf16_kernel.compiled()
    if "avx512_bf16" not in capability.cpu_flags():
        assert text == "the CPU has no AVX512-BF16 (/proc/cpuinfo flag avx512_bf16)"


@pytest.mark.skipif(importlib.util.find_spec("llvmlite") is None or platform.machine() not in ("x86_64", "AMD64"),
                    reason="compiles x86 code for other x86 CPUs (needs llvmlite on x86-64)")
@pytest.mark.parametrize("cpu", ["cooperlake", "znver4"])
def test_the_avx512_bf16_kernel_compiles_for_cpus_that_have_the_units(cpu):
    # On any x86-64 CPU: the kernel compiled (not run) for a CPU with AVX512-BF16 is one leaf loop of vdpbf16ps.
    import llvmlite.binding as llvm

    from embedlab.engine.jit import library_calls

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=3)
    assembly = machine.emit_assembly(llvm.parse_assembly(avx512_bf16_kernel._build(triple)[0]))
    assert assembly.count("vdpbf16ps") >= avx512_bf16_kernel.ROWS * 2
    assert not library_calls(assembly), library_calls(assembly)[:3]


def test_the_screen_takes_amx_first_then_avx512_bf16(monkeypatch):
    monkeypatch.setattr(capability, "amx_runs", lambda: True)
    assert capability.bf16_kernel() is amx_kernel
    monkeypatch.setattr(capability, "amx_runs", lambda: False)
    monkeypatch.setattr(avx512_bf16_kernel, "compiled", lambda: True)
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    assert capability.bf16_kernel() is avx512_bf16_kernel and capability.kernel_runs()
    # its own shapes (AVX512_WIDE, measured on Zen 5): from 32 queries where D >= 384, else from 256 at D >= 50
    assert capability.bf16_pays(32, 384, 30522) and capability.bf16_pays(32, 1024, 30522, "dot")
    assert not capability.bf16_pays(31, 384, 30522) and not capability.bf16_pays(128, 256, 30522)
    assert capability.bf16_pays(256, 50, 400000) and not capability.bf16_pays(1000, 49, 400000)
    monkeypatch.setattr(avx512_bf16_kernel, "status", lambda: "AVX512-BF16, compiled for znver5 by llvmlite 0.50.0")
    why = capability.reason("bf16", "auto", codes_given=False, fits=True, queries=300, width=64, rows=1000)
    assert why.startswith("bf16 on AVX512-BF16 (avx512_bf16, vdpbf16ps, embedlab's kernel compiled for znver5")
    assert "N=300 >= 256 at D=64, no torch needed" in why
    why = capability.reason("bf16", "auto", codes_given=False, fits=True, queries=40, width=384, rows=1000)
    assert "N=40 >= 32 at D=384, no torch needed" in why
    assert capability.describe().startswith("bf16 on AVX512-BF16")
    # AMX-BF16 whose tiles Linux refuses (amx_runs False): the AVX512-BF16 kernel, at its own shapes
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"amx_bf16", "amx_tile", "avx512_bf16"}))
    assert capability.bf16_kernel() is avx512_bf16_kernel and capability.kernel_wide() == capability.AVX512_WIDE
    assert capability.bf16_pays(32, 384, 30522)
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))  # no AVX512-BF16
    assert capability.bf16_kernel() is None and not capability.kernel_runs()


# -- the bound without the product's rounding ----------------------------------------------------------------------

@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_the_value_margin_holds_for_the_kernels_scores(way, metric):
    # Cancelling rows (opposite-signed halves) and queries rounded to bfloat16: each score within A + r |s~|.
    rng = np.random.default_rng(8)
    D = 256
    sign = np.where(np.arange(D) < D // 2, 1.0, -1.0)
    W = rng.uniform(0.5, 1.0, size=(640, D)) * sign
    W[320:] = np.abs(W[320:]) * rng.uniform(0.1, 10.0, size=(320, 1))
    Q = W[rng.choice(640, 40, replace=False)] * (1 + 2.0**-9)  # not bfloat16 values: rounded
    q_norms, w_norms = vector_norms(Q), vector_norms(W)
    unit = Q / q_norms[:, None] if metric == "cosine" else Q
    queries = pack_queries(bf16_bits(unit))
    rows = chunk(W, D)
    rinv = (1 / w_norms).astype(np.float32) if metric == "cosine" else np.ones(640, dtype=np.float32)
    qinv = np.ones(len(queries.bits), dtype=np.float32)
    bars = np.full(len(queries.bits), np.inf, dtype=np.float32)
    bars[:40] = -np.inf
    run = screen_rows_software if way == "software" else KERNELS[way].screen_rows
    r, q, s = run(rows, queries, rinv, qinv, bars)
    exact = (Q @ W.T) / (np.outer(q_norms, w_norms) if metric == "cosine" else 1.0)  # (40, 640) float64
    A, rr = bf16_value_margin(metric, D, q_norms, np.full(40, w_norms.max()), float(w_norms.min()),
                              product_rounded=False)
    assert rr == (0.0 if metric == "dot" else rr) and rr < 2**-20
    assert np.all(np.abs(s - exact[q, r]) <= A[q] + rr * np.abs(s))
    A_torch, r_torch = bf16_value_margin(metric, D, q_norms, np.full(40, w_norms.max()), float(w_norms.min()))
    assert np.array_equal(A, A_torch) and r_torch > 2**-9  # only the product's rounding to bfloat16 goes


# -- the screen's lists ----------------------------------------------------------------------------------------------

def lists(W, Q, k, metric, exclude=None, way="software", rows=None):
    """The screen's top-k (a whole table, one block of queries) on kernel ``way`` or its NumPy twin ("software");
    Q None: the rows ``exclude`` by id."""
    table = np.asarray(W) if not isinstance(W, Bf16Matrix) else W
    W64 = np.asarray(W[:] if isinstance(W, Bf16Matrix) else W, dtype=np.float64)
    q64 = W64[exclude] if Q is None else np.asarray(Q, dtype=np.float64)
    row_norms = vector_norms(W64)
    inv = np.where(row_norms > 0, 1 / np.where(row_norms > 0, row_norms, 1), 0.0) if metric == "cosine" else None
    plan = plan_blocks(len(W64), W64.shape[1], k, 4, 2**20, n_queries=len(q64))
    before = W64.copy(), q64.copy()
    got = AmxScreen(table, q64, vector_norms(q64), exclude, k, metric, row_norms, inv, rows=rows,
                    kernel=KERNELS.get(way), software=way == "software").run(plan)
    assert np.array_equal(np.asarray(W64), before[0]) and np.array_equal(q64, before[1])
    return got


def check(W, Q, k, metric, exclude=None, **kwargs):
    """The screen's lists against a float64 full sort, for the nonzero queries (a screen's; the front door lists
    zero queries itself)."""
    W64 = np.asarray(W[:] if isinstance(W, Bf16Matrix) else W, dtype=np.float64)
    if Q is None:
        exclude = exclude[vector_norms(W64[exclude]) > 0]
    else:
        Q = Q[vector_norms(np.asarray(Q, dtype=np.float64)) > 0]
    ids, scores = lists(W, Q, k, metric, exclude, **kwargs)
    want_ids, want_scores = full_sort(W64, W64[exclude] if Q is None else Q, k, metric, exclude)
    assert ids.tolist() == want_ids.tolist()
    assert np.allclose(scores, want_scores, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("D", [1, 7, 50, 64, 384])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_gaussian_tables_of_every_width_match_a_full_sort(way, D, metric):
    rng = np.random.default_rng(D)
    W = rng.standard_normal((4999, D)).astype(np.float32)  # more than one chunk of rows, not a multiple of 32
    W[rng.integers(0, 4999, size=12)] = W[3]  # exact ties under other ids
    W[rng.integers(0, 4999, size=8)] = 0.0  # zero rows
    check(W, None, 12, metric, np.arange(0, 4999, 97), way=way)
    check(W, rng.standard_normal((9, D)), 12, metric, way=way)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_near_and_exact_ties_are_ordered_exactly(way, metric):
    # 200 integer rows within 1 of one row of entries near 1,000: scores 1e-6 apart relative, far inside
    # bfloat16's rounding; 30 exact copies tie, more than the pool's slots with k = 40.
    rng = np.random.default_rng(1)
    base = rng.integers(500, 1500, size=64) * rng.choice([-1, 1], size=64)
    near = base + rng.integers(-1, 2, size=(200, 64))
    W = np.concatenate([near, rng.integers(-1500, 1500, size=(800, 64)), near[:30]]).astype(np.float64)
    check(W, None, 40, metric, np.array([0, 5, 250, 1010]), way=way)
    check(W, base[None, :] * 3.0, 60, metric, way=way)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_bf16_tables_float16_tables_and_their_own_bits(way, metric):
    rng = np.random.default_rng(11)
    values = round_bf16(rng.standard_normal((3000, 96))).astype(np.float32)  # a bf16 checkpoint's table
    values[rng.integers(0, 3000, size=10)] = values[7]
    ids = np.arange(0, 3000, 41)
    cached = bf16_rows(values)
    assert cached.exact and bf16_exact(values) and not bf16_exact(values + np.float32(2.0**-20))
    check(values, None, 10, metric, ids, way=way, rows=cached)  # raw: queries by id as they are
    check(Bf16Matrix(bf16_bits(values)), None, 10, metric, ids, way=way)  # the checkpoint's bits
    check(values, rng.standard_normal((7, 96)), 10, metric, way=way)  # free queries: rounded
    halves = rng.standard_normal((3000, 96)).astype(np.float16)
    check(halves, None, 10, metric, ids, way=way)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("scale", [1e-14, 1e14])
def test_tiny_and_huge_lengths_within_the_guard(way, scale):
    rng = np.random.default_rng(7)
    W = rng.standard_normal((600, 16))
    W /= np.linalg.norm(W, axis=1)[:, None]
    W[::3] *= scale
    for metric in ("cosine", "dot"):
        check(W, None, 10, metric, np.arange(0, 600, 29), way=way)


# -- the front door takes it ----------------------------------------------------------------------------------------

@pytest.fixture
def amx_front_door(monkeypatch):
    """The front door's bf16 screen on the AMX screen: the kernel where it runs, its NumPy twin elsewhere."""
    taken = []

    def screen(*args, **kwargs):
        taken.append(kwargs.get("rows"))
        return AmxScreen(*args, **kwargs, kernel=HERE, software=HERE is None)

    monkeypatch.setattr(dispatch, "kernel_runs", lambda: True)
    monkeypatch.setattr(dispatch, "AmxScreen", screen)
    return taken


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_the_front_door_runs_it_for_a_bf16_plan(amx_front_door, metric):
    pytest.importorskip("torch")  # screen="bf16" by name asks for torch where the kernel does not run
    rng = np.random.default_rng(3)
    W = rng.standard_normal((3000, 64)).astype(np.float32)
    ids = np.arange(0, 3000, 7)
    got = search(W, None, 10, metric, exclude=ids, screen="bf16", memory=2**22)
    want = full_sort(W, W[ids], 10, metric, ids)
    assert got[0].tolist() == want[0].tolist() and amx_front_door


def test_auto_takes_it_by_shape_where_the_kernel_runs(monkeypatch):
    monkeypatch.setattr(capability, "amx_runs", lambda: True)
    monkeypatch.setattr(capability, "cpu_flags", lambda: frozenset({"amx_bf16", "amx_tile", "avx2"}))
    assert capability.bf16_pays(256, 50, 400000) and capability.bf16_pays(128, 384, 30522, "dot")
    assert not capability.bf16_pays(64, 384, 30522) and not capability.bf16_pays(1000, 8, 30522)
    why = capability.reason("bf16", "auto", codes_given=False, fits=True, queries=300, width=64, rows=1000)
    assert "embedlab's kernel" in why and "no torch needed" in why and "N=300 >= 256" in why
    why = capability.reason("float", "auto", codes_given=False, fits=True, queries=100, width=64, rows=1000)
    assert "bf16 on AMX does not pay for N=100 at D=64" in why


@needs_kernel
def test_a_process_without_torch_runs_it(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import embedlab
        from embedlab.engine.table import EmbeddingTable
        W = np.random.default_rng(0).standard_normal((5000, 384)).astype(np.float32)
        result = embedlab.neighbors(EmbeddingTable(W), list(range(0, 5000, 16)), k=5, metrics=["cosine"])
        print(result.memory.plans["cosine"]["screen"], "torch" in sys.modules)
        print(result.memory.plans["cosine"]["why"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout.splitlines()
    assert out[0] == "bf16 False" and "embedlab's kernel" in out[1]


# -- pair scores -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("D", [1, 15, 16, 17, 50, 384])
def test_pair_dots_are_float32_sums_within_their_bound(D):
    rng = np.random.default_rng(D)
    W = rng.standard_normal((700, D)).astype(np.float32)
    Q = rng.standard_normal((30, D)).astype(np.float32)
    qi, ids = rng.integers(0, 30, 3000), rng.integers(0, 700, 3000)
    exact = np.einsum("ij,ij->i", Q[qi].astype(np.float64), W[ids].astype(np.float64))
    err = D * U32 / (1 - D * U32) * np.einsum("ij,ij->i", np.abs(Q[qi]).astype(np.float64),
                                                 np.abs(W[ids]).astype(np.float64))
    for table in (W, np.asfortranarray(W), W.astype(np.float16).astype(np.float32), Bf16Matrix(bf16_bits(W))):
        got = pair_dots(table, Q, qi, ids)
        values = np.asarray(table[:] if isinstance(table, Bf16Matrix) else table, dtype=np.float64)
        want = np.einsum("ij,ij->i", Q[qi].astype(np.float64), values[ids])
        assert got.dtype == np.float32 and np.all(np.abs(got - want) <= err * 1.01 + 1e-30)
    assert np.all(np.abs(pair_dots(W, Q, qi, ids) - exact) <= err)


@pytest.mark.parametrize("D", [1, 7, 8, 9, 17, 64])
def test_pair_dots64_are_within_float64s_bound_of_the_exact_sum(D):
    from fractions import Fraction

    rng = np.random.default_rng(100 + D)
    W = (rng.standard_normal((60, D)) * 10.0 ** rng.integers(-3, 4, (60, 1))).astype(np.float32)
    W[7] = W[3]  # identical rows score bit-identically
    Q = rng.standard_normal((9, D))
    qi, ids = rng.integers(0, 9, 400), rng.integers(0, 60, 400)
    qi[:9], ids[:9] = np.arange(9), 3
    qi[9:18], ids[9:18] = np.arange(9), 7
    # The exact sums, in rationals, and float64's bound gamma_D sum |q_i w_i| (Higham 2002, section 3.1).
    exact = np.array([float(sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(Q[q], W[i])))
                      for q, i in zip(qi, ids)])
    u64 = 2.0**-53
    err = D * u64 / (1 - D * u64) * np.einsum("ij,ij->i", np.abs(Q[qi]), np.abs(W[ids]).astype(np.float64))
    first = pair_dots64(W, Q, qi, ids)
    for table in (W, np.asfortranarray(W), W.astype(np.float64)):  # the compiled loop, NumPy's gather twice
        got = pair_dots64(table, Q, qi, ids)
        assert got.dtype == np.float64 and np.all(np.abs(got - exact) <= err * 1.0001 + 1e-300)
        assert np.array_equal(got[:9], got[9:18])
        assert np.array_equal(got, first)  # one order of the sum, whatever the layout
    with pytest.raises(ValueError, match="float64"):
        pair_dots64(W, Q.astype(np.float32), qi, ids)
    with pytest.raises(IndexError, match=r"ids must lie in \[0, 60\), got 60"):
        pair_dots64(W, Q, np.array([0]), np.array([60]))


def in_the_loops_order(q, w):
    """q . w in Python floats, summed as pair_dots64 documents: 8 lanes from 0.0 over the whole vectors of 8, the
    lanes added pairwise ([0:4] + [4:8], [0:2] + [2:4], [0] + [1]), then the rest one at a time."""
    D = len(q)
    whole = D // 8 * 8
    lanes = [0.0] * 8
    for j in range(0, whole, 8):
        lanes = [lanes[i] + float(q[j + i]) * float(w[j + i]) for i in range(8)]
    while len(lanes) > 1:
        half = len(lanes) // 2
        lanes = [lanes[i] + lanes[half + i] for i in range(half)]
    total = lanes[0]
    for t in range(whole, D):
        total += float(q[t]) * float(w[t])
    return total


@pytest.mark.parametrize("D", [1, 7, 8, 9, 17, 64, 385])
def test_pair_dots64_score_the_same_bits_however_the_table_is_held(monkeypatch, D):
    # The rescored scores are the ones shown (--json): a pair scores the same bits whether the table is a float32
    # array (the compiled loop), its bf16 bits (Bf16Matrix), a float16, float64, strided or Fortran copy of the
    # same values (NumPy), or where the loop is not compiled (no llvmlite).
    from embedlab.engine.neighbors import pair_scores

    rng = np.random.default_rng(200 + D)
    values = (rng.standard_normal((60, D)) * 10.0 ** rng.integers(-3, 4, (60, 1))).astype(np.float32)
    bits = bf16_bits(values)
    W = widened(bits).astype(np.float32)  # bfloat16 values (exact in float16 too where in range: checked below)
    Q = rng.standard_normal((9, D))
    qi, ids = rng.integers(0, 9, 3000), rng.integers(0, 60, 3000)
    want = np.array([in_the_loops_order(Q[q], W[i]) for q, i in zip(qi, ids)])
    wide = np.zeros((60, 2 * D), dtype=np.float32)
    wide[:, ::2] = W
    holdings = {"float32": W, "bf16 bits": Bf16Matrix(bits), "float64": W.astype(np.float64),
                "fortran": np.asfortranarray(W), "strided": wide[:, ::2]}
    if np.array_equal(W.astype(np.float16).astype(np.float32), W):
        holdings["float16"] = W.astype(np.float16)
    for name, table in holdings.items():
        assert np.array_equal(pair_dots64(table, Q, qi, ids), want), name
    monkeypatch.setattr(pair_scores._LOOPS, "functions", lambda: None)  # as where llvmlite is missing
    assert np.array_equal(pair_dots64(W, Q, qi, ids), want)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_a_bf16_checkpoint_lists_the_same_scores_held_as_bits_or_widened(metric):
    from embedlab.engine.table import EmbeddingTable

    rng = np.random.default_rng(7)
    bits = bf16_bits(rng.standard_normal((2000, 384)).astype(np.float32))
    Q = rng.standard_normal((20, 384))  # vectors: their float64 products with the rows round (a row's do not)
    held = EmbeddingTable(Bf16Matrix(bits))
    found = Search(held, 5, metric, vectors=Q).nearest(metric)  # the table kept as its bits
    again = Search(EmbeddingTable(widened(bits).astype(np.float32)), 5, metric, vectors=Q).nearest(metric)
    assert found.ids.tolist() == again.ids.tolist()
    assert np.array_equal(found.scores, again.scores)


def test_pair_dots_refuse_ids_outside_the_table():
    W = np.ones((5, 3), dtype=np.float32)
    Q = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(IndexError, match=r"ids must lie in \[0, 5\), got 5"):
        pair_dots(W, Q, np.array([0]), np.array([5]))
    with pytest.raises(IndexError, match="qi must lie"):
        pair_dots(W, Q, np.array([-1]), np.array([0]))
    with pytest.raises(ValueError, match="float32"):
        pair_dots(W, Q.astype(np.float64), np.array([0]), np.array([0]))
    assert pair_dots(W, Q, np.array([], dtype=np.int64), np.array([], dtype=np.int64)).size == 0


def test_cpu_flags_are_the_flags_line_of_proc_cpuinfo():
    from embedlab.engine.cpu import cpu_flags

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        assert cpu_flags() == frozenset()
        return
    lines = [line for line in text.splitlines() if line.startswith("flags")]
    assert cpu_flags() == (frozenset(lines[0].partition(":")[2].split()) if lines else frozenset())
    assert capability.cpu_flags() == cpu_flags()  # the screens choose by the same set


def test_a_device_runs_torchs_bf16_screen_and_says_so(monkeypatch):
    pytest.importorskip("torch")
    from embedlab.engine.neighbors.search import Search

    monkeypatch.setattr(capability, "amx_runs", lambda: True)
    W = np.random.default_rng(4).standard_normal((500, 40))
    ids = np.arange(0, 500, 11)
    search_ = Search(W, 4, "cosine", ids=ids, screen="bf16", device="cpu")
    assert "embedlab's kernel" not in search_.plan("cosine").why and search_.plan("cosine").screen == "bf16"
    assert search_.nearest("cosine").ids.tolist() == full_sort(W, W[ids], 4, "cosine", ids)[0].tolist()
    assert "embedlab's kernel" in Search(W, 4, "cosine", ids=ids, screen="bf16").plan("cosine").why


# One traced search of the AMX screen in a fresh interpreter, as test_memory.py traces the other screens: its
# working memory (the kernel's output, the chunks' bits, the sample, the pool) stays within the budget.
TRACED_CHILD = """
import functools, json, sys, tracemalloc
import numpy as np
sys.path[:0] = json.loads(sys.argv[1])
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import amx_screen, capability, dispatch
from embedlab.engine.neighbors.search import ArrayTable
from searching import search
kernel = capability.bf16_kernel()  # the kernel that runs here, or None: its NumPy twin
capability.kernel_runs = dispatch.kernel_runs = lambda: True
dispatch.AmxScreen = functools.partial(amx_screen.AmxScreen, kernel=kernel, software=kernel is None)
V, D, memory, metric, by, held, equal = json.loads(sys.argv[2])
rng = np.random.default_rng(V + D)
W = rng.standard_normal((V, D)).astype(np.float32)
if equal:
    W[:] = W[0]  # every row equal: every entry reaches every bar, and the kernel's output is pooled a part at a time
norms = vector_norms(W)
norms.flags.writeable = False
table = ArrayTable(W, norms=norms)
table.bf16_rows()  # resident: built before the trace, as a table's int16 codes are in test_memory.py
table = table if held else W  # or a plain array: rows rounded a chunk at a time, lengths measured, in the budget
ids = rng.choice(V, 300, replace=False)
Q = rng.standard_normal((300, D)) if by == "vector" else None
run = lambda: search(table, Q, 10, metric, exclude=ids if by == "id" else None, memory=memory, screen="bf16",
                     workers=2)
run()  # once untraced: the kernel and the pair scores' loop compiled
""" + TRACED_RUN


@needs_any  # the NumPy twin holds a chunk's scores: the budget is the kernels'
@pytest.mark.parametrize("V, D, memory", [(20_000, 64, 2**22), (60_000, 24, 4 * 2**20), (3000, 384, 2**21)])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("by", ["id", "vector"])
@pytest.mark.parametrize("held", [True, False], ids=["rows-held", "plain-array"])
def test_traced_peak_stays_within_the_budget(V, D, memory, metric, by, held):
    found = traced(TRACED_CHILD, [V, D, memory, metric, by, held, False])
    outputs = 300 * 10 * 16  # ids and scores (N, K): not counted in the budget
    assert found["peak"] <= memory + outputs, f"traced peak {found['peak']:,} over the budget {memory:,}"
    rng = np.random.default_rng(V + D)
    W = rng.standard_normal((V, D)).astype(np.float32)
    ids = rng.choice(V, 300, replace=False)
    Q = rng.standard_normal((300, D)) if by == "vector" else None
    want = full_sort(W, W[ids[:20]] if Q is None else Q[:20], 10, metric, None if Q is not None else ids[:20])[0]
    assert found["ids"] == want.tolist()


@needs_any  # the NumPy twin holds a chunk's scores: the budget is the kernels'
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_a_table_of_equal_rows_stays_within_the_budget(metric):
    # Every entry passes every bar: the kernel's output comes a part at a time, each pooled (settled exactly:
    # more ties than the pool's slots) before the next, so the search holds one part, not a chunk's entries.
    V, D, memory = 6000, 32, 2**22  # 1.8 million entries pass: 170 MB held at once without the parts
    found = traced(TRACED_CHILD, [V, D, memory, metric, "id", True, True])
    assert found["peak"] <= memory + 300 * 10 * 16, f"traced peak {found['peak']:,} over the budget {memory:,}"
    ids = np.random.default_rng(V + D).choice(V, 300, replace=False)
    want = [[i for i in range(11) if i != own][:10] for own in ids[:20]]  # equal scores: the smallest ids
    assert found["ids"] == want


# The named minimum of a bf16 plan, traced in a fresh interpreter: the AMX screen pads queries, rows and widths to
# 32, which a plan of one query against K + 1 rows must count.
MINIMUM_CHILD = """
import functools, json, sys, tracemalloc
import numpy as np
sys.path[:0] = json.loads(sys.argv[1])
from embedlab.errors import BudgetError
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import amx_screen, capability, dispatch
from embedlab.engine.neighbors.search import ArrayTable, Search
kernel = capability.bf16_kernel()  # the kernel that runs here, or None: its NumPy twin
capability.kernel_runs = dispatch.kernel_runs = lambda: True
dispatch.AmxScreen = functools.partial(amx_screen.AmxScreen, kernel=kernel, software=kernel is None)
D, metric = json.loads(sys.argv[2])
W = np.random.default_rng(D).standard_normal((5000, D)).astype(np.float32)
table = ArrayTable(W, norms=vector_norms(W))
table.bf16_rows()  # resident, outside the budget
ids = np.arange(40)
def search(memory):
    found = Search(table, 7, metric, ids=ids, memory=memory, screen="bf16", workers=1).nearest(metric)
    return found.ids, found.scores
try:
    search(1000)
except BudgetError as exc:
    minimum = exc.minimum
run = lambda: search(minimum)
run()
print(json.dumps({"minimum": minimum}))
""" + TRACED_RUN


@needs_any  # the NumPy twin holds a chunk's scores: the budget is the kernels'
@pytest.mark.parametrize("D", [12, 384])
@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_the_named_minimum_holds_the_amx_screen(D, metric):
    child = subprocess.run([sys.executable, "-c", MINIMUM_CHILD, json.dumps(sys.path), json.dumps([D, metric])],
                           capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stderr
    minimum, found = (json.loads(line) for line in child.stdout.strip().splitlines()[-2:])
    minimum = minimum["minimum"]
    assert found["peak"] <= minimum + 40 * 7 * 16, f"traced peak {found['peak']:,} over the minimum {minimum:,}"
    W = np.random.default_rng(D).standard_normal((5000, D)).astype(np.float32)
    assert found["ids"] == full_sort(W, W[:20], 7, metric, np.arange(20))[0].tolist()


FORK_CHILD = """
import json, os, sys, time
sys.path[:0] = json.loads(sys.argv[1])
import importlib
kernel = importlib.import_module("embedlab.engine.neighbors." + sys.argv[2])
kernel._READY._lock.acquire()  # held, as by a thread of this process asking Linux for the tiles or compiling, at the fork
pid = os.fork()
if pid == 0:
    os._exit(10 + kernel.compiled())  # the child asks and compiles on its own
for _ in range(600):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("the child waited for the parent's lock")
    sys.exit(1)
kernel._READY._lock.release()
print(json.dumps([os.waitstatus_to_exitcode(status), 10 + kernel.compiled()]))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_child_forked_while_the_kernel_is_asked_for_runs_its_own(name):
    module = KERNELS[name].__name__.rsplit(".", 1)[1]
    child = subprocess.run([sys.executable, "-c", FORK_CHILD, json.dumps(sys.path), module], capture_output=True,
                           text=True, check=False, timeout=120)
    assert child.returncode == 0, child.stdout + child.stderr
    in_child, in_parent = json.loads(child.stdout.strip().splitlines()[-1])
    assert in_child == in_parent == 10 + KERNELS[name].compiled()


NO_TORCH_CHILD = """
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
sys.modules["torch"] = None  # a process without torch
import numpy as np
from embedlab.errors import MissingExtraError
from embedlab.engine.neighbors.search import Search
W = np.random.default_rng(0).standard_normal((400, 64)).astype(np.float32)
ids = np.arange(0, 400, 3)
found = Search(W, 5, "cosine", ids=ids, screen="bf16").nearest("cosine")  # the queries' screen: the kernel
try:
    Search(W, 5, "cosine", every_row=True, screen="bf16")  # every row: the self-join, torch's
    print(json.dumps([found.ids.tolist(), "accepted"]))
except MissingExtraError as exc:
    print(json.dumps([found.ids.tolist(), str(exc)]))
"""


@needs_kernel
def test_every_row_on_bf16_products_without_torch_is_refused_at_the_door():
    child = subprocess.run([sys.executable, "-c", NO_TORCH_CHILD, json.dumps(sys.path)], capture_output=True,
                           text=True, check=False)
    assert child.returncode == 0, child.stderr
    ids, refusal = json.loads(child.stdout.strip().splitlines()[-1])
    W = np.random.default_rng(0).standard_normal((400, 64)).astype(np.float32)
    assert ids == full_sort(W, W[0:400:3], 5, "cosine", np.arange(0, 400, 3))[0].tolist()
    assert "need torch" in refusal and "every_row with screen='bf16'" in refusal and "[torch]" in refusal


NO_LLVMLITE_CHILD = """
import json, sys
sys.path[:0] = json.loads(sys.argv[1])
sys.modules["llvmlite"] = None  # a process where llvmlite cannot be imported
import numpy as np
from embedlab.engine.neighbors import amx_kernel, capability
from embedlab.engine.neighbors.search import Search
W = np.random.default_rng(0).standard_normal((3000, 384)).astype(np.float32)
ids = np.arange(0, 3000, 10)  # 300 queries of D = 384: the shape embedlab's kernel takes
search = Search(W, 5, "cosine", ids=ids)
found = search.nearest("cosine")
print(json.dumps([found.ids[:20].tolist(), search.plan("cosine").screen, search.plan("cosine").why,
                  amx_kernel.status(), capability.describe()]))
"""


@pytest.mark.skipif("amx_bf16" not in capability.cpu_flags(), reason="a CPU with AMX-BF16")
def test_without_llvmlite_the_plan_says_why_the_kernel_does_not_run():
    child = subprocess.run([sys.executable, "-c", NO_LLVMLITE_CHILD, json.dumps(sys.path)], capture_output=True,
                           text=True, check=False)
    assert child.returncode == 0, child.stderr
    ids, screen, why, status, described = json.loads(child.stdout.strip().splitlines()[-1])
    W = np.random.default_rng(0).standard_normal((3000, 384)).astype(np.float32)
    assert ids == full_sort(W, W[0:200:10], 5, "cosine", np.arange(0, 200, 10))[0].tolist()
    assert screen in ("bf16", "float") and "embedlab's kernel" not in why
    assert status.startswith("not compiled (llvmlite is not installed") and "NumPy" not in status
    for text in (why, described):
        assert "embedlab's AMX kernel does not run here: not compiled (llvmlite is not installed" in text
