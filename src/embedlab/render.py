"""Renderers: results -> JSON, Markdown and terminal text; and atomic file writes.

A renderer never computes: it formats values a measurement produced. Standard
library only, so the seed report runs on a bare Python.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .lab import REPORT_KEYS, LabResult, LabSettings
from .locales import DEFAULT_LANGUAGE, WORDS

if TYPE_CHECKING:  # NumPy-side results; render itself stays standard library only
    from .hubs import Hub, HubsResult
    from .neighbors import Listed, NeighborsResult

__all__ = [
    "report_dict", "report_json", "report_markdown", "report_terminal",
    "SECTION_KEYS", "terminal_table", "write_atomic", "number",
    "neighbors_dict", "neighbors_json", "neighbors_terminal", "hubs_dict", "hubs_json", "hubs_terminal",
]

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
_SECTION_PROSE = ("what", "lookup", "tying", "neighbors", "scale")


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


def report_markdown(result: LabResult, settings: LabSettings, lang: str = DEFAULT_LANGUAGE) -> str:
    """``embed_report.md``: a title, then exactly five second-level sections.

    Each section is prose in ``lang`` ("ko", "en", "ja", "zh") with the
    measured numbers and neighbour ids (and tokens, where the table has them),
    then a table of that section's measured keys.

    Raises ``ValueError`` for an unknown language.
    """
    if lang not in WORDS:
        raise ValueError(f"unknown report language {lang!r}: expected one of {', '.join(WORDS)}")
    words = WORDS[lang]
    fields = _prose_fields(result, settings, words)
    lines = [f"# {words['title']}", ""]
    for heading, prose, keys in zip(words["headings"], _SECTION_PROSE, SECTION_KEYS):
        lines += [f"## {heading}", "", words[prose].format(**fields), ""]
        lines += _markdown_table(result, keys, words["table_header"])
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


def terminal_table(rows: Iterable[Sequence[Any]], headers: Sequence[str] | None = None) -> str:
    """Plain-text columns, left-aligned, two spaces apart; a rule under the headers."""
    body = [[str(cell) for cell in row] for row in rows]
    table = ([list(headers)] if headers else []) + body
    if not table:
        return ""
    widths = [max(len(row[c]) for row in table if c < len(row)) for c in range(max(map(len, table)))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    if headers:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def write_atomic(files: dict[Path, str]) -> list[Path]:
    """Write text files so that none is ever left half-written.

    Every file is first written in full to a temporary file in its folder,
    then all are renamed into place (``os.replace``, atomic on one file
    system). If any write fails, the temporaries are removed and no target
    is touched.

    Returns the paths written. Raises ``OSError`` if a folder cannot be
    created or written.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
    except BaseException:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    return [path for _, path in staged]


