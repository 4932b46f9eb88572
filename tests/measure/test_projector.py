"""The projector's measurement: rows chosen, coordinates, and neighbour lists over the whole table.

Expected lists come from an independent full sort: every score computed with
math.fsum, the query left out, ordered by (-score, id); never from embedlab's search.
"""

import json
import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

import embedlab  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402
from embedlab.errors import ChoiceError, SizeError, UnknownTokenError  # noqa: E402
from embedlab.measure import projector  # noqa: E402

# Tokens a page must carry unchanged: markup, quotes, CJK, Hangul, right-to-left, emoji.
TRICKY = ["</script>", "<!--", 'say "hi"', "it's", "王", "春", "한국어", "مرحبا", "😀", "a&b", "<b>x</b>"]
V, D = 80, 6


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(11)
    W = rng.normal(size=(V, D))  # (V, D)
    W[21] = W[20]  # an exact tie: equal rows, equal scores, the smaller id first
    W[22] = 4 * W[20]  # the same direction, exactly 4 times longer: ties 21 by cosine, beats it by dot
    words = TRICKY + [f"w{i}" for i in range(len(TRICKY), V)]
    return EmbeddingTable(W, vocabulary=words)


def full_sort(W, q, k, metric):
    """The k best ids of row q over all rows but q, by (-score, id): scores by math.fsum."""
    def dot(a, b):
        return math.fsum(float(x) * float(y) for x, y in zip(a, b))

    norms = [math.sqrt(dot(w, w)) for w in W]
    scores = []
    for j, w in enumerate(W):
        if j == q:
            continue
        s = dot(W[q], w)
        if metric == "cosine":
            s = min(1.0, max(-1.0, s / (norms[q] * norms[j]))) if norms[q] and norms[j] else 0.0
        scores.append((-s, j))
    return [j for _, j in sorted(scores)[:k]]


def test_sample_holds_the_probe_its_neighbours_and_random_rows(table):
    r = projector.measure_projector(table, probe=20, sample=30, k=5, seed=3, keep_degenerate=True)
    ids = r.ids.tolist()
    assert len(ids) == 30 == len(set(ids)) and ids[0] == 20 and r.groups[0] == "probe"
    cos, dot = full_sort(table.W_E, 20, 5, "cosine"), full_sort(table.W_E, 20, 5, "dot")
    assert set(cos) | set(dot) <= set(ids)
    assert r.groups.count("sample") == 30 - len({20, *cos, *dot})
    assert r.points.shape == (30, 2) and r.points.dtype == np.float64


def test_the_same_seed_draws_the_same_rows_and_another_seed_others(table):
    a = projector.measure_projector(table, probe=20, sample=40, k=5, seed=3)
    b = projector.measure_projector(table, probe=20, sample=40, k=5, seed=3)
    c = projector.measure_projector(table, probe=20, sample=40, k=5, seed=4)
    assert a.ids.tolist() == b.ids.tolist() and np.array_equal(a.points, b.points)
    assert a.ids.tolist() != c.ids.tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_every_rows_lists_equal_a_full_sort_over_the_whole_table(table, metric):
    r = projector.measure_projector(table, probe=20, sample=24, k=7, seed=0)
    for i, q in enumerate(r.ids.tolist()):
        assert r.neighbor_ids[metric][i].tolist() == full_sort(table.W_E, q, 7, metric), q
    row = r.ids.tolist().index(20)
    if metric == "cosine":  # 21 (equal row) and 22 (same direction) tie at cosine 1: the smaller id first
        assert r.neighbor_ids["cosine"][row][:2].tolist() == [21, 22]
    else:
        assert r.neighbor_ids["dot"][row][0] == 22


def test_lists_reach_beyond_the_sample_and_name_every_listed_token(table):
    r = projector.measure_projector(table, tokens=["王", "春", "w30"], probe=None, k=10)
    listed = set(np.concatenate([a.ravel() for a in r.neighbor_ids.values()]).tolist())
    assert not listed <= set(r.ids.tolist())  # the lists are over all V rows, not the 3 projected
    for token_id in listed | set(r.ids.tolist()):
        assert r.token_of(token_id) == table.token(token_id)
    norms = dict(zip(r.named_ids.tolist(), r.norms.tolist()))
    assert all(norms[i] == pytest.approx(float(np.linalg.norm(table.W_E[i]))) for i in listed)


def test_tokens_keep_their_order_and_the_probe_comes_first(table):
    r = projector.measure_projector(table, tokens=["春", "</script>", "w30"], probe=4, k=3)
    assert r.ids.tolist() == [4, 5, 0, 30]
    assert r.groups == ("probe", "chosen", "chosen", "chosen")
    r = projector.measure_projector(table, tokens=["王", "春", "w30"], probe=4, k=3)
    assert r.ids.tolist() == [4, 5, 30] and r.groups[0] == "probe"


