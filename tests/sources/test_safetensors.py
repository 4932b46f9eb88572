"""safetensors: headers read by hand, checked against the file; one tensor read back.

Fixtures are written byte by byte (tests/safetensors_writer.py), never with
the safetensors library, so both the reader and the library are checked
against the format itself.
"""

from __future__ import annotations

import importlib.util
import struct

import pytest

from embedlab.sources import safetensors
from embedlab.errors import SourceError
from safetensors_writer import f32, write_index, write_safetensors

HAS_SAFETENSORS = importlib.util.find_spec("safetensors") is not None and importlib.util.find_spec("numpy") is not None


def test_headers_give_names_shapes_dtypes_and_where_the_bytes_lie(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {
        "wte.weight": ("F32", (3, 2), f32(1, 2, 3, 4, 5, 6)),
        "embeddings.position_ids": ("I64", (1, 4), struct.pack("<4q", 0, 1, 2, 3)),
    })
    infos = safetensors.tensor_infos(path)
    assert list(infos) == ["wte.weight", "embeddings.position_ids"]
    table, ids = infos["wte.weight"], infos["embeddings.position_ids"]
    assert (table.shape, table.dtype, table.numel, table.nbytes) == ((3, 2), "F32", 6, 24)
    assert (ids.shape, ids.dtype, ids.nbytes) == ((1, 4), "I64", 32)
    # The data starts right after the 8-byte length and the header; the table's 24 bytes come first.
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    assert table.span == (8 + header_len, 8 + header_len + 24)
    assert path.read_bytes()[table.span[0]:table.span[1]] == f32(1, 2, 3, 4, 5, 6)


def test_metadata_entry_is_not_a_tensor(tmp_path):
    raw = b'{"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + f32(7))
    assert list(safetensors.tensor_infos(path)) == ["w"]


@pytest.mark.skipif(not HAS_SAFETENSORS, reason="needs safetensors and numpy")
def test_hand_written_file_reads_back_through_the_library(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(1, 2, 3, 4, 5, 6))})
    assert safetensors.read_tensor(safetensors.tensor_infos(path)["wte.weight"]).tolist() == [[1, 2], [3, 4], [5, 6]]


def test_truncated_header_names_the_declared_length(tmp_path):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b'{"w": {"dt')
    with pytest.raises(SourceError, match=r"declares 1000 header bytes but only 10 follow") as err:
        safetensors.tensor_infos(path)
    assert str(path) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_file_shorter_than_the_length_prefix(tmp_path):
    path = tmp_path / "tiny.safetensors"
    path.write_bytes(b"\x05\x00\x00")
    with pytest.raises(SourceError, match=r"3 bytes, too short for the 8-byte header length"):
        safetensors.tensor_infos(path)


def test_truncated_data_names_the_tensor_and_both_sizes(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(1, 2, 3, 4, 5, 6))})
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(SourceError, match=r"'wte.weight' ends at data byte 24 but the file holds 20 data bytes"):
        safetensors.tensor_infos(path)


@pytest.mark.parametrize("entry, message", [
    ('{"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}', r"unknown dtype 'F99'"),
    ('{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}', r"bad shape \[-1\]"),
    ('{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', r"needs 8 bytes, but its data_offsets \[0, 4\] hold 4"),
    ('{"w": {"dtype": "F32"}}', r"malformed header entry"),
    ('[1, 2]', r"must be a JSON object, got list"),
    ('{"w": ', r"not JSON"),
])
def test_malformed_headers_name_the_value(tmp_path, entry, message):
    raw = entry.encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\x00" * 8)
    with pytest.raises(SourceError, match=message):
        safetensors.tensor_infos(path)

def test_sharded_index_reads_every_shard_and_reports_a_missing_one(tmp_path):
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6)))})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"lm_head.weight": ("F32", (3, 2), f32(*range(6)))})
    write_index(tmp_path, {"wte.weight": "model-00001-of-00002.safetensors",
                           "lm_head.weight": "model-00002-of-00002.safetensors"})
    infos = safetensors.tensor_infos(tmp_path)
    assert {n: i.path.name for n, i in infos.items()} == {
        "wte.weight": "model-00001-of-00002.safetensors", "lm_head.weight": "model-00002-of-00002.safetensors"}
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(SourceError, match=r"missing: .*model-00002-of-00002.safetensors"):
        safetensors.tensor_infos(tmp_path)
