"""The lab measurement on the seed table and on hand-made tables.

Expected values come from NumPy computations written here (a second
implementation of each experiment), from hand arithmetic, or from the other
backend (the differential test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from embedlab import embed
from embedlab.measure import lab
from embedlab.engine.table import EmbeddingTable

SEED_ROWS = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)


def _rank(scores: np.ndarray, exclude: int, k: int) -> list[int]:
    """Ids by descending score, ties by smaller id, one id left out: via a stable sort."""
    s = scores.astype(np.float64).copy()
    s[exclude] = -np.inf
    return np.argsort(-s, kind="stable")[:k].tolist()


def _cosines(W: np.ndarray, q: int) -> np.ndarray:
    n = np.linalg.norm(W, axis=1)
    return (W @ W[q]) / (n * n[q])


@pytest.fixture(scope="module")
def seed_result() -> lab.LabResult:
    return lab.measure(lab.ReferenceBackend(SEED_ROWS), lab.LabSettings(), seed=embed.SEED)


def test_seed_counts_by_hand(seed_result):
    r = seed_result
    assert (r.vocab, r.dim, r.seed, r.probe, r.table_shape) == (512, 64, 20260917, 137, [512, 64])
    assert (r.params, r.tied_params, r.untied_params, r.saved) == (32768, 32768, 65536, 32768)
    assert (r.bigger_vocab, r.bigger_tied, r.bigger_untied) == (1024, 65536, 131072)
    assert (r.lookup_mults, r.one_hot_mults) == (0, 512 * 64)
    assert r.max_abs_diff == 0.0 and r.repeat_same is True
    assert r.logit_len == 512


def test_seed_neighbours_match_numpy(seed_result):
    W = np.array(SEED_ROWS)
    r = seed_result
    assert r.cos_neighbors == _rank(_cosines(W, 137), 137, 5)
    assert r.dot_neighbors == _rank(W @ W[137], 137, 5)
    assert r.neighbors_differ == (r.cos_neighbors != r.dot_neighbors)
    assert r.stretch_target == r.cos_neighbors[4]
    stretched = W.copy()
    stretched[r.stretch_target] *= 4.0
    assert r.cos_after_stretch == _rank(_cosines(stretched, 137), 137, 5)
    assert r.dot_after_stretch == _rank(stretched @ stretched[137], 137, 5)
    assert r.dot_after_stretch[0] == r.stretch_target  # four times longer: first by dot product


def test_seed_logits_and_scale_match_numpy(seed_result):
    W = np.array(SEED_ROWS)
    r = seed_result
    assert r.logit_argmax == int(np.argmax(W @ W[137]))  # argmax returns the first (smaller) id
    assert r.logit_argmax_is_self == (r.logit_argmax == 137)
    assert r.rms_plain == pytest.approx(np.sqrt(np.mean(W[137] ** 2)), rel=1e-12)
    assert r.rms_scaled == pytest.approx(8 * np.sqrt(np.mean(W[137] ** 2)), rel=1e-12)
    assert r.rms_ratio == pytest.approx(8.0, rel=1e-12)
    assert r.cos_unchanged_by_scale is True


def test_array_backend_agrees_with_reference_backend(seed_result):
    other = lab.measure(lab.ArrayBackend(EmbeddingTable.from_rows(SEED_ROWS)), lab.LabSettings(), seed=embed.SEED)
    for name in lab.REPORT_KEYS:
        mine, ref = getattr(other, name), getattr(seed_result, name)
        if isinstance(ref, float):
            assert mine == pytest.approx(ref, rel=1e-9, abs=1e-12), name
        else:
            assert mine == ref, name


def test_argmax_is_not_self_when_a_longer_row_points_the_same_way():
    # probe 0 = [1, 0]: logits [1, 3, 0]; the longer row 1 wins.
    result = lab.measure(lab.ReferenceBackend([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.5, 0.5]]),
                         lab.LabSettings(probe=0, k=2, stretch_rank=1))
    assert result.logit_argmax == 1
    assert result.logit_argmax_is_self is False
    # cosines from 0: row 1 -> 1, row 3 -> 0.707, row 2 -> 0; dots: 3, 0.5, 0
    assert result.cos_neighbors == [1, 3]
    assert result.dot_neighbors == [1, 3]
    assert result.stretch_target == 3


def test_tokens_carried_for_a_table_with_vocabulary():
    table = EmbeddingTable(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.5, 0.5]]),
                           vocabulary=["a", "b", "c", "d"])
    result = lab.measure(lab.ArrayBackend(table), lab.LabSettings(probe=0, k=2, stretch_rank=1),
                         source=table.provenance.to_dict())
    assert result.tokens["probe_token"] == "a"
    assert result.tokens["cos_neighbors_tokens"] == ["b", "d"]  # cos 0.994, 0.707
    assert result.source["source"] == "array"


def test_bad_settings():
    backend = lab.ReferenceBackend([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="stretch rank 2"):
        lab.LabSettings(probe=0, k=2, stretch_rank=2)
    with pytest.raises(IndexError, match="token id 3"):
        lab.measure(backend, lab.LabSettings(probe=3, k=1))
    with pytest.raises(ValueError, match="k=3"):
        lab.measure(backend, lab.LabSettings(probe=0, k=3))
    for bad in ({"k": 0}, {"k": -1}, {"stretch_factor": math.nan}, {"stretch_factor": math.inf},
                {"stretch_factor": 0.0}, {"stretch_factor": -2.0}, {"growth_factor": 0}, {"growth_factor": 1.5}):
        with pytest.raises(ValueError, match=str(list(bad.values())[0])):
            lab.LabSettings(**bad)


def test_stretch_rank_follows_a_small_k():
    assert lab.LabSettings().rank == 4
    assert lab.LabSettings(k=3).rank == 2
    assert lab.LabSettings(k=1).rank == 0
    assert lab.LabSettings(k=10, stretch_rank=7).rank == 7
    rows = [[1.0, 0.0], [0.9, 0.1], [0.5, 0.5], [0.0, 1.0]]
    result = lab.measure(lab.ReferenceBackend(rows), lab.LabSettings(probe=0, k=2))
    assert result.stretch_target == result.cos_neighbors[1]


def test_report_keys_are_the_issues_list():
    assert lab.REPORT_KEYS == (
        "vocab", "dim", "seed", "probe", "table_shape", "params", "tied_params", "untied_params", "saved",
        "bigger_vocab", "bigger_tied", "bigger_untied", "lookup_mults", "one_hot_mults", "max_abs_diff",
        "repeat_same", "logit_len", "logit_argmax", "logit_argmax_is_self", "cos_neighbors", "dot_neighbors",
        "neighbors_differ", "stretch_target", "stretch_factor", "cos_after_stretch", "dot_after_stretch",
        "cos_unchanged_by_scale", "rms_plain", "rms_scaled", "rms_ratio",
    )


def test_rounding_bound_is_tight_enough_to_catch_a_turned_vector():
    # Scaling one vector's first element only changes its direction: must not pass as "unchanged".
    rows = [[1.0, 2.0, 3.0], [2.0, 1.0, 0.5], [0.0, 1.0, 1.0]]
    backend = lab.ReferenceBackend(rows)
    assert 4 * backend.D * backend.eps < 1e-12
    before = embed.cosine(rows[0], rows[1])
    turned = embed.cosine([rows[0][0] * math.sqrt(3), rows[0][1], rows[0][2]], rows[1])
    assert abs(before - turned) > 4 * backend.D * backend.eps


# -- measure takes tables as users hold them; the result carries what the figures draw ----------

def test_measure_takes_an_embedding_table_and_a_list_table():
    rows = embed.make_table(40, 6, 3)
    settings = lab.LabSettings(probe=7, k=4)
    from_list = lab.measure(rows, settings)
    from_table = lab.measure(EmbeddingTable.from_rows(rows), settings)
    W = np.array(rows)
    assert from_list.cos_neighbors == from_table.cos_neighbors == _rank(_cosines(W, 7), 7, 4)
    assert from_list.dot_neighbors == from_table.dot_neighbors == _rank(W @ W[7], 7, 4)
    assert from_table.source == EmbeddingTable.from_rows(rows).provenance.to_dict()
    with pytest.raises(TypeError, match="got dict"):
        lab.measure({"not": "a table"}, settings)


def test_the_result_carries_scores_and_norms_of_every_listed_row():
    rows = embed.make_table(30, 5, 9)
    W = np.array(rows)
    result = lab.measure(EmbeddingTable.from_rows(rows), lab.LabSettings(probe=2, k=5, stretch_factor=3.0))
    cos, dot = result.stretch.cos_before, result.stretch.dot_before
    assert cos.ids == result.cos_neighbors and dot.ids == result.dot_neighbors
    assert np.allclose(cos.scores, _cosines(W, 2)[cos.ids], rtol=1e-12)
    assert np.allclose(dot.scores, (W @ W[2])[dot.ids], rtol=1e-12)
    assert np.allclose(cos.norms, np.linalg.norm(W, axis=1)[cos.ids], rtol=1e-12)
    stretched = W.copy()
    stretched[result.stretch_target] *= 3.0
    assert result.stretch.dot_after.ids == _rank(stretched @ stretched[2], 2, 5) == result.dot_after_stretch
    # the scale experiment covers every listed row, and its rms are the probe's
    assert result.scale.ids == list(dict.fromkeys(result.cos_neighbors + result.dot_neighbors))
    assert math.isclose(result.scale.rms_before, float(np.sqrt(np.mean(W[2] ** 2))), rel_tol=1e-12)
    assert np.allclose(result.scale.norms_after, np.sqrt(5) * np.linalg.norm(W[result.scale.ids], axis=1))


def test_the_json_keys_are_the_lab_contract_and_nothing_the_figures_need():
    result = lab.measure(embed.make_table(20, 4, 1), lab.LabSettings(probe=1, k=3))
    contract = ("vocab dim seed probe table_shape params tied_params untied_params saved bigger_vocab bigger_tied "
                "bigger_untied lookup_mults one_hot_mults max_abs_diff repeat_same logit_len logit_argmax "
                "logit_argmax_is_self cos_neighbors dot_neighbors neighbors_differ stretch_target stretch_factor "
                "cos_after_stretch dot_after_stretch cos_unchanged_by_scale rms_plain rms_scaled rms_ratio").split()
    assert list(result.to_dict()) == contract
    result.to_dict()["cos_neighbors"].append(99)
    assert 99 not in result.cos_neighbors  # to_dict hands out copies


def test_views_are_measured_only_when_asked():
    pytest.importorskip("sklearn")
    rows = embed.make_table(60, 4, 2)
    assert lab.measure(rows, lab.LabSettings(probe=5)).views is None
    views = lab.measure(rows, lab.LabSettings(probe=5), figures=True).views
    lengths = np.linalg.norm(np.array(rows), axis=1)
    assert views.norms.longest_ids == np.lexsort((np.arange(60), -lengths))[:10].tolist()
    assert views.projection.ids[0] == 5 and views.left_out == {}


def test_the_seed_tables_figures_name_it_seed():
    # Its figures' titles read "the seed table", not the in-memory kind the backend holds ("array").
    pytest.importorskip("sklearn")
    result = lab.measure(embed.make_table(40, 4, embed.SEED), lab.LabSettings(probe=3), seed=embed.SEED, figures=True)
    assert result.views.norms.table == result.views.projection.table == "seed"
    rows = lab.measure(embed.make_table(40, 4, 1), lab.LabSettings(probe=3), figures=True)  # a list of rows: no name
    assert rows.views.norms.table == "array"


def test_the_old_engine_names_still_answer_with_a_warning():
    # measure/engines.py became measure/backends.py: "engine" names the package embedlab.engine.
    with pytest.deprecated_call(match="ReferenceEngine is now .*ReferenceBackend"):
        assert lab.ReferenceEngine is lab.ReferenceBackend
    with pytest.deprecated_call(match="as_backend"):
        assert lab.as_engine is lab.as_backend
    with pytest.raises(AttributeError, match="no attribute 'NoSuchEngine'"):
        lab.NoSuchEngine
