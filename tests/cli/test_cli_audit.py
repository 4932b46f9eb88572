"""embedlab audit on the command line: the summary, --json, --markdown, --plot, and bad input as one clear line or a
stated partial audit, never a traceback.

The checkpoints are built by ``audit_models`` (transformers and tokenizers); expected ids are the ones planted here.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from audit_models import SPECIALS, save_untied, trained_rows, untrained_rows, word_tokenizer  # noqa: E402
import embedlab  # noqa: E402
from embedlab.cli import main  # noqa: E402
from embedlab.report.locales import AUDIT_WORDS  # noqa: E402
from embedlab.sources import files  # noqa: E402

ROWS, SPAN = 520, 500
PLANTED = {100: "王様", 101: "日本語", 102: "한국어", 103: "a|b", 104: "`tick`", 105: "<img>"}  # candidates, named
PLANTED.update({i: f"p{i}" for i in range(106, 110)})
RESERVED = tuple(range(490, 500))


def tokens() -> list[str | None]:
    found: list[str | None] = [*SPECIALS, *(f"t{i}" for i in range(len(SPECIALS), SPAN))]
    for i, token in PLANTED.items():
        found[i] = token
    for k, i in enumerate(RESERVED):
        found[i] = f"<|reserved_special_token_{k}|>"
    return found


def tables(nan_rows: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    table, head = trained_rows(ROWS, 1), trained_rows(ROWS, 2)
    unused = [*RESERVED, *range(SPAN, ROWS)]
    table[unused], head[unused] = untrained_rows(len(unused), 3), untrained_rows(len(unused), 4)
    noise = np.random.default_rng(5).standard_normal((len(PLANTED), table.shape[1])) * 1e-4
    head[sorted(PLANTED)] = (head[unused].astype(np.float64).mean(axis=0) + noise).astype(np.float32)
    head[list(nan_rows)] = np.nan
    return table, head


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("models") / "tiny-llama"
    table, head = tables()
    return save_untied(folder, table, head, word_tokenizer(tokens(), split_punctuation=False))


def run(capsys, *argv):
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_the_summary_says_what_is_wrong_first(model, capsys):
    code, out, _ = run(capsys, "--model", str(model))
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith("embedlab audit: tiny-llama: token table V = 520 rows x D = 16 (F32); the output head "
                               "is a table of its own, 520 rows ('lm_head.weight')")
    assert lines[1] == "fatal: 0; warnings: 2; notes: 2."
    assert lines[3] == "WARNING  tokens that look under-trained (output head): 10"
    assert lines[4].startswith("         ids: 10") and all(f"{i} " in lines[4] for i in PLANTED)
    assert lines[5].startswith("         what to do: ")
    # Llama 3's case: reserved tokens a whitespace tokenizer still produces, their rows never trained
    assert lines[6] == "WARNING  tokens known to be unused that a text can still produce: 10"
    assert "NOTE     rows of the table that no token maps to: 20" in out
    # the reference named by the pattern its tokens match, counted without a plural to get wrong
    assert f"Reference rows: {len(RESERVED) + ROWS - SPAN} (rows no token maps to: {ROWS - SPAN}, tokens named like " \
           f"'<|reserved_special_token_N|>': {len(RESERVED)})." in out
    accounting = out[out.index("row accounting\n"):out.index("\n\n", out.index("row accounting\n"))].splitlines()
    assert [line.split("  ")[0] for line in accounting[8:12]] == ["ids past the table", "ids past the head",
                                                                   "rows no token maps to", "special and added tokens"]


def test_json_holds_every_list_whole(model, capsys):
    code, out, _ = run(capsys, "--model", str(model), "--json")
    data = json.loads(out)
    assert code == 0 and data["V"] == ROWS and data["D"] == 16 and data["tied"] is False
    assert data["source"]["path"] == "tiny-llama" or not data["source"]["path"].startswith("/")
    categories = data["reachability"]["categories"]
    assert sum(len(ids) for ids in categories.values()) == SPAN
    assert sorted(c["id"] for c in data["undertrained"]["candidates"]) == sorted(PLANTED)
    assert {c["id"]: c["token"] for c in data["undertrained"]["candidates"]} == PLANTED
    assert all(len(v) == ROWS for v in data["undertrained"]["indicators"].values())
    assert data["accounting"]["padding"] == list(range(SPAN, ROWS))
    assert str(model.parent) not in out  # no local path


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_markdown_in_the_language_asked_keeps_tokens_in_their_cells(model, tmp_path, capsys, lang):
    markdown_it = pytest.importorskip("markdown_it")
    path = tmp_path / "audit.md"
    code, out, _ = run(capsys, "--model", str(model), "--markdown", str(path), "--lang", lang)
    text = path.read_text(encoding="utf-8")
    words = AUDIT_WORDS[lang]
    assert code == 0 and out.endswith(f"wrote {path}\n")
    for heading in ("summary", "accounting", "reachability", "degenerate", "undertrained"):
        assert f"\n## {words['headings'][heading]}\n" in text
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<img>" not in html  # the token is shown as text, never becomes an element
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    parsed = markdown_it.MarkdownIt("commonmark").enable("table").parse(text)
    assert len([t for t in parsed if t.type == "tr_open"]) == len(rows)  # every row a row: no token split one
    spans = {child.content for t in parsed if t.type == "inline" for child in t.children or ()
             if child.type == "code_inline"}
    assert {"a|b", "`tick`", "<img>", "王様"} <= spans  # each token one code span, shown as it is
    for token in ("王様", "日本語", "한국어"):
        assert f"`{token}`" in text


@pytest.mark.parametrize("lang, suffix", [("ko", ".png"), ("en", ".svg")])
def test_the_figure_is_written_in_the_language_asked(model, tmp_path, capsys, lang, suffix):
    path = tmp_path / f"audit{suffix}"
    code, out, _ = run(capsys, "--model", str(model), "--plot", str(path), "--lang", lang, "--show", "0")
    assert code == 0 and out.endswith(f"wrote {path}\n") and path.stat().st_size > 1000
    if suffix == ".svg":
        svg = path.read_text(encoding="utf-8")
        assert AUDIT_WORDS["en"]["figure"]["x"] in svg and "王様" in svg


def test_a_folder_without_a_tokenizer_says_what_it_skipped(tmp_path, capsys):
    table, head = tables()
    folder = save_untied(tmp_path / "bare", table, head, tokenizer=None)
    code, out, _ = run(capsys, "--model", str(folder))
    assert code == 0
    assert "skipped: row accounting against the tokenizer: the tokenizer's ids: bare has no tokenizer: none of " \
           "tokenizer.json" in out
    assert "skipped: reachability: bare has no tokenizer" in out


@pytest.mark.parametrize("fault, said", [
    ("not json", "cannot read the tokenizer {folder}/tokenizer.json: "),
    ("fifo", "tokenizer {folder}/tokenizer.json is a FIFO (named pipe), not a regular file"),
    ("deep", "cannot read the tokenizer {folder}/tokenizer.json: "),
    ("past the cap", f"tokenizer {{folder}}/tokenizer.json is larger than {files.TOKENIZER_CAP // 2**20} MiB"),
])
def test_a_tokenizer_file_that_is_refused_is_an_error(tmp_path, capsys, fault, said):
    # As neighbors and encode say: a tokenizer file that is there but cannot be read is an error, not a model
    # without a tokenizer (which would print "Tokenizer: none.", the tokenizer's parts skipped, exit 0).
    from hostile_files import deep_json

    table, head = tables()
    folder = save_untied(tmp_path / "broken", table, head, tokenizer=None)
    path = folder / "tokenizer.json"
    if fault == "fifo":
        os.mkfifo(path)
    elif fault == "past the cap":
        with open(path, "wb") as f:
            f.truncate(files.TOKENIZER_CAP + 1)  # sparse: no disk, refused by its size unread
    else:
        path.write_text("{not json" if fault == "not json" else deep_json(), encoding="utf-8")
    code, out, err = run(capsys, "--model", str(folder))
    assert (code, out) == (1, "") and err.count("\n") == 1
    assert err.startswith("embedlab audit: error: " + said.format(folder=folder)), err


def test_nan_rows_are_fatal_findings_not_errors(tmp_path, capsys):
    table, head = tables(nan_rows=(200, 201))
    folder = save_untied(tmp_path / "nan", table, head, word_tokenizer(tokens()))
    code, out, _ = run(capsys, "--model", str(folder))
    assert code == 0 and "FATAL    rows holding NaN or infinity (output head): 2\n         ids: 200 't200', 201 't201'" in out


@pytest.mark.parametrize("with_types", [True, False])
def test_a_gguf_file_is_audited_from_its_token_list(tmp_path, capsys, with_types):
    pytest.importorskip("gguf")
    from gguf_writer import write_gguf

    table, head = tables()
    listed = tokens()
    kinds = [3 if i < len(SPECIALS) else 5 if i in RESERVED else 1 for i in range(SPAN)]  # control, unused, normal
    path = write_gguf(tmp_path / "tiny.gguf", {"token_embd.weight": (table, "F32"), "output.weight": (head, "F32")},
                      tokens=listed, token_types=kinds if with_types else None)
    code, out, _ = run(capsys, "--model", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["reachability"] is None and data["tied"] is False
    assert [s["part"] for s in data["skipped"]] == ["reachability"]
    u = data["undertrained"]
    if with_types:
        assert u["reference"]["by"] == {"padding": list(range(SPAN, ROWS)), "named": list(RESERVED),
                                        "unused_type": list(RESERVED)}
        assert u["population"] == "typed_normal"
        assert [s["id"] for s in data["accounting"]["special_and_added"]] == [0, 1, 2]
    else:
        assert data["notes"] == ["tiny.gguf has no tokenizer.ggml.token_type: special, added and unused tokens are "
                                 "unknown"]
        assert u["population"] == "with_token"
    assert sorted(c["id"] for c in u["candidates"]) == sorted(PLANTED)


def test_word_vectors_get_the_parts_that_need_no_tokenizer(tmp_path, capsys):
    path = tmp_path / "vectors.txt"
    rows = trained_rows(40, 7)
    rows[5] = 0.0
    path.write_text("".join(f"w{i} " + " ".join(f"{x:.6f}" for x in row) + "\n" for i, row in enumerate(rows)),
                    encoding="utf-8")
    code, out, _ = run(capsys, "--model", str(path))
    assert code == 0
    assert "WARNING  all-zero rows that tokens map to (token table): 1\n         ids: 5 'w5'" in out
    skipped = [line.split(":")[1].strip() for line in out.splitlines() if line.startswith("skipped:")]
    assert skipped == ["row accounting against the tokenizer", "reachability", "under-trained tokens"]
    # the summary line says the audit is partial; what only a tokenizer can tell is not known, not 0
    assert out.splitlines()[1] == ("fatal: 0; warnings: 1; notes: 0. Skipped: row accounting against the tokenizer, "
                                   "reachability, under-trained tokens.")
    for count in ("holes", "ids past the table", "ids past the head", "rows no token maps to",
                  "special and added tokens"):
        assert re.search(rf"^{count} +not known$", out, re.M), count


def test_a_clean_partial_audit_does_not_read_as_a_clean_one(tmp_path, capsys):
    path = tmp_path / "vectors.txt"
    rows = trained_rows(40, 8)
    path.write_text("".join(f"w{i} " + " ".join(f"{x:.6f}" for x in row) + "\n" for i, row in enumerate(rows)),
                    encoding="utf-8")
    code, out, _ = run(capsys, "--model", str(path))
    assert code == 0 and "Nothing wrong found." not in out
    assert out.splitlines()[1] == ("Nothing wrong found in the parts that ran. Skipped: row accounting against the "
                                   "tokenizer, reachability, under-trained tokens.")


def test_without_a_tokenizer_the_input_norm_is_said_of_the_token_table(tmp_path, capsys):
    table, head = tables()
    folder = save_untied(tmp_path / "bare", table, head, tokenizer=None)
    code, out, _ = run(capsys, "--model", str(folder))
    assert code == 0 and "Indicator (Land & Bartolo 2024): L2 norm of each row, measured on the token table." in out
    assert f"over {ROWS} rows, all of them (no vocabulary)" in out and "every row" not in out


@pytest.mark.parametrize("argv, code, line", [
    (["--unused", "999"], 1, "embedlab audit: error: --unused 999: expected ids in [0, V = 520)\n"),
    (["--percentile", "101"], 2, "--percentile: expected a percentile from 0 to 100, got '101'"),
    (["--unused", "5-3"], 2, "--unused: '5-3': expected comma-separated ids and ranges"),
    # never listed id by id: 10^11 ids once took all memory, then a traceback
    (["--unused=1-99999999999"], 2, "--unused: '1-99999999999': 99999999999 is past the largest token id a model can "
                                    f"have, {2**31 - 1:,} (2^31 - 1)"),
    (["--unused", "3,1-200000000"], 1, "embedlab audit: error: --unused 1-200000000: expected ids in [0, V = 520)\n"),
])
def test_bad_input_is_one_line(model, capsys, argv, code, line):
    if code == 2:
        with pytest.raises(SystemExit) as exit_:
            main(["audit", "--model", str(model), *argv])
        assert exit_.value.code == 2 and line in capsys.readouterr().err
        return
    got, out, err = run(capsys, "--model", str(model), *argv)
    assert (got, out, err) == (code, "", line)


def test_a_figure_with_nothing_to_draw_is_one_line_naming_the_flag(tmp_path, capsys):
    from audit_models import save_tied

    folder = save_tied(tmp_path / "tied", trained_rows(64, 9), word_tokenizer([*SPECIALS, *(f"w{i}" for i in range(3, 64))]))
    code, out, err = run(capsys, "--model", str(folder), "--plot", str(tmp_path / "a.png"))
    assert code == 1 and out == "" and err.startswith("embedlab audit: error: --unused is missing: expected the ids of "
                                                      "tokens known to be unused, to draw the under-trained indicator: "
                                                      "no reference rows")
    assert "unused=" not in err  # the flag, not the Python parameter
    assert err.count("\n") == 1 and not (tmp_path / "a.png").exists()
    code, out, _ = run(capsys, "--model", str(folder), "--unused", "60")
    assert code == 0 and "Reference rows: 1 (ids given: 1)." in out and "1 rows" not in out


def test_a_memory_error_while_parsing_is_one_line(monkeypatch, capsys):
    # Something other than argparse's own exit raised while the arguments are parsed: there are no arguments
    # yet to name the command from; once a traceback ('NoneType' object has no attribute 'command').
    from embedlab.cli import audit as cli_audit

    def exhausted(text):
        raise MemoryError

    monkeypatch.setattr(cli_audit, "id_list", exhausted)
    code, out, err = run(capsys, "--unused", "1-5")
    assert (code, out, err) == (1, "", "embedlab: error: not enough memory for this size; try smaller sizes\n")


def test_the_markdown_ends_with_the_run_record_and_shows_small_values_as_the_terminal(model, tmp_path, capsys):
    path = tmp_path / "audit.md"
    code, out, _ = run(capsys, "--model", str(model), "--markdown", str(path), "--lang", "en")
    text = path.read_text(encoding="utf-8")
    last = text.rstrip("\n").splitlines()[-1]
    assert code == 0 and last.startswith(f"Written by embedlab {embedlab.__version__} on ")
    assert "with `embedlab audit --model " in last and " --markdown " in last and last.endswith(" --lang en`")
    assert str(tmp_path) not in last  # as the lab report's: no absolute local path
    # every candidate's indicators as the terminal shows them: a cosine of 1e-05 is not 0.0000
    terminal = {line.split()[0]: line.split()[-3:] for line in out.splitlines()
                if re.match(r"^1\d\d +'", line)}
    markdown = {cells[0]: cells[-3:] for line in text.splitlines() if line.startswith("| 1")
                for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert terminal and all(markdown[i] == values for i, values in terminal.items())
    assert "0.0000" not in {v for values in markdown.values() for v in values}


@pytest.mark.parametrize("flag, name", [("--markdown", "a.md"), ("--plot", "a.png")])
def test_an_output_that_cannot_be_written_is_refused_before_the_audit(model, tmp_path, capsys, monkeypatch, flag, name):
    (tmp_path / name).mkdir()  # a folder where the file goes

    def audited(*args, **kwargs):
        raise AssertionError("the audit ran before its output was checked")

    monkeypatch.setattr("embedlab.api.audit", audited)
    code, out, err = run(capsys, "--model", str(model), flag, str(tmp_path / name))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "it is a folder, expected a file name" in err
