"""Renderers: the report's JSON keys, the Markdown's five sections in four
languages, terminal tables, atomic writes."""

from __future__ import annotations

import json
import re
import string

import pytest

from embedlab import embed
from embedlab.measure import lab
from embedlab.report import files, formats, lab as lab_report, views
from embedlab.report.locales import LANGUAGES, WORDS

KOREAN_HEADINGS = [
    "## 무엇을 쟀나",
    "## 조회와 원-핫 곱은 같은 연산이다",
    "## 가중치를 묶으면 무엇이 줄어드나",
    "## 내적과 코사인이 갈리는 자리",
    "## √d 를 곱하면 무엇이 달라지나",
]


@pytest.fixture(scope="module")
def result() -> lab.LabResult:
    rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)
    return lab.measure(lab.ReferenceBackend(rows), lab.LabSettings(), seed=embed.SEED)


def _sections(markdown: str) -> list[tuple[str, str]]:
    parts = re.split(r"^(## .*)$", markdown, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def test_json_has_exactly_the_report_keys(result):
    data = json.loads(formats.to_json(result))
    assert list(data) == list(lab.REPORT_KEYS)
    assert data["cos_neighbors"] == result.cos_neighbors
    assert data["table_shape"] == [512, 64]


def test_korean_markdown_has_the_five_headings_in_order(result):
    md = lab_report.report_markdown(result, "ko")
    assert re.findall(r"^## .*$", md, flags=re.M) == KOREAN_HEADINGS
    assert lab_report.report_markdown(result) == md  # Korean is the default


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_language_shows_every_number_in_its_section(result, lang):
    md = lab_report.report_markdown(result, lang)
    sections = _sections(md)
    assert [h for h, _ in sections] == [f"## {h}" for h in WORDS[lang]["headings"]]
    for (heading, body), keys in zip(sections, [section.keys for section in lab_report.SECTIONS]):
        prose = body.split("\n|")[0]
        assert prose.strip(), heading
        for key in keys:
            assert f"`{key}`" in body, (lang, key)
    neighbours = sections[3][1].split("\n|")[0]
    for token_id in result.cos_neighbors + result.dot_neighbors + result.dot_after_stretch:
        assert str(token_id) in neighbours


def test_locales_share_keys_and_fields():
    def fields(text):
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}

    base = WORDS["en"]
    for lang, words in WORDS.items():
        assert words.keys() == base.keys(), lang
        assert len(words["headings"]) == 5
        for key, text in words.items():
            if isinstance(text, str):
                assert fields(text) == fields(base[key]), (lang, key)
            else:
                assert len(text) == len(base[key]), (lang, key)


def test_unknown_language(result):
    with pytest.raises(ValueError, match="'fr'"):
        lab_report.report_markdown(result, "fr")


def test_tokens_with_pipes_and_backticks_stay_in_their_cell():
    # A code span's pipe is escaped where the span sits in a table row (in prose a backslash would show).
    assert formats.MARKDOWN.code("a|b") == "`a|b`"
    assert formats.markdown_row([formats.MARKDOWN.code("a|b"), "x"]) == "| `a\\|b` | x |"
    assert formats.MARKDOWN.code("`") == "`` ` ``"


def test_terminal_table_aligns_columns():
    text = formats.terminal_table([("a", 1), ("bbb", 22)], headers=("name", "n"))
    assert text.splitlines() == ["name  n", "----  --", "a     1", "bbb   22"]


def test_write_atomic_writes_all_files(tmp_path):
    written = files.write_atomic({tmp_path / "a.txt": "one", tmp_path / "sub" / "b.txt": "two"})
    assert [p.read_text(encoding="utf-8") for p in written] == ["one", "two"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.txt", "sub"]


def test_write_atomic_leaves_nothing_when_one_file_fails(tmp_path):
    (tmp_path / "old.txt").write_text("kept", encoding="utf-8")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is needed", encoding="utf-8")
    with pytest.raises(OSError):
        files.write_atomic({tmp_path / "old.txt": "new", blocker / "b.txt": "two"})
    assert (tmp_path / "old.txt").read_text(encoding="utf-8") == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "old.txt"]


