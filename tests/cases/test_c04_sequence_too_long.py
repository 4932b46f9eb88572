"""C04: a sequence longer than the position table must fail before any lookup, naming T and T_max.

Case from cases.md: a learned table with T_max = 4, D = 2; T = 4 gives (4, 2),
T = 5 raises ValueError naming 5 and 4. Same for the sinusoidal module, the
composer with ids (1, 5), and the NumPy input pipeline (encode).
"""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")

NAMES_5_AND_4 = r"\b5\b.*\b4\b"


def _fail(*args, **kwargs):
    pytest.fail("a lookup ran before the length was checked")


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["learned", "sinusoidal"])
def test_position_modules(kind):
    nn = pytest.importorskip("embedlab.nn")
    module = nn.LearnedPositionalEmbedding(4, 2) if kind == "learned" else nn.SinusoidalPositionalEmbedding(4, 2)
    assert tuple(module(4).shape) == (4, 2)
    if kind == "learned":
        module.embedding.forward = _fail
    with pytest.raises(ValueError, match=NAMES_5_AND_4):
        module(5)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["learned", "sinusoidal"])
def test_composer_checks_length_before_token_lookup(kind):
    torch = pytest.importorskip("torch")
    nn = pytest.importorskip("embedlab.nn")
    pos = nn.LearnedPositionalEmbedding(4, 2) if kind == "learned" else nn.SinusoidalPositionalEmbedding(4, 2)
    tok = nn.TokenEmbedding(10, 2)
    composer = nn.EmbeddingComposer(tok, pos)
    assert tuple(composer(torch.zeros(1, 4, dtype=torch.long)).shape) == (1, 4, 2)
    tok.embedding.forward = _fail
    with pytest.raises(ValueError, match=NAMES_5_AND_4):
        composer(torch.zeros(1, 5, dtype=torch.long))


def test_numpy_compose():
    from embedlab.measure.encode import compose
    from embedlab.engine.table import EmbeddingTable

    table = EmbeddingTable(np.eye(10, 2), positions=np.ones((4, 2)))
    assert compose(table, np.zeros((1, 4), dtype=np.int64)).shape == (1, 4, 2)
    with pytest.raises(ValueError, match=NAMES_5_AND_4):
        compose(table, np.zeros((1, 5), dtype=np.int64))


def test_tokenize_names_both_lengths(word_tokenizer):
    from embedlab.measure.encode import tokenize

    # [CLS] a b c [SEP]: 5 tokens against a 4-row position table
    with pytest.raises(ValueError, match=NAMES_5_AND_4):
        tokenize(word_tokenizer, ["a b c"], max_length=4)
    cut = tokenize(word_tokenizer, ["a b c"], max_length=4, truncate=True)
    assert cut.lengths == [4] and cut.original_lengths == [5]
    assert cut.tokens[0][-1] == "[SEP]"  # truncation keeps the special tokens
