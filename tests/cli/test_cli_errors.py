"""The CLI speaks in flags: library errors named by the flag the user typed, usage errors, Ctrl-C."""

import builtins

import pytest

from embedlab import api, cli
from embedlab.errors import MissingExtraError, SizeError


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, line", [
    (["params", "--vocab", "512", "--d-model", "64", "--factor", "0"], "--factor 0: expected a whole number >= 1"),
    (["params", "--vocab", "512", "--d-model", "64", "--target-vocab", "0"],
     "--target-vocab 0: expected a whole number >= 1"),
    (["params", "--vocab", "512", "--d-model", "64", "--dtype", "fp8"],
     "--dtype 'fp8': expected one of fp32, fp16, bf16, int8, int4"),
    (["hubs", "--top", "0"], "--top 0: expected an int >= 1"),
    (["report", "--stretch-factor", "0"], "--stretch-factor 0: expected a finite number above 0"),
])
def test_a_library_error_names_the_flag_the_value_and_what_is_allowed(tmp_path, monkeypatch, capsys, argv, line):
    monkeypatch.chdir(tmp_path)
    if argv[0] == "plot":
        pytest.importorskip("matplotlib")
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    command = " ".join(argv[:2]) if argv[0] == "plot" else argv[0]  # a figure of plot is named with it
    assert err == f"embedlab {command}: error: {line}\n"


