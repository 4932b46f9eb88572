"""One name per idea: every flag is its library parameter's name, and older spellings still work.

A flag is ``--`` + the parameter with dashes (``growth_factor`` -> ``--growth-factor``), from the
command line to the library call; a command's flags are keywords of the one call it makes. The few
options with no parameter of that name are listed here with their reason. Each flag spelling users
had before the names were unified is still accepted, and the help names it once, after the flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

from embedlab import api, cli, figures

# Options a command has that are no keyword of its library call, and why.
CLI_ONLY = {
    "json": "how the result is printed",
    "quiet": "the progress bar",
    "lang": "the language a renderer writes in",
    "markdown": "a file the CLI writes from the result",
    "plot": "a figure file the CLI writes from the result",
    "html": "report: writes embed_report.html, measuring what its figures need (figures=True)",
    "untied": "params: a switch for the one value that is not the default, tied=False",
}
CLI_ONLY_IN = {
    ("report", "out"): "the folder the CLI writes the report's files into",
    ("projector", "out"): "the page the CLI writes",
    ("plot", "out"): "the PNG the CLI writes",
    ("audit", "show"): "how many ids the terminal shows of each list",
}
CALLS = {"report": api.report, "params": api.params, "positions": api.positions, "encode": api.encode,
         "neighbors": api.neighbors_stream, "hubs": api.hubs, "graph": api.graph, "compress": api.compress,
         "projector": api.projector, "export": api.export, "audit": api.audit, "diff": api.diff}


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by name, a figure of plot as ``plot FIGURE``."""
    found = {}
    for name, parser in _subparsers(cli.build_parser()).items():
        figures_of = _subparsers(parser)
        found.update({f"plot {f}": p for f, p in figures_of.items()} if figures_of else {name: parser})
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def _keywords(command: str) -> set[str]:
    """The parameters of the library call a command makes."""
    if command.startswith("plot "):
        signature = set(inspect.signature(figures.plot).parameters)
        return signature | set(figures.OPTIONS[command.split()[1]])
    if command == "demo":  # embedlab.demo(**settings): the fields of DemoSettings
        demo = pytest.importorskip("embedlab.measure.demo", reason="the demo's settings need torch")
        return {f.name for f in dataclasses.fields(demo.DemoSettings)}
    return set(inspect.signature(CALLS[command]).parameters)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_flag_is_its_parameters_name(command):
    for action in _options(_commands()[command]):
        flag = "--" + action.dest.replace("_", "-")
        # encode's --no-truncate is truncate=False, the switch beside --truncate: the one "--no-" form.
        assert action.option_strings[0] in (flag, flag.replace("--", "--no-", 1)), (command, action.option_strings)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_flag_is_a_keyword_of_the_commands_library_call(command):
    keywords = _keywords(command) | {"model"}  # --model is the call's first argument, table_or_model
    for action in _options(_commands()[command]):
        name, figure = action.dest, command.split()[0]
        if name in CLI_ONLY or (figure, name) in CLI_ONLY_IN:
            continue
        assert name in keywords, f"{command}: --{name.replace('_', '-')} sets no parameter {name!r} of its call"


def test_the_call_signatures_say_what_the_flags_say():
    # The words unified: one idea, one name, from the flag to the library and the measurements.
    from embedlab.measure import compress, hubs, params, positions

    assert {"vocab_size", "d_model", "max_context_length", "growth_factor", "target_vocab_size"} <= set(
        inspect.signature(api.params).parameters)
    assert "growth_factor" in inspect.signature(api.report).parameters
    assert {"vocab_size", "d_model", "max_context_length"} <= set(inspect.signature(params.from_numbers).parameters)
    assert {"growth_factor", "target_vocab_size"} <= set(inspect.signature(params.growth).parameters)
    assert "queries" in inspect.signature(hubs.measure_hubs).parameters
    assert "queries" in inspect.signature(compress.compress).parameters
    assert "max_context_length" in inspect.signature(positions.position_maps).parameters
    assert figures.OPTIONS["positions"] == ("max_context_length", "base")


@pytest.mark.parametrize("argv, dest, value", [
    (["report", "--growth", "3"], "growth_factor", 3),
    (["params", "--vocab", "8", "--d-model", "4", "--factor", "3"], "growth_factor", 3),
    (["params", "--vocab", "8", "--d-model", "4"], "vocab_size", 8),
    (["params", "--vocab", "8", "--d-model", "4", "--target-vocab", "20"], "target_vocab_size", 20),
    (["params", "--vocab", "8", "--d-model", "4", "--max-positions", "16"], "max_context_length", 16),
    (["demo", "--vocab", "16"], "vocab_size", 16),
    (["demo", "--max-context", "16"], "max_context_length", 16),
    (["demo", "--batch", "2"], "batch_size", 2),
    (["demo", "--seq", "5"], "seq_len", 5),
    (["plot", "positions", "--max-positions", "64"], "max_context_length", 64),
    (["neighbors", "1", "--by", "dot"], "metrics", ("dot",)),
    (["neighbors", "1", "--by", "both"], "metrics", ("cosine", "dot")),
    (["neighbors", "--vector", "q.npy"], "vectors", "q.npy"),
    (["graph", "--out", "g.parquet", "--metric", "dot,cosine"], "metrics", ("dot", "cosine")),
])
def test_every_older_spelling_still_works(argv, dest, value):
    got = getattr(cli.parse(argv), dest)
    assert (str(got) if dest == "vectors" else got) == value


def test_metrics_is_one_choice_in_neighbors_and_graph():
    neighbors, graph = cli.parse(["neighbors", "1"]), cli.parse(["graph", "--out", "g.parquet"])
    assert neighbors.metrics == graph.metrics == ("cosine", "dot")  # default: both, cosine first
    for command in (["neighbors", "1"], ["graph", "--out", "g.parquet"]):
        assert cli.parse([*command, "--metrics", "both"]).metrics == ("cosine", "dot")
        assert cli.parse([*command, "--metrics", "dot"]).metrics == ("dot",)


def test_help_names_each_flag_once_and_then_its_older_spellings(capsys):
    with pytest.raises(SystemExit):
        cli.main(["params", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare words
    assert "--growth-factor N vocabulary growth factor, a whole number (default 2) (also --factor)" in text
    assert "--vocab-size V vocabulary size V (with --d-model) (also --vocab)" in text
    assert "--factor N" not in text and "--vocab V" not in text  # listed once, by its flag
    assert "-h, --help" in text  # -h is --help's short form, not an older spelling


def test_an_error_names_the_spelling_typed(capsys):
    assert cli.main(["params", "--vocab", "512", "--d-model", "64", "--target-vocab", "0"]) == 1
    assert capsys.readouterr().err == "embedlab params: error: --target-vocab 0: expected a whole number >= 1\n"
    assert cli.main(["params", "--vocab-size", "512", "--d-model", "64", "--target-vocab-size", "0"]) == 1
    assert capsys.readouterr().err == ("embedlab params: error: --target-vocab-size 0: expected a whole number "
                                       ">= 1\n")
