"""One measurement behind `positions` and `plot positions`, on the rows each family's own module reads (issue 23).

For each tiny checkpoint of ``families.FAMILIES`` with a learned position
table, the rows a full-length sequence of real tokens reads are asked of the
family's own module in transformers: RoBERTa's
``RobertaEmbeddings.create_position_ids_from_input_ids`` (positions from
``padding_idx + 1``), OPT's ``OPTLearnedPositionalEmbedding.forward`` (its
``offset`` of 2), ``arange`` for the others. `embedlab positions` and the
positions figure must both measure exactly those rows: the same T_max, the
same adjacent cosines, computed here in NumPy from the model's own weights.
A family without a position table (rotary) is drawn at the config's
``max_position_embeddings``, as transformers' config object holds it.
"""

from __future__ import annotations

import numpy as np
import pytest

from families import FAMILIES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import embedlab  # noqa: E402
from embedlab import cli, sources  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402
from embedlab.engine.input_rule import InputRule  # noqa: E402
from embedlab.errors import SourceError  # noqa: E402
from embedlab.measure.positions import DRAWN_POSITIONS, HEATMAP_POSITIONS, position_maps  # noqa: E402

pytestmark = pytest.mark.torch

LEARNED = [f.name for f in FAMILIES if f.positions is not None]
ROTARY = ["llama", "qwen2", "mistral", "gemma", "phi3", "gpt_neox"]


def _model(truth):
    transformers.utils.logging.set_verbosity_error()
    return transformers.AutoModel.from_pretrained(truth.path, local_files_only=True).eval()


def _rows_read(name, model, weight):
    """The rows of the position table a sequence as long as the model takes reads, by the family's own code."""
    n = weight.shape[0]
    if name == "roberta":
        emb = model.embeddings
        ids = torch.full((1, n), emb.padding_idx + 1)  # no padding token: every slot is a real token
        rows = emb.create_position_ids_from_input_ids(ids, emb.padding_idx)[0]
    elif name == "opt":
        positions = model.decoder.embed_positions
        rows = torch.cumsum(torch.ones(1, n, dtype=torch.long), dim=1)[0] - 1 + positions.offset
    else:
        rows = torch.arange(n)
    rows = rows[rows < n].numpy()  # the positions that fit the table: the longest sequence the model takes
    return rows


def _cosine(a, b):
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


@pytest.mark.parametrize("name", LEARNED)
def test_positions_and_the_figure_measure_the_rows_the_family_reads(hf_families, name):
    truth = hf_families[name]
    weight = truth.positions.astype(np.float64)  # (stored rows, width): the model object's own table
    rows = _rows_read(name, _model(truth), weight)
    expected = weight[rows]  # (T_max, width)
    adjacent = _cosine(expected[:-1], expected[1:])  # (T_max - 1,)

    result = embedlab.positions(str(truth.path))
    table = sources.load(str(truth.path))
    maps = position_maps(table, rule=sources.read_input_rule(table))

    assert result.T_max == maps.T_max == len(rows)
    assert result.position_offset == maps.position_offset == rows[0]
    np.testing.assert_allclose(result.learned.adjacent, adjacent, rtol=0, atol=1e-12)
    assert maps.learned.adjacent == result.learned.adjacent  # one measurement: the very same numbers
    unit = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(maps.learned_cosines, unit @ unit.T, rtol=0, atol=1e-12)


def test_robertas_zero_padding_row_is_not_drawn(hf_families):
    truth = hf_families["roberta"]
    model = _model(truth)
    padding_row = model.embeddings.position_embeddings.weight[model.embeddings.padding_idx]
    assert not padding_row.any()  # the family's padding row is all zeros: drawn, it was a white line
    table = sources.load(str(truth.path))
    maps = position_maps(table, rule=sources.read_input_rule(table))
    usable = model.config.max_position_embeddings - model.embeddings.padding_idx - 1
    assert maps.T_max == usable and maps.stored_rows == model.config.max_position_embeddings
    np.testing.assert_allclose(np.diag(maps.learned_cosines), 1.0, rtol=0, atol=1e-12)  # a zero row has 0 there


