"""The compiled product of a few queries with a bf16 table's bits: within the float32 bound of the float64 product,
and the float screen's lists through it id for id those of the float64 full sort."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pytest

from embedlab.engine import widened_product
from embedlab.engine.jit import Loops
from embedlab.engine.widened_product import widened_product as product

needs_loop = pytest.mark.skipif(not widened_product.compiled(), reason=f"not compiled: {widened_product.status()}")


def _bits(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random finite bfloat16 bits: normal values over a wide range of scales, some subnormal, some zero."""
    X = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)
    X[rng.random(shape) < 0.03] = 1e-39  # a float32 subnormal
    X[rng.random(shape) < 0.03] = 0.0
    return (X.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


@needs_loop
@pytest.mark.parametrize("D", [1, 15, 16, 63, 64, 65, 130, 384, 4099])
@pytest.mark.parametrize("m", [1, 2, 5, 33])
@pytest.mark.parametrize("half", [False, True])
def test_each_score_is_within_the_float32_sums_bound_of_the_float64_product(D, m, half):
    """|s~ - s| <= gamma_D sum_j |w_j q_j|, gamma_D = D u / (1 - D u), u = 2**-24, for a float32 sum in any order
    (Higham 2002, section 3.1): the bound the float screen's margin rests on. The float64 product is exact here
    or within 2**-53 of it, far below the bound. bf16 bits, and float16 rows where the CPU converts halves."""
    if half and not widened_product.compiled(np.float16):
        pytest.skip(f"float16 loop not compiled here: {widened_product.status(np.float16)}")
    rng = np.random.default_rng(D * 100 + m)
    bits = _bits(rng, (37, D))
    W = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # (37, D) widened by hand
    if half:  # the same values to float16 (clipped to its range; subnormal halves among them)
        bits = np.clip(W, -6e4, 6e4).astype(np.float16)
        W = bits.astype(np.float64)
    Q = rng.standard_normal((m, D)).astype(np.float32)
    got = product(bits, Q, np.full((37, m), np.nan, dtype=np.float32))
    exact = W @ Q.T.astype(np.float64)  # (37, m)
    gamma = D * 2.0**-24 / (1 - D * 2.0**-24)
    assert (np.abs(got - exact) <= gamma * (np.abs(W) @ np.abs(Q.T.astype(np.float64))) + 1e-44).all()


@needs_loop
def test_a_query_equal_to_a_row_of_small_integers_scores_exactly():
    bits = (np.arange(-64, 136, dtype=np.float32).reshape(2, 100).view(np.uint32) >> 16).astype(np.uint16)
    W = (bits.astype(np.uint32) << 16).view(np.float32)
    got = product(bits, W.copy(), np.empty((2, 2), dtype=np.float32))
    assert got.tolist() == (W.astype(np.float64) @ W.T.astype(np.float64)).tolist()  # exact in float32


@needs_loop
def test_wrong_arrays_are_refused_naming_what_was_expected():
    bits, Q, out = np.zeros((3, 8), np.uint16), np.zeros((2, 8), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match=r"rows must be a C-contiguous uint16 array of shape \(3, 8\) \(or float16\), "
                                         r"got int16"):
        product(bits.astype(np.int16), Q, out)
    with pytest.raises(ValueError, match=r"queries must be a C-contiguous float32 array of shape \(2, 8\), "
                                         r"got float32 \(2, 8\) \(strided\)"):
        product(bits, np.asfortranarray(Q), out)
    with pytest.raises(ValueError,
                       match=r"out must be a C-contiguous float32 array of shape \(3, 2\), got float32 \(2, 3\)"):
        product(bits, Q, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"rows must be a C-contiguous float16 array of shape \(3, 8\), "
                                         r"got float16 \(3, 8\) \(strided\)$"):  # float16 named once
        product(np.zeros((3, 16), np.float16)[:, ::2], Q, out)
    with pytest.raises(ValueError, match=r"rows must be a 2-D array, got shape \(8,\)"):
        product(bits[0], Q, out)
    with pytest.raises(ValueError, match=r"queries must be a 2-D array, got shape \(8,\)"):
        product(bits, Q[0], out)
    assert product(bits[:0], Q, out[:0]).shape == (0, 2)


def test_where_the_loop_is_not_compiled_it_says_so(monkeypatch):
    loops = widened_product._LOOPS[np.dtype(np.uint16)]
    monkeypatch.setattr(loops, "functions", lambda: None)
    monkeypatch.setattr(loops, "_why", "NumPy (llvmlite is not installed: test)")
    with pytest.raises(RuntimeError, match=r"the widened product of uint16 rows is not compiled here: NumPy "
                                           r"\(llvmlite is not"):
        product(np.zeros((1, 2), np.uint16), np.zeros((1, 2), np.float32), np.zeros((1, 1), np.float32))
    assert not widened_product.compiled(np.uint16) and not widened_product.compiled(np.float32)


@pytest.mark.parametrize("loop", [True, False])
@pytest.mark.parametrize("n_queries", [1, 3, 40])
@pytest.mark.parametrize("dtype", ["BF16", "F16"])
def test_the_float_screen_through_the_loop_or_numpy_matches_the_float64_full_sort(tmp_path, monkeypatch, loop,
                                                                                  n_queries, dtype):
    from embedlab.engine.neighbors import float_screen
    from embedlab.engine.neighbors.search import Search
    from embedlab.sources import loaders
    from full_sort import full_sort
    from safetensors_writer import write_safetensors

    if not loop:
        monkeypatch.setattr(float_screen, "MOST_QUERIES", 0)
    called = []
    monkeypatch.setattr(widened_product, "widened_product",
                        lambda *a: called.append(1) or product(*a))  # counts the loop's calls
    rng = np.random.default_rng(n_queries)
    W = rng.integers(-2, 3, size=(3000, 150)).astype(np.float32)  # (V, D) small integers: many exact ties
    W[10], W[30], W[40] = W[20], 0.0, 2 * W[3]
    data = (W.view(np.uint32) >> 16).astype(np.uint16) if dtype == "BF16" else W.astype("<f2")  # exact either way
    path = write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": (dtype, W.shape, data.tobytes())})
    table = loaders.load(str(path))
    kept = np.dtype(np.uint16 if dtype == "BF16" else np.float16)
    assert getattr(table.rows(), "bits", table.rows()).dtype == kept  # read as the file holds it
    ids = np.array([3, 10, 20, 30, 40, *range(100, 200)])[:n_queries]
    with Search(table, 9, ids=ids, screen="float", memory=2_000_000) as search:
        for metric in ("dot", "cosine"):
            found = search.nearest(metric)
            want_ids, want_scores = full_sort(W, W[ids], 9, metric, exclude=ids)
            assert found.ids.tolist() == want_ids.tolist()
            assert np.allclose(found.scores, want_scores, rtol=1e-15, atol=1e-15)
    if not loop:
        assert not called
    elif n_queries <= widened_product.MOST_QUERIES:  # (more queries: blocks of them may still be few enough)
        assert bool(called) == widened_product.compiled(kept)


@needs_loop
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="compiles x86 code for other x86 CPUs")
@pytest.mark.parametrize("cpu", ["x86-64", "haswell"])
def test_the_loop_compiled_for_an_older_cpu_is_within_the_same_bound(cpu):
    """The code an AVX2-only CPU (haswell's features; its float16 loop too) or the x86-64 baseline (SSE2) gets
    from the same IR, run here, within the float32 sum's bound of the float64 product."""
    if cpu == "haswell" and "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU cannot run AVX2 code")
    kinds = ["bf16", "f16"] if cpu == "haswell" else ["bf16"]  # haswell converts halves (F16C): leaf code
    loops = Loops(lambda triple: [widened_product._ir(triple, kind) for kind in kinds],
                  {f"widened_product_{kind}": widened_product._SIGNATURE for kind in kinds}, cpu=cpu, leaf=True)
    functions = loops.functions()
    assert functions is not None, loops.status()
    rng = np.random.default_rng(3)
    for kind in kinds:
        for D, m in ((63, 1), (64, 3), (1000, 5)):
            rows = _bits(rng, (21, D))
            W = (rows.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # (21, D)
            if kind == "f16":  # the same values as halves (clipped to float16's range)
                rows = np.clip(W, -6e4, 6e4).astype(np.float16)
                W = rows.astype(np.float64)
            Q = rng.standard_normal((m, D)).astype(np.float32)
            out = np.full((21, m), np.nan, dtype=np.float32)
            functions[f"widened_product_{kind}"](rows.ctypes.data, 21, D, Q.ctypes.data, m, out.ctypes.data)
            gamma = D * 2.0**-24 / (1 - D * 2.0**-24)
            error = np.abs(out - W @ Q.T.astype(np.float64))  # (21, m)
            assert (error <= gamma * (np.abs(W) @ np.abs(Q.T.astype(np.float64))) + 1e-44).all(), (cpu, kind, D, m)
