"""Model files are untrusted input: a corpus of hostile files, each read by the commands that take it.

Every file is built here (``hostile_files``), byte by byte after its format's own
description. Each case runs the CLI as a user would and asserts: exit code 1, one
line on stderr (no traceback) that names the bad value, nothing on stdout, no
output file written, and no pickle run (a pickled payload would create a marker
file). Files that could block (a FIFO) or read without end (``/dev/zero``, sizes
of 10^12 declared) run in a child process under an address-space limit and a
timeout, which also bounds its peak resident memory.

The names each message must hold (``2**40`` written ``1,099,511,627,776``) are
computed here from the values written into the files, never taken from
embedlab's output.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from embedlab.cli import main
from hostile_files import (DEEP, GGUF_ARRAY, GGUF_STRING, GGUF_UINT32, RSS_LIMIT, deep_json, gguf_kv, gguf_raw,
                           gguf_string, gguf_tensor_info, npy_with_header, pickled_marker, run_bounded,
                           safetensors_raw, tiny_bert, word2vec_binary)
from safetensors_writer import f32, write_config, write_index, write_safetensors

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")

Case = Callable[[Path], tuple[list[object], list[str]]]  # tmp folder -> (CLI args, names the message must hold)


def _table(folder: Path, name: str = "model.safetensors") -> Path:
    """A good one-tensor checkpoint: wte.weight (4, 2) F32."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_safetensors(folder / name, {"wte.weight": ("F32", (4, 2), f32(*range(8)))})


def _npy(folder: Path) -> Path:
    path = folder / "t.npy"
    np.save(path, np.arange(8, dtype=np.float32).reshape(4, 2))
    return path


def _assert_refused(code: int, out: str, err: str, names: list[str]) -> str:
    """Exit 1, nothing on stdout, one ``embedlab CMD: error: ...`` line holding every name."""
    assert code == 1, (code, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("embedlab ") and ": error: " in lines[0], lines[0]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def _run(capsys: pytest.CaptureFixture, args: list[object]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# -- shard index: entries that leave the model's folder (issue 19, item 3) --------------

def index_climbs_out(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "base", "alone.safetensors")
    (tmp / "m").mkdir()
    write_index(tmp / "m", {"wte.weight": "../base/alone.safetensors"})
    return ["params", "--model", tmp / "m"], ["'../base/alone.safetensors'", "outside the model folder"]


def index_absolute(tmp: Path) -> tuple[list[object], list[str]]:
    (tmp / "m").mkdir()
    write_index(tmp / "m", {"wte.weight": "/etc/passwd"})
    return ["params", "--model", tmp / "m"], ["'/etc/passwd'", "absolute path"]


def index_symlink_out(tmp: Path) -> tuple[list[object], list[str]]:
    outside = _table(tmp / "base", "alone.safetensors")
    (tmp / "m").mkdir()
    (tmp / "m" / "shard.safetensors").symlink_to(outside)
    write_index(tmp / "m", {"wte.weight": "shard.safetensors"})
    return ["report", "--model", tmp / "m", "--out", tmp / "out"], ["'shard.safetensors'", "outside the model folder"]


def index_not_a_name(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"wte.weight": ["a"]}}))
    return ["params", "--model", tmp / "m"], ["['a']", "'wte.weight'"]


# -- JSON nested 100,000 deep (item 6) ---------------------------------------------------

def deep_config(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "config.json").write_text(deep_json())
    return ["params", "--model", tmp / "m"], ["config.json", "too deep"]


def deep_config_flag(tmp: Path) -> tuple[list[object], list[str]]:
    (tmp / "c.json").write_text(deep_json())
    return ["params", "--config", tmp / "c.json"], ["c.json", "too deep"]


def deep_index(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "model.safetensors.index.json").write_text(deep_json())
    return ["params", "--model", tmp / "m"], ["model.safetensors.index.json", "too deep"]


