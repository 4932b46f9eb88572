"""C23: a checkpoint whose vocabulary repeats a token refused whole.

A fairseq-style ``vocab.txt`` (CamemBERT's starts this way) repeats ``<s>``,
``</s>`` and ``<unk>``. It loads; every id answers by ``id:N``; a token string
means the id transformers' ``BertTokenizer`` gives it (the last copy: the
values below are the case's, and the tokenizer itself is the oracle where it
is installed); and the output says the token is repeated.
"""

from __future__ import annotations

import json

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")

from embedlab import api, sources  # noqa: E402
from safetensors_writer import array, write_safetensors  # noqa: E402

VOCAB = ["<s>", "<pad>", "</s>", "<unk>", "<unk>", "<s>", "</s>", "le", "la", "de"]
LAST_COPY = {"<unk>": 4, "<s>": 5, "</s>": 6, "<pad>": 1, "le": 7, "la": 8, "de": 9}  # by hand from VOCAB


@pytest.fixture
def folder(tmp_path):
    rows = np.arange(40, dtype=np.float32).reshape(10, 4) % 7 + np.eye(10, 4, dtype=np.float32)  # (10, 4)
    write_safetensors(tmp_path / "model.safetensors", {"embeddings.word_embeddings.weight": array(rows)})
    config = {"model_type": "bert", "vocab_size": 10, "hidden_size": 4, "max_position_embeddings": 8,
              "type_vocab_size": 1}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return tmp_path


def test_it_loads_and_every_id_answers(folder):
    table = sources.load(str(folder))
    assert table.V == 10
    assert [table.token_id(f"id:{i}") for i in range(10)] == list(range(10))
    assert [table.token(i) for i in range(10)] == VOCAB  # each copy shown as itself


def test_a_token_means_the_id_the_tokenizer_gives_it(folder):
    table = sources.load(str(folder))
    assert {token: table.token_id(token) for token in LAST_COPY} == LAST_COPY


def test_bert_tokenizer_agrees(folder):
    pytest.importorskip("transformers")
    from transformers import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(str(folder))
    table = sources.load(str(folder))
    assert {t: table.token_id(t) for t in LAST_COPY} == dict(zip(LAST_COPY, tokenizer.convert_tokens_to_ids(
        list(LAST_COPY))))


def test_neighbors_say_the_query_is_repeated(folder):
    result = api.neighbors(str(folder), ["<unk>", "id:3", "le"], k=2)
    assert [q.id for q in result.queries] == [4, 3, 7]
    (note,) = [n for n in result.notes if "<unk>" in n]  # one note for both copies
    assert "repeated" in note and "ids 3 and 4" in note and "means id 4" in note and "id:3" in note
    assert not any("'le'" in n for n in result.notes)


def test_the_report_says_the_probe_is_repeated(folder):
    result = api.report(str(folder), probe="<s>", k=2)
    assert result.probe == 5
    assert any("'<s>' is repeated" in n and "ids 0 and 5" in n and "means id 5" in n for n in result.notes)
    assert not any("repeated" in n for n in api.report(str(folder), probe="la", k=2).notes)
