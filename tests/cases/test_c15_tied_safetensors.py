"""C15: tied weights through safetensors: shared storage, a missing head key, a different head.

The files are written byte by byte by the test (8-byte little-endian header
length, JSON header, raw F32 data), never by the safetensors library. Each
verdict is checked where a user meets it: ``model_params.from_checkpoint``,
``sources.load`` and ``embedlab params``.
"""

from __future__ import annotations

import importlib.util

import pytest

from embedlab.measure import model_params
from embedlab.cli import main
from embedlab.errors import TyingConflictError
from safetensors_writer import f32, write_config, write_index, write_safetensors

TABLE = f32(1, 2, 3, 4, 5, 6)          # wte.weight, 3 x 2
OTHER_HEAD = f32(1, 2, 3, 4, 5, 7)     # one value differs
HAS_SOURCES = all(importlib.util.find_spec(m) is not None for m in ("numpy", "safetensors"))


def _folder(tmp_path, head=None, **config):
    tensors = {"wte.weight": ("F32", (3, 2), TABLE)}
    if head is not None:
        tensors["lm_head.weight"] = ("F32", (3, 2), head)
    write_safetensors(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, vocab_size=3, n_embd=2, **config)
    return tmp_path


def _loaded(folder):
    if not HAS_SOURCES:
        pytest.skip("sources need numpy and safetensors")
    from embedlab import sources

    return sources.load(str(folder)).provenance


@pytest.mark.parametrize("config", [{"tie_word_embeddings": True}, {}])
def test_a_no_head_key_and_a_config_that_ties_is_tied(tmp_path, config):
    folder = _folder(tmp_path, **config)
    count = model_params.from_checkpoint(folder)
    assert (count.breakdown.tied, count.stored_twice, count.conflict) == (True, False, None)
    assert (count.breakdown.token, count.breakdown.head, count.breakdown.total) == (6, 0, 6)
    assert _loaded(folder).tied is True


def test_b_head_equal_to_the_table_is_stored_twice_and_counted_once(tmp_path):
    folder = _folder(tmp_path, head=TABLE)
    count = model_params.from_checkpoint(folder)
    assert (count.breakdown.tied, count.stored_twice, count.conflict) == (True, True, None)
    assert "stored twice, tied in meaning" in count.tie_evidence
    assert (count.breakdown.head, count.breakdown.total) == (0, 6)   # not 12
    assert count.stored_bytes == 2 * 6 * 4                           # the file does hold it twice
    assert _loaded(folder).tied is True


def test_b_equal_head_with_a_config_saying_untied_is_a_reported_conflict(tmp_path):
    count = model_params.from_checkpoint(_folder(tmp_path, head=TABLE, tie_word_embeddings=False))
    assert count.stored_twice is True
    assert "config says untied" in count.conflict


def test_c_different_head_is_untied_and_counted(tmp_path):
    count = model_params.from_checkpoint(_folder(tmp_path, head=OTHER_HEAD, tie_word_embeddings=False))
    assert (count.breakdown.tied, count.breakdown.head, count.breakdown.total, count.conflict) == (False, 6, 12, None)


def test_c_different_head_with_a_config_that_ties_is_a_conflict_never_resolved(tmp_path, capsys):
    folder = _folder(tmp_path, head=OTHER_HEAD, tie_word_embeddings=True)
    count = model_params.from_checkpoint(folder)
    assert count.breakdown.tied is False and count.breakdown.head == 6    # the file's head is counted
    assert "config says tied" in count.conflict and "lm_head.weight" in count.conflict
    assert main(["params", "--model", str(folder)]) == 0
    assert "CONFLICT" in capsys.readouterr().out
    assert "CONFLICT" in _loaded(folder).tie_evidence


def test_d_no_head_and_a_config_saying_untied_names_lm_head(tmp_path, capsys):
    folder = _folder(tmp_path, tie_word_embeddings=False)
    with pytest.raises(TyingConflictError, match=r"lm_head\.weight"):
        model_params.from_checkpoint(folder)
    assert main(["params", "--model", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lm_head.weight" in err
    if HAS_SOURCES:
        from embedlab import sources

        with pytest.raises(TyingConflictError, match=r"lm_head\.weight"):
            sources.load(str(folder))   # never a silently random head


@pytest.mark.parametrize("head, tied, stored_twice", [(TABLE, True, True), (OTHER_HEAD, False, False)])
def test_sharded_checkpoints_give_the_same_verdicts(tmp_path, head, tied, stored_twice):
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"wte.weight": ("F32", (3, 2), TABLE)})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"lm_head.weight": ("F32", (3, 2), head)})
    write_index(tmp_path, {"wte.weight": "model-00001-of-00002.safetensors",
                           "lm_head.weight": "model-00002-of-00002.safetensors"})
    count = model_params.from_checkpoint(tmp_path)
    assert (count.breakdown.tied, count.stored_twice) == (tied, stored_twice)
    assert count.breakdown.total == (6 if tied else 12)
