"""The first block's input, as each model family's own embedding module builds it (issue 10).

For each tiny checkpoint of ``families.FAMILIES`` (built with transformers in
the session fixture ``hf_families``), the model object is built again from
the saved folder with ``from_pretrained`` (offline) and its embedding module
run on a small batch of ids: ``model.embeddings(input_ids)`` for the BERT
family, ``wte(ids) + wpe(positions)`` for GPT-2, ``embed_tokens`` (Gemma's
scales itself), BLOOM's ``word_embeddings`` then ``word_embeddings_layernorm``,
T5's ``shared``. embedlab's ``compose`` of the same ids, with the input rule it
reads for that checkpoint, must give the very same vectors (float32).

Where the family puts a step after that module and before the first block
(ALBERT's ``embedding_hidden_mapping_in``, ELECTRA's ``embeddings_project``,
OPT's ``project_in`` with its positions added after it), that step is run
too, by the model's own modules: the truth is what the first block reads.
"""

from __future__ import annotations

import numpy as np
import pytest

from families import FAMILIES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from embedlab import sources  # noqa: E402
from embedlab.measure.encode import compose  # noqa: E402

pytestmark = pytest.mark.torch

NAMES = [f.name for f in FAMILIES]
IDS = [[5, 17, 999, 3, 250], [40, 41, 42, 7, 5]]  # (B, T) = (2, 5): no family's pad id (0, 1), token 5 twice
# the step each factorised family takes after its embedding module, as transformers names the module
PROJECTED = {"albert": "encoder.embedding_hidden_mapping_in", "electra": "embeddings_project",
            "opt": "decoder.project_in"}


def _model(truth):
    """The base model (no head) built again from the saved folder, as transformers loads it."""
    transformers.utils.logging.set_verbosity_error()  # the load report lists the head's keys it does not use
    return transformers.AutoModel.from_pretrained(truth.path, local_files_only=True).eval()


def _family_input(name, model, ids):
    """What the first block reads for ids (B, T), built by the family's own modules: (B, T, D) float32."""
    if name == "albert":
        return model.encoder.embedding_hidden_mapping_in(model.embeddings(input_ids=ids))  # E -> D after the LN
    if name == "electra":
        return model.embeddings_project(model.embeddings(input_ids=ids))  # E -> D after the LN
    if name in ("bert", "roberta", "distilbert", "deberta-v2"):
        return model.embeddings(input_ids=ids)  # token + position + type, LayerNorm (dropout off in eval)
    if name == "gpt2":
        return model.wte(ids) + model.wpe(torch.arange(ids.shape[1])[None, :])  # (B, T, D)
    if name == "opt":  # OPTDecoder.forward: project_in(embed_tokens(ids)) + embed_positions(attention_mask)
        decoder = model.decoder
        return decoder.project_in(decoder.embed_tokens(ids)) + decoder.embed_positions(torch.ones_like(ids))
    if name == "bloom":
        return model.word_embeddings_layernorm(model.word_embeddings(ids))  # (B, T, D)
    if name == "t5":
        return model.shared(ids)  # (B, T, D)
    if name == "gpt_neox":
        return model.embed_in(ids)  # (B, T, D)
    return model.embed_tokens(ids)  # (B, T, D): Llama, Mistral, Qwen2, Phi-3; Gemma's module scales by sqrt(D)


@pytest.mark.parametrize("name", NAMES)
def test_compose_gives_the_vectors_of_the_familys_embedding_module(hf_families, name):
    truth = hf_families[name]
    model = _model(truth)
    ids = torch.tensor(IDS)
    with torch.no_grad():
        expected = _family_input(name, model, ids).numpy()  # (B, T, E)
    table = sources.load(str(truth.path))
    got = compose(table, np.array(IDS), rule=sources.read_input_rule(table))  # (B, T, E)
    assert got.dtype == np.float32
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_roberta_padding_reads_the_padding_row_as_transformers(hf_families):
    """RoBERTa counts positions past padding_idx and gives padding slots row padding_idx."""
    truth = hf_families["roberta"]
    model = _model(truth)
    pad = model.config.pad_token_id
    ids = [[5, 17, 999, pad, pad], [40, 41, 42, 7, 5]]  # (B, T) the first text padded
    with torch.no_grad():
        expected = model.embeddings(input_ids=torch.tensor(ids)).numpy()  # (B, T, D)
    table = sources.load(str(truth.path))
    got = compose(table, np.array(ids), rule=sources.read_input_rule(table), padding=np.array(ids) == pad)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PROJECTED))
def test_a_projection_after_the_embedding_module_is_applied_and_named(hf_families, name):
    """ALBERT, ELECTRA and OPT widen E to D after the embedding module; embedlab applies that Linear."""
    truth = hf_families[name]
    model = _model(truth)
    module = model.get_submodule(PROJECTED[name])
    E, D = truth.token.shape[1], model.config.hidden_size
    assert (module.in_features, module.out_features) == (E, D)  # the step exists, as transformers builds it
    table = sources.load(str(truth.path))
    rule = sources.read_input_rule(table)
    assert rule.projection is not None and rule.projection.name == PROJECTED[name]
    np.testing.assert_array_equal(rule.projection.weight, module.weight.detach().numpy())  # (D, E)
    got = compose(table, np.array(IDS), rule=rule)
    assert got.shape == (2, 5, D)
    notes = " ".join(rule.notes)
    assert f"projected: {PROJECTED[name]}" in notes and f"E={E}" in notes and f"D={D}" in notes


def test_a_checkpoint_without_the_projection_stops_at_E_and_says_so(hf_families, tmp_path):
    """The same ALBERT folder with the Linear's tensors removed: the E-wide output, and a note naming the step."""
    from safetensors.numpy import load_file, save_file
    import shutil

    truth = hf_families["albert"]
    folder = tmp_path / "albert"
    shutil.copytree(truth.path, folder)
    weights = {k: v for k, v in load_file(folder / "model.safetensors").items() if "embedding_hidden_mapping_in" not in k}
    save_file(weights, folder / "model.safetensors")
    table = sources.load(str(folder))
    rule = sources.read_input_rule(table)
    assert rule.projection is None
    assert compose(table, np.array(IDS), rule=rule).shape == (2, 5, truth.token.shape[1])
    assert "left out: encoder.embedding_hidden_mapping_in" in " ".join(rule.notes)