@pytest.mark.parametrize("name", ROTARY)
def test_a_family_without_a_position_table_is_drawn_at_the_configs_t_max(hf_families, name):
    truth = hf_families[name]
    config = transformers.AutoConfig.from_pretrained(truth.path, local_files_only=True)
    fig = embedlab.plot("positions", str(truth.path), lang="en")
    assert f"T_max = {config.max_position_embeddings:,}," in fig._suptitle.get_text()
    table = sources.load(str(truth.path))
    maps = position_maps(table, rule=sources.read_input_rule(table))
    assert (maps.T_max, maps.T_max_from, maps.learned) == (config.max_position_embeddings, "config", None)
    assert maps.sinusoidal_cosines.shape == (config.max_position_embeddings,) * 2
    given = position_maps(table, rule=sources.read_input_rule(table), max_context_length=40)
    assert (given.T_max, given.T_max_from) == (40, "given")  # a value given wins over the config's
    with pytest.raises(SourceError, match=f"^{truth.path.name} has no position table"):
        embedlab.positions(str(truth.path))  # the error names the folder, never "safetensors"


def test_a_long_context_is_drawn_over_its_first_positions_one_in_s_on_the_heatmaps():
    D, T_max = 8, 3 * DRAWN_POSITIONS
    maps = position_maps(EmbeddingTable(np.eye(D)), rule=InputRule(max_context_length=T_max))
    step = -(-DRAWN_POSITIONS // HEATMAP_POSITIONS)
    assert (maps.T_max, maps.drawn, maps.heatmap_step) == (T_max, DRAWN_POSITIONS, step)
    # the sinusoidal table by its formula (Vaswani et al. 2017, section 3.5), every step-th position
    p = np.arange(0, DRAWN_POSITIONS, step)[:, None]
    w = 10000.0 ** (-np.arange(0, D, 2) / D)
    table = np.zeros((len(p), D))
    table[:, 0::2], table[:, 1::2] = np.sin(p * w), np.cos(p * w)
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(maps.sinusoidal_cosines, unit @ unit.T, rtol=0, atol=1e-9)
    assert len(maps.sinusoidal.adjacent) == DRAWN_POSITIONS - 1


def test_the_positions_figure_says_where_its_rows_and_t_max_come_from(hf_families):
    roberta = embedlab.plot("positions", str(hf_families["roberta"].path), lang="en")
    notes = " ".join(t.get_text() for t in roberta.texts)
    assert "rows 0–1 of the 66-row table left out: roberta numbers positions from row 2" in notes
    llama = embedlab.plot("positions", str(hf_families["llama"].path), lang="ko")
    assert "T_max = 64: config의 max_position_embeddings" in " ".join(t.get_text() for t in llama.texts)


def test_plot_positions_says_on_the_terminal_what_positions_says(hf_families, capsys, tmp_path):
    """The rows a family leaves out are printed by `plot positions` too, as `positions` prints them (a reviewer
    found the note only inside the figure); the numbers from the model object."""
    from embedlab.figures import plot_notes

    truth = hf_families["roberta"]
    model = _model(truth)
    first = model.embeddings.padding_idx + 1  # the first row RoBERTa's tokens read
    note = (f"rows 0-{first - 1} of the {model.config.max_position_embeddings}-row table left out: roberta numbers "
            f"positions from row {first}")
    fig = embedlab.plot("positions", str(truth.path), lang="ko")
    assert note in plot_notes(fig) and note in embedlab.positions(str(truth.path)).notes
    assert cli.main(["plot", "positions", "--model", str(truth.path), "--out", str(tmp_path / "p.png")]) == 0
    assert f"note: {note}" in capsys.readouterr().out
    assert plot_notes(embedlab.plot("positions", str(hf_families["llama"].path))) == ()  # nothing left out


def test_both_commands_read_minilm_without_model_and_the_readme_says_so(capsys):
    from pathlib import Path

    parser = cli.build_parser()
    for argv in (["positions"], ["plot", "positions"]):
        assert parser.parse_args(argv).model == "minilm"
    assert parser.parse_args(["plot", "norms"]).model == "seed"
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert "Without `--model` it reads minilm, as `plot positions` does" in readme


def test_a_multimodal_checkpoint_is_drawn_at_its_text_configs_t_max(tmp_path):
    # Qwen2-VL keeps its language model's max_position_embeddings in text_config, as transformers' config holds it
    torch.manual_seed(0)
    text = {"vocab_size": 300, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 96, "bos_token_id": 1,
            "eos_token_id": 2, "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 4]}}
    vision = {"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2, "patch_size": 14,
              "spatial_merge_size": 2, "in_channels": 3}
    cfg = transformers.Qwen2VLConfig(text_config=text, vision_config=vision, bos_token_id=1, eos_token_id=2)
    transformers.Qwen2VLForConditionalGeneration(cfg).save_pretrained(tmp_path / "tiny-vl")
    table = sources.load(str(tmp_path / "tiny-vl"))
    maps = position_maps(table, rule=sources.read_input_rule(table))
    assert (maps.T_max, maps.T_max_from) == (cfg.text_config.max_position_embeddings, "config")
