"""The lab report as text: JSON, Markdown and the terminal summary.

A renderer never computes: it formats the values ``measure.lab`` returned.
Standard library only, so the seed report runs on a bare Python.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..measure.lab import REPORT_KEYS, LabResult, LabSettings
from .formats import MARKDOWN, TERMINAL, Inline, markdown_row, number, shown_source, source_name, terminal_table
from .locales import DEFAULT_LANGUAGE, WORDS, check_language

__all__ = ["Section", "SECTIONS", "ReportSection", "report_sections", "run_line",
           "report_markdown", "report_terminal"]


@dataclass(frozen=True)
class Section:
    """One section of the lab report, defined once for every renderer.

    ``key`` names it and its words in ``locales.WORDS`` (heading, prose);
    ``keys`` are the measured values its table shows, in order, each a
    ``LabResult`` field; ``figures`` the figures drawn for it in the HTML
    report (the names ``report.plots.lab_figure`` draws, and of the captions);
    ``summary`` the lines it gives the terminal summary: (label, the
    ``_summary`` writer's name).
    """

    key: str
    keys: tuple[str, ...]
    figures: tuple[str, ...]
    summary: tuple[tuple[str, str], ...]


# The report, in order: JSON (its keys), Markdown, the terminal summary and HTML all walk this list.
SECTIONS: tuple[Section, ...] = (
    Section("what", ("vocab", "dim", "seed", "probe", "table_shape", "params"), ("projection", "norms"),
            (("table", "table"), ("probe", "probe"))),
    Section("lookup", ("lookup_mults", "one_hot_mults", "max_abs_diff", "repeat_same"), ("cost",),
            (("lookup == one-hot product", "lookup"),)),
    Section("tying", ("logit_len", "logit_argmax", "logit_argmax_is_self", "tied_params", "untied_params", "saved",
                      "bigger_vocab", "bigger_tied", "bigger_untied"), ("params",),
            (("parameters tied / untied", "tying"),)),
    Section("neighbors", ("cos_neighbors", "dot_neighbors", "neighbors_differ", "stretch_target", "stretch_factor",
                          "cos_after_stretch", "dot_after_stretch"), ("stretch",),
            (("cosine neighbours", "cos_neighbors"), ("dot neighbours", "dot_neighbors"),
             ("dot after stretch", "dot_after_stretch"))),
    Section("scale", ("cos_unchanged_by_scale", "rms_plain", "rms_scaled", "rms_ratio"), ("scale",),
            (("rms plain -> scaled", "rms"),)),
)


@dataclass(frozen=True)
class ReportSection:
    """One of the report's five sections, written in one language and inline format.

    ``key`` is the ``Section``'s; ``prose`` and the ``rows`` (measured key,
    value) are already written in the renderer's inline format; ``figures``
    the names of its figures.
    """

    key: str
    heading: str
    prose: str
    rows: list[tuple[str, str]]
    figures: tuple[str, ...] = ()


def report_sections(result: LabResult, lang: str = DEFAULT_LANGUAGE,
                    inline: Inline | None = None) -> tuple[str, list[ReportSection]]:
    """The report's title and its sections (``SECTIONS``) in ``lang``, in ``inline`` format (Markdown by default).

    Raises ``ValueError`` for an unknown language.
    """
    inline = inline or MARKDOWN
    words = WORDS[check_language(lang)]
    fields = _prose_fields(result, words, inline)
    sections = [
        ReportSection(section.key, heading, _filled(words[_prose_key(section, result)], inline, fields),
                      _rows(result, section, inline), section.figures)
        for section, heading in zip(SECTIONS, words["headings"])
    ]
    return words["title"], sections


def report_markdown(result: LabResult, lang: str = DEFAULT_LANGUAGE) -> str:
    """``embed_report.md``: a title, the notes (what was adjusted without being asked), then exactly
    five second-level sections, then, after a rule, the run line (``run_line``) where the result has one.

    Each section is prose in ``lang`` ("ko", "en", "ja", "zh") with the
    measured numbers and neighbour ids (and tokens, where the table has them),
    then a table of that section's measured keys. Paths are shown as
    ``formats.shown_path`` writes them, never absolute. Every string from the
    table's files (tokens, file and tensor names) is escaped by ``formats.MARKDOWN``:
    a token is a code span that shows its control characters as escapes, and
    nothing from a file becomes markup or HTML.

    Raises ``ValueError`` for an unknown language.
    """
    title, sections = report_sections(result, lang)
    header = WORDS[lang]["table_header"]
    lines = [f"# {title}", ""]
    if result.notes:
        lines += [f"> {WORDS[lang]['note']}:", *(f"> - {MARKDOWN.text(note)}" for note in result.notes), ""]
    for section in sections:
        lines += [f"## {section.heading}", "", section.prose, ""]
        lines += [markdown_row(header), "|---|---|"]
        lines += [markdown_row([MARKDOWN.code(key), value]) for key, value in section.rows]
        lines.append("")
    if result.run is not None:
        lines += ["---", "", run_line(result.run, lang, MARKDOWN), ""]
    return "\n".join(lines)


def run_line(run: Any, lang: str = DEFAULT_LANGUAGE, inline: Inline | None = None) -> str:
    """Who wrote the report, when, with which command (a ``report.run.Run``), in ``lang`` and ``inline`` format:
    ``Written by embedlab 0.1.0 on 2026-09-17T08:00:00Z (UTC) with `embedlab report --out out```.

    Raises ``KeyError`` for an unknown language.
    """
    inline = inline or MARKDOWN
    with_command, without = WORDS[lang]["run"]
    fields = {"version": inline.text(run.version), "date": inline.text(run.date)}
    if run.command is None:
        return _filled(without, inline, fields)
    return _filled(with_command, inline, {**fields, "command": inline.code(run.command)})


def report_terminal(result: LabResult, written: Sequence[Path]) -> str:
    """A short summary for the terminal: each section's headline numbers, then the files written."""
    rows = [(label, _SUMMARY[name](result)) for section in SECTIONS for label, name in section.summary]
    rows += [("wrote", str(path)) for path in written]
    return terminal_table(rows, headers=None) + "".join(f"note: {note}\n" for note in result.notes)


