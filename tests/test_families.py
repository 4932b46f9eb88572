"""Every model family read as its own library reads it (issue 10).

For each tiny checkpoint of ``families.FAMILIES`` (built with transformers in
the session fixture ``hf_families``), embedlab's counts, tables and tie
verdicts must equal what the transformers model object says: the token table
``get_input_embeddings()``, the tie (``get_output_embeddings().weight is`` that
table), the learned position module's rows, the token-type table, and the
total ``sum(p.numel() for p in model.parameters())``.
"""

from __future__ import annotations

import numpy as np
import pytest

import embedlab
from families import FAMILIES

pytestmark = pytest.mark.torch

NAMES = [f.name for f in FAMILIES]


def _expected(truth):
    """The breakdown the model object implies: (token, position, token_type, head, total, tied)."""
    V, E = truth.token.shape
    position = 0 if truth.positions is None else truth.positions.size
    return {"token": truth.token.size, "position": position, "token_type": truth.token_types * E,
            "head": 0 if truth.tied else truth.head_rows * E, "total": truth.total, "tied": truth.tied}


def _breakdown(count):
    b = count.breakdown
    return {"token": b.token, "position": b.position, "token_type": b.token_type, "head": b.head,
            "total": b.total, "tied": b.tied}


def test_the_fixture_holds_at_least_fifteen_families(hf_families):
    assert len({t.head_class for t in hf_families.values()}) >= 15


@pytest.mark.parametrize("name", NAMES)
def test_params_of_the_checkpoint_equal_the_model_objects(hf_families, name):
    truth = hf_families[name]
    count = embedlab.params(model=str(truth.path)).count
    assert _breakdown(count) == _expected(truth)
    assert count.conflict is None


@pytest.mark.parametrize("name", NAMES)
def test_params_of_the_config_alone_equal_the_model_objects(hf_families, name):
    truth = hf_families[name]
    count = embedlab.params(config=str(truth.path / "config.json")).count
    assert _breakdown(count) == _expected(truth)
    assert count.built == truth.head_class


@pytest.mark.parametrize("name", NAMES)
def test_load_reads_the_token_table_positions_and_tie_as_transformers(hf_families, name):
    truth = hf_families[name]
    table = embedlab.load(str(truth.path))
    np.testing.assert_array_equal(np.asarray(table.W_E), truth.token)
    assert table.provenance.tied is truth.tied
    if truth.positions is None:
        assert table.positions is None
    elif truth.positions.shape[1] != truth.token.shape[1]:
        # OPT with word_embed_proj_dim: positions join after project_in, in another width than the table's
        assert table.positions is None
        assert str(truth.positions.shape) in table.provenance.note
    else:
        np.testing.assert_array_equal(np.asarray(table.positions), truth.positions)


@pytest.mark.parametrize("name", ["bert", "albert"])
def test_growth_counts_the_output_bias_and_keeps_a_factorised_projection(hf_families, name):
    """At 2V, transformers' own model at 2V (the oracle) has every V-sized tensor doubled, the projection kept."""
    import transformers

    truth = hf_families[name]
    family = truth.family
    bigger = getattr(transformers, family.model_class)(
        getattr(transformers, family.config_class)(**{**family.settings, "vocab_size": 2 * truth.token.shape[0]}))
    g = embedlab.params(model=str(truth.path), growth_factor=2).growth
    assert g.tied_bigger.total == sum(p.numel() for p in bigger.parameters())
