"""The audit's words and its Markdown: ``embedlab audit --markdown FILE`` in ``--lang``.

``finding_text`` and ``advice_text`` say one finding in a language's words
(``locales.AUDIT_WORDS``); the terminal summary (``views.audit_terminal``,
English) and the Markdown (``audit_markdown``, any language) both use them, so
a finding is worded once. Tokens are written by ``formats.MARKDOWN`` (code
spans) and ``formats.TERMINAL``; nothing is computed here: every number comes
from the ``AuditResult``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .formats import MARKDOWN, Inline, fixed, format_value, markdown_row, source_name
from .lab import run_line
from .locales import AUDIT_WORDS, DEFAULT_LANGUAGE, check_language

if TYPE_CHECKING:  # annotations only: the result's module needs NumPy
    from ..measure.audit import AuditResult, Finding

__all__ = ["audit_markdown", "audit_words", "finding_text", "advice_text", "intro_text", "verdict_text",
           "resize_text", "rule_text", "undertrained_text", "indicator_text", "ids_text", "SHOWN"]

SHOWN = 10  # ids a list shows before "... and N more"


def audit_words(lang: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
    """The audit's words in ``lang`` (``ChoiceError`` for an unknown language)."""
    return AUDIT_WORDS[check_language(lang)]


def finding_text(finding: "Finding", result: "AuditResult", words: dict[str, Any]) -> str:
    """One finding in ``words``: what it is and how many (``"rows holding NaN or infinity (output head): 3"``)."""
    a = result.accounting
    length = a.resize.length if a.resize is not None else a.tokenizer_length
    part = words["parts"].get(finding.part or "", "")
    # the note on what a resize changes leaves out the rows a resize warning names, and says so where there is one
    warned = any(f.code in ("resize_drops_tokens", "resize_drops_trained") for f in result.findings)
    return words["findings"][finding.code].format(
        count=format_value(finding.count), part=part, rows=format_value(a.table_rows),
        head_rows=format_value(a.head_rows or 0), vocab_size=format_value(a.vocab_size or 0),
        length=format_value(length or 0), besides=words["resize_besides"] if warned else "")


def advice_text(finding: "Finding", words: dict[str, Any]) -> str:
    """What to do about one finding."""
    return words["advice"][finding.code]


def verdict_text(result: "AuditResult", words: dict[str, Any]) -> str:
    """``"fatal: 1; warnings: 2; notes: 3."``, or that nothing was found; then the parts skipped, if any
    (``"Skipped: reachability, under-trained tokens."``): a partial audit never reads as a clean one."""
    counts = {severity: sum(f.severity == severity for f in result.findings) for severity in ("fatal", "warning", "note")}
    if any(counts.values()):
        verdict = words["verdict"].format(**{k: format_value(v) for k, v in counts.items()})
    else:
        verdict = words["clean_partial" if result.skipped else "clean"]
    if not result.skipped:
        return verdict
    parts = words["separator"].join(dict.fromkeys(words["skipped_parts"][s.part] for s in result.skipped))
    return f"{verdict} {words['skipped_summary'].format(parts=parts)}"


def intro_text(result: "AuditResult", words: dict[str, Any], inline: Inline) -> str:
    """The model, its table's shape, whether the head is the table, and what read the tokenizer."""
    a = result.accounting
    if result.head_source is not None:
        tie = words["tie"]["untied"].format(head_rows=format_value(a.head_rows or 0),
                                            head=inline.code(str(result.head_source.get("tensor"))))
    else:
        tie = words["tie"]["tied" if result.tied else "unknown"]
    return words["intro"].format(table=inline.text(source_name(result.source)), V=format_value(a.table_rows),
                                 D=format_value(result.D),
                                 dtype=inline.text(str(result.source.get("dtype") or words["accounting"]["unknown"])),
                                 tie=tie,
                                 tokenizer=inline.text(result.tokenizer or words["no_tokenizer"]))


def resize_text(result: "AuditResult", words: dict[str, Any]) -> str:
    """What ``resize_token_embeddings(len(tokenizer))`` would do, in words."""
    r, w = result.accounting.resize, words["accounting"]
    if r is None:
        return w["unknown"]
    said = []
    if r.dropped:
        said.append(w["resize_drop"].format(first=format_value(r.dropped[0]), last=format_value(r.dropped[-1])))
        said.append(f"{w['trained']}: {format_value(len(r.trained))}")
    if r.added:
        said.append(w["resize_add"].format(count=format_value(r.added)))
    return "; ".join(said) or w["resize_none"]


