"""word2vec binary files: recognised by content, read as gensim reads them; real pickles still refused.

Files are written by gensim (``save_word2vec_format(binary=True)``) where it
is installed, and byte by byte in word2vec.c's layout (a newline after each
record) with ``struct``; gensim's reader is the oracle for both.
"""

from __future__ import annotations

import pickle
import struct

import pytest

np = pytest.importorskip("numpy")

from embedlab import sources  # noqa: E402
from embedlab.errors import SourceError, UnsafeFormatError  # noqa: E402
from embedlab.sources.word2vec import is_word2vec_binary  # noqa: E402

WORDS = ["king", "new\u3000york", "\u00e9t\u00e9", "a"]
ROWS = [[0.5, -1.25, 3.0], [0.375, 2.0, -0.0], [7.0, 8.0, 9.5], [0.25, 0.125, -4.0]]  # exact in float32


def _c_layout(words, rows, declared=None):
    """word2vec.c's binary layout: "V D\\n", then per word: the word, a space, D float32, a newline."""
    body = b"".join(w.encode("utf-8") + b" " + struct.pack(f"<{len(r)}f", *r) + b"\n" for w, r in zip(words, rows))
    return f"{len(words) if declared is None else declared} {len(rows[0])}\n".encode() + body


def _gensim():
    return pytest.importorskip("gensim").models.KeyedVectors


@pytest.mark.parametrize("name", ["vectors.bin", "vectors.w2v", "vectors"])
def test_the_c_layout_loads_by_content_whatever_the_name(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(_c_layout(WORDS, ROWS))
    table = sources.load(str(path))
    assert table.vocabulary.index_to_token == tuple(WORDS)
    assert table.W_E.tolist() == ROWS and table.W_E.dtype == np.float32
    assert table.provenance.source == "word2vec" and table.provenance.tied is None
    oracle = _gensim().load_word2vec_format(str(path), binary=True)
    assert oracle.index_to_key == WORDS and oracle.vectors.tolist() == table.W_E.tolist()


def test_a_file_gensim_writes_loads_as_gensim_reads_it(tmp_path):
    KeyedVectors = _gensim()
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(WORDS, np.array(ROWS, dtype=np.float32))
    path = tmp_path / "gensim.bin"
    kv.save_word2vec_format(str(path), binary=True)
    table = sources.load(str(path))
    oracle = KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert list(table.vocabulary.index_to_token) == oracle.index_to_key
    assert table.W_E.tolist() == oracle.vectors.tolist()
    assert table.token_id("new\u3000york") == oracle.key_to_index["new\u3000york"]


def test_a_repeated_word_keeps_every_row_and_means_the_first(tmp_path):
    path = tmp_path / "dup.bin"
    path.write_bytes(_c_layout(["a", "b", "a"], ROWS[:3]))
    table = sources.load(str(path))
    assert table.V == 3 and table.token_id("a") == 0 and table.vocabulary.repeats("a") == (0, 2)
    oracle = _gensim().load_word2vec_format(str(path), binary=True)  # keeps the first 'a'
    assert table.lookup([table.token_id("a")]).tolist() == [oracle["a"].tolist()]


@pytest.mark.parametrize("declared, match", [(50, "declares 50 vectors of 3 float32 values.*at least 700 bytes, but holds 76"),
                                             (3, "declares 3 vectors in its header but holds more")])
def test_a_declared_size_is_checked_against_the_data(tmp_path, declared, match):
    path = tmp_path / "v.bin"
    path.write_bytes(_c_layout(WORDS, ROWS, declared=declared))
    with pytest.raises(SourceError, match=match):
        sources.load(str(path))


def test_a_file_cut_inside_a_record_says_how_many_it_holds(tmp_path):
    path = tmp_path / "v.bin"
    data = _c_layout(WORDS, ROWS)
    path.write_bytes(data[:-20] + b"x" * 40)  # the last record's values cut short, padding to pass the size check
    with pytest.raises(SourceError, match="declares 4 vectors in its header but holds 3"):
        sources.load(str(path))


def test_real_pickles_are_still_refused(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(pickle.dumps({"weight": [1.0, 2.0]}))
    assert not is_word2vec_binary(path)
    with pytest.raises(UnsafeFormatError, match="pickle"):
        sources.load(str(path))
    zipped = tmp_path / "model.bin"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 60)  # torch.save's zip container
    with pytest.raises(UnsafeFormatError):
        sources.load(str(zipped))


def test_word2vec_text_is_not_taken_for_binary(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("2 2\na 1 2\nb 3 4\n", encoding="utf-8")
    assert not is_word2vec_binary(path)
    assert sources.load(str(path)).provenance.source == "text"


def test_options_and_other_readers_name_the_format(tmp_path):
    path = tmp_path / "v.bin"
    path.write_bytes(_c_layout(WORDS, ROWS))
    with pytest.raises(SourceError, match="tensor='x' does not apply to .*word2vec binary") as caught:
        sources.load(str(path), tensor="x")
    assert caught.value.parameter == "tensor"
    with pytest.raises(SourceError, match="a word2vec binary file.*not a checkpoint"):
        sources.checkpoint_path(str(path))
    with pytest.raises(SourceError, match="a word2vec binary file"):
        sources.load_tokenizer(str(path))
