"""The diff's words and its Markdown: ``embedlab diff --markdown FILE`` in ``--lang``.

The sentences of the summary (``rows_text``, ``changes_text``, ``new_rows_text``, ``alignment_text``) are
worded once in a language's words (``locales.DIFF_WORDS``); the terminal summary (``views.diff_terminal``,
English) and the Markdown (``diff_markdown``, any language) both use them, and the same rows of each
ranking (``moved_rows``, ``new_row_cells``). Tokens are written by ``formats.MARKDOWN`` (code spans) or
``formats.TERMINAL``; nothing is computed here: every number comes from the ``DiffResult``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .formats import MARKDOWN, Inline, fixed, format_value, markdown_row, source_name
from .lab import run_line
from .locales import DEFAULT_LANGUAGE, DIFF_WORDS, check_language

if TYPE_CHECKING:  # annotations only: the result's module needs NumPy
    from ..measure.diff import DiffResult

__all__ = ["diff_markdown", "diff_words", "tables_text", "rows_text", "changes_text", "new_rows_text",
           "alignment_text", "overlap_text", "moved_rows", "overlap_rows", "geometry_rows", "GEOMETRY", "new_row_cells", "removed_cells", "value_text", "cosine_text"]


def diff_words(lang: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
    """The diff's words in ``lang`` (``ChoiceError`` for an unknown language)."""
    return DIFF_WORDS[check_language(lang)]


def value_text(x: float) -> str:
    """An L2 or relative change as every diff output shows it: 4 decimals, a tiny one in significant digits."""
    return fixed(float(x), 4)


def cosine_text(x: float) -> str:
    """An aligned cosine: 6 decimals, so that 0.999999 and 1 read apart."""
    return f"{float(x):.6f}"


def tables_text(result: "DiffResult", words: dict[str, Any], inline: Inline) -> str:
    """The two tables and their shapes."""
    return words["intro"].format(a=inline.text(source_name(result.source_a)), b=inline.text(source_name(result.source_b)),
                                 V_a=format_value(result.V_a), D_a=format_value(result.D_a),
                                 V_b=format_value(result.V_b), D_b=format_value(result.D_b))


def rows_text(result: "DiffResult", words: dict[str, Any]) -> str:
    """How many rows are shared (by id, by token), added and removed."""
    m = result.match
    by_token = int(m.by_token.sum())
    return words["rows"].format(shared=format_value(m.n), by_id=format_value(m.n - by_token),
                                by_token=format_value(by_token), added=format_value(len(m.added)),
                                removed=format_value(len(m.removed)))


def changes_text(result: "DiffResult", words: dict[str, Any]) -> str:
    """How many shared rows are exactly equal and how far the others moved; empty without row changes."""
    c = result.changes
    if c is None:
        return ""
    counts, summary = result.counts, result.change_summary
    if counts["changed"] == 0:
        return words["unchanged"]
    relative = summary["median_relative"]
    return words["changes"].format(equal=format_value(counts["equal"]), changed=format_value(counts["changed"]),
                                   median=value_text(summary["median_l2"]), max=value_text(summary["max_l2"]),
                                   relative="-" if relative is None else value_text(relative))


def new_rows_text(result: "DiffResult", words: dict[str, Any]) -> str:
    """What the added rows are against their initialisation; empty where B added none."""
    new = result.new
    if new is None:
        return ""
    return words["new_rows"].format(tolerance=format_value(new.tolerance), spread_mean=value_text(new.spread["mean"]),
                                    spread_zero=value_text(new.spread["zero"]), at_init=format_value(len(new.at_init)),
                                    moved=format_value(len(new.moved)))


def alignment_text(result: "DiffResult", words: dict[str, Any]) -> str:
    """The Procrustes alignment in one sentence; empty where it did not run."""
    a = result.alignment
    if a is None:
        return ""
    options = (words["centred"] if a.center else "") + (words["scaled"].format(scale=f"{a.scale:.6g}") if a.scaled
                                                        else "")
    return words["alignment"].format(options=options, mean=cosine_text(a.cosines.mean()),
                                     min=cosine_text(a.cosines.min()), residual=value_text(a.residual))


def overlap_text(result: "DiffResult", words: dict[str, Any]) -> str:
    """The neighbour overlap in one sentence; empty where it did not run."""
    o = result.overlap
    if o is None:
        return ""
    counts = o.histogram()
    sample = "" if o.every else words["sample"].format(seed=o.seed)
    return words["overlap"].format(k=format_value(o.k), queries=format_value(len(o.positions)), sample=sample,
                                   mean=f"{o.mean:.4f}", full=format_value(counts[-1]), none=format_value(counts[0]))


def overlap_rows(result: "DiffResult", positions: Sequence[int], inline: Inline) -> list[tuple]:
    """One row of cells per shared row at ``positions``: ids, token, overlap, L2, aligned cosine."""
    c, a, o = result.changes, result.alignment, result.overlap
    rows = []
    for j in positions:
        a_id, b_id = int(result.match.a_ids[j]), int(result.match.b_ids[j])
        token = result.token(a_id, b_id)
        rows.append((str(a_id), str(b_id), inline.code(token) if token is not None else "-", f"{o.by_row[j]:.2f}",
                     value_text(c.l2[j]) if c is not None else "-", cosine_text(a.cosines[j]) if a is not None else "-"))
    return rows


GEOMETRY = ("mean_cosine", "first_pc_share", "isoscore", "partition_ratio", "mean_norm", "mean_norm_ratio",
            "abtt_overlap")  # the rows of the geometry table, in order


