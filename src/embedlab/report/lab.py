"""The lab report as text: JSON, Markdown and the terminal summary.

A renderer never computes: it formats the values ``measure.lab`` returned.
Standard library only, so the seed report runs on a bare Python.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from ..measure.lab import REPORT_KEYS, LabResult, LabSettings
from .formats import MARKDOWN, TERMINAL, Inline, number, terminal_table
from .locales import DEFAULT_LANGUAGE, WORDS

__all__ = ["SECTION_KEYS", "SECTION_NAMES", "report_dict", "report_json", "ReportSection", "report_sections", "report_markdown", "report_terminal"]


# Which measured keys each of the five report sections shows, in order.
SECTION_KEYS: tuple[tuple[str, ...], ...] = (
    ("vocab", "dim", "seed", "probe", "table_shape", "params"),
    ("lookup_mults", "one_hot_mults", "max_abs_diff", "repeat_same"),
    ("logit_len", "logit_argmax", "logit_argmax_is_self", "tied_params", "untied_params", "saved",
     "bigger_vocab", "bigger_tied", "bigger_untied"),
    ("cos_neighbors", "dot_neighbors", "neighbors_differ", "stretch_target", "stretch_factor",
     "cos_after_stretch", "dot_after_stretch"),
    ("cos_unchanged_by_scale", "rms_plain", "rms_scaled", "rms_ratio"),
)


SECTION_NAMES = ("what", "lookup", "tying", "neighbors", "scale")


def report_dict(result: LabResult) -> dict[str, Any]:
    """The report's JSON object: the required keys in order, then (for tables
    with a vocabulary) the token strings beside the ids and the provenance."""
    values = asdict(result)
    out = {key: values[key] for key in REPORT_KEYS}
    if result.tokens is not None:
        out.update(result.tokens)
    if result.source is not None:
        out["source"] = result.source
    return out


def report_json(result: LabResult) -> str:
    """``embed_report.json``: UTF-8 JSON text, token strings unescaped, newline at the end."""
    return json.dumps(report_dict(result), ensure_ascii=False, indent=2) + "\n"


@dataclass(frozen=True)
class ReportSection:
    """One of the report's five sections, ready for a renderer.

    ``key`` names the section (``what``, ``lookup``, ``tying``, ``neighbors``,
    ``scale``); ``prose`` and the ``rows`` (measured key, value) are already
    written in the renderer's inline format.
    """

    key: str
    heading: str
    prose: str
    rows: list[tuple[str, str]]


def report_sections(result: LabResult, settings: LabSettings, lang: str = DEFAULT_LANGUAGE,
                    inline: Inline | None = None) -> tuple[str, list[ReportSection]]:
    """The report's title and five sections in ``lang``, in ``inline`` format (Markdown by default).

    Raises ``ValueError`` for an unknown language.
    """
    if lang not in WORDS:
        raise ValueError(f"unknown report language {lang!r}: expected one of {', '.join(WORDS)}")
    inline = inline or MARKDOWN
    words = WORDS[lang]
    fields = _prose_fields(result, settings, words, inline)
    sections = [
        ReportSection(key, heading, inline.text(words[key]).format(**fields), _rows(result, keys, inline))
        for key, heading, keys in zip(SECTION_NAMES, words["headings"], SECTION_KEYS)
    ]
    return words["title"], sections


def report_markdown(result: LabResult, settings: LabSettings, lang: str = DEFAULT_LANGUAGE) -> str:
    """``embed_report.md``: a title, then exactly five second-level sections.

    Each section is prose in ``lang`` ("ko", "en", "ja", "zh") with the
    measured numbers and neighbour ids (and tokens, where the table has them),
    then a table of that section's measured keys.

    Raises ``ValueError`` for an unknown language.
    """
    title, sections = report_sections(result, settings, lang)
    header = WORDS[lang]["table_header"]
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.heading}", "", section.prose, ""]
        lines += [f"| {header[0]} | {header[1]} |", "|---|---|"]
        lines += [f"| `{key}` | {value} |" for key, value in section.rows]
        lines.append("")
    return "\n".join(lines)


def report_terminal(result: LabResult, written: Sequence[Path]) -> str:
    """A short summary for the terminal: the headline numbers and the files written."""
    rows = [
        ("table", f"{result.vocab} x {result.dim}"),
        ("probe", _id(result.probe, _token(result, "probe_token"))),
        ("lookup == one-hot product", f"max |diff| = {number(result.max_abs_diff)}"),
        ("parameters tied / untied", f"{result.tied_params} / {result.untied_params} (saved {result.saved})"),
        ("cosine neighbours", _ids(result.cos_neighbors, _token(result, "cos_neighbors_tokens"))),
        ("dot neighbours", _ids(result.dot_neighbors, _token(result, "dot_neighbors_tokens"))),
        ("dot after stretch", _ids(result.dot_after_stretch, _token(result, "dot_after_stretch_tokens"))),
        ("rms plain -> scaled", f"{number(result.rms_plain)} -> {number(result.rms_scaled)}"),
    ]
    rows += [("wrote", str(path)) for path in written]
    return terminal_table(rows, headers=None)


def _prose_fields(result: LabResult, settings: LabSettings, words: dict[str, Any], inline: Inline) -> dict[str, str]:
    def pick(key: str, flag: bool) -> str:
        return inline.text(words[key][0 if flag else 1])

    def one(token_id: int, key: str) -> str:
        return _id(token_id, _token(result, key), inline)

    if result.source is None:
        source = inline.text(words["seed_source"].format(vocab=result.vocab, dim=result.dim, seed=result.seed))
    else:
        source = inline.code(str(result.source["source"]))
    fields = {key: number(value) for key, value in asdict(result).items() if not isinstance(value, (list, dict))}
    fields.update(
        source=source,
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
    return fields


def _rows(result: LabResult, keys: Sequence[str], inline: Inline) -> list[tuple[str, str]]:
    """(key, value) rows of one section: the measured value, then its tokens where there are any."""
    values = asdict(result)
    rows = []
    for key in keys:
        value = values[key]
        if isinstance(value, list):
            cell = "[" + ", ".join(number(v) for v in value) + "]"
        else:
            cell = number(value)
        tokens = _token(result, f"{key}_tokens" if isinstance(value, list) else f"{key}_token")
        if tokens is not None:
            shown = tokens if isinstance(tokens, list) else [tokens]
            cell += " " + ", ".join(inline.code(t) for t in shown)
        rows.append((key, cell))
    if keys is SECTION_KEYS[0] and result.source is not None:
        rows += [(f"source.{key}", inline.text(number(value))) for key, value in result.source.items() if value is not None]
    return rows


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
