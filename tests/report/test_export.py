"""TensorBoard projector files: vectors.tsv and metadata.tsv read back as TensorBoard's projector reads them.

``tensorboard_metadata`` and ``tensorboard_vectors`` follow the projector's own reader
(TensorBoard, plugins/projector/vz_projector/data-provider.ts, parseMetadata and
parseTensors): split on "\\n", skip lines that trim to nothing, a first metadata line
holding a tab is the header, cells split on "\\t".
"""

import numpy as np
import pytest

import embedlab
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import ChoiceError, SizeError
from embedlab.report import export

JS_TRIM = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029" \
          "\u202f\u205f\u3000\ufeff"  # what JavaScript's String.prototype.trim removes


def tensorboard_metadata(text):
    """(column names, one dict per point), as parseMetadata reads metadata.tsv."""
    columns, points, first = ["label"], [], True
    for line in text.split("\n"):
        if not line.strip(JS_TRIM):
            continue
        if first and "\t" in line:
            columns, first = line.split("\t"), False
            continue
        first = False
        cells = line.split("\t")
        points.append({name: (cells[i] if i < len(cells) and cells[i] != "" else None)
                       for i, name in enumerate(columns)})
    return columns, points


def tensorboard_vectors(text, dtype):
    """The rows of vectors.tsv as parseTensors reads them, each value parsed back into ``dtype``."""
    rows = [line.strip(JS_TRIM).split("\t") for line in text.split("\n") if line.strip(JS_TRIM)]
    return np.array([[dtype(float(v)) for v in row] for row in rows], dtype=dtype)


WORDS = ["king", "王", "</script>", 'say "hi"', "tab\there", "new\nline", "cr\rhere", "مرحبا", "  x", "back\\slash"]


@pytest.fixture
def table():
    rng = np.random.default_rng(2)
    W = (rng.normal(size=(len(WORDS), 4)) * np.array([1e-30, 1.0, 3.3e20, 1 / 3])).astype(np.float32)  # (V, D)
    return EmbeddingTable(W, vocabulary=WORDS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vectors_read_back_equal_the_table(tmp_path, dtype):
    rng = np.random.default_rng(7)
    W = (rng.normal(size=(30, 6)) * 10.0 ** rng.integers(-30, 30, size=(30, 1))).astype(dtype)  # (V, D)
    W[3, 2], W[4, 0] = -0.0, np.finfo(dtype).tiny
    embedlab.export(EmbeddingTable(W), tmp_path)
    back = tensorboard_vectors((tmp_path / "vectors.tsv").read_text(encoding="utf-8"), dtype)
    assert back.dtype == dtype and np.array_equal(back, W)
    assert np.array_equal(np.signbit(back), np.signbit(W))


def test_one_column_has_no_header_and_escapes_what_a_line_cannot_hold(tmp_path, table):
    result = embedlab.export(table, tmp_path)
    text = (tmp_path / "metadata.tsv").read_text(encoding="utf-8")
    columns, points = tensorboard_metadata(text)
    escaped = [w.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r") for w in WORDS]
    assert columns == ["label"] and [p["label"] for p in points] == escaped
    assert text == "".join(f"{w}\n" for w in escaped)  # no header line: the first line is the first token
    assert result.columns == ("token",) and result.rows == len(WORDS)
    assert result.notes == ("3 tokens hold a tab, newline or carriage return, written as \\t, \\n, \\r: ids 4, 5, 6",)
    back = tensorboard_vectors((tmp_path / "vectors.tsv").read_text(encoding="utf-8"), np.float32)
    assert np.array_equal(back, table.W_E)


def test_several_columns_have_a_header_line(tmp_path, table):
    embedlab.export(table, tmp_path, metadata=["token", "id"])
    columns, points = tensorboard_metadata((tmp_path / "metadata.tsv").read_text(encoding="utf-8"))
    assert columns == ["token", "id"]
    assert [p["id"] for p in points] == [str(i) for i in range(len(WORDS))]
    assert points[0]["token"] == "king" and points[2]["token"] == "</script>"


def test_a_blank_token_is_refused_in_one_column_and_kept_beside_its_id(tmp_path):
    table = EmbeddingTable(np.eye(3, dtype=np.float32), vocabulary=["a", "\u3000", "c"])
    with pytest.raises(ValueError, match=r"token id 1 is blank .*--metadata token,id"):
        embedlab.export(table, tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither file
    embedlab.export(table, tmp_path, metadata=("token", "id"))
    _, points = tensorboard_metadata((tmp_path / "metadata.tsv").read_text(encoding="utf-8"))
    assert [(p["token"], p["id"]) for p in points] == [("a", "0"), ("\u3000", "1"), ("c", "2")]


def test_limit_takes_the_first_rows(tmp_path, table):
    result = embedlab.export(table, tmp_path, limit=3)
    assert (tmp_path / "metadata.tsv").read_text(encoding="utf-8") == "king\n王\n</script>\n"
    back = tensorboard_vectors((tmp_path / "vectors.tsv").read_text(encoding="utf-8"), np.float32)
    assert np.array_equal(back, table.W_E[:3]) and result.rows == 3


def test_a_table_without_vocabulary_is_labelled_by_id(tmp_path):
    result = embedlab.export([[1.0, 2.0], [3.0, 4.0]], tmp_path)
    assert (tmp_path / "metadata.tsv").read_text(encoding="utf-8") == "0\n1\n"
    assert result.columns == ("id",)
    with pytest.raises(ChoiceError, match="no vocabulary") as exc:
        embedlab.export([[1.0, 2.0], [3.0, 4.0]], tmp_path, metadata=["token"])
    assert exc.value.parameter == "metadata"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"limit": 0}, SizeError, "limit=0 rows: expected an int from 1 to V = 10"),
    ({"limit": 11}, SizeError, "limit=11"),
    ({"metadata": ["token", "norm"]}, ChoiceError, "one or more of token, id"),
    ({"metadata": ["id", "id"]}, ChoiceError, "each once"),
    ({"metadata": []}, ChoiceError, "one or more"),
    ({"format": "word2vec"}, ChoiceError, "unknown export format 'word2vec'"),
])
def test_bad_input_writes_nothing(tmp_path, table, kwargs, error, match):
    with pytest.raises(error, match=match):
        embedlab.export(table, tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


def test_a_failed_export_keeps_the_old_files(tmp_path):
    (tmp_path / "vectors.tsv").write_text("old\n", encoding="utf-8")
    table = EmbeddingTable(np.eye(3, dtype=np.float32), vocabulary=["a", "", "c"])  # blank: one column refuses it
    with pytest.raises(ValueError, match="token id 1 is blank"):
        embedlab.export(table, tmp_path)
    assert (tmp_path / "vectors.tsv").read_text(encoding="utf-8") == "old\n"
    assert not (tmp_path / "metadata.tsv").exists()


def test_one_value_vectors_are_refused(tmp_path):
    with pytest.raises(SizeError, match="at least 2 values, got D=1"):
        embedlab.export([[1.0], [2.0]], tmp_path)


def test_the_metadata_cell_rule():
    assert export.metadata_cell("a\tb\nc\rd") == "a\\tb\\nc\\rd"
    assert export.metadata_cell("王 </script>") == "王 </script>"
