"""gguf_params: parameter counts of GGUF files, checked against the arrays written and the gguf library.

Files are written here with ``gguf.GGUFWriter`` (tests/gguf_writer.py).
Expected parameters are the sizes of the arrays written; expected bytes in
the file are the library's: ``ReaderTensor.n_bytes`` from ``gguf.GGUFReader``
and the block sizes of ``gguf.GGML_QUANT_SIZES`` (Q8_0: 34 bytes per 32
weights). Nothing expected comes from embedlab.
"""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

import embedlab
from embedlab.cli import main
from embedlab.errors import SourceError
from embedlab.measure import gguf_params
from gguf_writer import gguf, write_gguf

V, D, T, F = 32, 32, 16, 64  # F: the feed-forward width of the one block written


def _tensors(kind: str = "F32") -> dict[str, tuple[np.ndarray, str]]:
    rng = np.random.default_rng(7)
    return {"token_embd.weight": (rng.standard_normal((V, D)), kind),  # (V, D)
            "blk.0.attn_norm.weight": (np.ones(D), "F32"),  # (D,)
            "blk.0.ffn_up.weight": (rng.standard_normal((F, D)), "Q8_0"),  # (F, D)
            "blk.0.ffn_down.weight": (rng.standard_normal((D, F)), "BF16")}  # (D, F)


OTHER = D + F * D + D * F  # attn_norm, ffn_up, ffn_down


def _library_bytes(path) -> dict[str, int]:
    return {t.name: int(t.n_bytes) for t in gguf.GGUFReader(path).tensors}


def test_doctests() -> None:
    assert doctest.testmod(gguf_params).failed == 0


def test_a_tied_file_counts_the_table_once_and_no_head(tmp_path):
    path = write_gguf(tmp_path / "tied.gguf", _tensors("Q8_0"), tokens=[f"t{i}" for i in range(V)], context_length=T)
    count = gguf_params.from_gguf(path)
    b = count.breakdown
    assert (b.V, b.D, b.token, b.head, b.position, b.other, b.tied) == (V, D, V * D, 0, 0, OTHER, True)
    assert b.total == V * D + OTHER
    assert (count.source, count.positions, count.T_max) == ("gguf", "rotary", T)  # llama rotates; context_length
    assert "no output.weight" in count.tie_evidence
    assert count.tensors == {"token": "token_embd.weight"}


def test_bytes_in_the_file_are_in_its_own_types(tmp_path):
    path = write_gguf(tmp_path / "q.gguf", _tensors("Q8_0"))
    count = gguf_params.from_gguf(path)
    stored = _library_bytes(path)
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]
    assert count.file_bytes.token == stored["token_embd.weight"] == V * D // block * size  # 32 rows of 34 bytes
    other = stored["blk.0.attn_norm.weight"] + stored["blk.0.ffn_up.weight"] + stored["blk.0.ffn_down.weight"]
    assert count.file_bytes.other == other == 4 * D + F * D // 32 * 34 + 2 * D * F
    assert count.file_bytes.head == 0
    assert count.file_bytes.total == count.stored_bytes == sum(stored.values())
    assert count.file_types == {"token": "Q8_0", "other": "BF16/F32/Q8_0"}
    assert count.breakdown.dtype == "stored" and count.breakdown.bytes == count.file_bytes  # priced as stored


def test_an_untied_file_counts_its_head(tmp_path):
    tensors = {**_tensors("F16"), "output.weight": (np.random.default_rng(1).standard_normal((V, D)), "Q4_0")}
    path = write_gguf(tmp_path / "untied.gguf", tensors)
    count = gguf_params.from_gguf(path)
    b = count.breakdown
    assert (b.token, b.head, b.other, b.tied) == (V * D, V * D, OTHER, False)
    assert b.total == 2 * V * D + OTHER
    assert count.file_bytes.head == _library_bytes(path)["output.weight"] == V * D // 32 * 18  # Q4_0: 18 per 32
    assert count.file_bytes.token == 2 * V * D  # F16
    assert count.breakdown.bytes == count.file_bytes  # each part in its own type: F16 table, Q4_0 head
    assert count.tensors["head"] == "output.weight"


def test_a_head_stored_twice_is_tied_and_counted_once(tmp_path):
    tensors = _tensors("F32")
    tensors["output.weight"] = tensors["token_embd.weight"]
    path = write_gguf(tmp_path / "twice.gguf", tensors)
    count = gguf_params.from_gguf(path)
    assert (count.breakdown.tied, count.breakdown.head, count.stored_twice) == (True, 0, True)
    assert count.file_bytes.head == 0 and count.stored_bytes == sum(_library_bytes(path).values())
    assert count.breakdown.total == V * D + OTHER


