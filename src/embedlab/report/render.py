"""Renderers: results -> JSON, Markdown and terminal text; and atomic file writes.

A renderer never computes: it formats values a measurement produced. Standard
library only, so the seed report runs on a bare Python.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ..measure.lab import REPORT_KEYS, LabResult, LabSettings
from .locales import DEFAULT_LANGUAGE, WORDS

if TYPE_CHECKING:  # only for the annotations: these modules need NumPy / torch
    from ..measure.hubs import Hub, HubsResult
    from ..measure.encode import Encoding
    from ..measure.neighbors import Listed, NeighborsResult
    from ..measure.demo import DemoResult
    from ..measure.params import Breakdown, Count, Growth
    from ..measure.positions import PositionComparison

__all__ = [
    "report_dict", "report_json", "report_markdown", "report_sections", "report_terminal",
    "Inline", "ReportSection", "MARKDOWN", "TERMINAL",
    "SECTION_KEYS", "terminal_table", "write_atomic", "number", "fixed",
    "params_dict", "params_json", "params_terminal", "human_count", "human_bytes",
    "result_json", "demo_terminal", "positions_terminal", "encode_terminal",
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
class Inline:
    """How a renderer writes inline text: a token as code, and plain text escaped."""

    code: Callable[[str], str]
    text: Callable[[str], str]


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


def write_atomic(files: dict[Path, str | bytes]) -> list[Path]:
    """Write files (text as UTF-8, or bytes) so that none is ever left half-written.

    Every target is checked first (a folder where a file should go, a file
    where a folder should be: an error before anything is written); every
    file is then written in full to a temporary file beside it, and only then
    are all renamed into place (``os.replace``, atomic on one file system).
    If anything fails, the temporaries are removed. Each file is atomic; a
    rename that fails after another succeeded (a full disk, say) can leave
    the files of one call from two runs, never a half-written one.

    Returns the paths written.

    Raises
    ------
    OSError
        (the same subclass, e.g. ``PermissionError``, with its ``errno``)
        as one line naming the file asked for, its folder and the reason:
        ``cannot write 'ro/embed_report.json': permission denied in folder
        'ro'``; never the name of a temporary file.
    """
    for path in files:
        _check_target(Path(path))
    for path in files:
        _make_folder(Path(path))
    staged: list[tuple[str, Path]] = []
    path = Path()
    try:
        for path, content in files.items():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        raise _write_error(exc, f"cannot write {str(path)!r}", f"in folder {str(path.parent)!r}") from None
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [path for _, path in staged]


def _make_folder(path: Path) -> None:
    """Create the folder a file goes into; an error names the file and the folder that could not be made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        folder = exc.filename if exc.filename is not None else path.parent
        raise _write_error(exc, f"cannot write {str(path)!r}", f"creating folder {str(folder)!r}") from None


def _write_error(exc: OSError, what: str, where: str) -> OSError:
    """``exc`` again as one plain line, ``{what}: {reason} {where}``, keeping its class and errno.

    The builtin's own text names the temporary file (``[Errno 13] ...
    '.embed_report.json.x1y2.tmp'``), which the user never asked for.
    """
    reason = exc.strerror or str(exc) or type(exc).__name__
    cls = type(exc) if type(exc).__module__ == "builtins" else OSError
    error = cls(f"{what}: {reason[:1].lower() + reason[1:]} {where}")
    error.errno = exc.errno
    return error


