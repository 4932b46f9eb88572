"""``sources.files``: the rules for reading a file a stranger wrote, one by one, on files made here."""

from __future__ import annotations

import json
import os
import re

import pytest

from embedlab.errors import SourceError
from embedlab.sources import files

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def test_a_regular_file_passes_and_everything_else_is_named(tmp_path):
    (tmp_path / "f.json").write_text("{}")
    assert files.regular_file(tmp_path / "f.json").st_size == 2
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    cases = {tmp_path / "pipe": "a FIFO (named pipe)", tmp_path / "dir": "a folder, not a file",
             "/dev/null": "a character device"}
    for path, words in cases.items():
        with pytest.raises(SourceError, match=re.escape(f"config file {path} is {words}")):
            files.regular_file(path, "config file")


def test_a_fifo_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # no writer: an open() for reading would wait forever
    with pytest.raises(SourceError, match="FIFO"):
        files.open_regular(tmp_path / "pipe")
    with pytest.raises(SourceError, match="FIFO"):
        files.read_capped(tmp_path / "pipe", "word list", 10)


def test_loops_broken_links_and_missing_files_are_told_apart(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "broken").symlink_to(tmp_path / "gone")
    with pytest.raises(SourceError, match=r"^word list .*a is a symlink loop"):
        files.regular_file(tmp_path / "a", "word list")
    with pytest.raises(SourceError, match=r"^word list .*broken is a broken symbolic link"):
        files.regular_file(tmp_path / "broken", "word list")
    with pytest.raises(SourceError, match=r"^no such word list: .*gone$"):
        files.regular_file(tmp_path / "gone", "word list")
    with pytest.raises(SourceError, match=r"^no such file or folder: .*gone$"):
        files.existing(tmp_path / "gone")
    assert files.present(tmp_path / "gone") is False
    with pytest.raises(SourceError, match="symlink loop"):
        files.present(tmp_path / "a")  # there, but unreadable: refused, not taken for absent


def test_reads_stop_at_the_cap(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"x" * 100)
    assert files.read_capped(path, "word list", 100) == b"x" * 100
    with pytest.raises(SourceError, match=r"word list .*v.txt is larger than 99 bytes"):
        files.read_capped(path, "word list", 99)
    assert files.size_text(64 * 2**20) == "64 MiB"


def test_json_nested_too_deep_is_one_error(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(SourceError, match=r"c.json: its JSON nests arrays or objects too deep"):
        files.read_json(path, "config file", files.CONFIG_CAP)
    path.write_text('{"a": 1}')
    assert files.read_json(path, "config file", files.CONFIG_CAP) == {"a": 1}
    path.write_bytes(b'{"a": \xff}')
    with pytest.raises(SourceError, match=r"is not UTF-8 \(byte 6 is 0xff\)"):
        files.read_json(path, "config file", files.CONFIG_CAP)


@pytest.mark.parametrize("name, words", [
    ("../outside.safetensors", "resolves outside the model folder"),
    ("sub/../../outside.safetensors", "resolves outside the model folder"),
    ("/etc/passwd", "is an absolute path"),
    ("", "is not a file name"),
    ("a\x00b", "is not a file name"),
])
def test_a_name_from_a_file_must_stay_in_its_folder(tmp_path, name, words):
    (tmp_path / "m").mkdir()
    with pytest.raises(SourceError, match=words):
        files.inside(tmp_path / "m", name, "shard")


def test_names_inside_the_folder_and_a_hub_cache_snapshot_are_followed(tmp_path):
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    assert files.inside(model, "sub/../a.safetensors", "shard") == model / "sub/../a.safetensors"
    (model / "link.safetensors").symlink_to(model / "sub" / "real.safetensors")
    assert files.inside(model, "link.safetensors", "shard") == model / "link.safetensors"
    # huggingface_hub: models--ORG--NAME/snapshots/REV/<file> -> ../../blobs/<hash>
    snapshot = tmp_path / "models--org--m" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (tmp_path / "models--org--m" / "blobs").mkdir()
    (snapshot / "model.safetensors").symlink_to("../../blobs/1234")
    assert files.inside(snapshot, "model.safetensors", "shard") == snapshot / "model.safetensors"
    # ...but a snapshot's link that leaves the repository is refused like any other
    (snapshot / "out.safetensors").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SourceError, match="resolves outside"):
        files.inside(snapshot, "out.safetensors", "shard")


def test_a_real_config_is_read_whole(tmp_path):
    config = {"model_type": "llama", "eos_token_id": [128001, 128009], "rms_norm_eps": 1e-5,
              "rope_scaling": {"original_max_position_embeddings": 8192}, "pad_token_id": None}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert files.read_json(tmp_path / "config.json", "config file", files.CONFIG_CAP) == config


def test_a_fifo_beside_a_tokenizer_that_transformers_would_open_is_refused_by_name(tmp_path):
    from embedlab.sources.tokenizer import read_inventory

    (tmp_path / "vocab.txt").write_text("[PAD]\nhello\n", encoding="utf-8")
    os.mkfifo(tmp_path / "special_tokens_map.json")  # AutoTokenizer would open it and wait for a writer
    with pytest.raises(SourceError, match=r"special_tokens_map\.json is a FIFO"):
        read_inventory(tmp_path)
