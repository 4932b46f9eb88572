"""Sizes that cost without limit, and output paths: issue 19, item 5 (neighbors) and item 7.

- ``neighbors`` writes the lists of many queries as they come, a block of queries at a
  time: the JSON is one document equal to the lists of a float64 full sort
  (``tests/full_sort.py``), the text is the full result's, and memory stays flat where
  holding every list took hundreds of megabytes;
- ``--k`` beyond the table is blamed on ``--k``, not on ``--memory``;
- every ``--out`` (and ``compress --plot``) is checked before any work: one line naming
  the path as typed, nothing computed, nothing created; ``a/../b`` makes no ``a``.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from embedlab import api, cli
from embedlab.measure import neighbors as neighbors_measure
from embedlab.report import files, formats, views
from full_sort import full_sort


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, command: str) -> str:
    assert err.count("\n") == 1 and err.startswith(f"embedlab {command}: error: "), err
    return err


# -- --k is checked before the budget ---------------------------------------------------------

@pytest.fixture
def two_rows(tmp_path):
    np.save(tmp_path / "two.npy", np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    (tmp_path / "two.txt").write_text("a\nb\n", encoding="utf-8")
    np.save(tmp_path / "q.npy", np.array([[1.0, 0.5]]))
    return tmp_path


@pytest.mark.parametrize("command, extra, bound", [
    ("neighbors", ["a"], "1 (V-1: the query itself is left out)"),
    ("neighbors", ["--vector", "{q}"], "2 (V)"),
    ("hubs", [], "1 (V-1: the query itself is left out)"),
])
def test_a_huge_k_on_a_two_row_table_names_k_not_memory(capsys, two_rows, command, extra, bound):
    extra = [a.format(q=two_rows / "q.npy") for a in extra]
    code, out, err = run(capsys, command, "--model", str(two_rows / "two.npy"), "--words", str(two_rows / "two.txt"),
                         *extra, "--k", "1000000000")
    assert (code, out) == (1, "")
    assert one_line(err, command).endswith(f"--k 1000000000: expected an int from 1 to {bound}\n")
    assert "--memory" not in err


# -- neighbors streams its lists -----------------------------------------------------------------

@pytest.fixture
def integer_table(tmp_path):
    """V = 40 rows of small integers (every float64 score exact, many ties), a vocabulary with one repeated
    token, and 25 integer query vectors, one of them zero."""
    rng = np.random.default_rng(19)
    W = rng.integers(-3, 4, size=(40, 3)).astype(np.float32)  # (V, D)
    words = [f"w{i}" for i in range(40)]
    words[17] = "w3"  # a repeated token: a note, written after the lists
    Q = rng.integers(-3, 4, size=(25, 3)).astype(np.float64)  # (N, D)
    Q[4] = 0.0
    np.save(tmp_path / "W.npy", W)
    (tmp_path / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    np.save(tmp_path / "Q.npy", Q)
    return tmp_path, W, Q


def small_blocks(monkeypatch):
    """One query per block at k = 5: every boundary between blocks is crossed."""
    monkeypatch.setattr(neighbors_measure, "BLOCK_ENTRIES", 7)


def test_streamed_json_is_one_document_equal_to_the_full_sort(capsys, monkeypatch, integer_table):
    folder, W, Q = integer_table
    small_blocks(monkeypatch)
    ids = [0, 3, 39, 21]
    code, out, err = run(capsys, "neighbors", "--model", str(folder / "W.npy"), "--words", str(folder / "words.txt"),
                         *(f"id:{i}" for i in ids), "--vector", str(folder / "Q.npy"), "--k", "5", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert (data["k"], data["metrics"]) == (5, ["cosine", "dot"])
    assert [q["query"] for q in data["queries"]] == [f"id:{i}" for i in ids] + [f"vector {n}" for n in range(len(Q))]
    norms = np.linalg.norm(W.astype(np.float64), axis=1)  # (V,)
    for metric in ("cosine", "dot"):
        by_id = full_sort(W, W[ids], 5, metric, exclude=np.array(ids))
        by_vector = full_sort(W, Q, 5, metric)
        expected_ids = np.concatenate([by_id[0], by_vector[0]])  # (N, K)
        expected_scores = np.concatenate([by_id[1], by_vector[1]])
        for q, want_ids, want_scores in zip(data["queries"], expected_ids, expected_scores):
            got = q["lists"][metric]
            assert [row["id"] for row in got] == want_ids.tolist()
            assert [row["score"] for row in got] == pytest.approx(want_scores.tolist(), rel=1e-12, abs=1e-15)
            assert [row["norm"] for row in got] == pytest.approx(norms[want_ids].tolist(), rel=1e-12)
    assert [q["norm"] for q in data["queries"][len(ids):]] == pytest.approx(np.linalg.norm(Q, axis=1).tolist())
    assert any("'w3' is repeated" in note for note in data["notes"])


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_streamed_text_is_the_text_of_the_whole_result(capsys, monkeypatch, integer_table, json_flag):
    folder, _, _ = integer_table
    argv = ["neighbors", "--model", str(folder / "W.npy"), "--words", str(folder / "words.txt"), "w3", "id:7",
            "--vector", str(folder / "Q.npy"), "--k", "5", "--memory", "1M", *json_flag]
    result = api.neighbors(str(folder / "W.npy"), ["w3", "id:7"], k=5, vectors=str(folder / "Q.npy"), memory=2**20,
                           words=str(folder / "words.txt"))
    whole = formats.to_json(result) if json_flag else views.neighbors_terminal(result, memory=True)
    small_blocks(monkeypatch)
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert out == whole


def test_json_pieces_are_the_json_of_the_whole_document():
    hostile = '\n  "queries": [\n    null\n  ]'  # JSON escapes it: it cannot be taken for the list
    document = {"k": 2, "source": {"name": hostile}, "queries": [], "notes": [hostile], "empty": {}}
    for items in ([], [{"a": [1, {"b": []}]}, "x", None], [[]]):
        pieces = list(formats.to_json_chunks(lambda: document, "queries", iter(items)))
        assert "".join(pieces) == json.dumps({**document, "queries": items}, ensure_ascii=False, indent=2) + "\n"
        assert len(pieces) == len(items) + 2  # the head, each item, the tail


def test_a_bad_vector_in_a_later_block_is_refused_before_any_list(capsys, monkeypatch, integer_table):
    folder, _, Q = integer_table
    Q = Q.copy()
    Q[20, 1] = np.nan
    np.save(folder / "bad.npy", Q)
    small_blocks(monkeypatch)
    code, out, err = run(capsys, "neighbors", "--model", str(folder / "W.npy"), "--vector", str(folder / "bad.npy"),
                         "--k", "5", "--json")
    assert (code, out) == (1, "")
    assert "query vector 20 contains NaN" in one_line(err, "neighbors")


# The child's own peak resident memory, KiB: VmHWM, which exec starts afresh. (ru_maxrss keeps the peak of the
# process before exec, which for a child of a large pytest process is pytest's size.)
PRINT_PEAK = ("print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')), "
              "file=sys.stderr)")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_many_lists_stream_in_flat_memory(tmp_path):
    """2,000 queries x 7 neighbours x 2 metrics of 4,000-character tokens are 116 MB of JSON: holding the lists
    and their text took 300 MB; written as they come, the process stays near its size at rest (47 MB)."""
    rng = np.random.default_rng(7)
    np.save(tmp_path / "W.npy", rng.integers(-3, 4, size=(16, 2)).astype(np.float32))
    (tmp_path / "words.txt").write_text("".join(f"{i:02d}" + "x" * 4000 + "\n" for i in range(16)), encoding="utf-8")
    np.save(tmp_path / "Q.npy", rng.integers(-3, 4, size=(2000, 2)).astype(np.float64))  # 2,000 queries of a 16-row table: the float screen
    code = "import sys; from embedlab.cli import main; code = main(sys.argv[1:]); " + PRINT_PEAK + "; sys.exit(code)"
    argv = ["neighbors", "--model", str(tmp_path / "W.npy"), "--words", str(tmp_path / "words.txt"),
            "--vector", str(tmp_path / "Q.npy"), "--k", "7", "--json"]
    done = subprocess.run([sys.executable, "-c", code, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak_mib = int(done.stderr.split()[-1]) / 1024
    assert peak_mib < 150, peak_mib


# -- output paths: checked first, one line, nothing created ----------------------------------------

# command -> (argv with {out}, the flag's value for a file where a folder should be: the path as typed)
COMMANDS = {
    "report": ["report", "--out", "{out}"],
    "export": ["export", "--format", "projector", "--out", "{out}"],
    "plot": ["plot", "norms", "--out", "{out}", "--quiet"],
    "projector": ["projector", "--out", "{out}"],
    "graph": ["graph", "--out", "{out}"],
    "compress": ["compress", "--plot", "{out}", "--quiet"],
}
FOLDER_OUTPUT = {"report": "embed_report.json", "export": "vectors.tsv"}  # --out is a folder: the first file in it
FILE_NAMES = {"plot": "x.png", "projector": "x.html", "graph": "x.parquet", "compress": "x.png"}
SAID_AS = {"plot": "plot norms"}  # how a message starts: "embedlab plot norms: error: ..."


@pytest.fixture
def nothing_computed(monkeypatch):
    """Every command's work fails loudly (not a user error: a traceback) if it starts."""
    from embedlab import figures, sources

    def computed(*args, **kwargs):
        raise AssertionError("the command computed before checking its output path")

    for owner, name in ((api, "report"), (api, "compress"), (api, "_table"), (figures, "plot"), (sources, "load")):
        monkeypatch.setattr(owner, name, computed)


