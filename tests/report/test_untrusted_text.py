"""Text from model files, escaped for each medium it is written to: terminal, Markdown, JSON.

Tokens, tensor names and metadata are written by strangers. The oracles are outside
embedlab (tests/hostile_text.py): the characters that act instead of being shown, as
the issue lists them, shown as Python's ``repr`` writes them; Markdown rendered by
markdown-it-py and read back with ``html.parser``; JSON read back with ``json.loads``.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from embedlab.report import formats
from hostile_text import ACTING, HOSTILE, Elements, acting, markdown_it, render, visible


def odd_backslashes_before_a_pipe(text: str) -> bool:
    """Whether ``text`` has a pipe right after an odd run of backslashes: in a GFM table cell no escape
    keeps both (``markdown_row`` shows one backslash fewer there)."""
    return any(len(run) % 2 for run in re.findall(r"(\\+)\|", text))


TEXTS = st.text(alphabet=st.sampled_from([*"ab `|\\<>&*_[]()#-+=.1!~:\"'{}", "\r", "\n", "\x1b", "\x00", "\x9b",
                                          "\x85", "\u202e", "\u2028", "\u2066", "\x7f", "\t", "\u200b", "王"]),
                max_size=12)


@pytest.mark.parametrize("token", HOSTILE)
def test_a_code_span_in_prose_shows_the_token_with_its_controls_as_escapes(token):
    page = render(f"before {formats.MARKDOWN.code(token)} after\n")
    assert page.tags == [("p", ()), ("code", ())]
    assert page.codes == [visible(token)]


@pytest.mark.parametrize("token", HOSTILE)
def test_a_code_span_in_a_table_row_stays_in_its_cell(token):
    row = formats.markdown_row([formats.MARKDOWN.code("k"), formats.MARKDOWN.code(token)])
    rows = ["| key | value |", "|---|---|", row, formats.markdown_row(["next", "row"])]
    page = render("\n".join(rows) + "\n")
    assert [tag for tag, _ in page.tags] == ["table", "thead", "tr", "th", "th", "tbody", "tr", "td", "code", "td",
                                             "code", "tr", "td", "td"]
    assert page.codes == ["k", visible(token)]
    assert page.cells[-2:] == ["next", "row"]


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_text_never_becomes_markup(text):
    page = render(f"> - {formats.MARKDOWN.text(text)}\n")  # where the report's notes stand: a list item at a line start
    assert page.tags == [("blockquote", ()), ("ul", ()), ("li", ())]
    body = markdown_it.MarkdownIt("commonmark").render(f"x {formats.MARKDOWN.text(text)} y\n")
    assert Elements(body).tags == [("p", ())]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_any_token_round_trips_through_a_code_span_in_prose_and_in_a_table(token):
    assert render(f"a {formats.MARKDOWN.code(token)} b\n").codes == [visible(token) or "''"]
    row = formats.markdown_row([formats.MARKDOWN.code(token), formats.MARKDOWN.text(token)])
    page = render(f"| c | t |\n|---|---|\n{row}\n")
    assert [tag for tag, _ in page.tags][-4:] == ["tr", "td", "code", "td"]  # one row of two cells, one code span
    if not odd_backslashes_before_a_pipe(visible(token)):
        assert page.codes == [visible(token) or "''"]


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_any_text_is_shown_as_it_is(text):
    page = render(f"x {formats.MARKDOWN.text(text)} y\n")
    assert [tag for tag, _ in page.tags] == ["p"]
    assert page.text == f"x {visible(text)} y\n"


def test_terminal_text_escapes_every_acting_character_but_the_newline():
    every = "".join(sorted(ACTING))
    shown = formats.terminal_text(every)
    assert shown == "".join("\n" if ch == "\n" else repr(ch)[1:-1] for ch in every)
    assert formats.terminal_text("a\nb", newlines=False) == "a\\nb"
    assert formats.terminal_text(shown) == shown  # a second pass changes nothing


def test_terminal_text_leaves_ordinary_text_as_it_is():
    text = "king (2332)  0.8611  王様 ##s 'quote' \\ back é e\u0301 \u3000 ✓\n"
    assert formats.terminal_text(text) == text


def test_terminal_tables_escape_their_cells_and_stay_aligned():
    table = formats.terminal_table([("\x1b[2J", 1), ("ab", 2)], ("tok", "n"))
    assert table.splitlines() == ["tok      n", "-------  -", "\\x1b[2J  1", "ab       2"]


def test_a_long_token_is_cut_in_a_table_cell_and_says_its_length():
    label = formats.row_label("x" * 100_000, 7)
    assert label == "x" * 60 + "… (100,000 characters) (7)"
    assert formats.TERMINAL.code("y" * 100_000) == "'" + "y" * 60 + "…' (100,000 characters)"
    assert formats.cut_text("z" * 61) == "z" * 60 + "… (61 characters)"


@pytest.mark.parametrize("token", HOSTILE)
def test_json_escapes_c1_bidi_and_separators_and_round_trips(token):
    class Result:
        def to_dict(self):
            return {"token": token, "names": [token, "王"]}

    text = formats.to_json(Result())
    assert acting(text) == set()
    assert json.loads(text) == {"token": token, "names": [token, "王"]}
    assert "王" in text  # non-ASCII text stays as it is


def test_json_escapes_are_lowercase_u_escapes():
    assert formats.json_escaped('"\x9b\u202e\u2028\x7f"') == '"\\u009b\\u202e\\u2028\\u007f"'


def test_the_projector_page_json_escapes_them_too():
    projector = pytest.importorskip("embedlab.report.projector")
    text = projector.script_json({"t": "rlo\u202e\x9b\x85</script>"})
    assert acting(text) == set() and "<" not in text
    assert json.loads(text) == {"t": "rlo\u202e\x9b\x85</script>"}