def _check_target(path: Path) -> None:
    if not path.name or path.is_dir():
        raise IsADirectoryError(f"cannot write {str(path)!r}: it is a folder, expected a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"cannot write {str(path)!r}: {str(parent)!r} is a file, not a folder")
            break


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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


def number(x: Any) -> str:
    """An int as is; a float to 10 significant digits; a bool as true/false; None as '-'."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:.10g}"
    return str(x)


# -- embedlab params ---------------------------------------------------------

def params_dict(count: Count, growth: Growth) -> dict[str, Any]:
    """``embedlab params --json``: the count, its facts and the growth, as plain JSON values.

    Parameters and bytes are exact ints; ``share`` is the tables' fraction
    of the total (``null`` when the other parameters are unknown).
    """
    b = count.breakdown
    return {
        "source": count.source, "path": count.path,
        "V": b.V, "D": b.D, "positions": count.positions, "T_max": count.T_max, "type_vocab": count.type_vocab,
        "tied": b.tied, "tie_evidence": count.tie_evidence, "stored_twice": count.stored_twice,
        "conflict": count.conflict, "keys": count.keys, "tensors": count.tensors,
        "buffers": [dict(asdict(buf), shape=list(buf.shape)) for buf in count.buffers],
        "stored_bytes": count.stored_bytes,
        **_breakdown_dict(b),
        "growth": {
            "factor": growth.factor, "V": growth.V, "bigger_V": growth.bigger_V,
            "tied": {"now": _breakdown_dict(growth.tied_now), "bigger": _breakdown_dict(growth.tied_bigger),
                     "added": growth.tied_added, "added_bytes": growth.tied_added_bytes},
            "untied": {"now": _breakdown_dict(growth.untied_now), "bigger": _breakdown_dict(growth.untied_bigger),
                       "added": growth.untied_added, "added_bytes": growth.untied_added_bytes},
            "saved": growth.saved, "bigger_saved": growth.bigger_saved,
        },
    }


def params_json(count: Count, growth: Growth) -> str:
    """``params_dict`` as indented JSON text with a newline at the end."""
    return json.dumps(params_dict(count, growth), ensure_ascii=False, indent=2) + "\n"


def params_terminal(count: Count, growth: Growth) -> str:
    """Three blocks: where the numbers come from, the breakdown, and the growth side by side.

    Every count and byte size shows in human units (``11.72M``, ``44.71 MiB``)
    with the exact int beside it.
    """
    b = count.breakdown
    facts = [("source", f"{count.source} {count.path}" if count.path else count.source),
             ("table", f"V={b.V} x D={b.D}" + (f" ({count.tensors['token']})" if "token" in count.tensors else "")),
             ("positions", count.positions + (f", T_max={count.T_max}" if count.T_max is not None else "")),
             ("token types", str(count.type_vocab)),
             ("tied", f"{number(b.tied)}: {count.tie_evidence}")]
    facts += [(f"key for {what}", key) for what, key in count.keys.items() if what != "tied"]  # tied: shown above
    if count.stored_twice:
        facts.append(("stored twice", f"{count.tensors['head']}: counted once"))
    if count.conflict:
        facts.append(("CONFLICT", count.conflict))
    facts += [("buffer", f"{buf.name} {buf.shape} {buf.dtype}: {buf.elements:,} elements, {buf.bytes:,} bytes, "
                         f"{buf.reason}; not a parameter") for buf in count.buffers]
    if count.stored_bytes is not None:
        facts.append(("stored bytes", _human(count.stored_bytes, human_bytes) + ": every tensor in the files"))
    return "\n".join([terminal_table(facts), _parts_table(b), _growth_table(growth)])


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


def _breakdown_dict(b: Breakdown) -> dict[str, Any]:
    params = {key: getattr(b, key) for key in ("token", "position", "token_type", "head", "other",
                                               "tables", "total", "non_embedding")}
    return {"tied": b.tied, "params": params, "dtype": b.dtype, "bytes": asdict(b.bytes), "share": b.share}


def _parts_table(b: Breakdown) -> str:
    byte = b.bytes
    head_note = " (tied: the token table)" if b.tied and not b.head else ""
    rows = [("token table", b.token, byte.token), ("position table", b.position, byte.position),
            ("token-type table", b.token_type, byte.token_type), ("output head" + head_note, b.head, byte.head)]
    cells = [(label, human_count(n), f"{n:,}", human_bytes(nb), f"{nb:,}") for label, n, nb in rows]
    if b.other is None:
        cells.append(("other", "unknown", "-", "-", "-"))
    else:
        cells.append(("other", human_count(b.other), f"{b.other:,}", human_bytes(byte.other or 0), f"{byte.other:,}"))
    total = "total" if b.other is not None else "total (tables only)"
    cells.append((total, human_count(b.total), f"{b.total:,}", human_bytes(byte.total), f"{byte.total:,}"))
    cells.append(("tables' share", _percent(b.share), "", "", ""))
    return terminal_table(cells, headers=("part", "parameters", "exact", f"bytes ({b.dtype})", "exact bytes"))


def _growth_table(g: Growth) -> str:
    by = f"x{g.factor}" if g.factor is not None else "to target"
    rows = []
    for name, now, bigger, added, added_bytes in (
            ("tied", g.tied_now, g.tied_bigger, g.tied_added, g.tied_added_bytes),
            ("untied", g.untied_now, g.untied_bigger, g.untied_added, g.untied_added_bytes)):
        # Only the tables grow with V, so the tables and the total grow by the same count.
        total = "total" if now.other is not None else "total (tables only)"
        rows += [(f"{name}: tables", _human(now.tables), _human(bigger.tables), _human(added, sign=True)),
                 (f"{name}: {total}", _human(now.total), _human(bigger.total), _human(added, sign=True)),
                 (f"{name}: bytes ({now.dtype})", _human(now.bytes.total, human_bytes),
                  _human(bigger.bytes.total, human_bytes), _human(added_bytes, human_bytes, sign=True)),
                 (f"{name}: tables' share", _percent(now.share), _percent(bigger.share), "")]
    rows.append(("saved by tying", _human(g.saved), _human(g.bigger_saved), ""))
    return terminal_table(rows, headers=(f"vocabulary {by}", f"V={g.V}", f"V={g.bigger_V}", "difference"))


def _human(n: int, unit: Any = human_count, sign: bool = False) -> str:
    """An exact int with its human form beside it: ``11,720,448 (11.72M)``."""
    plus = "+" if sign and n > 0 else ""
    return f"{plus}{n:,} ({plus}{unit(n)})" if abs(n) >= 1000 else f"{plus}{n:,}"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.2f}%"


# -- demo, positions, encode ----------------------------------------------------

def result_json(result: Any) -> str:
    """A result with ``to_dict()`` as UTF-8 JSON text, unescaped, newline at the end."""
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n"


def demo_terminal(result: "DemoResult") -> str:
    """``embedlab demo``: shapes, parameters, cosine by offset, wavelength bands."""
    s = result.settings
    lines = [f"embedlab demo: V={s['vocab_size']}, D={s['d_model']}, T_max={s['max_context_length']}, "
             f"B={s['batch_size']}, T={s['seq_len']}, seed {s['seed']}", "", "shape contract: (B, T) ids -> (B, T, D)"]
    lines.append(terminal_table([(name, _shape(shape)) for name, shape in result.shapes.items()], ("tensor", "shape")))
    lines.append(f"learned input[b, t] == E[ids[b, t]] + P[t]: max |diff| = {number(result.max_abs_composition_error)}")
    lines += ["", "parameters each module adds"]
    lines.append(terminal_table([(name, f"{count:,}") for name, count in result.parameters.items()],
                                ("module", "parameters")))
    lines.append("mean cosine between positions k apart (neighbour_cosine_curve)")
    rows = [(k, fixed(a, 4, sign=True), fixed(b, 4, sign=True))
            for k, a, b in zip(result.offsets, result.learned_curve, result.sinusoidal_curve)]
    lines.append(terminal_table(rows, ("k", "learned", "sinusoidal")))
    steps = len(result.offsets) - 1
    lines.append(f"decreasing steps: learned {result.learned_decreasing_steps}/{steps} (random rows at "
                 f"initialisation), sinusoidal {result.sinusoidal_decreasing_steps}/{steps}")
    bands = result.wavelengths
    lines += ["", f"sinusoidal wavelength bands (D={s['d_model']}, base {number(s['base'])}): {len(bands)} bands from "
              f"{bands[0]:.4g} to {bands[-1]:.4g} positions; {result.bands_longer_than_context} longer than "
              f"T_max={s['max_context_length']}"]
    lines += _wrapped([f"{w:.4g}" for w in bands])
    lines += ["", f"learned positions stop at T_max: {result.too_long_error}"]
    return "\n".join(lines) + "\n"


def positions_terminal(result: "PositionComparison") -> str:
    """``embedlab positions``: a learned position table against the sinusoidal one."""
    name = result.source["source"] if result.source else "learned"
    L, S, v = result.learned, result.sinusoidal, result.verdict
    lines = [f"embedlab positions: {name} position table ({result.T_max}, {result.D}) against the sinusoidal "
             f"table of the same size (base {number(result.base)})", "",
             "adjacent-position cosine, rows p and p+1"]
    rows = [("mean", fixed(L.adjacent_mean, 4), fixed(S.adjacent_mean, 4)),
            ("min (at p)", f"{fixed(L.adjacent_min, 4)} ({L.adjacent_min_position})",
             f"{fixed(S.adjacent_min, 4)} ({S.adjacent_min_position})")]
    rows += [(f"p {a}-{b - 1}", fixed(m, 4), fixed(n, 4)) for (a, b, m), (_, _, n) in zip(L.windows, S.windows)]
    lines.append(terminal_table(rows, ("", name, "sinusoidal")))
    lines.append("mean cosine of rows p and p+k")
    rows = [(k, fixed(a, 4, sign=True), fixed(b, 4, sign=True)) for k, a, b in zip(L.offsets, L.by_offset, S.by_offset)]
    lines.append(terminal_table(rows, ("k", name, "sinusoidal")))
    lines.append(f"decreasing steps: {name} {L.decreasing_steps}/{v.steps}, sinusoidal {S.decreasing_steps}/{v.steps}")
    word = "smooth" if v.smooth else "not smooth"
    lines.append(f"verdict: {word}. Neighbouring positions have mean cosine {fixed(v.adjacent_mean, 4)} (smooth "
                 f"needs >= {number(v.threshold)}; independent random rows: 0 +- {fixed(v.random_spread, 4)}); "
                 f"likeness {'falls' if v.decays else 'does not fall'} from {fixed(L.by_offset[0], 4, sign=True)} at "
                 f"k={L.offsets[0]} to {fixed(L.by_offset[-1], 4, sign=True)} at k={L.offsets[-1]}.")
    return "\n".join(lines) + "\n"


def encode_terminal(result: "Encoding") -> str:
    """``embedlab encode``: a row per token with the first values and norm of each vector."""
    name = result.source["source"] if result.source else "table"
    lines = [f"embedlab encode: {name}, {len(result.texts)} text(s) -> (B, T, D) = {_shape(result.shape)}",
             "input = " + " + ".join(c for c in result.components if c != "input")]
    headers = ("t", "token", "id", "type", *(_VECTOR_HEADERS.get(c, c) for c in result.components))
    for b, text in enumerate(result.texts):
        cut = f", cut from {result.original_lengths[b]}" if result.original_lengths[b] != result.lengths[b] else ""
        lines += ["", f"text {b + 1}: {text!r} ({result.lengths[b]} tokens{cut})"]
        rows = [(r.position, r.token + (" (pad)" if r.padding else ""), r.id, r.type_id,
                 *(_vector(r.vectors[c]) for c in result.components)) for r in result.rows if r.sequence == b]
        lines.append(terminal_table(rows, headers).rstrip("\n"))
    if result.same_token:
        lines += ["", "same token, different position"]
        for m in result.same_token:
            lines.append(f"  {m.token!r} (id {m.id}): text {m.first[0] + 1} position {m.first[1]} and text "
                         f"{m.second[0] + 1} position {m.second[1]}: token vectors max |diff| "
                         f"{number(m.token_max_abs_diff)}; input vectors max |diff| "
                         f"{fixed(m.input_max_abs_diff, 4)}, "
                         f"cosine {fixed(m.input_cosine, 4)}")
    lines += ["", f"final shape (B, T, D) = {_shape(result.shape)}"]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


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
    lines = [f"{_source_name(result.source)}: k={result.k}; row norms: median {fixed(result.median_norm, 3)}, "
             f"max {fixed(result.max_norm, 3)}", ""]
    headers = ["#"] + [h for m in result.metrics for h in (m, "score", "norm")]
    for q in result.queries:
        what = q.query if q.id is None else _row_label(q.token, q.id)
        lines.append(f"query {what}, norm {fixed(q.norm, 3)}")
        rows = []
        for rank in range(result.k):
            cells = [str(rank + 1)]
            for m in result.metrics:
                row = q.lists[m][rank]
                cells += [_row_label(row.token, row.id), fixed(row.score, 4), fixed(row.norm, 3)]
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
                     f"skewness {number(_round(m.skewness))}, {m.never_listed} row{'s' * (m.never_listed != 1)} in no list; "
                     f"{m.seconds:.1f} s)")
        rows = [[str(r + 1), _row_label(h.token, h.id), str(h.lists[m.metric]), fixed(h.norm, 3),
                 str(h.norm_rank)]
                for r, h in enumerate(m.top)]
        lines += [terminal_table(rows, ["rank", "row", "lists", "norm", "norm rank"]).rstrip("\n"), ""]
    lines.append(f"the {len(result.longest)} longest rows and the lists they enter")
    rows = [[str(h.norm_rank), _row_label(h.token, h.id), fixed(h.norm, 3), str(h.lists["dot"]),
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

_VECTOR_HEADERS = {"token": "token vector", "position": "position vector", "token_type": "type vector",
                   "input": "input (the sum)"}


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _vector(summary: dict[str, Any]) -> str:
    """First values and norm of one vector, as ``fixed`` writes them: ``[-0.018 +0.047 +1.00e-200 ...] |1.546|``."""
    return ("[" + " ".join(fixed(x, 3, sign=True) for x in summary["first"])
            + f" ...] |{fixed(summary['norm'], 3)}|")


def _wrapped(cells: Sequence[str], per_line: int = 12) -> list[str]:
    return ["  " + " ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]


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


def _md_code(token: str) -> str:
    """A token as a Markdown code span that survives backticks and table pipes."""
    fence = "``" if "`" in token else "`"
    pad = " " if token.startswith("`") or token.endswith("`") else ""
    return f"{fence}{pad}{_md_escape(token)}{pad}{fence}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


MARKDOWN = Inline(code=_md_code, text=_md_escape)
TERMINAL = Inline(code=repr, text=str)  # tokens quoted as Python strings: 'king'