def _argv(command: str, out: str) -> list[str]:
    return [a.format(out=out) for a in COMMANDS[command]]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_folder_where_a_file_goes(capsys, monkeypatch, tmp_path, nothing_computed, command):
    monkeypatch.chdir(tmp_path)
    if command in FOLDER_OUTPUT:
        out, blocked = "out", f"out/{FOLDER_OUTPUT[command]}"
    else:
        out = blocked = FILE_NAMES[command]
    (tmp_path / blocked).mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, stdout, err = run(capsys, *_argv(command, out))
    assert (code, stdout) == (1, "")
    said = SAID_AS.get(command, command)
    assert one_line(err, said) == f"embedlab {said}: error: cannot write {blocked!r}: it is a folder, expected a file name\n"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_file_where_a_folder_goes(capsys, monkeypatch, tmp_path, nothing_computed, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder", encoding="utf-8")
    out = "afile" if command in FOLDER_OUTPUT else f"afile/{FILE_NAMES[command]}"
    target = f"afile/{FOLDER_OUTPUT[command]}" if command in FOLDER_OUTPUT else out
    code, stdout, err = run(capsys, *_argv(command, out))
    assert (code, stdout) == (1, "")
    assert one_line(err, SAID_AS.get(command, command)).endswith(
        f"error: cannot write {target!r}: 'afile' is a file, not a folder\n")
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_folder_that_may_not_be_written_in(capsys, monkeypatch, tmp_path, nothing_computed, command):
    """Root writes where chmod forbids, so the folder's refusal is simulated where files are created."""
    def refuse(dir=None, prefix=None, suffix=None):  # noqa: A002 - mkstemp's own parameter name
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/{prefix}aadh2cz5{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ro").mkdir()
    out = "ro/out" if command in FOLDER_OUTPUT else f"ro/{FILE_NAMES[command]}"
    target = f"ro/out/{FOLDER_OUTPUT[command]}" if command in FOLDER_OUTPUT else out
    code, stdout, err = run(capsys, *_argv(command, out))
    assert (code, stdout) == (1, "")
    assert one_line(err, SAID_AS.get(command, command)).endswith(
        f"error: cannot write {target!r}: permission denied in folder 'ro'\n")
    assert "aadh2cz5" not in err  # never the temporary's name
    assert list((tmp_path / "ro").iterdir()) == []


def test_out_through_a_folder_that_does_not_exist_makes_no_empty_folder(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "report", "--out", "a/../b")
    assert (code, err) == (0, "")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "b", "b/embed_report.json", "b/embed_report.md"]


def test_a_failed_write_removes_the_folders_it_made(monkeypatch, tmp_path):
    import os

    def refuse(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match=r"^cannot write '.*new/deeper/x.txt': no space left on device in folder"):
        files.write_atomic({tmp_path / "new" / "deeper" / "x.txt": "x", tmp_path / "y.txt": "y"})
    assert list(tmp_path.iterdir()) == []


def test_check_writable_creates_nothing(tmp_path):
    files.check_writable([tmp_path / "a" / "b" / "x.png", tmp_path / "y.html"])
    assert list(tmp_path.iterdir()) == []


def test_a_long_call_shows_a_status_line_on_a_terminal_and_erases_it(monkeypatch):
    """``arguments.working``: on a terminal, ``desc: N s`` from ``after`` seconds on, erased at the end; else nothing."""
    import io
    import time

    from embedlab.cli import arguments

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        with arguments.working("embedlab report", after=0.05, every=0.05):
            time.sleep(0.3)
        text = stream.getvalue()
        if shown:
            assert text.startswith("\rembedlab report: 0 s") and text.endswith("\r\033[K")
        else:
            assert text == ""


def test_a_reader_that_leaves_early_is_no_error(tmp_path):
    """``embedlab neighbors ... | head -1``: the reader closes the pipe; the command ends with 0 and says nothing
    (it printed "error: [Errno 32] Broken pipe" and exited 1)."""
    np.save(tmp_path / "W.npy", np.random.default_rng(2).standard_normal((50, 4)).astype(np.float32))
    ids = [str(i) for i in range(50)]
    process = subprocess.Popen([sys.executable, "-m", "embedlab", "neighbors", "--model", str(tmp_path / "W.npy"),
                                *ids, "--k", "40"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.read(10)
    process.stdout.close()  # the reader leaves with most of the output unread (more than a pipe's buffer)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0 and err == b"", err
