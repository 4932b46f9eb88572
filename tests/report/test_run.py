"""The run record: embedlab's version, the date and the command, in the JSON and the Markdown.

Oracles: hand-written expectations; ``datetime`` for the dates; ``json`` for the JSON text.
"""

from __future__ import annotations

import datetime
import json
import string

import pytest

import embedlab
from embedlab import embed
from embedlab.measure import lab
from embedlab.report import formats, lab as lab_report, run
from embedlab.report.locales import WORDS


# -- the date --------------------------------------------------------------------------

def test_date_is_iso_8601_utc_to_the_second():
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    date = run.report_date()
    after = datetime.datetime.now(datetime.timezone.utc)
    parsed = datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert before <= parsed <= after


def test_source_date_epoch_fixes_the_date(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1789000000")
    expected = datetime.datetime.fromtimestamp(1789000000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert run.report_date() == expected == run.record().date
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH='yesterday'"):
        run.report_date()


def test_a_given_date_wins_and_a_naive_one_is_utc(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert run.report_date("2026-09-17T08:00:00Z") == "2026-09-17T08:00:00Z"
    assert run.report_date(datetime.datetime(2026, 9, 17, 8, 0, 0, 999)) == "2026-09-17T08:00:00Z"


# -- the command -------------------------------------------------------------------------

def test_command_line_quotes_and_shows_paths_relative(tmp_path):
    argv = ["embedlab", "report", "--model", str(tmp_path / "models" / "t.npy"), "--words", "/elsewhere/w.txt",
            "--probe", "a b", f"--out={tmp_path / 'out'}"]
    assert run.command_line(argv, cwd=tmp_path) == ("embedlab report --model models/t.npy --words w.txt "
                                                     "--probe 'a b' --out=out")


def test_the_python_api_records_its_call():
    assert embedlab.report().run.command == "embedlab.report()"
    r = embedlab.report("seed", probe=3, k=2, growth_factor=3)
    assert r.run.command == "embedlab.report(probe=3, k=2, growth_factor=3)"
    assert r.run.version == embedlab.__version__
    assert embedlab.report(embed.make_table(8, 2, 1), probe=1).run.command is None  # rows: no literal form


# -- the run record in the JSON and the Markdown -------------------------------------------

RUN = run.Run(version="9.9.9", date="2026-09-17T08:00:00Z", command="embedlab report --out out")


@pytest.fixture(scope="module")
def result() -> lab.LabResult:
    from dataclasses import replace

    measured = lab.measure(lab.ReferenceBackend(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED)),
                           lab.LabSettings(), seed=embed.SEED)
    return replace(measured, run=RUN)


def test_json_adds_run_after_the_contract_keys(result):
    data = json.loads(formats.to_json(result))
    assert list(data) == [*lab.REPORT_KEYS, "run"]  # the contract's keys unchanged, in order; run added
    assert data["run"] == {"version": "9.9.9", "date": "2026-09-17T08:00:00Z", "command": "embedlab report --out out"}


@pytest.mark.parametrize("lang", list(WORDS))
def test_markdown_ends_with_the_run_line(result, lang):
    md = lab_report.report_markdown(result, lang)
    assert md.count("\n## ") == 5
    last = md.rstrip("\n").splitlines()[-1]
    assert "9.9.9" in last and "2026-09-17T08:00:00Z" in last and "`embedlab report --out out`" in last
    assert md.rstrip("\n").splitlines()[-3] == "---"


def test_markdown_without_a_command_says_version_and_date():
    from dataclasses import replace

    rows = embed.make_table(16, 4, 1)
    result = replace(lab.measure(lab.ReferenceBackend(rows), lab.LabSettings(probe=3)), run=replace(RUN, command=None))
    last = lab_report.report_markdown(result, "en").rstrip("\n").splitlines()[-1]
    assert last == "Written by embedlab 9.9.9 on 2026-09-17T08:00:00Z (UTC)."


def test_alt_and_run_words_share_fields_in_every_language():
    def fields(text):
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}

    base = WORDS["en"]
    for lang, words in WORDS.items():
        assert [fields(t) for t in words["run"]] == [fields(t) for t in base["run"]], lang
        assert words["alt"].keys() == base["alt"].keys(), lang
        assert words["alt"]["groups"].keys() == base["alt"]["groups"].keys(), lang
        for key, text in words["alt"].items():
            if isinstance(text, str):
                assert fields(text) == fields(base["alt"][key]), (lang, key)
