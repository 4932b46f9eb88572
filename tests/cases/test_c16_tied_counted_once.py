"""C16: tied parameters counted twice, or subtracted twice.

V = 5, D = 3: the table is 15 parameters; one 3 x 3 bias-free layer is 9.
Tied: 15 + 9 = 24. Untied: 15 + 15 + 9 = 39. Tied without the embedding:
24 - 15 = 9 (subtracting the shared table twice gives -6; not at all, 24).
At V = 32000, D = 288 (llama2.c's stories15M) one table is 9,216,000.
"""

from __future__ import annotations

import os

import pytest

from embedlab.measure import model_params, params
from safetensors_writer import f32, write_config, write_safetensors

TABLE = f32(*range(15))
LAYER = ("F32", (3, 3), f32(*range(9)))


def test_from_numbers():
    tied = params.from_numbers(5, 3, other=9).breakdown
    untied = params.from_numbers(5, 3, other=9, tied=False).breakdown
    assert (tied.total, untied.total) == (24, 39)
    assert tied.non_embedding == 9
    assert untied.non_embedding == 24   # a separate head is a layer of its own


def test_retying_never_subtracts_twice():
    tied = params.from_numbers(5, 3, other=9).breakdown
    untied = params.from_numbers(5, 3, other=9, tied=False).breakdown
    assert tied.with_tied(True).total == untied.with_tied(True).total == 24
    assert tied.with_tied(False).total == untied.with_tied(False).total == 39
    grown = params.growth(tied, growth_factor=1)
    assert (grown.tied_now.total, grown.untied_now.total, grown.saved) == (24, 39, 15)
    assert grown.tied_now.non_embedding == 9


@pytest.mark.parametrize("head, config, total, non_embedding", [
    (None, {}, 24, 9),                      # no head key, config ties (by default)
    (TABLE, {}, 24, 9),                     # head stored twice with the same bytes: counted once
    (f32(*range(1, 16)), {"tie_word_embeddings": False}, 39, 24),   # a different head
])
def test_from_a_file(tmp_path, head, config, total, non_embedding):
    tensors = {"wte.weight": ("F32", (5, 3), TABLE), "layer.weight": LAYER}
    if head is not None:
        tensors["lm_head.weight"] = ("F32", (5, 3), head)
    write_safetensors(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, vocab_size=5, n_embd=3, **config)
    b = model_params.from_checkpoint(tmp_path).breakdown
    assert (b.total, b.non_embedding) == (total, non_embedding)


def test_stories15m_sized_file_storing_both_keys_counts_one_table(tmp_path):
    table = os.urandom(32000 * 288 * 4)
    write_safetensors(tmp_path / "model.safetensors", {"tok_embeddings.weight": ("F32", (32000, 288), table),
                                                       "output.weight": ("F32", (32000, 288), table)})
    count = model_params.from_checkpoint(tmp_path)
    assert count.stored_twice is True
    assert count.breakdown.token == 9_216_000
    assert count.breakdown.tables == 9_216_000          # not 18,432,000
    assert count.breakdown.total == 9_216_000