_SUMMARY = {
    "table": lambda r: f"{r.vocab:,} x {r.dim:,}",
    "probe": lambda r: _id(r.probe, _token(r, "probe_token")),
    "lookup": lambda r: f"max |diff| = {number(r.max_abs_diff)}",
    "tying": lambda r: f"{r.tied_params:,} / {r.untied_params:,} (saved {r.saved:,})",
    "cos_neighbors": lambda r: _ids(r.cos_neighbors, _token(r, "cos_neighbors_tokens")),
    "dot_neighbors": lambda r: _ids(r.dot_neighbors, _token(r, "dot_neighbors_tokens")),
    "dot_after_stretch": lambda r: _ids(r.dot_after_stretch, _token(r, "dot_after_stretch_tokens")),
    "rms": lambda r: f"{number(r.rms_plain)} -> {number(r.rms_scaled)}",
}


def _prose_key(section: Section, result: LabResult) -> str:
    """The words of a section's prose: its own, or, where they would claim what did not happen,
    the variant that says what did (a zero probe vector gets no longer and has no direction)."""
    if section.key == "scale" and result.rms_plain == 0:
        return "scale_zero"
    return section.key


def _prose_fields(result: LabResult, words: dict[str, Any], inline: Inline) -> dict[str, str]:
    settings = result.settings or LabSettings(probe=result.probe, k=len(result.cos_neighbors))
    def pick(key: str, flag: bool) -> str:
        return inline.text(words[key][0 if flag else 1])

    def one(token_id: int, key: str) -> str:
        return _id(token_id, _token(result, key), inline)

    if result.source is None:
        source = inline.text(words["seed_source"].format(vocab=result.vocab, dim=result.dim, seed=result.seed))
        # the built-in table is named by its call, make_table(512, 64, 20260917): arguments as written, no separators
        which = 0
    else:  # the model by name; the part ("the output head of", tied or not) said by the words, not ", output head"
        source = inline.code(source_name({**result.source, "part": "input"}))
        which = 0 if result.source.get("part") != "head" else 2 if result.source.get("tied") else 1
    fields = {key: _cell(key, getattr(result, key)) for key in REPORT_KEYS
              if not isinstance(getattr(result, key), list)}
    fields.update(
        source=source,
        table_of=_filled(words["table_of"][which], inline, {"source": source}),
        table_shape=f"({result.vocab}, {result.dim})",
        probe=one(result.probe, "probe_token"),
        logit_argmax=one(result.logit_argmax, "logit_argmax_token"),
        stretch_target=one(result.stretch_target, "stretch_target_token"),
        other=_id(result.cos_neighbors[0], (_token(result, "cos_neighbors_tokens") or [None])[0], inline),
        k=str(settings.k), rank=str(settings.rank + 1), growth_factor=str(settings.growth_factor),
        repeat=pick("repeat", result.repeat_same),
        is_self=pick("is_self", result.logit_argmax_is_self),
        differ=pick("differ", result.neighbors_differ),
        unchanged=pick("unchanged", result.cos_unchanged_by_scale),
    )
    for key in ("cos_neighbors", "dot_neighbors", "cos_after_stretch", "dot_after_stretch"):
        fields[key] = _ids(getattr(result, key), _token(result, f"{key}_tokens"), inline)
    # Claim the stretch's effect only where it happened: with k = 1 or a factor of 1 the lists stay.
    moved = (result.cos_after_stretch, result.dot_after_stretch) != (result.cos_neighbors, result.dot_neighbors)
    fields["stretched"] = _filled(words["stretched"][0 if moved else 1], inline, fields)
    return fields