def deep_header(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "d.safetensors", deep_json())
    return ["neighbors", "--model", tmp / "d.safetensors", "id:0"], ["d.safetensors", "too deep"]


def deep_vocab(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "vocab.json").write_text(deep_json())
    return ["neighbors", "--model", tmp / "m", "id:0"], ["vocab.json", "too deep"]


def deep_tokenizer(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m")
    (tmp / "m" / "tokenizer.json").write_text(deep_json())
    return ["encode", "--model", tmp / "m", "a b"], ["tokenizer.json"]


# -- .npy ----------------------------------------------------------------------------------

def npy_negative_dimension(tmp: Path) -> tuple[list[object], list[str]]:
    npy_with_header(tmp / "neg.npy", "<f4", "(-3, 2)", b"\x00" * 32)
    return ["neighbors", "--model", tmp / "neg.npy", "id:0"], ["(-3, 2)", "negative"]


def npy_negative_dimension_vector(tmp: Path) -> tuple[list[object], list[str]]:
    npy_with_header(tmp / "neg.npy", "<f4", "(-3, 2)", b"\x00" * 32)
    return ["neighbors", "--vector", tmp / "neg.npy"], ["(-3, 2)", "negative"]


def npy_dimension_past_int64(tmp: Path) -> tuple[list[object], list[str]]:
    # no elements at all (0 rows), but a dimension NumPy cannot hold in its intp: OverflowError before
    npy_with_header(tmp / "big.npy", "<f4", f"(0, {2**70})")
    return ["neighbors", "--model", tmp / "big.npy", "id:0"], [f"(0, {2**70})"]


def npy_vectors_without_values(tmp: Path) -> tuple[list[object], list[str]]:
    npy_with_header(tmp / "none.npy", "<f4", "(0,)")
    return ["neighbors", "--vector", tmp / "none.npy"], ["none.npy", "(0,)"]


LONG_DOUBLE = np.dtype(np.longdouble)  # float128 on x86-64 Linux


def npy_long_double_report(tmp: Path) -> tuple[list[object], list[str]]:
    np.save(tmp / "ld.npy", np.ones((4, 2), dtype=np.longdouble))
    return ["report", "--model", tmp / "ld.npy", "--out", tmp / "out"], [str(LONG_DOUBLE)]


def npy_long_double_json(tmp: Path) -> tuple[list[object], list[str]]:
    np.save(tmp / "ld.npy", np.ones((4, 2), dtype=np.longdouble))
    return ["neighbors", "--model", tmp / "ld.npy", "--json", "id:0"], [str(LONG_DOUBLE)]


def npy_long_double_vector(tmp: Path) -> tuple[list[object], list[str]]:
    np.save(tmp / "ld.npy", np.ones(64, dtype=np.longdouble))
    return ["neighbors", "--vector", tmp / "ld.npy", "--json"], [str(LONG_DOUBLE)]


def npy_objects(tmp: Path) -> tuple[list[object], list[str]]:
    np.save(tmp / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return ["neighbors", "--model", tmp / "obj.npy", "id:0"], ["obj.npy", "Python objects"]


# -- safetensors headers that lie ------------------------------------------------------------

def _entry(**fields: object) -> dict[str, object]:
    return {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], **fields}}