@pytest.mark.parametrize("argv, typed", [
    (["hubs", "--memory", "1K"], "1K"), (["neighbors", "5", "--memory=0.5k"], "0.5k"),
    (["neighbors", "5", "--memory", "64K", "--memory", "2KiB"], "2KiB"),  # the last one given is the one used
    (["params", "--vocab", "512", "--d-model", "64", "--factor", "00"], "00"),
])
def test_a_number_is_echoed_as_typed_not_as_parsed(tmp_path, monkeypatch, capsys, argv, typed):
    """--memory 1K is 1,024 bytes to the library, but the line names what the user wrote."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    flag = next(word.split("=")[0] for word in argv if word.startswith(("--memory", "--factor")))
    assert (code, out) == (1, "")
    assert f": error: {flag} {typed}: expected " in err and "1024" not in err and "512:" not in err


def test_demo_names_its_own_flags():
    pytest.importorskip("torch")
    from embedlab.measure import demo

    with pytest.raises(SizeError) as caught:
        demo.DemoSettings(seq_len=0)
    assert str(caught.value) == "seq_len=0 must be an int of at least 1"  # the library keeps its own names
    assert (caught.value.parameter, caught.value.value) == ("seq_len", 0)
    # The flag is the parameter's name; the older spelling, typed, is named as typed.
    for typed, parameter in (("--seq-len", "seq_len"), ("--seq", "seq_len"), ("--vocab-size", "vocab_size"),
                             ("--vocab", "vocab_size"), ("--max-context-length", "max_context_length"),
                             ("--max-context", "max_context_length"), ("--batch-size", "batch_size"),
                             ("--batch", "batch_size")):
        assert cli.main(["demo", typed, "0"]) == 1
        assert cli.errors.flag(cli.parse(["demo", typed, "0"]), parameter) == typed


def test_a_flag_is_its_parameter_in_the_spelling_typed():
    assert cli.errors.flag(cli.parse(["params", "--vocab", "5", "--d-model", "3", "--factor", "0"]),
                           "growth_factor") == "--factor"
    assert cli.errors.flag(cli.parse(["params", "--vocab-size", "5", "--d-model", "3"]),
                           "growth_factor") == "--growth-factor"  # not typed: the flag itself
    assert cli.errors.flag(cli.parse(["report", "--growth=0"]), "growth_factor") == "--growth"
    assert cli.errors.flag(cli.parse(["report"]), "stretch_factor") == "--stretch-factor"
    # EmbeddingTable.stretch's own `factor` has no flag in report: LabSettings checks stretch_factor first.
    assert cli.errors.flag(cli.parse(["report"]), "factor") is None


def test_the_one_flag_that_differs_and_parameters_without_a_flag():
    assert cli.errors.FLAG_EXCEPTIONS == {("plot", "d_model"): "--widths"}
    assert cli.errors.flag(cli.parse(["plot", "bands"]), "d_model") == "--widths"
    assert cli.errors.flag(cli.parse(["demo"]), "d_model") == "--d-model"
    assert cli.errors.flag(cli.parse(["encode", "x"]), "no_such_parameter") is None
    assert cli.errors.flag(cli.parse(["encode", "x"]), "texts") is None  # a positional argument: no flag
    assert cli.errors.flag(cli.parse(["export", "--format", "projector"]), "d_model") is None  # export has none


def test_an_error_without_a_flag_keeps_the_library_message():
    args = cli.parse(["encode", "x"])
    exc = SizeError("stretch rank 7 must be in [0, k=5)", parameter="stretch_rank", value=7, expected="[0, 5)")
    assert cli.errors.message(exc, args) == "stretch rank 7 must be in [0, k=5)"
    exc = SizeError("show must be an int >= 0, got -1", parameter="show", value=-1, expected="an int >= 0")
    assert cli.errors.message(exc, args) == "--show -1: expected an int >= 0"


def test_a_long_value_is_cut_with_its_length():
    args = cli.parse(["params", "--vocab-size", "5", "--d-model", "3"])
    exc = SizeError("", parameter="dtype", value="x" * 5000, expected="one of fp32, bf16")
    assert cli.errors.message(exc, args) == f"--dtype '{'x' * 60}…' (5,000 characters): expected one of fp32, bf16"


def test_neighbors_echoes_a_long_unknown_model_cut(capsys):
    code, _, err = run(capsys, "neighbors", "--model", "m" * 3000, "1")
    assert code == 1 and "(3,000 characters)" in err and len(err) < 400


@pytest.mark.parametrize("module, raise_site, fresh", [
    ("sklearn", lambda: __import__("embedlab.measure.projection", fromlist=["x"])._sklearn("decomposition"), ()),
    ("scipy", lambda: api.hubs([[1.0, 0.0], [0.0, 1.0]]), ("embedlab.measure.hubs",)),
    ("safetensors", lambda: __import__("embedlab.sources.safetensors", fromlist=["x"])._open("x.safetensors"), ()),
])
def test_missing_extras_carry_their_extras(monkeypatch, module, raise_site, fresh):
    import sys

    pytest.importorskip("numpy")
    for name in fresh:  # imported again under the missing extra (it imports it at its top)
        parent, _, leaf = name.rpartition(".")
        monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.delattr(sys.modules[parent], leaf, raising=False)
    # None in sys.modules makes `import` and importlib.import_module alike raise ImportError.
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("decomposition", "manifold", "figure", "stats"):
        monkeypatch.setitem(sys.modules, f"{module}.{name}", None)
    with pytest.raises(MissingExtraError) as caught:
        raise_site()
    expected = {"matplotlib": ("plots",), "sklearn": ("plots",), "scipy": ("models",), "safetensors": ("models",)}
    assert caught.value.extras == expected[module]
    args = cli.build_parser().parse_args(["plot", "norms", "--model", "glove"])
    assert cli.errors.message(caught.value, args).endswith(
        "pip install -c constraints.txt -e '.[data,plots]' (or 'make test', which installs every extra)")


@pytest.mark.parametrize("argv, usage, complaint", [
    (["plot", "bands", "--probe", "king"], "usage: embedlab plot bands", "unrecognized arguments: --probe king"),
    (["plot", "norms", "--method", "pca"], "usage: embedlab plot norms", "unrecognized arguments: --method pca"),
    (["plot", "projection", "--method", "pca", "--perplexity", "5"], "usage: embedlab plot projection",
     "--perplexity applies to --method tsne only, not --method pca"),
    (["plot", "projection", "--tokens", "1,2,3", "--k", "3"], "usage: embedlab plot projection",
     "--k does not apply with --tokens"),
    (["params", "--vocab", "8", "--d-model", "4", "--positions", "none", "--max-positions", "16"],
     "usage: embedlab params", "--max-positions does not apply with --positions none"),  # as typed
    (["params", "--vocab-size", "8", "--d-model", "4", "--positions", "learned"], "usage: embedlab params",
     "--positions learned needs --max-context-length"),
    (["neighbors", "--bogus", "1"], "usage: embedlab neighbors", "unrecognized arguments: --bogus"),
    (["hubs", "--tokens", "a"], "usage: embedlab hubs", "unrecognized arguments: --tokens a"),
])
def test_an_option_that_does_not_apply_is_a_usage_error_of_its_subcommand(capsys, argv, usage, complaint):
    if argv[0] == "plot":
        pytest.importorskip("matplotlib")
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith(usage) and complaint in err, err


def test_each_figure_help_lists_only_its_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["plot", "projection", "--help"])
    text = capsys.readouterr().out
    assert all(f in text for f in ("--method", "--perplexity", "--tokens", "--sample", "--probe"))
    assert not any(f in text for f in ("--top", "--widths", "--max-context-length", "--stretch-factor"))


@pytest.mark.parametrize("argv, dests", [
    (["neighbors", "1"], ("k",)), (["hubs"], ("k", "top")),
    (["plot", "projection"], ("k", "method", "sample", "seed", "perplexity", "size")),
    (["plot", "norms"], ("top",)), (["plot", "positions"], ("max_context_length", "base")),
])
def test_options_not_given_are_none(argv, dests):
    args = cli.build_parser().parse_args(argv)
    assert all(getattr(args, d) is None for d in dests)


def test_ctrl_c_in_a_loader_exits_130_without_a_traceback(monkeypatch, capsys):
    from embedlab.sources import loaders

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(loaders, "load", interrupted)
    assert run(capsys, "neighbors", "1") == (130, "", "embedlab neighbors: interrupted\n")


def test_ctrl_c_in_a_lazy_import_exits_130(monkeypatch, capsys):
    real = builtins.__import__

    def interrupted(name, globals=None, locals=None, fromlist=(), level=0):
        if level and name == "measure" and "neighbors" in (fromlist or ()):  # api's `from .measure import neighbors`
            raise KeyboardInterrupt
        return real(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert run(capsys, "neighbors", "3") == (130, "", "embedlab neighbors: interrupted\n")


def test_ctrl_c_while_importing_the_cli_exits_130(monkeypatch, capsys):
    import embedlab.__main__ as entry

    real = builtins.__import__

    def interrupted(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 1 and name == "cli":
            raise KeyboardInterrupt
        return real(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert entry.run() == 130
    assert capsys.readouterr().err == "embedlab: interrupted\n"


def test_ctrl_c_while_writing_leaves_no_file(tmp_path, monkeypatch, capsys):
    import os

    from embedlab.report import files

    real = os.replace

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    assert run(capsys, "report", "--out", str(tmp_path))[0] == 130
    monkeypatch.setattr(files.os, "replace", real)
    assert list(tmp_path.iterdir()) == []  # no report, and no temporary beside it