def rule_text(rule: Any, words: dict[str, Any]) -> str:
    """The rule by which a row looks trained (``accounting.TrainedRule``), worded in ``words`` with its numbers."""
    ranges = [words["rule_range"].format(part=words["parts"][part], low=f"{low:.4g}", high=f"{high:.4g}")
              if low <= high else words["rule_none"].format(part=words["parts"][part])
              for part, (low, high) in rule.lengths.items()]
    return words["trained_rule"].format(factor=format_value(rule.factor), ranges=words["separator"].join(ranges))


def indicator_text(value: float) -> str:
    """One indicator value as every audit output shows it: 4 decimals, a tiny one in significant digits
    (``formats.fixed``: ``1.91e-05``, never ``0.0000``)."""
    return fixed(float(value), 4)


def undertrained_text(result: "AuditResult", words: dict[str, Any], inline: Inline, shown: int = SHOWN) -> str:
    """What the under-trained part measured, on what, against which reference rows, and the threshold; then the
    rows no token maps to that look trained, left out of the reference, where there are any."""
    u = result.undertrained
    by = words["separator"].join(
        f"{words['reference_by'][name].format(like=' / '.join(inline.code(p) for p in u.named_like))}: "
        f"{format_value(len(ids))}"
        for name, ids in u.reference_by.items())
    text = words["undertrained_intro"].format(
        indicator=words["indicators"][u.main], part=words["parts"][u.measured_on],
        reference=format_value(len(u.reference)), by=by or words["accounting"]["none"],
        percentile=format_value(u.percentile), population=words["populations"][u.population],
        size=format_value(u.population_size), threshold=f"{u.threshold:.4g}", count=format_value(len(u.candidates)))
    if u.trained_padding:
        text += " " + words["trained_padding"].format(count=format_value(len(u.trained_padding)),
                                                      ids=ids_text(u.trained_padding, result, inline, words, shown))
    return text

def ids_text(ids: Sequence[int], result: "AuditResult", inline: Inline, words: dict[str, Any],
             shown: int = SHOWN) -> str:
    """The first ``shown`` ids, each with its token (``5 'the'``), then how many more."""
    parts = [f"{i} {inline.code(t)}" if (t := result.token(i)) is not None else str(i) for i in ids[:shown]]
    more = len(ids) - shown
    if more > 0:
        parts.append(words["more"].format(count=format_value(more)))
    return ", ".join(parts)


# -- Markdown -------------------------------------------------------------------------------

def audit_markdown(result: "AuditResult", lang: str = DEFAULT_LANGUAGE, shown: int = SHOWN) -> str:
    """The audit as one Markdown document in ``lang``: summary with what to do, then each part.

    Every list shows its first ``shown`` ids with their tokens (the JSON holds them all).
    """
    w = audit_words(lang)
    md = MARKDOWN
    out = [f"# {md.text(w['title'].format(table=source_name(result.source)))}", "", intro_text(result, w, md), "",
           f"## {w['headings']['summary']}", "", verdict_text(result, w), ""]
    for f in result.findings:
        out.append(f"- **{w['severity'][f.severity]}** {md.text(finding_text(f, result, w))}")
        if f.ids and shown:
            out.append(f"  - {w['ids']}: {ids_text(f.ids, result, md, w, shown)}")
        out.append(f"  - {w['todo']}: {md.text(advice_text(f, w))}")
    out += _accounting(result, w, shown) + _reachability(result, w, shown) + _degenerate(result, w)
    out += _undertrained(result, w, shown) + _skipped_and_notes(result, w)
    if result.run is not None:  # who wrote it, when, how: as the lab report ends
        out += ["", "---", "", run_line(result.run, lang, md)]
    return "\n".join(out).rstrip("\n") + "\n"


