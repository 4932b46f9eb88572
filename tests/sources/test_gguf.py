"""sources.gguf: llama.cpp files read through the gguf library, checked against what the tests wrote.

Every file is written here with ``gguf.GGUFWriter`` (tests/gguf_writer.py).
Expected tables are the arrays written, or, for the lossy types, the library's
own ``gguf.quants.dequantize`` of the bytes it quantised, or of the bytes its
``GGUFReader`` finds in the file; expected neighbours come from NumPy
arithmetic on those arrays. Nothing expected comes from embedlab.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import embedlab
from embedlab.errors import SourceError
from gguf_writer import gguf, stored, write_gguf
from embedlab.sources import gguf as gguf_source

V, D, T = 32, 32, 8  # D = 32: one Q8_0 / Q4_0 block per row
TOKENS = [f"tok{i}" for i in range(V)]


@pytest.fixture
def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20260917)
    return {"token": rng.standard_normal((V, D)).astype(np.float32),  # (V, D)
            "position": rng.standard_normal((T, D)).astype(np.float32),  # (T_max, D)
            "head": rng.standard_normal((V, D)).astype(np.float32),  # (V, D)
            "norm": np.ones(D, dtype=np.float32),  # (D,)
            "ffn": rng.standard_normal((2 * D, D)).astype(np.float32)}  # (2D, D)


def _llama(path, arrays, kind="F32", *, head=None, tokens=TOKENS, positions=False):
    tensors = {"token_embd.weight": (arrays["token"], kind),
               "blk.0.attn_norm.weight": (arrays["norm"], "F32"),
               "blk.0.ffn_up.weight": (arrays["ffn"], "F16")}
    if positions:
        tensors["position_embd.weight"] = (arrays["position"], "F32")
    if head is not None:
        tensors["output.weight"] = head
    return write_gguf(path, tensors, tokens=tokens, context_length=T)


def test_doctests() -> None:
    assert doctest.testmod(gguf_source).failed == 0


def test_an_f32_table_is_the_array_written_with_its_tokens_and_positions(tmp_path, arrays):
    table = embedlab.load(str(_llama(tmp_path / "m.gguf", arrays, positions=True)))
    assert np.array_equal(table.W_E, arrays["token"])  # F32 is stored exactly
    assert table.W_E.shape == (V, D)  # rows are tokens, though the file lists ne = [D, V]
    assert np.array_equal(table.positions, arrays["position"])
    assert list(table.vocabulary.index_to_token) == TOKENS
    prov = table.provenance
    assert (prov.source, prov.tensor, prov.dtype, prov.tied) == ("gguf", "token_embd.weight", "F32", True)
    assert "no output.weight" in prov.tie_evidence


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16", "Q8_0", "Q4_0"])
def test_each_type_is_dequantised_as_the_library_does(tmp_path, arrays, kind):
    path = _llama(tmp_path / f"{kind}.gguf", arrays, kind)
    table = embedlab.load(path)
    assert table.provenance.dtype == kind
    # F16 is kept as the file holds it (the map, as a safetensors F16 table); BF16 as its bits over the map,
    # widened to float32 as read; the rest dequantised to float32
    assert table.resident().mapped == (kind in ("F32", "F16", "BF16"))  # BF16: until W_E widens its bits
    assert table.W_E.dtype == (np.float16 if kind == "F16" else np.float32)
    np.testing.assert_array_equal(table.W_E, stored(arrays["token"], kind))
    # and as the library's reader finds the bytes in the file
    found = next(t for t in gguf.GGUFReader(path).tensors if t.name == "token_embd.weight")
    np.testing.assert_array_equal(table.W_E, gguf.quants.dequantize(found.data, found.tensor_type))


@pytest.mark.parametrize("part", ["input", "head"])
def test_a_bf16_table_is_kept_as_its_bits_over_the_map_and_answers_as_the_dequantised_array(tmp_path, arrays, part):
    head = (arrays["head"], "BF16") if part == "head" else None
    path = _llama(tmp_path / "m.gguf", arrays, "BF16", head=head)
    table = embedlab.load(path, table=part)
    held = table.rows()
    assert type(held).__name__ == "Bf16Matrix" and held.mapped and table.resident().table == V * D * 2
    found = next(t for t in gguf.GGUFReader(path).tensors
                 if t.name == ("output.weight" if part == "head" else "token_embd.weight"))
    want = gguf.quants.dequantize(found.data, found.tensor_type)  # (V, D) float32, the library's own
    plain = embedlab.EmbeddingTable(want)
    assert np.array_equal(table.norms().view(np.int64), plain.norms().view(np.int64))
    for metric in ("cosine", "dot"):
        got, expected = table.nearest([3, 7], 5, metric), plain.nearest([3, 7], 5, metric)
        assert np.array_equal(got.ids, expected.ids) and np.array_equal(got.scores, expected.scores)
    assert type(table.rows()).__name__ == "Bf16Matrix"  # a few queries never widen it


@pytest.mark.parametrize("kind", ["F32", "F16"])
def test_a_big_endian_files_floats_are_read_in_this_machines_byte_order(tmp_path, arrays, kind):
    path = write_gguf(tmp_path / "be.gguf", {"token_embd.weight": (arrays["token"], kind),
                                             "position_embd.weight": (arrays["position"], "F32")},
                      tokens=TOKENS, context_length=T, big_endian=True)
    found = next(t for t in gguf.GGUFReader(path).tensors if t.name == "token_embd.weight")
    assert found.data.dtype.byteorder == ">"  # the file is big-endian: the reader views its values as such
    table = embedlab.load(path)
    want = stored(arrays["token"], kind)  # (V, D) float32: the values written
    assert table.W_E.dtype.isnative and np.array_equal(table.W_E, want)
    assert table.positions.dtype.isnative and np.array_equal(table.positions, arrays["position"])
    plain = embedlab.EmbeddingTable(want.astype(table.W_E.dtype))  # the same values, in memory of its own
    for metric in ("cosine", "dot"):
        for device in (None, "cpu"):  # "cpu": torch's kernels, which take no other byte order
            got, expected = table.nearest([3, 7], 5, metric, device=device), plain.nearest([3, 7], 5, metric)
            assert np.array_equal(got.ids, expected.ids) and np.array_equal(got.scores, expected.scores)


# K-quants (llama.cpp's ggml-common.h): super-blocks of 256 values; where each fp16 scale sits in a block
K_QUANTS = {"Q2_K": (84, (80, 82)), "Q3_K": (110, (108,)), "Q4_K": (144, (0, 2)), "Q5_K": (176, (0, 2)),
            "Q6_K": (210, (208,))}  # type -> (bytes per block, byte offsets of its fp16 scales d, dmin)


@pytest.mark.parametrize("kind", sorted(K_QUANTS))
def test_k_quants_are_dequantised_as_the_library_does(tmp_path, kind):
    """gguf-py writes K-quant bytes but cannot quantise to them: the blocks are random bytes, with finite
    fp16 scales, and the truth is the library's own ``dequantize`` of those bytes."""
    size, scales = K_QUANTS[kind]
    rows, D_k = 6, 512  # two super-blocks per row
    rng = np.random.default_rng(7)
    blocks = rng.integers(0, 256, size=(rows, D_k // 256, size), dtype=np.uint8)
    for offset in scales:  # a finite scale of about 0.01 (fp16 bits, little-endian)
        blocks[:, :, offset:offset + 2] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    raw = blocks.reshape(rows, -1)  # (V, bytes per row)
    path = tmp_path / f"{kind}.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list([f"k{i}" for i in range(rows)])
    writer.add_tensor("token_embd.weight", raw, raw_dtype=gguf.GGMLQuantizationType[kind])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    table = embedlab.load(path)
    expected = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[kind])  # (V, D)
    assert table.W_E.shape == (rows, D_k) and table.provenance.dtype == kind
    assert np.isfinite(expected).all()
    np.testing.assert_array_equal(table.W_E, expected.astype(np.float32))
    found = embedlab.neighbors(str(path), "k0", k=2).to_dict()  # and it is searched like any table
    unit = expected / np.linalg.norm(expected, axis=1, keepdims=True)  # (V, D)
    assert [hit["id"] for hit in found["queries"][0]["lists"]["cosine"]] == [int(i) for i in np.argsort(-(unit[1:] @ unit[0]), kind="stable")[:2] + 1]


def test_q8_0_stays_within_half_a_step_of_each_block(tmp_path, arrays):
    # Q8_0 (ggml-quants.c): one scale d = max|x| / 127 per block of 32, x ~ d * round(x / d), with d
    # stored as fp16 (relative error up to 2**-11, times |round(x / d)| <= 127)
    table = embedlab.load(_llama(tmp_path / "q.gguf", arrays, "Q8_0"))
    step = np.abs(arrays["token"]).max(axis=1, keepdims=True) / 127  # (V, 1): one block per row here
    assert np.all(np.abs(table.W_E - arrays["token"]) <= step * (0.5 + 127 * 2.0**-11))
    assert not np.array_equal(table.W_E, arrays["token"])  # lossy: the file does not hold the floats


def test_the_table_is_read_only(tmp_path, arrays):
    for kind in ("F32", "Q8_0"):
        table = embedlab.load(_llama(tmp_path / f"{kind}.gguf", arrays, kind))
        with pytest.raises(ValueError):
            table.W_E[0, 0] = 1.0


def test_a_separate_output_head_means_untied(tmp_path, arrays):
    table = embedlab.load(_llama(tmp_path / "u.gguf", arrays, head=(arrays["head"], "Q8_0")))
    assert table.provenance.tied is False
    assert "a separate output head" in table.provenance.tie_evidence


def test_a_head_with_the_very_bytes_of_the_table_is_tied(tmp_path, arrays):
    table = embedlab.load(_llama(tmp_path / "twice.gguf", arrays, "Q8_0", head=(arrays["token"], "Q8_0")))
    assert table.provenance.tied is True
    assert "stored twice" in table.provenance.tie_evidence


def test_the_same_values_in_another_type_are_a_separate_head(tmp_path, arrays):
    table = embedlab.load(_llama(tmp_path / "f16.gguf", arrays, "F32", head=(arrays["token"], "F16")))
    assert table.provenance.tied is False


def test_a_short_token_list_leaves_the_last_ids_without_a_string(tmp_path, arrays):
    table = embedlab.load(_llama(tmp_path / "short.gguf", arrays, tokens=TOKENS[:30]))
    assert table.vocabulary.index_to_token == (*TOKENS[:30], None, None)


def test_more_tokens_than_rows_is_refused(tmp_path, arrays):
    path = _llama(tmp_path / "long.gguf", arrays, tokens=[*TOKENS, "extra"])
    with pytest.raises(SourceError, match=r"lists 33 tokens, but token_embd.weight has only V=32 rows"):
        embedlab.load(path)


def test_token_bytes_that_are_not_utf8_are_shown_with_the_replacement_character(tmp_path, arrays):
    tokens = [t.encode() for t in TOKENS[:-1]] + [b"\xff\xfe"]
    table = embedlab.load(_llama(tmp_path / "bytes.gguf", arrays, tokens=tokens))
    assert table.vocabulary.token(V - 1) == "\ufffd\ufffd"


def test_without_tokens_the_table_has_no_vocabulary(tmp_path, arrays):
    table = embedlab.load(_llama(tmp_path / "bare.gguf", arrays, tokens=None))
    assert table.vocabulary is None


def test_tensor_names_another_table(tmp_path, arrays):
    path = _llama(tmp_path / "m.gguf", arrays)
    table = embedlab.load(path, tensor="blk.0.ffn_up.weight")
    np.testing.assert_array_equal(table.W_E, arrays["ffn"].astype(np.float16).astype(np.float32))
    assert table.vocabulary.index_to_token == (*TOKENS, *[None] * D)  # 2D rows: the last D have no token
    assert table.provenance.tensor == "blk.0.ffn_up.weight"


def test_a_missing_tensor_names_the_2d_tensors(tmp_path, arrays):
    path = _llama(tmp_path / "m.gguf", arrays)
    with pytest.raises(SourceError, match=r"tensor 'nope' is not in .*2-D tensors: token_embd.weight \[32, 32\]"):
        embedlab.load(path, tensor="nope")
    with pytest.raises(SourceError, match=r"has shape \(32,\), expected a 2-D \(V, D\) table"):
        embedlab.load(path, tensor="blk.0.attn_norm.weight")


def test_an_integer_table_is_refused(tmp_path):
    path = write_gguf(tmp_path / "int.gguf", {"token_embd.weight": (np.arange(V * D).reshape(V, D), "I32")})
    with pytest.raises(SourceError, match=r"stored as I32, expected a float or quantised table"):
        embedlab.load(path)


def test_a_file_that_is_not_gguf_names_the_file(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"not a gguf file at all")
    with pytest.raises(SourceError, match=r"fake.gguf is not a GGUF file: it does not start with the magic bytes"):
        embedlab.load(path)


def test_a_truncated_file_is_a_source_error(tmp_path, arrays):
    whole = _llama(tmp_path / "whole.gguf", arrays).read_bytes()
    for keep in (12, 200, len(whole) - 100):
        cut = tmp_path / f"cut{keep}.gguf"
        cut.write_bytes(whole[:keep])
        with pytest.raises(SourceError, match="cut"):
            embedlab.load(cut)


def test_neighbours_of_a_quantised_table_match_numpy_on_the_dequantised_array(tmp_path, arrays):
    path = _llama(tmp_path / "q.gguf", arrays, "Q8_0")
    W = stored(arrays["token"], "Q8_0").astype(np.float64)  # (V, D), what the file holds
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    scores = unit @ unit[5]  # (V,) cosine to tok5
    scores[5] = -np.inf  # the query itself is left out
    expected = [int(i) for i in np.argsort(-scores, kind="stable")[:4]]
    result = embedlab.neighbors(str(path), "tok5", k=4)
    assert [row["id"] for row in result.to_dict()["queries"][0]["lists"]["cosine"]] == expected


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16"])
def test_a_table_at_an_offset_its_value_size_does_not_divide_is_copied_aligned_and_answers_alike(tmp_path, arrays, kind):
    tensors = {"blk.0.odd.weight": (np.ones((1, 3), np.float32), "I8"),  # 3 bytes ahead of the table
               "token_embd.weight": (arrays["token"], kind)}
    path = write_gguf(tmp_path / "odd.gguf", tensors, tokens=TOKENS, alignment=1)
    found = next(t for t in gguf.GGUFReader(path).tensors if t.name == "token_embd.weight")
    assert found.data_offset % 2 == 1  # the table really sits at an odd byte
    table = embedlab.load(str(path))
    held = table.rows()
    bits = held.bits if kind == "BF16" else held
    assert bits.flags.aligned and not table.resident().mapped  # a copy, aligned, as safetensors reads such a span
    want = gguf.quants.dequantize(found.data, found.tensor_type)  # (V, D) float32, the library's own
    np.testing.assert_array_equal(np.asarray(held, dtype=np.float32), want)
    plain = embedlab.EmbeddingTable(want)
    for metric in ("cosine", "dot"):
        got, expected = table.nearest([3, 7], 5, metric), plain.nearest([3, 7], 5, metric)
        assert np.array_equal(got.ids, expected.ids) and np.array_equal(got.scores, expected.scores)