def number(x: Any) -> str:
    """An int as is; a float to 10 significant digits; a bool as true/false; None as '-'."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:.10g}"
    return str(x)


# -- embedlab neighbors and embedlab hubs ---------------------------------------

def neighbors_dict(result: NeighborsResult) -> dict[str, Any]:
    """The neighbour lists as a JSON-able dict (every field, full precision)."""
    return asdict(result)


def neighbors_json(result: NeighborsResult) -> str:
    """``embedlab neighbors --json``: UTF-8 JSON text, newline at the end."""
    return json.dumps(neighbors_dict(result), ensure_ascii=False, indent=2) + "\n"


def neighbors_terminal(result: NeighborsResult) -> str:
    """For each query, its lists side by side: rank, row, score, the row's norm.

    Scores to 4 decimals, norms to 3; the table's median and largest row
    norms in the heading, to read the norms against.
    """
    lines = [f"{_source_name(result.source)}: k={result.k}; row norms: median {result.median_norm:.3f}, "
             f"max {result.max_norm:.3f}", ""]
    headers = ["#"] + [h for m in result.metrics for h in (m, "score", "norm")]
    for q in result.queries:
        what = q.query if q.id is None else _row_label(q.token, q.id)
        lines.append(f"query {what}, norm {q.norm:.3f}")
        rows = []
        for rank in range(result.k):
            cells = [str(rank + 1)]
            for m in result.metrics:
                row = q.lists[m][rank]
                cells += [_row_label(row.token, row.id), f"{row.score:.4f}", f"{row.norm:.3f}"]
            rows.append(cells)
        lines += [terminal_table(rows, headers).rstrip("\n"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def hubs_dict(result: HubsResult) -> dict[str, Any]:
    """The hub measurement as a JSON-able dict; the per-row counts (V,) are left out."""
    return {f.name: _plain(getattr(result, f.name)) for f in fields(result) if f.name != "k_occurrence"}


def hubs_json(result: HubsResult) -> str:
    """``embedlab hubs --json``: UTF-8 JSON text, newline at the end."""
    return json.dumps(hubs_dict(result), ensure_ascii=False, indent=2) + "\n"


def hubs_terminal(result: HubsResult) -> str:
    """The most listed rows under each metric, the longest rows, and the correlations."""
    sample = "every token" if result.seed is None else f"sampled with seed {result.seed}"
    dot, cos = result.metrics["dot"], result.metrics["cosine"]
    lines = [
        f"hubs of {_source_name(result.source)}: V={result.V}, D={result.D}, k={result.k}, "
        f"{result.n_queries} queries ({sample})",
        f"Spearman correlation of row norm with k-occurrence: dot {number(_round(dot.spearman_norm))}, "
        f"cosine {number(_round(cos.spearman_norm))}",
        "",
    ]
    for m in (dot, cos):
        lines.append(f"{m.metric}: the rows in the most lists (an even share is {result.even_share:.3g}; "
                     f"skewness {number(_round(m.skewness))}, {m.never_listed} rows in no list; "
                     f"{m.seconds:.1f} s)")
        rows = [[str(r + 1), _row_label(h.token, h.id), str(h.lists[m.metric]), f"{h.norm:.3f}", str(h.norm_rank)]
                for r, h in enumerate(m.top)]
        lines += [terminal_table(rows, ["rank", "row", "lists", "norm", "norm rank"]).rstrip("\n"), ""]
    lines.append(f"the {len(result.longest)} longest rows and the lists they enter")
    rows = [[str(h.norm_rank), _row_label(h.token, h.id), f"{h.norm:.3f}", str(h.lists["dot"]),
             str(h.lists["cosine"])] for h in result.longest]
    lines.append(terminal_table(rows, ["norm rank", "row", "norm", "dot lists", "cosine lists"]).rstrip("\n"))
    lines.append(f"together they enter {dot.longest_rows_lists} of {result.n_queries} dot lists "
                 f"and {cos.longest_rows_lists} cosine lists")
    return "\n".join(lines) + "\n"


def _row_label(token: str | None, token_id: int | None) -> str:
    """``king (2332)`` for a token, the bare id without a vocabulary."""
    if token is None:
        return str(token_id)
    return f"{token!r}"[1:-1] + f" ({token_id})" if token_id is not None else token


def _source_name(source: dict[str, Any] | None) -> str:
    return "the table" if source is None else str(source.get("source", "the table"))


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _plain(value: Any) -> Any:
    """Dataclasses and containers of them as plain dicts and lists."""
    if is_dataclass(value):
        return asdict(value)
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# -- helpers -----------------------------------------------------------------

def _prose_fields(result: LabResult, settings: LabSettings, words: dict[str, Any]) -> dict[str, str]:
    def pick(key: str, flag: bool) -> str:
        return words[key][0 if flag else 1]

    if result.source is None:
        source = words["seed_source"].format(vocab=result.vocab, dim=result.dim, seed=result.seed)
    else:
        source = f"`{result.source['source']}`"
    fields = {key: number(value) for key, value in asdict(result).items() if not isinstance(value, (list, dict))}
    fields.update(
        source=source,
        table_shape=f"({result.vocab}, {result.dim})",
        probe=_id(result.probe, _token(result, "probe_token")),
        logit_argmax=_id(result.logit_argmax, _token(result, "logit_argmax_token")),
        stretch_target=_id(result.stretch_target, _token(result, "stretch_target_token")),
        other=_id(result.cos_neighbors[0], (_token(result, "cos_neighbors_tokens") or [None])[0]),
        k=str(settings.k), rank=str(settings.stretch_rank + 1), growth_factor=str(settings.growth_factor),
        repeat=pick("repeat", result.repeat_same),
        is_self=pick("is_self", result.logit_argmax_is_self),
        differ=pick("differ", result.neighbors_differ),
        unchanged=pick("unchanged", result.cos_unchanged_by_scale),
    )
    for key in ("cos_neighbors", "dot_neighbors", "cos_after_stretch", "dot_after_stretch"):
        fields[key] = _ids(getattr(result, key), _token(result, f"{key}_tokens"))
    return fields


def _markdown_table(result: LabResult, keys: Sequence[str], header: Sequence[str]) -> list[str]:
    values = asdict(result)
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"]
    for key in keys:
        value = values[key]
        if isinstance(value, list):
            cell = "[" + ", ".join(number(v) for v in value) + "]"
        else:
            cell = number(value)
        tokens = _token(result, f"{key}_tokens" if isinstance(value, list) else f"{key}_token")
        if tokens is not None:
            shown = tokens if isinstance(tokens, list) else [tokens]
            cell += " " + ", ".join(_code(t) for t in shown)
        lines.append(f"| `{key}` | {cell} |")
    if keys is SECTION_KEYS[0] and result.source is not None:
        for key, value in result.source.items():
            if value is not None:
                lines.append(f"| `source.{key}` | {_escape(number(value))} |")
    return lines


def _token(result: LabResult, key: str) -> Any:
    return None if result.tokens is None else result.tokens.get(key)


def _id(token_id: int, token: str | None) -> str:
    return str(token_id) if token is None else f"{token_id} {_code(token)}"


def _ids(ids: Sequence[int], tokens: Sequence[str] | None) -> str:
    if tokens is None:
        return "[" + ", ".join(str(i) for i in ids) + "]"
    return ", ".join(_id(i, t) for i, t in zip(ids, tokens))


def _code(token: str) -> str:
    """A token as a Markdown code span that survives backticks and table pipes."""
    fence = "``" if "`" in token else "`"
    pad = " " if token.startswith("`") or token.endswith("`") else ""
    return f"{fence}{pad}{_escape(token)}{pad}{fence}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