def geometry_rows(result: "DiffResult", words: dict[str, Any]) -> list[tuple]:
    """One row per isotropy measure: its name, A's value, B's value (``-`` where not measured)."""
    w, g = words["geometry"], result.geometry
    any_side = next(iter(g.values()))
    rows = []
    for name in GEOMETRY:
        label = w[name].format(pairs=format_value(any_side.pairs), d=format_value(any_side.abtt_d))
        values = [getattr(g[side], name) if side in g else None for side in ("a", "b")]
        rows.append((label, *("-" if v is None else f"{v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}"
                              for v in values)))
    return rows


def moved_rows(result: "DiffResult", positions: Sequence[int], words: dict[str, Any], inline: Inline) -> list[tuple]:
    """One row of cells per shared row at ``positions``: ids, token, how matched, L2, relative, aligned cosine."""
    c, a = result.changes, result.alignment
    rows = []
    for j in positions:
        a_id, b_id = int(result.match.a_ids[j]), int(result.match.b_ids[j])
        token = result.token(a_id, b_id)
        rows.append((str(a_id), str(b_id), inline.code(token) if token is not None else "-",
                     words["by"]["token" if result.match.by_token[j] else "id"],
                     value_text(c.l2[j]) if c is not None else "-",
                     value_text(c.relative[j]) if c is not None and c.relative[j] == c.relative[j] else "-",
                     cosine_text(a.cosines[j]) if a is not None else "-"))
    return rows


def new_row_cells(result: "DiffResult", words: dict[str, Any], inline: Inline, shown: int) -> list[tuple]:
    """The first ``shown`` added rows: id, token, verdict, distance from the mean and from zero (in spreads)."""
    new = result.new
    relative = {init: new.relative(init) for init in ("mean", "zero")}
    cells = []
    for j, i in enumerate(new.ids[:shown].tolist()):
        token = result.token(b_id=i)
        cells.append((str(i), inline.code(token) if token is not None else "-", words["verdicts"][new.verdicts[j]],
                      value_text(relative["mean"][j]), value_text(relative["zero"][j])))
    return cells


def removed_cells(result: "DiffResult", inline: Inline, shown: int) -> list[tuple]:
    """The first ``shown`` rows only A has: id, token."""
    return [(str(i), inline.code(t) if (t := result.token(a_id=i)) is not None else "-")
            for i in result.match.removed[:shown].tolist()]


# -- Markdown -------------------------------------------------------------------------------

def diff_markdown(result: "DiffResult", lang: str = DEFAULT_LANGUAGE, shown: int | None = None) -> str:
    """The diff as one Markdown document in ``lang``: the summary, then each ranking (``shown`` rows each,
    default the result's ``top``; the JSON holds them all)."""
    w, md = diff_words(lang), MARKDOWN
    shown = result.top if shown is None else shown
    title = w["title"].format(a=source_name(result.source_a), b=source_name(result.source_b))
    out = [f"# {md.text(title)}", "", tables_text(result, w, md), "", f"## {w['headings']['summary']}", ""]
    out += [f"- {md.text(text)}" for text in (rows_text(result, w), changes_text(result, w),
                                               new_rows_text(result, w), alignment_text(result, w),
                                               overlap_text(result, w)) if text]
    c = result.changes
    if c is not None:
        out += _section(w["headings"]["most_moved"], w["columns"]["moved"], moved_rows(result, c.most(shown), w, md))
        if (~c.equal).sum() > shown:  # fewer moved rows than a ranking shows: the least moved are the most moved
            out += _section(w["headings"]["least_moved"], w["columns"]["moved"],
                            moved_rows(result, c.least(shown), w, md))
    if result.new is not None:
        out += _section(w["headings"]["new_rows"], w["columns"]["new_rows"], new_row_cells(result, w, md, shown),
                        more=len(result.new.ids) - shown, words=w, note=w["new_columns_note"])
    if result.alignment is not None:
        out += _section(w["headings"]["drifted"], w["columns"]["moved"],
                        moved_rows(result, result.most_drifted(shown), w, md))
    if result.overlap is not None:
        out += _section(w["headings"]["lowest_overlap"], w["columns"]["overlap"],
                        overlap_rows(result, result.lowest_overlap(shown), md))
    if result.geometry:
        out += _section(w["geometry"]["heading"], w["geometry"]["columns"], [
            tuple(md.text(cell) for cell in row) for row in geometry_rows(result, w)])
    if len(result.match.removed):
        out += _section(w["headings"]["removed"], w["columns"]["removed"], removed_cells(result, md, shown),
                        more=len(result.match.removed) - shown, words=w)
    if result.skipped:
        out += ["", f"## {w['headings']['skipped']}", ""]
        out += [f"- {w['skipped_parts'][s.part]}: {md.text(s.reason)}" for s in result.skipped]
    if result.notes:
        out += ["", f"## {w['headings']['notes']}", ""] + [f"- {md.text(note)}" for note in result.notes]
    if result.run is not None:
        out += ["", "---", "", run_line(result.run, lang, md)]
    return "\n".join(out).rstrip("\n") + "\n"


def _section(heading: str, headers: Sequence[str], rows: Sequence[Sequence[str]], *, more: int = 0,
             words: dict[str, Any] | None = None, note: str | None = None) -> list[str]:
    if not rows:
        return []
    out = ["", f"## {heading}", ""]
    if note:
        out += [MARKDOWN.text(note), ""]
    out += [markdown_row(headers), markdown_row(["---"] * len(headers)), *(markdown_row(row) for row in rows)]
    if more > 0 and words is not None:
        out += ["", words["more"].format(count=format_value(more))]
    return out
