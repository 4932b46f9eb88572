"""What reading a table cost: recorded by the loader, reported in the resident cost and the --memory output."""

from __future__ import annotations

import numpy as np

from embedlab.cli import main
from embedlab.engine.table import EmbeddingTable
from embedlab.sources import loaders, tensor_data
from safetensors_writer import write_safetensors


def _bf16_checkpoint(folder, V=300, D=16):
    bits = (np.random.default_rng(0).standard_normal((V, D)).astype("<f4").view("<u4") >> 16).astype("<u2")
    return write_safetensors(folder / "model.safetensors", {"embed_tokens.weight": ("BF16", (V, D), bits.tobytes())})


def test_a_checkpoints_table_records_the_bytes_of_each_step(tmp_path):
    table = loaders.load(str(_bf16_checkpoint(tmp_path)))
    cost = table.load_cost
    assert (cost.dtype, cost.file_bytes, cost.table_bytes) == ("BF16", 300 * 16 * 2, 300 * 16 * 2)  # kept as bits
    assert not cost.widened
    assert cost.lengths and cost.read_seconds >= 0 and cost.vocabulary_seconds is None
    # one block holds every row here, on one thread: its float32 widening, what vector_norms may hold for it at
    # most (lengths.norms_bytes: in NumPy's loop a float64 copy and the lanes) with 48 bytes a row of its own
    # arrays, and its lengths
    assert cost.threads == 1 and cost.scratch_bytes == 300 * 16 * 4 + (2 * 300 * 16 * 8 + 48 * 300) + 300 * 8
    assert table.resident().to_dict()["load"] == cost.to_dict()


def test_a_table_built_from_an_array_records_none_and_its_resident_cost_says_nothing_of_it():
    table = EmbeddingTable(np.ones((4, 2), dtype=np.float32))
    assert table.load_cost is None and "load" not in table.resident().to_dict()


def test_the_memory_output_says_what_the_load_cost(tmp_path, capsys):
    path = _bf16_checkpoint(tmp_path)
    assert main(["neighbors", "--model", str(path), "5", "--k", "2", "--memory", "64M"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(line for line in lines if line.startswith("load: "))
    assert lines.index(line) == len(lines) - 2 and lines[-1].startswith("screen: ")  # after the resident cost
    assert line.startswith("load: 9.375 KiB of BF16 mapped read-only from the file as the table (kept as bfloat16, "
                           "widened to float32 as it is read), nothing copied; row lengths measured in ")
    assert "(memory-mapped)" in lines[-3]  # the resident cost's table


def test_the_memory_output_says_when_the_table_was_read_rather_than_mapped(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tensor_data, "map_tensor", lambda handle, info: None)  # as where a map is refused
    path = _bf16_checkpoint(tmp_path)
    assert main(["neighbors", "--model", str(path), "5", "--k", "2", "--memory", "64M"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("load: "))
    assert line.startswith("load: 9.375 KiB of BF16 read into the 9.375 KiB table (kept as bfloat16, widened to "
                           "float32 as it is read) in ")
    assert "row lengths in the same pass" in line
