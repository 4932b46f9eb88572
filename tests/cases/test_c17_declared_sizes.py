"""C17: a loader trusts a declared size without checking the data."""

import numpy as np
import pytest

from embedlab import sources


def test_word2vec_text(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("3 2\na 1 2\nb 3 4\nc 5 6\n", encoding="utf-8")
    table = sources.load(str(good))
    assert list(table.vocabulary.index_to_token) == ["a", "b", "c"]
    assert table.W_E.tolist() == [[1, 2], [3, 4], [5, 6]]
    short = tmp_path / "short.txt"
    short.write_text("3 2\na 1 2\nb 3 4\n", encoding="utf-8")
    with pytest.raises(ValueError, match="3.*2"):
        sources.load(str(short))


def test_npy_with_a_shorter_word_list(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((4, 3), dtype=np.float32))
    (tmp_path / "w.txt").write_text("x\ny\nz\n", encoding="utf-8")
    with pytest.raises(ValueError, match="4.*3"):
        sources.load(str(tmp_path / "t.npy"), words=str(tmp_path / "w.txt"))


def test_word2vec_binary(tmp_path):
    import struct

    def w2v(declared, records):
        return f"{declared} 2\n".encode() + b"".join(w + b" " + struct.pack("<2f", *r) + b"\n" for w, r in records)

    records = [(b"a", (1, 2)), (b"b", (3, 4)), (b"c", (5, 6))]
    good = tmp_path / "good.bin"
    good.write_bytes(w2v(3, records))
    table = sources.load(str(good))
    assert list(table.vocabulary.index_to_token) == ["a", "b", "c"]
    assert table.W_E.tolist() == [[1, 2], [3, 4], [5, 6]]
    short = tmp_path / "short.bin"
    short.write_bytes(w2v(3, records[:2]))
    with pytest.raises(ValueError, match="3.*2"):
        sources.load(str(short))