def test_number_formats():
    assert formats.number(True) == "true"
    assert formats.number(None) == "-"
    assert formats.number(32768) == "32768"
    assert formats.number(0.1 + 0.2) == "0.3"


@pytest.mark.parametrize("x, places, sign, text", [
    (1.5461, 3, False, "1.546"),  # ordinary values print as before
    (0.001, 3, False, "0.001"),
    (-0.0308, 4, True, "-0.0308"),
    (0.8510, 4, True, "+0.8510"),
    (999999.0, 3, False, "999999.000"),
    (0.0, 3, False, "0.000"),  # a true zero stays a zero
    (1e-200, 3, False, "1.00e-200"),  # nonzero below 1e-3: scientific, never 0.000
    (-0.0004, 4, True, "-4.00e-04"),
    (0.0004, 4, True, "+4.00e-04"),
    (1e6, 3, False, "1.00e+06"),  # at least 1e6: scientific, not 1000000.000
    (float("nan"), 3, False, "nan"),
    (float("inf"), 3, False, "inf"),
])
def test_fixed_decimals_switch_to_scientific_outside_1e_3_to_1e6(x, places, sign, text):
    assert formats.fixed(x, places, sign=sign) == text


def test_write_atomic_checks_every_target_first(tmp_path):
    (tmp_path / "a.json").write_text("old", encoding="utf-8")
    (tmp_path / "b.md").mkdir()
    with pytest.raises(IsADirectoryError, match="b.md"):
        files.write_atomic({tmp_path / "a.json": "new", tmp_path / "b.md": "x"})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == "old"
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        files.write_atomic({tmp_path / "file" / "sub" / "x.txt": "x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.md", "file"]


def test_write_atomic_removes_temporaries_when_a_rename_fails(tmp_path, monkeypatch):
    import os

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        files.write_atomic({tmp_path / "a.txt": "one"})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_second_rename_leaves_both_old_files(tmp_path, monkeypatch, failure):
    import os

    (tmp_path / "embed_report.json").write_text("old json", encoding="utf-8")
    (tmp_path / "embed_report.md").write_text("old md", encoding="utf-8")
    real_replace, calls = os.replace, []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise failure
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(type(failure)):
        files.write_atomic({tmp_path / "embed_report.json": "new json", tmp_path / "embed_report.md": "new md"})
    monkeypatch.setattr(os, "replace", real_replace)
    assert (tmp_path / "embed_report.json").read_text(encoding="utf-8") == "old json"
    assert (tmp_path / "embed_report.md").read_text(encoding="utf-8") == "old md"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embed_report.json", "embed_report.md"]


def test_a_failed_second_rename_removes_a_first_file_that_was_new(tmp_path, monkeypatch):
    import os

    real_replace, calls = os.replace, []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(OSError, match="disk full"):
        files.write_atomic({tmp_path / "a.json": "new", tmp_path / "b.md": "new"})
    assert list(tmp_path.iterdir()) == []


def _refuse_temporaries(monkeypatch):
    """A read-only folder, as seen by mkstemp: root may write where chmod forbids, so simulate it."""
    import errno
    import tempfile

    def refuse(dir, prefix, suffix):  # noqa: A002 - mkstemp's own parameter name
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/{prefix}aadh2cz5{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)


def test_write_atomic_names_the_file_and_folder_not_the_temporary(tmp_path, monkeypatch):
    import errno

    (tmp_path / "ro").mkdir()
    _refuse_temporaries(monkeypatch)
    target = tmp_path / "ro" / "embed_report.json"
    with pytest.raises(PermissionError) as caught:
        files.write_atomic({target: "{}"})
    assert str(caught.value) == f"cannot write '{target}': permission denied in folder '{tmp_path / 'ro'}'"
    assert caught.value.errno == errno.EACCES and isinstance(caught.value, OSError)
    assert list((tmp_path / "ro").iterdir()) == []


def test_write_atomic_names_the_folder_it_could_not_create(tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    def refuse(self, parents=False, exist_ok=False):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    target = tmp_path / "sub" / "a.txt"
    with pytest.raises(PermissionError) as caught:
        files.write_atomic({target: "x"})
    assert str(caught.value) == f"cannot write '{target}': permission denied creating folder '{tmp_path / 'sub'}'"


def test_write_atomic_into_a_read_only_folder(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders; the simulated case covers this")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    with pytest.raises(PermissionError, match=r"^cannot write '.*embed_report.md': permission denied in folder"):
        files.write_atomic({ro / "embed_report.md": "x"})
    assert list(ro.iterdir()) == []


def test_written_files_have_the_usual_permissions(tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        (path,) = files.write_atomic({tmp_path / "a.txt": "one"})
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644


def test_vector_columns_use_the_fixed_rule():
    ordinary = {"first": [-0.018, 0.047, 0.001], "norm": 1.5461}
    assert views._vector(ordinary) == "[-0.018 +0.047 +0.001 ...] |1.546|"  # as before
    extreme = {"first": [1e-200, -3e200, -0.0004], "norm": 3e200}
    assert views._vector(extreme) == "[+1.00e-200 -3.00e+200 -4.00e-04 ...] |3.00e+200|"


@pytest.mark.parametrize("n, text", [
    (999, "999"), (1000, "1K"), (999_499, "999.5K"),
    (999_999, "1M"),  # 999.999K rounds to 1000K: shown as 1M
    (11_720_448, "11.72M"), (999_999_999, "1B"), (10**12, "1T"), (10**13, "10T"),
    (999_999_999_999_999, "1e+15"), (10**18, "1e+18"), (-999_999, "-1M"),
])
def test_human_count_moves_up_a_unit_when_rounding_reaches_1000(n, text):
    assert formats.human_count(n) == text


@pytest.mark.parametrize("n, text", [
    (1023, "1023 B"), (1024, "1 KiB"), (1000 * 1024, "1000 KiB"),
    (1024**2 - 1, "1 MiB"),  # 1023.999 KiB rounds to 1024 KiB: shown as 1 MiB
    (46_881_792, "44.71 MiB"), (1024**4, "1 TiB"),
    (1024**5, "1.126e+15 B"), (10**18, "1e+18 B"),
])
def test_human_bytes_moves_up_a_unit_when_rounding_reaches_1024(n, text):
    assert formats.human_bytes(n) == text


# -- the report says what happened, and is written from one list of sections ----------------

def test_the_sections_show_every_report_key_exactly_once():
    shown = [key for section in lab_report.SECTIONS for key in section.keys]
    assert sorted(shown) == sorted(lab.REPORT_KEYS) and len(shown) == len(set(shown))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_stretch_that_moves_nothing_is_not_said_to_show_anything(lang):
    # Factor 1 leaves the table as it is, so both lists must stay (independent of the code under test).
    still = lab.measure(embed.make_table(50, 6, 4), lab.LabSettings(probe=3, stretch_factor=1.0))
    assert (still.cos_after_stretch, still.dot_after_stretch) == (still.cos_neighbors, still.dot_neighbors)
    moved = lab.measure(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED), lab.LabSettings())
    assert moved.dot_after_stretch != moved.dot_neighbors  # the seed report's stretch moves row 276 up
    unchanged, changed = WORDS[lang]["stretched"][1].split("{")[0], WORDS[lang]["stretched"][0].split("{")[0]
    still_md, moved_md = lab_report.report_markdown(still, lang), lab_report.report_markdown(moved, lang)
    assert unchanged in still_md and changed not in still_md.replace(unchanged, "")
    assert changed in moved_md and unchanged not in moved_md.replace(changed, "")


@pytest.mark.parametrize("with_wcwidth", [True, False])
def test_terminal_table_aligns_wide_and_combining_characters(monkeypatch, with_wcwidth):
    import builtins

    if with_wcwidth:
        pytest.importorskip("wcwidth")
    else:
        real = builtins.__import__

        def no_wcwidth(name, *args, **kwargs):
            if name == "wcwidth":
                raise ImportError("No module named 'wcwidth'")
            return real(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_wcwidth)
    # '王様' takes 4 terminal cells (East Asian Wide), 'cafe\u0301' 4 (the accent combines): counted by hand.
    text = formats.terminal_table([("王様", 1), ("cafe\u0301", 2), ("ab", 3)], headers=("tok", "n"))
    assert text.splitlines() == ["tok   n", "----  -", "王様  1", "cafe\u0301  2", "ab    3"]