def test_three_dims(table):
    r = projector.measure_projector(table, probe=20, sample=25, k=3, dims=3, keep_degenerate=True)
    assert r.points.shape == (25, 3) and r.dims == 3


def test_a_zero_padding_row_is_left_out_of_the_points_named_and_still_listed():
    """OPT's all-zero padding row wrecked the picture: it is left out of the points (and the fit), a note names
    it, the lists stay a full sort over every row (it included), and keep_degenerate keeps it."""
    rng = np.random.default_rng(8)
    W = rng.normal(size=(60, 5))  # (V, D)
    W[:, 0] = np.abs(W[:, 0]) + 0.1
    W[10] = [-1.0, 0.0, 0.0, 0.0, 0.0]  # its dot with every other row is below 0: the zero row's 0 comes first
    W[1] = 0.0
    t = EmbeddingTable(W, vocabulary=["<s>", "<pad>"] + [f"w{i}" for i in range(2, 60)])
    r = projector.measure_projector(t, probe=10, sample=60, k=5)
    assert r.ids.tolist()[0] == 10 and 1 not in r.ids.tolist() and len(r.ids) == 59 == len(r.points)
    assert r.degenerate.zero == (1,) and not r.kept_degenerate
    assert r.notes[-1].startswith("1 degenerate row left out of the PCA fit and the picture")
    assert "id 1 '<pad>' (all zeros)" in r.notes[-1]
    listed = set()
    for i, q in enumerate(r.ids.tolist()):
        assert r.neighbor_ids["dot"][i].tolist() == full_sort(W, q, 5, "dot")
        listed |= set(r.neighbor_ids["dot"][i].tolist())
    assert 1 in listed and r.token_of(1) == "<pad>"  # listed, though not drawn
    d = json.loads(json.dumps(r.to_dict()))
    assert d["degenerate"] == {"zero": [1], "copies": [], "long": [], "limit": r.degenerate.limit, "kept": False}
    kept = projector.measure_projector(t, probe=10, sample=60, k=5, keep_degenerate=True)
    assert len(kept.ids) == 60 and 1 in kept.ids.tolist() and kept.kept_degenerate
    assert kept.notes[-1].startswith("1 degenerate row kept in the PCA fit")


def test_to_dict_is_plain_json_with_every_token_unchanged(table):
    r = projector.measure_projector(table, tokens=TRICKY, probe=None, k=2)
    d = json.loads(json.dumps(r.to_dict(), ensure_ascii=False))
    assert [row["token"] for row in d["rows"]] == TRICKY
    assert d["rows"][0]["neighbors"]["dot"][0]["id"] == full_sort(table.W_E, 0, 2, "dot")[0]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"sample": 0}, SizeError, "sample=0 points: expected an int from 7"),
    ({"sample": V + 1}, SizeError, f"to V = {V}"),
    ({"sample": 5}, SizeError, "from 7 .the probe"),
    ({"sample": 10, "method": "lle"}, ChoiceError, "unknown projection method 'lle'"),
    ({"sample": 10, "dims": 4}, ChoiceError, "dims=4: a projection has 2 or 3"),
    ({"sample": 10, "k": V}, SizeError, "k=80 is out of range"),
    ({"tokens": ["w30", "nope"]}, UnknownTokenError, "'nope' is not in the vocabulary"),
    ({"tokens": ["w30", "id:30", "w31"]}, ValueError, "'w30' and 'id:30' name the same row .id 30."),
    ({"tokens": ["w30"], "sample": 10}, TypeError, "exactly one of tokens"),
])
def test_bad_input_is_refused_with_what_was_expected(table, kwargs, error, match):
    kwargs = {"probe": 20, "k": 3, **kwargs}
    with pytest.raises(error, match=match) as exc:
        projector.measure_projector(table, **kwargs)
    if error is SizeError and "sample" in kwargs and kwargs.get("k") == 3:
        assert exc.value.parameter == "sample"
    if error is UnknownTokenError:
        assert exc.value.parameter == "tokens"


def test_api_defaults_shrink_to_a_small_table_and_say_so():
    r = embedlab.projector([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.2]], probe=0)
    assert r.k == 3 and len(r.ids) == 4
    assert r.notes == ("k = 3: the default 10 shrunk to V - 1", "sample = 4: the default 2000 shrunk to V")


def test_api_refuses_tokens_and_sample_together(table):
    with pytest.raises(TypeError, match="not both"):
        embedlab.projector(table, tokens=["w30"], sample=10)


def test_the_table_is_not_changed(table):
    before = table.W_E.copy()
    embedlab.projector(table, probe="王", sample=20, k=3)
    assert np.array_equal(table.W_E, before)


def test_public_names():
    assert {"projector", "export"} <= set(dir(embedlab)) and {"projector", "export"} <= set(embedlab.__all__)
    assert "``projector``" in embedlab.__doc__ and "``export``" in embedlab.__doc__