def header_dtype_list(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", _entry(dtype=["F32"]), b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["'w'", "dtype ['F32']"]


def header_dtype_object(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", _entry(dtype={"a": 1}), b"\x00" * 16)
    return ["neighbors", "--model", tmp / "h.safetensors", "id:0"], ["dtype {'a': 1}"]


def header_shape_text(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", _entry(shape=[2, "2"]), b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["shape [2, '2']"]


def header_three_offsets(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", _entry(data_offsets=[0, 16, 3]), b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["data_offsets [0, 16, 3]"]


def header_offsets_backwards(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", _entry(data_offsets=[16, 0]), b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["data_offsets [16, 0]"]


def header_entry_text(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", {"w": "x"}, b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["'w'", "'x'"]


def header_metadata_number(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", {"__metadata__": 3, **_entry()}, b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], ["__metadata__", "3"]


def header_too_short(tmp: Path) -> tuple[list[object], list[str]]:
    (tmp / "h.safetensors").write_bytes(b"\x10\x00\x00")
    return ["params", "--model", tmp / "h.safetensors"], ["3 bytes"]


def header_claims_more(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", b'{"w": {"dt', length=1000)
    return ["params", "--model", tmp / "h.safetensors"], ["declares 1000 header bytes but only 10 follow"]


def header_length_absurd(tmp: Path) -> tuple[list[object], list[str]]:
    safetensors_raw(tmp / "h.safetensors", b"{}", length=2**60)
    return ["params", "--model", tmp / "h.safetensors"], ["not a safetensors file", f"{100_000_000:,}"]


def header_tensor_past_the_end(tmp: Path) -> tuple[list[object], list[str]]:
    # F32 (2^40, 2^40) holds 4 * 2^80 bytes, and says so, in a file of 16 data bytes
    safetensors_raw(tmp / "h.safetensors", _entry(shape=[2**40, 2**40], data_offsets=[0, 4 * 2**80]), b"\x00" * 16)
    return ["params", "--model", tmp / "h.safetensors"], [f"{4 * 2**80:,}", "16 data bytes"]


# -- config values out of range (item 6) --------------------------------------------------

def pad_token_id_huge_encode(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m", pad_token_id=10**15)
    return ["encode", "--model", tmp / "m", "a b c", "a"], [f"pad_token_id={10**15}"]


def pad_token_id_huge_positions(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m", pad_token_id=10**15)
    return ["positions", "--model", tmp / "m"], [f"pad_token_id={10**15}"]


def eos_token_id_list(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m", eos_token_id=[1, 2**33])
    return ["report", "--model", tmp / "m", "--out", tmp / "out"], [f"eos_token_id[1]={2**33}"]


def layer_norm_eps_negative(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m", layer_norm_eps=-1.0)
    return ["encode", "--model", tmp / "m", "a b"], ["layer_norm_eps=-1.0"]


def layer_norm_eps_nan(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m", layer_norm_eps=float("nan"))  # json.dumps writes NaN, which json.loads reads back
    return ["positions", "--model", tmp / "m"], ["layer_norm_eps=nan"]


def config_integer_absurd(tmp: Path) -> tuple[list[object], list[str]]:
    write_config(tmp, vocab_size=8, hidden_size=4, num_hidden_layers=10**20)
    return ["params", "--config", tmp / "config.json"], [f"num_hidden_layers={10**20}"]


# -- GGUF counts no file can hold (item 6) ---------------------------------------------

HUGE = 2**40


def gguf_tensor_count(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", HUGE, 0)
    return ["params", "--model", tmp / "g.gguf"], [f"tensor_count={HUGE:,}"]


def gguf_kv_count(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, HUGE)
    return ["neighbors", "--model", tmp / "g.gguf", "id:0"], [f"kv_count={HUGE:,}"]


def gguf_key_length(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, 1, gguf_string(b"general.architecture", length=HUGE) + b"\x00" * 64)
    return ["params", "--model", tmp / "g.gguf"], [f"{HUGE:,} bytes"]


def gguf_string_length(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, 1, gguf_kv(b"general.architecture", GGUF_STRING, gguf_string(b"llama", length=HUGE)))
    return ["params", "--model", tmp / "g.gguf"], ["'general.architecture'", f"{HUGE:,} bytes"]


def gguf_dimensions(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 1, 0, gguf_tensor_info(b"token_embd.weight", [HUGE, HUGE]) + b"\x00" * 64)
    return ["params", "--model", tmp / "g.gguf"], ["'token_embd.weight'", f"ne=[{HUGE}, {HUGE}]"]


def gguf_n_dims(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 1, 0, gguf_tensor_info(b"token_embd.weight", [2, 2], n_dims=2**30) + b"\x00" * 64)
    return ["params", "--model", tmp / "g.gguf"], [f"n_dims={2**30:,}"]


def gguf_ggml_type(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 1, 0, gguf_tensor_info(b"token_embd.weight", [2, 2], ggml_type=999) + b"\x00" * 64)
    return ["neighbors", "--model", tmp / "g.gguf", "id:0"], ["GGML type 999"]


def gguf_value_type(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, 1, gguf_kv(b"x", 99, b"\x00" * 8))
    return ["params", "--model", tmp / "g.gguf"], ["'x'", "value type 99"]


def gguf_alignment(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, 1, gguf_kv(b"general.alignment", GGUF_UINT32, struct.pack("<I", 3)))
    return ["params", "--model", tmp / "g.gguf"], ["general.alignment=3"]


def gguf_version(tmp: Path) -> tuple[list[object], list[str]]:
    gguf_raw(tmp / "g.gguf", 0, 0, version=9)
    return ["params", "--model", tmp / "g.gguf"], ["version 9"]


# -- loops, links and folders where a file is expected (items 4 and 7) ------------------

def _loop(tmp: Path, name: str) -> Path:
    """``name`` -> ``name.other`` -> ``name``: a symlink loop."""
    (tmp / name).symlink_to(tmp / f"{name}.other")
    (tmp / f"{name}.other").symlink_to(tmp / name)
    return tmp / name


def loop_model(tmp: Path) -> tuple[list[object], list[str]]:
    return ["neighbors", "--model", _loop(tmp, "m.npy"), "id:0"], ["m.npy", "symlink loop"]


def loop_config(tmp: Path) -> tuple[list[object], list[str]]:
    return ["params", "--config", _loop(tmp, "c.json")], ["c.json", "symlink loop"]


def loop_words(tmp: Path) -> tuple[list[object], list[str]]:
    return ["neighbors", "--model", _npy(tmp), "--words", _loop(tmp, "w.txt"), "id:0"], ["w.txt", "symlink loop"]


def loop_vector(tmp: Path) -> tuple[list[object], list[str]]:
    return ["neighbors", "--vector", _loop(tmp, "q.npy")], ["q.npy", "symlink loop"]


def loop_config_in_folder(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    _loop(tmp / "m", "config.json")
    return ["params", "--model", tmp / "m"], ["config.json", "symlink loop"]


def broken_config_link(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "config.json").symlink_to(tmp / "gone.json")
    return ["params", "--model", tmp / "m"], ["config.json", "broken symbolic link"]


def config_is_a_folder(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "config.json").mkdir()
    return ["report", "--model", tmp / "m", "--out", tmp / "out"], ["config.json", "a folder, not a file"]


def tokenizer_is_a_folder(tmp: Path) -> tuple[list[object], list[str]]:
    tiny_bert(tmp / "m")
    (tmp / "m" / "tokenizer.json").unlink()
    (tmp / "m" / "tokenizer.json").mkdir()
    return ["encode", "--model", tmp / "m", "a"], ["tokenizer.json", "a folder, not a file"]


def vocab_is_a_folder(tmp: Path) -> tuple[list[object], list[str]]:
    _table(tmp / "m")
    (tmp / "m" / "vocab.txt").mkdir()
    return ["neighbors", "--model", tmp / "m", "id:0"], ["vocab.txt", "a folder, not a file"]


def words_is_a_folder(tmp: Path) -> tuple[list[object], list[str]]:
    (tmp / "w.txt").mkdir()
    return ["neighbors", "--model", _npy(tmp), "--words", tmp / "w.txt", "id:0"], ["w.txt", "a folder, not a file"]


IN_PROCESS: dict[str, Case] = {case.__name__: case for case in (
    index_climbs_out, index_absolute, index_symlink_out, index_not_a_name,
    deep_config, deep_config_flag, deep_index, deep_header, deep_vocab, deep_tokenizer,
    npy_negative_dimension, npy_negative_dimension_vector, npy_objects, npy_dimension_past_int64,
    npy_vectors_without_values,
    header_dtype_list, header_dtype_object, header_shape_text, header_three_offsets, header_offsets_backwards,
    header_entry_text, header_metadata_number, header_too_short, header_claims_more, header_length_absurd,
    header_tensor_past_the_end,
    pad_token_id_huge_encode, pad_token_id_huge_positions, eos_token_id_list, layer_norm_eps_negative,
    layer_norm_eps_nan, config_integer_absurd,
    gguf_tensor_count, gguf_kv_count, gguf_key_length, gguf_string_length, gguf_dimensions, gguf_n_dims,
    gguf_ggml_type, gguf_value_type, gguf_alignment, gguf_version,
    loop_model, loop_config, loop_words, loop_vector, loop_config_in_folder, broken_config_link,
    config_is_a_folder, tokenizer_is_a_folder, vocab_is_a_folder, words_is_a_folder,
    npy_long_double_report, npy_long_double_json, npy_long_double_vector,
)}
NEEDS_LONG_DOUBLE = pytest.mark.skipif(LONG_DOUBLE.itemsize <= 8, reason="longdouble is float64 here")


@pytest.mark.parametrize("name", [pytest.param(name, marks=NEEDS_LONG_DOUBLE) if "long_double" in name else name
                                  for name in IN_PROCESS])
def test_a_hostile_file_gets_one_line_naming_the_bad_value(name, tmp_path, capsys):
    args, names = IN_PROCESS[name](tmp_path)
    code, out, err = _run(capsys, args)
    line = _assert_refused(code, out, err, names)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())  # no output written
    assert len(line) < 1000  # a message names values; it never quotes a file


def test_an_index_pointing_at_a_secret_never_shows_its_bytes(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "m").mkdir()
    write_index(tmp_path / "m", {"wte.weight": str(secret)})
    code, out, err = _run(capsys, ["params", "--model", tmp_path / "m"])
    _assert_refused(code, out, err, [f"'{str(secret)[:40]}", "absolute path"])  # long names are cut
    as_number = int.from_bytes(secret.read_bytes()[:8], "little")  # what the old message printed
    assert "root:" not in err and str(as_number) not in err and f"{as_number:,}" not in err


def test_a_hugging_face_cache_snapshot_follows_its_links_into_blobs(tmp_path, capsys):
    # huggingface_hub's cache: snapshots/REV/<file> -> ../../blobs/<hash>; those links stay inside the repository.
    repo = tmp_path / "hub" / "models--org--tiny"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    _table(blobs, "a1b2c3")
    (blobs / "d4e5f6").write_text(json.dumps({"weight_map": {"wte.weight": "model-00001-of-00001.safetensors"}}))
    (snapshot / "model-00001-of-00001.safetensors").symlink_to("../../blobs/a1b2c3")
    (snapshot / "model.safetensors.index.json").symlink_to("../../blobs/d4e5f6")
    code, out, err = _run(capsys, ["params", "--model", snapshot, "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert (result["V"], result["D"], result["tensors"]["token"]) == (4, 2, "wte.weight")


# -- pickle under every name: refused, never unpickled ----------------------------------------

PICKLE_RUNS = {
    ".npy": lambda p, tmp: ["neighbors", "--model", p, "id:0"],
    ".safetensors": lambda p, tmp: ["params", "--model", p],
    ".gguf": lambda p, tmp: ["params", "--model", p],
    ".bin": lambda p, tmp: ["neighbors", "--model", p, "id:0"],
    ".pt": lambda p, tmp: ["report", "--model", p, "--out", tmp / "out"],
    ".txt": lambda p, tmp: ["neighbors", "--model", _npy(tmp), "--words", p, "id:0"],
    ".vec": lambda p, tmp: ["neighbors", "--model", p, "id:0"],
    ".json": lambda p, tmp: ["params", "--config", p],
    "vector.npy": lambda p, tmp: ["neighbors", "--vector", p],
}


@pytest.mark.parametrize("suffix", PICKLE_RUNS)
def test_a_pickle_under_any_name_is_refused_and_never_unpickled(suffix, tmp_path, capsys):
    marker = tmp_path / "unpickled"
    path = pickled_marker(tmp_path / f"payload{suffix}", marker)
    code, out, err = _run(capsys, PICKLE_RUNS[suffix](path, tmp_path))
    _assert_refused(code, out, err, [path.name])
    assert not marker.exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# -- files that never end or never answer: a child process, bounded ------------------------

def _fifo(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / name)
    return folder / name


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` zero bytes that takes no disk (a hole)."""
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def _folder_with(tmp: Path, name: str, make: Callable[[Path], object]) -> Path:
    """A good checkpoint folder (without a model_type: no torch in the child) whose ``name`` is ``make``'s."""
    folder = tmp / "m"
    _table(folder)
    write_config(folder, vocab_size=4, hidden_size=2)
    (folder / name).unlink(missing_ok=True)
    make(folder / name)
    return folder


FIFO = "a FIFO (named pipe), not a regular file"
DEVICE = "a character device, not a regular file"

BOUNDED: dict[str, Case] = {
    "fifo --model .npy": lambda t: (["neighbors", "--model", _fifo(t, "f.npy"), "id:0"], ["f.npy", FIFO]),
    "fifo --model .txt": lambda t: (["neighbors", "--model", _fifo(t, "f.txt"), "id:0"], ["f.txt", FIFO]),
    "fifo --model no suffix": lambda t: (["neighbors", "--model", _fifo(t, "f"), "id:0"], [FIFO]),
    "fifo --model .gguf": lambda t: (["params", "--model", _fifo(t, "f.gguf")], ["f.gguf", FIFO]),
    "fifo --model .safetensors": lambda t: (["report", "--model", _fifo(t, "f.safetensors"), "--out", t / "out"],
                                            ["f.safetensors", FIFO]),
    "fifo --words": lambda t: (["neighbors", "--model", _npy(t), "--words", _fifo(t, "w.txt"), "id:0"],
                               ["w.txt", FIFO]),
    "fifo --config": lambda t: (["params", "--config", _fifo(t, "c.json")], ["c.json", FIFO]),
    "fifo --vector": lambda t: (["neighbors", "--vector", _fifo(t, "q.npy")], ["q.npy", FIFO]),
    "fifo config.json": lambda t: (["params", "--model", _folder_with(t, "config.json", os.mkfifo)],
                                   ["config.json", FIFO]),
    "fifo model.safetensors": lambda t: (["params", "--model", _folder_with(t, "model.safetensors", os.mkfifo)],
                                         ["model.safetensors", FIFO]),
    "fifo vocab.txt": lambda t: (["neighbors", "--model", _folder_with(t, "vocab.txt", os.mkfifo), "id:0"],
                                 ["vocab.txt", FIFO]),
    "fifo tokenizer.json": lambda t: (["encode", "--model", _folder_with(t, "tokenizer.json", os.mkfifo), "a"],
                                      ["tokenizer.json", FIFO]),
    "fifo shard": lambda t: (["params", "--model", _fifo_shard(t)], ["shard.safetensors", FIFO]),
    "zero --model .txt": lambda t: (["neighbors", "--model", _link(t / "z.txt", "/dev/zero"), "id:0"],
                                    ["z.txt", DEVICE]),
    "zero --model .npy": lambda t: (["neighbors", "--model", _link(t / "z.npy", "/dev/zero"), "id:0"],
                                    ["z.npy", DEVICE]),
    "zero --config": lambda t: (["params", "--config", "/dev/zero"], ["/dev/zero", DEVICE]),
    "zero --words": lambda t: (["neighbors", "--model", _npy(t), "--words", "/dev/zero", "id:0"],
                               ["/dev/zero", DEVICE]),
    "zero --vector": lambda t: (["neighbors", "--vector", "/dev/zero"], ["/dev/zero", DEVICE]),
    "zero config.json": lambda t: (["params", "--model", _folder_with(t, "config.json",
                                                                      lambda p: p.symlink_to("/dev/zero"))],
                                   ["config.json", DEVICE]),
    "gguf array of 2^40": lambda t: (["params", "--model", gguf_raw(t / "g.gguf", 0, 1, gguf_kv(
        b"tokenizer.ggml.scores", GGUF_ARRAY, struct.pack("<IQ", GGUF_UINT32, HUGE) + b"\x00" * 64))],
        [f"array of {HUGE:,} UINT32 items"]),
    "word2vec text of 10^12 rows": lambda t: (["neighbors", "--model", _text(t / "v.txt", "1000000000000 2\n"
                                                                              "king 0.1 0.2\n"), "id:0"],
                                              ["v.txt", "1000000000000"]),
    "word2vec binary of 10^12 rows": lambda t: (["neighbors", "--model", word2vec_binary(
        t / "v.bin", b"1000000000000 2\n", [(b"king", (0.1, 0.2))]), "id:0"], ["v.bin", "1000000000000"]),
    "word2vec binary of 10^12 columns": lambda t: (["neighbors", "--model", word2vec_binary(
        t / "v.bin", b"1 1000000000000\n", [(b"king", (0.1, 0.2))]), "id:0"], ["v.bin", "1000000000000"]),
    "npy of 10^21 elements": lambda t: (["neighbors", "--model", npy_with_header(
        t / "h.npy", "<f4", "(1000000000000, 1000000000)", b"\x00" * 64), "id:0"], ["(1000000000000, 1000000000)"]),
    "npy vectors of 10^21 elements": lambda t: (["neighbors", "--vector", npy_with_header(
        t / "h.npy", "<f4", "(1000000000000, 1000000000)", b"\x00" * 64)], ["(1000000000000, 1000000000)"]),
    "text line without end": lambda t: (["neighbors", "--model", _sparse(t / "v.txt", 17 * 2**20), "id:0"],
                                        ["v.txt", "line 1", "16 MiB"]),
    "config.json past its cap": lambda t: (["params", "--config", _sparse(t / "c.json", 64 * 2**20 + 1)],
                                           ["c.json", "64 MiB"]),
    "word list past its cap": lambda t: (["neighbors", "--model", _npy(t), "--words",
                                          _sparse(t / "w.txt", 256 * 2**20 + 1), "id:0"], ["w.txt", "256 MiB"]),
    "tokenizer.json past its cap": lambda t: (["encode", "--model", _folder_with(
        t, "tokenizer.json", lambda p: _sparse(p, 256 * 2**20 + 1)), "a"], ["tokenizer.json", "256 MiB"]),
}


def _link(path: Path, target: str) -> Path:
    path.symlink_to(target)
    return path


def _text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _fifo_shard(tmp: Path) -> Path:
    _fifo(tmp / "m", "shard.safetensors")
    write_index(tmp / "m", {"wte.weight": "shard.safetensors"})
    return tmp / "m"


@pytest.mark.parametrize("name", BOUNDED)
def test_files_that_never_end_are_refused_at_once_in_bounded_memory(name, tmp_path):
    args, names = BOUNDED[name](tmp_path)
    done = run_bounded(args, tmp_path)  # a hang raises TimeoutExpired; a blow-up hits the address-space limit
    _assert_refused(done.returncode, done.stdout, done.stderr, names)
    assert 0 < done.max_rss < RSS_LIMIT, done.max_rss
    assert not (tmp_path / "out").exists()


def test_the_corpus_is_deep_enough_to_overflow_python():
    # The nesting used above is far past what json.loads can follow (its C scanner recurses per level).
    with pytest.raises(RecursionError):
        json.loads(deep_json(DEEP))
