"""C25: a factorised table's width is its own ``embedding_size``, not ``hidden_size``.

Expected values by hand: ALBERT 30000 x 128 = 3,840,000, 512 x 128 = 65,536,
2 x 128 = 256; ELECTRA-small 30522 x 128 = 3,906,816, 65,536, 256. The
checkpoint side is checked against transformers' own ALBERT and ELECTRA
objects in tests/test_families.py.
"""

import pytest

import embedlab
from embedlab.sources import hf

ALBERT = {"model_type": "albert", "vocab_size": 30000, "embedding_size": 128, "hidden_size": 768,
          "max_position_embeddings": 512, "type_vocab_size": 2}
ELECTRA = {"model_type": "electra", "vocab_size": 30522, "embedding_size": 128, "hidden_size": 256,
           "max_position_embeddings": 512, "type_vocab_size": 2}
CASES = [(ALBERT, (3_840_000, 65_536, 256)), (ELECTRA, (3_906_816, 65_536, 256))]


@pytest.fixture(params=["transformers", "by hand"])
def reader(request, monkeypatch):
    if request.param == "transformers":
        pytest.importorskip("transformers")
    else:
        monkeypatch.setattr(hf, "available", lambda: False)
        monkeypatch.setattr(hf, "family_ties", lambda model_type: None)
    return request.param


@pytest.mark.parametrize("config, tables", CASES, ids=["albert", "electra-small"])
def test_the_token_table_is_embedding_size_wide(config, tables, reader):
    b = embedlab.params(config=config).count.breakdown
    assert (b.D, (b.token, b.position, b.token_type)) == (128, tables)
