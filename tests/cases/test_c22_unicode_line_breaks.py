"""C22: a vocabulary file split on every Unicode line break, not on newline.

``vocab.txt`` and word lists end a line at "\\n", "\\r\\n" or "\\r" only, as
transformers' ``load_vocab`` reads them (text mode); U+2028 and U+0085 are
tokens. The scores are worked by hand from the case's table.
"""

from __future__ import annotations

import json
import math

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")

from embedlab import api, sources  # noqa: E402
from safetensors_writer import array, write_safetensors  # noqa: E402

LINE_SEPARATOR, NEXT_LINE = "\u2028", "\u0085"
VOCAB = ["[PAD]", "[UNK]", "a", LINE_SEPARATOR, "b", "c"]
TABLE = [[0, 0], [1, 0], [1, 1], [2, 1], [1, 3], [3, 1]]


def _folder(tmp_path):
    write_safetensors(tmp_path / "model.safetensors",
                      {"embeddings.word_embeddings.weight": array(np.array(TABLE, dtype=np.float32))})
    config = {"model_type": "bert", "vocab_size": 6, "hidden_size": 2, "max_position_embeddings": 8,
              "type_vocab_size": 2, "tie_word_embeddings": True}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return tmp_path


def test_a_line_separator_token_in_vocab_txt_loads_intact(tmp_path):
    table = sources.load(str(_folder(tmp_path)))
    assert table.V == 6
    assert table.token(3) == LINE_SEPARATOR and len(table.token(3)) == 1
    assert table.vocabulary.index_to_token == tuple(VOCAB)


def test_cosine_neighbours_of_b(tmp_path):
    found = api.neighbors(str(_folder(tmp_path)), "b", k=2, metrics=["cosine"]).queries[0].lists["cosine"]
    # b = (1, 3): with a = (1, 1) cos = 4 / sqrt(20); with id 3 = (2, 1) cos = 5 / sqrt(50).
    assert [(x.id, x.token) for x in found] == [(2, "a"), (3, LINE_SEPARATOR)]
    assert [x.score for x in found] == pytest.approx([4 / math.sqrt(20), 5 / math.sqrt(50)])
    assert [round(x.score, 4) for x in found] == [0.8944, 0.7071]


def test_transformers_load_vocab_agrees(tmp_path):
    pytest.importorskip("transformers")
    from transformers.models.bert.tokenization_bert import load_vocab

    folder = _folder(tmp_path)
    oracle = load_vocab(str(folder / "vocab.txt"))  # token -> id, as BertTokenizer reads the file
    table = sources.load(str(folder))
    assert {t: table.token_id(t) for t in oracle} == dict(oracle)


def test_a_next_line_character_in_a_word_list_stays_in_its_token(tmp_path):
    np.save(tmp_path / "t.npy", np.eye(3, dtype=np.float32))
    (tmp_path / "w.txt").write_text(f"x\ny\nz{NEXT_LINE}\n", encoding="utf-8")
    table = sources.load(str(tmp_path / "t.npy"), words=tmp_path / "w.txt")
    assert table.vocabulary.index_to_token == ("x", "y", "z\u0085")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_every_text_mode_line_end_ends_a_line(tmp_path, ending):
    (tmp_path / "w.txt").write_bytes(ending.join(["x", LINE_SEPARATOR, "z"]).encode("utf-8") + ending.encode())
    assert sources.read_words(tmp_path / "w.txt") == ["x", LINE_SEPARATOR, "z"]
