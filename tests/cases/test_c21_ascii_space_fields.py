"""C21: word-vector text split on every Unicode space, not the format's ASCII space.

GloVe and word2vec text separate a word from its values by the ASCII space
alone; U+00A0 and U+3000 are characters of a token. The expected values are
the case's own; gensim's ``load_word2vec_format`` (the field's reader) is the
oracle where it is installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from embedlab import sources  # noqa: E402

NBSP, IDEOGRAPHIC = "\u00a0", "\u3000"
DOTS = f".{NBSP}.{NBSP}."


@pytest.mark.parametrize("token", [DOTS, f"new{IDEOGRAPHIC}york"])
def test_a_token_holding_a_unicode_space_loads_whole(tmp_path, token):
    path = tmp_path / "glove.txt"
    path.write_text(f"the 0.1 0.2\n{token} 0.3 0.4\ncat 0.5 0.6\n", encoding="utf-8")
    table = sources.load(str(path))
    assert (table.V, table.D) == (3, 2)
    assert table.vocabulary.index_to_token == ("the", token, "cat")
    assert table.token_id(token) == 1
    assert table.W_E[1].tolist() == pytest.approx([0.3, 0.4])


def test_a_first_line_is_a_header_only_when_it_is_exactly_two_integers(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text(f"{NBSP} 1 2\ncat 3 4\n", encoding="utf-8")
    table = sources.load(str(path))
    assert table.V == 2 and table.vocabulary.index_to_token == (NBSP, "cat")
    assert table.W_E.tolist() == [[1, 2], [3, 4]]


# gensim 4.4 leaves the file it reopens for a headerless file unclosed (keyedvectors.py,
# _load_word2vec_format, no_header=True): its ResourceWarning is gensim's, not ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("header", [True, False])
def test_gensim_reads_the_same_tokens_and_rows(tmp_path, header):
    gensim = pytest.importorskip("gensim")
    lines = ["the 0.1 0.2", f"{DOTS} 0.3 0.4", f"new{IDEOGRAPHIC}york -1.5 2e-3", f"{NBSP} 7 8", "cat 0.5 0.6"]
    path = tmp_path / "vectors.txt"
    path.write_text(("5 2\n" if header else "") + "\n".join(lines) + "\n", encoding="utf-8")
    oracle = gensim.models.KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=not header)
    table = sources.load(str(path))
    assert list(table.vocabulary.index_to_token) == oracle.index_to_key
    assert table.W_E.tolist() == oracle.vectors.tolist()
