"""A bf16 table kept as its bits: every value read through it is the float32 the bits stand for.

The oracle is torch's own bfloat16 (``tensor.to(torch.float32)``) where torch is
installed, and the definition written out by hand (the 16 bits on top of a
float32, zeros below) through ``struct`` one value at a time.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from embedlab.engine import bf16_matrix
from embedlab.engine.bf16_matrix import Bf16Matrix, widen_bf16
from embedlab.engine.lengths import vector_norms
from embedlab.errors import ShapeError


def _bits(shape, seed=0):
    """Random bfloat16 bit patterns, NaN and infinity included."""
    return np.random.default_rng(seed).integers(0, 1 << 16, size=shape, dtype=np.uint16)


def _by_hand(bits):
    """Each pattern's float32 through struct: the two bytes as the top half of a big-endian float32, as bytes
    (a NaN's payload kept: no trip through a Python float)."""
    words = [struct.unpack(">I", struct.pack(">HH", int(b), 0))[0] for b in bits.ravel()]
    return np.array(words, dtype=np.uint32).view(np.float32).reshape(bits.shape)


def test_widening_is_the_definition_bit_for_bit():
    bits = _bits((300,), 1)
    assert np.array_equal(widen_bf16(bits).view(np.uint32), _by_hand(bits).view(np.uint32))


def test_widening_equals_torch_bfloat16():
    torch = pytest.importorskip("torch")
    bits = _bits((64, 33), 2)
    expected = torch.from_numpy(bits.astype(np.int16)).view(torch.bfloat16).to(torch.float32).numpy()
    assert np.array_equal(widen_bf16(bits).view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("key", [5, -1, slice(2, 9), slice(None, None, 3), np.array([7, 0, 7, 19]), (3, 4),
                                 (slice(1, 4), slice(2, 5)), np.arange(20) % 3 == 0])
def test_any_row_selection_reads_the_widened_table(key):
    bits = _bits((20, 6), 3)
    whole = _by_hand(bits)  # (V, D)
    got = Bf16Matrix(bits)[key]
    assert got.dtype == np.float32 and np.array_equal(np.asarray(got).view(np.uint32), whole[key].view(np.uint32))


def test_widened_whole_is_read_only_and_equal_and_widen_into_fills_a_buffer():
    bits = _bits((1000, 7), 4)
    matrix = Bf16Matrix(bits)
    whole = matrix.widened()
    assert whole.shape == (1000, 7) and not whole.flags.writeable
    assert np.array_equal(whole.view(np.uint32), _by_hand(bits).view(np.uint32))
    assert np.array_equal(np.asarray(matrix).view(np.uint32), whole.view(np.uint32))
    buf = np.full((10, 7), 9.0, dtype=np.float32)
    assert matrix.widen_into(slice(990, 1000), buf) is buf
    assert np.array_equal(buf.view(np.uint32), whole[990:].view(np.uint32))


@pytest.mark.parametrize("shape", [(1, 1), (257, 13), (3, 5003)])
@pytest.mark.parametrize("parallel", [False, True])
def test_lengths_equal_vector_norms_of_the_widened_table_bit_for_bit(monkeypatch, shape, parallel):
    monkeypatch.setattr(bf16_matrix, "LENGTHS_BLOCK_BYTES", 64)  # many blocks, the last one short
    bits = _bits(shape, 6)
    bits = np.where((bits & 0x7F80) == 0x7F80, bits & 0xBFFF, bits).astype(np.uint16)  # finite: NaN/inf made finite
    whole = _by_hand(bits).astype(np.float64)  # (V, D) the widened values, in float64 by hand
    got = Bf16Matrix(bits).lengths(parallel=parallel)
    assert np.array_equal(got.view(np.int64), vector_norms(_by_hand(bits), parallel=False).view(np.int64))
    assert np.allclose(got, np.sqrt((whole * whole).sum(axis=1)), rtol=1e-13, atol=0)


def test_it_reports_the_float32_table_it_stands_for_and_holds_half_its_bytes():
    matrix = Bf16Matrix(_bits((12, 5)))
    assert (matrix.shape, matrix.dtype, len(matrix), matrix.nbytes, matrix.ndim) == ((12, 5), np.float32, 12, 120, 2)


def test_the_bits_are_taken_read_only():
    bits = _bits((4, 3))
    matrix = Bf16Matrix(bits)
    with pytest.raises(ValueError):
        matrix.bits[0, 0] = 1


@pytest.mark.parametrize("bad, error, words", [
    (np.zeros((3, 2), dtype=np.float32), TypeError, "uint16"),
    (np.zeros((3,), dtype=np.uint16), ShapeError, r"2-D.*\(3,\)"),
    (np.zeros((0, 4), dtype=np.uint16), ShapeError, r"at least one row"),
])
def test_bad_bits_are_refused_naming_what_was_expected(bad, error, words):
    with pytest.raises(error, match=words):
        Bf16Matrix(bad)


def test_widening_refuses_an_out_of_the_wrong_shape_or_dtype():
    with pytest.raises(ValueError, match=r"float32 array of shape \(2, 2\)"):
        widen_bf16(np.zeros((2, 2), dtype=np.uint16), out=np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="uint16"):
        widen_bf16(np.zeros(3, dtype=np.int16))


# -- searches over a kept table -------------------------------------------------------------------

def _tied_bits(seed, V=1500, D=24):
    """A bf16 table of small integers (exact in bfloat16 and float64: many exact ties), a copied row, a zero
    row and a scaled copy, as bits."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-2, 3, size=(V, D)).astype(np.float32)  # (V, D)
    W[10] = W[20]
    W[30] = 0.0
    W[40] = 2 * W[3]
    return (W.view(np.uint32) >> 16).astype(np.uint16), W


def _kept_table(tmp_path, bits):
    from embedlab.sources import loaders
    from safetensors_writer import write_safetensors

    path = write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("BF16", bits.shape, bits.tobytes())})
    return loaders.load(str(path))


@pytest.mark.parametrize("screen", ["auto", "float", "int16", "bf16"])
@pytest.mark.parametrize("n_queries", [1, 5, 100])
def test_searches_of_a_kept_table_match_the_float64_full_sort(tmp_path, monkeypatch, screen, n_queries):
    if screen == "bf16":
        pytest.importorskip("torch")
    from embedlab.engine.neighbors import float_screen
    from embedlab.engine.neighbors.search import KEPT_QUERIES, Search
    from full_sort import full_sort

    monkeypatch.setattr(float_screen, "WIDEN_CHUNK_BYTES", 4 * 24 * 7)  # chunks of 7 rows: many, on every core
    bits, W = _tied_bits(n_queries)
    table = _kept_table(tmp_path, bits)
    ids = np.array([3, 10, 20, 30, 40, 5, 1499, 0, *range(100, 200)])[:n_queries]
    vectors = np.random.default_rng(7).integers(-3, 4, size=(3, 24)).astype(np.float64)
    with Search(table, 9, ids=ids, screen=screen, memory=400_000) as search:  # blocks of a few hundred rows
        for metric in ("dot", "cosine"):
            found = search.nearest(metric)
            want_ids, want_scores = full_sort(W, W[ids], 9, metric, exclude=ids)
            assert found.ids.tolist() == want_ids.tolist()
            assert np.allclose(found.scores, want_scores, rtol=1e-15, atol=1e-15)
        few = search.plan("cosine").screen != "float" or n_queries <= KEPT_QUERIES
    assert isinstance(table.rows(), Bf16Matrix) == (few and screen != "int16")  # codes are built from W_E
    with Search(table, 4, vectors=vectors, screen=screen, memory=400_000) as search:
        for metric in ("dot", "cosine"):
            want_ids, _ = full_sort(W, vectors, 4, metric)
            assert search.nearest(metric).ids.tolist() == want_ids.tolist()


def test_a_few_queries_leave_a_kept_table_unwidened_and_answer_as_the_widened_table(tmp_path):
    from embedlab.engine.table import EmbeddingTable

    bits = (np.random.default_rng(3).standard_normal((4000, 64)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    table = _kept_table(tmp_path, bits)
    widened = EmbeddingTable(np.array(Bf16Matrix(bits)), norms=np.array(table.norms()))
    for metric in ("cosine", "dot"):
        kept, plain = table.nearest([5, 17, 3999], 10, metric), widened.nearest([5, 17, 3999], 10, metric)
        assert kept.ids.tolist() == plain.ids.tolist() and kept.scores.tolist() == plain.scores.tolist()
    assert isinstance(table.rows(), Bf16Matrix) and table.resident().table == 4000 * 64 * 2


def test_a_lookup_of_a_kept_table_gives_the_widened_rows_without_widening_the_table(tmp_path):
    bits, W = _tied_bits(0, V=50, D=6)
    bits[7, 2] = 0x3F81  # 1 + 2**-7: a value only bfloat16's own bits give
    W[7, 2] = np.float32(1 + 2**-7)
    table = _kept_table(tmp_path, bits)
    ids = np.array([[7, 0], [49, 7]])
    got = table.lookup(ids)
    assert got.dtype == np.float32 and np.array_equal(got, W[ids]) and isinstance(table.rows(), Bf16Matrix)
    out = np.empty((2, 2, 6), dtype=np.float32)
    assert table.lookup(ids, out=out) is out and np.array_equal(out, W[ids])


def test_logits_and_stretch_of_a_kept_table_equal_the_widened_tables_without_widening_it(tmp_path):
    from embedlab.engine.table import EmbeddingTable

    rng = np.random.default_rng(5)
    bits = (rng.standard_normal((3000, 40)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    table = _kept_table(tmp_path, bits)
    widened = EmbeddingTable(np.array(Bf16Matrix(bits)), norms=np.array(table.norms()))
    for h in (rng.standard_normal(40).astype(np.float32), rng.standard_normal(40)):  # float32 and float64 vectors
        got, want = table.logits(h), widened.logits(h)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.allclose(got, widened.W_E.astype(np.float64) @ h.astype(np.float64), rtol=1e-5, atol=1e-5)
    stretched, plain = table.stretch(17, 3.0), widened.stretch(17, 3.0)
    assert np.array_equal(stretched.W_E, plain.W_E) and np.array_equal(stretched.norms(), plain.norms())
    assert isinstance(table.rows(), Bf16Matrix)


def test_the_one_hot_product_of_a_kept_table_is_its_lookup_without_widening_it(tmp_path, monkeypatch):
    bits, W = _tied_bits(4, V=300, D=8)
    table = _kept_table(tmp_path, bits)
    monkeypatch.setattr(Bf16Matrix, "widened", lambda self, **kw: pytest.fail("the table was widened whole"))
    ids = [[0, 299], [150, 0]]
    assert np.array_equal(table.lookup_via_one_hot(ids), W[np.array(ids)])