def _filled(template: str, inline: Inline, fields: dict[str, str]) -> str:
    """A template of ``locales.WORDS`` (a ``str.format`` string) with its own words written by ``inline.text``
    and its fields filled from ``fields``, which are written in ``inline``'s format already.

    The words are escaped apart from the fields: escaping the whole template would reach into
    its field names (``{stretch_target}``), and escaping after filling would escape the fields twice.
    """
    parts = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        parts.append(inline.text(literal))
        if name is not None:
            field = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            parts.append(field.format(**fields))
    return "".join(parts)


def _rows(result: LabResult, section: Section, inline: Inline) -> list[tuple[str, str]]:
    """(key, value) rows of one section: the measured value, then its tokens where there are any."""
    rows = []
    for key in section.keys:
        value = getattr(result, key)
        if isinstance(value, list):
            cell = "[" + ", ".join(number(v) for v in value) + "]"
        else:
            cell = _cell(key, value)
        tokens = _token(result, f"{key}_tokens" if isinstance(value, list) else f"{key}_token")
        if tokens is not None:
            shown = tokens if isinstance(tokens, list) else [tokens]
            cell += " " + ", ".join(inline.code(t) for t in shown)
        rows.append((key, cell))
    if section is SECTIONS[0] and result.source is not None:  # the path relative, by file name, or by package
        rows += [(f"source.{key}", inline.text(number(value))) for key, value in shown_source(result.source).items()
                 if value is not None]
    return rows


# Keys whose value is a count (tokens, numbers, parameters, multiplications): written with thousands
# separators (32,768). Ids, the seed and the rest are written as they are (token 30521, seed 20260917).
COUNT_KEYS = frozenset({"vocab", "dim", "params", "tied_params", "untied_params", "saved", "bigger_vocab",
                        "bigger_tied", "bigger_untied", "lookup_mults", "one_hot_mults", "logit_len"})


def _cell(key: str, value: Any) -> str:
    """A report value as text: a count with thousands separators, anything else by ``formats.number``."""
    if key in COUNT_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return number(value)


def _token(result: LabResult, key: str) -> Any:
    return None if result.tokens is None else result.tokens.get(key)


def _id(token_id: int, token: str | None, inline: Inline | None = None) -> str:
    if token is None:
        return str(token_id)
    return f"{token_id} {(inline or TERMINAL).code(token)}"


def _ids(ids: Sequence[int], tokens: Sequence[str] | None, inline: Inline | None = None) -> str:
    if tokens is None:
        return "[" + ", ".join(str(i) for i in ids) + "]"
    return ", ".join(_id(i, t, inline) for i, t in zip(ids, tokens))
