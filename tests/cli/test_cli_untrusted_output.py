"""The CLI on hostile model files: no markup, no escape sequence and no bidi control from a file gets out.

Each test builds its files here (a checkpoint folder whose vocab.json holds hostile tokens,
GGUF files and safetensors headers with hostile names) and runs ``embedlab.cli.main``.
The Markdown report is rendered with markdown-it-py (CommonMark with GFM tables) and must
hold the very elements of a clean run of the same table; terminal output and JSON must hold
no C0 control but the newline, no C1 control, no bidi control, no U+2028/U+2029; JSON must
read back to the tokens as they are.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from embedlab import cli
from safetensors_writer import f32, write_safetensors
from hostile_text import HOSTILE, acting, render, visible

np = pytest.importorskip("numpy")

LONG = "x" * 100_000  # a 100 KB token
TOKENS = [*HOSTILE, LONG]
V, D = len(TOKENS), 4
# An OSC window title, a clear-screen, a bidi override and the one-character CSI.
EVIL = "\x1b]0;owned\x07\x1b[2J\u202e\x9b"


def checkpoint(folder: Path, tokens: list[str]) -> Path:
    """A checkpoint folder: a (V, D) token table in model.safetensors and ``tokens`` in vocab.json."""
    folder.mkdir(parents=True)
    rows = np.random.default_rng(0).standard_normal((V, D))  # (V, D)
    write_safetensors(folder / "model.safetensors",
                      {"embeddings.word_embeddings.weight": ("F32", (V, D), f32(*rows.ravel()))})
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}), encoding="utf-8")
    return folder


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def report(tmp_path, monkeypatch, capsys, name: str, tokens: list[str], lang: str) -> tuple[str, str, str]:
    """``embedlab report`` on a checkpoint of ``tokens``, every token a neighbour of the probe:
    (terminal output, embed_report.md, embed_report.json). Run from the checkpoint's parent so the
    recorded command line is the same for every run."""
    monkeypatch.chdir(checkpoint(tmp_path / name / "m", tokens).parent)
    code, out, err = run(capsys, "report", "--model", "m", "--probe", "id:0", "--k", str(V - 1), "--out", "out",
                         "--lang", lang)
    assert (code, err) == (0, "")
    return out, Path("out/embed_report.md").read_text(encoding="utf-8"), \
        Path("out/embed_report.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_markdown_report_holds_the_elements_of_a_clean_run_and_every_token_in_its_code_span(
        tmp_path, monkeypatch, capsys, lang):
    clean = [f"w{i}" for i in range(V)]
    _, clean_md, _ = report(tmp_path, monkeypatch, capsys, "clean", clean, lang)
    out, md, _ = report(tmp_path, monkeypatch, capsys, "hostile", TOKENS, lang)
    assert acting(md) == set()  # the file itself: no raw ESC, CR, NUL, U+2028...
    page, expected = render(md), render(clean_md)
    assert page.tags == expected.tags  # the same elements and attributes: nothing from a token became HTML
    # Each token's code span shows it, its controls as escapes; every other code span is the clean run's.
    by_clean = {t: visible(h) for t, h in zip(clean, TOKENS)}
    assert page.codes == [by_clean.get(c, c) for c in expected.codes]
    assert all(visible(t) in page.codes for t in TOKENS)


def test_the_report_json_and_terminal_summary_hold_no_control_character(tmp_path, monkeypatch, capsys):
    out, _, text = report(tmp_path, monkeypatch, capsys, "hostile", TOKENS, "en")
    assert acting(out) == set() and acting(text) == set()
    data = json.loads(text)
    assert [data["probe_token"], *data["cos_neighbors_tokens"]] == [TOKENS[i] for i in [0, *data["cos_neighbors"]]]
    assert "'" + "x" * 60 + "…' (100,000 characters)" in out  # the summary cuts the long token
    assert max(map(len, out.splitlines())) < 5000


def test_neighbors_tables_escape_tokens_and_cut_the_long_one(tmp_path, capsys):
    folder = checkpoint(tmp_path / "m", TOKENS)
    code, out, err = run(capsys, "neighbors", "--model", str(folder), "id:0", f"id:{V - 1}", "--k", str(V - 1))
    assert (code, err) == (0, "") and acting(out) == set()
    for token in HOSTILE[1:]:
        assert repr(token)[1:-1] in out  # the table writes a token as repr does, without the quotes
    assert f"{'x' * 60}… (100,000 characters) ({V - 1})" in out
    assert len(out) < 40_000  # 2 queries x 24 rows; the whole token would pad every row to 100 KB


def test_neighbors_json_escapes_controls_and_keeps_every_token_whole(tmp_path, capsys):
    folder = checkpoint(tmp_path / "m", TOKENS)
    code, out, err = run(capsys, "neighbors", "--model", str(folder), "id:0", "--k", str(V - 1), "--json")
    assert (code, err) == (0, "") and acting(out) == set()
    lists = json.loads(out)["queries"][0]["lists"]
    for metric in ("cosine", "dot"):
        assert sorted(row["token"] for row in lists[metric]) == sorted(TOKENS[1:])
        assert all(row["token"] == TOKENS[row["id"]] for row in lists[metric])


def test_encode_tables_escape_the_tokenizers_tokens_and_cut_long_ones(tmp_path, capsys):
    pytest.importorskip("tokenizers")
    folder = tmp_path / "m"
    folder.mkdir()
    unk, long = f"[UNK]{EVIL}", "b" * 100
    spec = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
            "model": {"type": "WordLevel", "vocab": {unk: 0, "a": 1, long: 2}, "unk_token": unk}}
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    write_safetensors(folder / "model.safetensors",
                      {"embeddings.word_embeddings.weight": ("F32", (3, 4), f32(*range(12)))})
    code, out, err = run(capsys, "encode", "--model", str(folder), f"a zz {long}")
    assert (code, err) == (0, "") and acting(out) == set()
    assert visible(unk) in out  # the unknown word's token, as the table shows it
    assert f"{'b' * 60}… (100 characters)" in out
    assert not [line for line in out.splitlines() if long in line and not line.startswith("text 1: ")]  # typed, not cut


@pytest.fixture
def gguf_writer():
    return pytest.importorskip("gguf_writer")


def test_params_shows_gguf_metadata_escaped(tmp_path, capsys, gguf_writer):
    path = gguf_writer.write_gguf(tmp_path / "m.gguf", {"token_embd.weight": (np.ones((8, 4)), "F32")},
                                  arch="llama" + EVIL)
    code, out, err = run(capsys, "params", "--model", str(path))
    assert (code, err) == (0, "") and acting(out) == set()
    assert f"general.architecture=llama{visible(EVIL)}" in out
    code, out, err = run(capsys, "params", "--model", str(path), "--json")
    assert (code, err) == (0, "") and acting(out) == set()
    assert f"general.architecture=llama{EVIL}" in json.loads(out)["keys"]["positions"]


def test_an_error_naming_gguf_tensors_is_one_escaped_line(tmp_path, capsys, gguf_writer):
    path = gguf_writer.write_gguf(tmp_path / "m.gguf", {f"blk.0{EVIL}\n.weight": (np.ones((8, 4)), "F32")})
    code, out, err = run(capsys, "params", "--model", str(path))
    assert code == 1 and out == "" and acting(err) == set()
    assert err.count("\n") == 1 and f"blk.0{visible(EVIL)}\\n.weight" in err


def test_params_shows_buffer_tensor_and_shard_names_escaped(tmp_path, capsys):
    folder = tmp_path / "m"
    folder.mkdir()
    shard = f"model{EVIL}-00001-of-00001.safetensors"
    write_safetensors(folder / shard, {"embeddings.word_embeddings.weight": ("F32", (8, 4), f32(*[1.0] * 32)),
                                       f"x{EVIL}.position_ids": ("I64", (1, 8), bytes(64))})
    index = {"metadata": {}, "weight_map": {"embeddings.word_embeddings.weight": shard,
                                            f"x{EVIL}.position_ids": shard}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    code, out, err = run(capsys, "params", "--model", str(folder))
    assert (code, err) == (0, "") and acting(out) == set()
    assert f"x{visible(EVIL)}.position_ids (1, 8) I64" in out  # the buffer line
    assert visible(shard) in out  # the file counted


def test_no_embedding_tensor_error_lists_names_escaped(tmp_path, capsys):
    folder = tmp_path / "m"
    folder.mkdir()
    write_safetensors(folder / "model.safetensors", {f"a{EVIL}": ("F32", (2, 2), f32(1, 2, 3, 4)),
                                                     f"b{EVIL}": ("F32", (2, 2), f32(1, 2, 3, 4))})
    code, out, err = run(capsys, "params", "--model", str(folder))
    assert code == 1 and out == "" and acting(err) == set() and err.count("\n") == 1
    assert f"a{visible(EVIL)}" in err and f"b{visible(EVIL)}" in err


def test_paths_from_the_command_line_are_escaped_in_wrote_lines_and_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", "--out", f"o{EVIL}")
    assert (code, err) == (0, "") and acting(out) == set()
    assert f"o{visible(EVIL)}/embed_report.md" in out
    np.save(tmp_path / "t.npy", np.eye(3, 4, dtype=np.float32))
    words = tmp_path / f"w{EVIL}.txt"
    words.write_text("a\nb\n", encoding="utf-8")  # 2 words for 3 rows
    code, out, err = run(capsys, "neighbors", "--model", "t.npy", "--words", words.name, "a")
    assert code == 1 and acting(err) == set() and err.count("\n") == 1
    assert f"w{visible(EVIL)}.txt" in err


def test_usage_errors_echo_what_was_typed_escaped(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["neighbors", f"--bogus={EVIL}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert acting(err) == set() and f"--bogus={visible(EVIL)}" in err


def test_every_print_of_the_cli_passes_through_terminal_text():
    """Structural: a new print cannot bypass the one function (tqdm's bars write their own, on stderr)."""
    folder = Path(cli.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                first = node.args[0] if node.args else None
                assert isinstance(first, ast.Call) and getattr(first.func, "id", None) == "terminal_text", \
                    f"{path.name}:{node.lineno}"


@pytest.mark.plots
@pytest.mark.slow
def test_the_html_report_shows_every_acting_character_as_its_escape(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(checkpoint(tmp_path / "m", TOKENS).parent)
    code, _, err = run(capsys, "report", "--model", "m", "--probe", "id:0", "--k", str(V - 1), "--out", "out",
                       "--lang", "en", "--html")
    assert (code, err) == (0, "")
    page = Path("out/embed_report.html").read_text(encoding="utf-8")
    assert acting(page) == set()  # no U+202E to turn the page's text around, no raw control
    assert "rlo\\u202eevil" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