def test_a_learned_position_table_and_token_types_are_counted(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {**_tensors(), "position_embd.weight": (rng.standard_normal((T, D)), "F16"),
               "token_types.weight": (rng.standard_normal((2, D)), "F32")}
    count = gguf_params.from_gguf(write_gguf(tmp_path / "bert.gguf", tensors, arch="bert"))
    b = count.breakdown
    assert (b.position, b.token_type, count.positions, count.T_max, count.type_vocab) == (T * D, 2 * D, "learned", T, 2)
    assert (count.file_bytes.position, count.file_bytes.token_type) == (2 * T * D, 4 * 2 * D)


def test_rope_frequency_factors_are_a_buffer(tmp_path):
    tensors = {**_tensors(), "rope_freqs.weight": (np.ones(D // 2), "F32")}
    count = gguf_params.from_gguf(write_gguf(tmp_path / "rope.gguf", tensors))
    assert [(buf.name, buf.elements) for buf in count.buffers] == [("rope_freqs.weight", D // 2)]
    assert count.breakdown.other == OTHER


def test_alibi_architectures_have_no_position_table(tmp_path):
    count = gguf_params.from_gguf(write_gguf(tmp_path / "bloom.gguf", _tensors(), arch="bloom"))
    assert count.positions == "none"
    assert "ALiBi" in count.keys["positions"]


def test_dtype_sets_the_what_if_bytes_only(tmp_path):
    count = gguf_params.from_gguf(write_gguf(tmp_path / "m.gguf", _tensors("Q8_0")), dtype="fp32")
    assert count.breakdown.bytes.token == 4 * V * D
    assert count.file_bytes.token == V * 34


def test_a_file_without_token_embd_names_its_2d_tensors(tmp_path):
    path = write_gguf(tmp_path / "none.gguf", {"blk.0.ffn_up.weight": (np.ones((F, D)), "F32")})
    with pytest.raises(SourceError, match=r"none.gguf has no token_embd.weight, the token table llama.cpp writes; "
                                          r"its 2-D tensors: blk.0.ffn_up.weight \[64, 32\] \(name the table"):
        gguf_params.from_gguf(path)


def test_api_and_cli_count_a_gguf_model(tmp_path, capsys):
    path = write_gguf(tmp_path / "m.gguf", _tensors("Q8_0"))
    result = embedlab.params(model=str(path))
    assert (result.count.breakdown.total, result.growth.bigger_V) == (V * D + OTHER, 2 * V)
    assert main(["params", "--model", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["source"], data["params"]["head"], data["params"]["total"]) == ("gguf", 0, V * D + OTHER)
    assert data["file_bytes"]["token"] == V * 34
    assert main(["params", "--model", str(path)]) == 0
    text = capsys.readouterr().out
    assert "bytes (as stored)" in text and f"{V * 34:,} (Q8_0)" in text
    assert main(["params", "--model", str(path), "--dtype", "int8"]) == 0  # a named dtype: the file's beside it
    text = capsys.readouterr().out
    assert "bytes (int8)" in text and "bytes in the file" in text and f"{V * 34:,} (Q8_0)" in text


def test_each_table_is_priced_in_the_type_the_file_stores_it_in(tmp_path):
    """An F32 head beside a Q8_0 table: the head costs 4 bytes a weight, not the 1 of int8 (the type nearest
    the table's), now and at the bigger V; a head the file lacks (the untied what-if of a tied file) is priced
    as its table. Expected bytes from the gguf library: GGUFReader's n_bytes and GGML_QUANT_SIZES."""
    rng = np.random.default_rng(4)
    tensors = {**_tensors("Q8_0"), "output.weight": (rng.standard_normal((V, D)), "F32")}
    path = write_gguf(tmp_path / "f32-head.gguf", tensors)
    stored = _library_bytes(path)
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]  # 32 weights in 34 bytes
    result = embedlab.params(model=str(path))
    b = result.count.breakdown
    assert b.bytes.head == stored["output.weight"] == 4 * V * D
    assert b.bytes.token == stored["token_embd.weight"] == V * D // block * size
    assert b.bytes.total == sum(stored.values())
    g = result.growth  # V -> 2V: each table grows at its own price, the rest stays as stored
    other = sum(n for name, n in stored.items() if name not in ("token_embd.weight", "output.weight"))
    assert g.untied_bigger.bytes.head == 4 * 2 * V * D
    assert g.untied_bigger.bytes.total == 2 * V * D // block * size + 4 * 2 * V * D + other
    assert g.tied_bigger.bytes.total == 2 * V * D // block * size + other
    tied = embedlab.params(model=str(write_gguf(tmp_path / "tied.gguf", _tensors("Q8_0")))).growth
    assert tied.untied_now.bytes.head == V * D // block * size  # no output.weight: priced as token_embd


def test_the_dimension_plan_reads_the_metadata_widths(tmp_path):
    """llama.cpp's ``llama.attention.head_count`` etc. give h, h_kv and L; the tensors give the parts."""
    path = write_gguf(tmp_path / "plan.gguf", _tensors("F32"), context_length=T,
                      extra={"llama.attention.head_count": 4, "llama.attention.head_count_kv": 2,
                             "llama.block_count": 1, "llama.feed_forward_length": F})
    plan = gguf_params.from_gguf(path).plan
    assert (plan.heads, plan.kv_heads, plan.head_dim, plan.layers, plan.d_ff) == (4, 2, D // 4, 1, F)
    assert plan.parts["norms"] == D and plan.parts["feed_forward"] == 2 * D * F  # attn_norm; ffn_up + ffn_down
    assert plan.parts["embedding"] == V * D and plan.total == V * D + OTHER