def _accounting(result: "AuditResult", w: dict[str, Any], shown: int) -> list[str]:
    a, words, md = result.accounting, w["accounting"], MARKDOWN
    value = (lambda x: words["unknown"] if x is None else format_value(x))
    counted = (lambda ids: words["unknown"] if ids is None else _count_and_ids(ids, result, w, shown))
    head = words["tied_head"] if result.tied and a.head_rows is None else value(a.head_rows)
    rows = [(words["vocab_size"], value(a.vocab_size)), (words["table_rows"], value(a.table_rows)),
            (words["head_rows"], head), (words["tokenizer_length"], value(a.tokenizer_length)),
            (words["base_vocabulary"], value(a.base_vocabulary)), (words["id_span"], value(a.id_span)),
            (words["holes"], counted(a.holes)), (words["past_table"], counted(a.past_table)),
            (words["past_head"], counted(a.past_head)), (words["padding"], counted(a.padding)),
            (words["listed"], value(None if a.listed is None else len(a.listed))),
            (words["resize"], md.text(resize_text(result, w)))]
    out = ["", f"## {w['headings']['accounting']}", "", *_table(w["columns"]["counts"], rows)]
    if a.listed:
        yes_no = (lambda b: w["yes"] if b else w["no"])
        listed = [(str(t.id), md.code(t.token) if t.token is not None else "-", yes_no(t.special), yes_no(t.added),
                   yes_no(t.in_table)) for t in a.listed[:shown]]
        out += ["", f"{words['listed']} ({format_value(len(a.listed))})", "", *_table(w["columns"]["listed"], listed)]
        if len(a.listed) > shown:
            out += ["", w["more"].format(count=format_value(len(a.listed) - shown))]
    if a.resize is not None and a.resize.dropped:
        out += ["", md.text(rule_text(a.resize.rule, w))]
    return out


def _reachability(result: "AuditResult", w: dict[str, Any], shown: int) -> list[str]:
    r = result.reachability
    if r is None:
        return []
    md = MARKDOWN
    rows = [(f"`{name}`", format_value(n), md.text(w["categories"][name])) for name, n in r.counts.items()]
    out = ["", f"## {w['headings']['reachability']}", "", w["reachability_intro"], "",
           *_table(w["columns"]["categories"], rows)]
    if r.unreachable:
        cells = [(str(u.id), md.code(u.token), f"`{u.category}`", md.code(u.decoded),
                  ", ".join(str(i) for i in u.reencoded[:8]) + (" …" if len(u.reencoded) > 8 else ""))
                 for u in r.unreachable[:shown]]
        out += ["", *_table(w["columns"]["unreachable"], cells)]
        if len(r.unreachable) > shown:
            out += ["", w["more"].format(count=format_value(len(r.unreachable) - shown))]
    return out


def _degenerate(result: "AuditResult", w: dict[str, Any]) -> list[str]:
    rows = [(w["parts"][d.part], format_value(len(d.zero)), format_value(len(d.nonfinite)),
             f"{format_value(sum(len(g) for g in d.duplicates))} ({format_value(len(d.duplicates))})")
            for d in result.degenerate]
    return ["", f"## {w['headings']['degenerate']}", "", *_table(w["columns"]["degenerate"], rows)]


def _undertrained(result: "AuditResult", w: dict[str, Any], shown: int) -> list[str]:
    u = result.undertrained
    if u is None:
        return []
    md = MARKDOWN
    intro = undertrained_text(result, w, md, shown)
    categories = result.reachability.category_of() if result.reachability is not None else {}
    reference = set(u.reference)
    cells = []
    for i in u.candidates[:shown]:
        token = result.token(i)
        values = [u.values[name][i] for name in (u.main, "cosine_distance", "l2_distance") if name in u.values]
        cells.append((str(i), md.code(token) if token is not None else "-",
                      f"`{categories[i]}`" if i in categories else "-", w["yes"] if i in reference else w["no"],
                      *(indicator_text(v) for v in values), *([""] * (3 - len(values)))))
    out = ["", f"## {w['headings']['undertrained']}", "", intro]
    if cells:
        out += ["", *_table(w["columns"]["candidates"], cells)]
    if len(u.candidates) > shown:
        out += ["", w["more"].format(count=format_value(len(u.candidates) - shown))]
    return out


def _skipped_and_notes(result: "AuditResult", w: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if result.skipped:
        out += ["", f"## {w['headings']['skipped']}", ""]
        out += [f"- {w['skipped_parts'][s.part]}: {MARKDOWN.text(s.reason)}" for s in result.skipped]
    if result.notes:
        out += ["", f"## {w['headings']['notes']}", ""] + [f"- {MARKDOWN.text(note)}" for note in result.notes]
    return out


def _count_and_ids(ids: Sequence[int], result: "AuditResult", w: dict[str, Any], shown: int) -> str:
    if not ids:
        return "0"
    return f"{format_value(len(ids))}: {ids_text(ids, result, MARKDOWN, w, shown)}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table whose cells are already written by ``MARKDOWN``."""
    return [markdown_row(headers), markdown_row(["---"] * len(headers)), *(markdown_row(row) for row in rows)]

