"""``embedlab audit``: does the vocabulary agree with the table and the head?

One walk over a model's token table, its output head and its tokenizer, four
measurements, one result:

* row accounting (``accounting``): the config's ``vocab_size``, the rows of the
  table and the head, the tokenizer's ids; holes, ids past the table, rows no
  token maps to, special and added tokens, and what
  ``resize_token_embeddings(len(tokenizer))`` would drop;
* reachability (``reachability``): every token decoded and encoded again,
  sorted into Magikarp's categories;
* degenerate rows (``degenerate``): all-zero, non-finite and copied rows of the
  table and of the head;
* under-trained tokens (``undertrained``): Land & Bartolo's indicators against
  a reference set of rows known to be unused, and the reachable tokens below a
  percentile of them.

A part that cannot run is skipped and the result says why (``skipped``): no
tokenizer (a folder with no tokenizer file, word vectors), no tokenizer to run
(a GGUF file holds a token list only), no reference rows for a tied model.
``findings`` orders what is wrong by how bad it is, for the summary a person
reads first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..errors import SizeError, TokenIdError, TokenTypeError
from . import undertrained as ut
from .accounting import Accounting, account, looks_trained, resize
from .degenerate import DegenerateRows, RowScan, scan_rows
from .reachability import REACHABLE, Reachability, reachability

__all__ = ["SEVERITIES", "POPULATIONS", "Finding", "Skipped", "Undertrained", "AuditResult", "audit"]

SEVERITIES = ("fatal", "warning", "note")  # the order findings are listed in
INDICATOR_DIGITS = 7  # significant digits of each indicator in the JSON
# The tokens the threshold is a percentile of (and which can be candidates), by what is known of them.
POPULATIONS = {
    "reachable": "reachable tokens (Magikarp's OK); candidates among OK and OK_SPECIAL",
    "typed_normal": "tokens the file types normal (no tokenizer to run); candidates among normal and control",
    "with_token": "every row with a token, specials left out (no tokenizer to run)",
    "every_row": "every row (no vocabulary)",
}


@dataclass(frozen=True)
class Finding:
    """One thing the audit found: ``code`` (what), ``severity`` (one of ``SEVERITIES``), ``count``, the ids
    concerned (all of them), and the ``part`` (``"input"``, ``"head"``) where it is about one table."""

    code: str
    severity: str
    count: int
    ids: tuple[int, ...] = ()
    part: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "part": self.part, "count": self.count,
                "ids": list(self.ids)}


@dataclass(frozen=True)
class Skipped:
    """A part of the audit that did not run, and why."""

    part: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "reason": self.reason}


@dataclass(frozen=True)
class Undertrained:
    """Under-trained tokens: the indicators, the reference set, the threshold and the candidates.

    Attributes
    ----------
    on : {"head", "input"}
        The table the distances were measured on: the output head (untied), or the token table (tied).
    main : str
        The indicator the threshold is taken of (``undertrained.MAIN``, or ``FALLBACK`` without reference rows).
    values : dict of str -> np.ndarray (V,) float64
        Every indicator of every row (NaN for a non-finite row).
    reference, reference_by : tuple of int, dict of str -> tuple of int
        The reference ids, and where each came from: ``"padding"`` (rows no
        token maps to, those that look trained left out), ``"named"``
        (``undertrained.REFERENCE_PATTERNS``), ``"unused_type"`` (GGUF token
        type unused), ``"given"``.
    percentile, threshold : float
        The threshold is the ``percentile``-th percentile of ``main`` over the ``population``.
    population : str
        Which tokens the threshold is a percentile of, and which can be candidates (one of ``POPULATIONS``).
    population_size : int
    candidates : tuple of int
        Ids at or under the threshold, sorted by ``main`` (then id). The reference rows are the yardstick:
        they are left out of the population and of the candidates (Magikarp's code counts a reachable one
        in both); reachable reference tokens are a finding of their own (``reachable_unused``).
    component : FirstComponent or None
    left_out : tuple of int
        Non-finite rows, left out of the component and the means.
    named_like : tuple of str
        The patterns of ``undertrained.REFERENCE_PATTERNS`` the ``"named"`` reference tokens match
        (``"<|reserved_special_token_N|>"``), as people write them.
    trained_padding : tuple of int
        Rows no token maps to that look trained (``accounting.looks_trained``, the rule of the resize
        check), left out of the reference: a trained row among the yardstick's rows would move its mean
        away from the rows that never trained.
    """

    on: str
    main: str
    values: dict[str, np.ndarray]
    reference: tuple[int, ...]
    reference_by: dict[str, tuple[int, ...]]
    percentile: float
    threshold: float
    population: str
    population_size: int
    candidates: tuple[int, ...]
    component: ut.FirstComponent | None = None
    left_out: tuple[int, ...] = ()
    named_like: tuple[str, ...] = ()
    trained_padding: tuple[int, ...] = ()

    @property
    def measured_on(self) -> str:
        """The table the main indicator was measured on: the token table for the input norm (``FALLBACK``),
        else ``on``."""
        return "input" if self.main == ut.FALLBACK else self.on

    def to_dict(self, tokens: Sequence[str | None] = (), categories: dict[int, str] | None = None) -> dict[str, Any]:
        reference = set(self.reference)
        return {
            "on": self.on, "main": self.main, "percentile": self.percentile, "threshold": _rounded(self.threshold),
            "population": self.population, "population_size": self.population_size,
            "measured_on": self.measured_on,
            "reference": {"ids": list(self.reference), "by": {k: list(v) for k, v in self.reference_by.items()},
                          "named_like": list(self.named_like),
                          "trained_padding_left_out": _named_ids(self.trained_padding, tokens)},
            "candidates": [{"id": i, "token": _token(tokens, i), "category": (categories or {}).get(i),
                            "in_reference": i in reference,
                            **{name: _rounded(values[i]) for name, values in self.values.items()}}
                           for i in self.candidates],
            "first_component": None if self.component is None else self.component.to_dict(),
            "left_out": list(self.left_out),
            "indicators": {name: [_rounded(x) for x in values.tolist()] for name, values in self.values.items()},
        }


@dataclass(frozen=True)
class AuditResult:
    """What ``embedlab audit`` found.

    Attributes
    ----------
    source, head_source : dict, dict or None
        The provenance of the token table and of a separate head (``Provenance.to_dict``).
    tied : bool or None
    D : int
        Columns of the token table.
    tokenizer : str or None
        What read the tokenizer; None without one.
    tokens : tuple of (str or None)
        Each id's token (the tokenizer's, or a word table's own), for naming ids.
    accounting : Accounting
    reachability : Reachability or None
    degenerate : tuple of DegenerateRows
        The token table's, then the head's (untied).
    undertrained : Undertrained or None
    findings : tuple of Finding
        Fatal first, then warnings, then notes.
    skipped : tuple of Skipped
    notes : tuple of str
    run : report.run.Run or None
        Who made the audit, when, with which call or command (set by ``api.audit``; the CLI writes the
        command line), as the lab report records it.
    """

    source: dict[str, Any]
    head_source: dict[str, Any] | None
    tied: bool | None
    D: int
    tokenizer: str | None
    tokens: tuple[str | None, ...]
    accounting: Accounting
    reachability: Reachability | None
    degenerate: tuple[DegenerateRows, ...]
    undertrained: Undertrained | None
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = ()
    run: Any = None

    def token(self, i: int) -> str | None:
        """The token of id ``i``, None where there is none."""
        return _token(self.tokens, i)

    def to_dict(self) -> dict[str, Any]:
        """Everything, every list complete (JSON-able)."""
        categories = None if self.reachability is None else self.reachability.category_of()
        return {
            "source": self.source, "head_source": self.head_source, "tied": self.tied, "V": self.accounting.table_rows,
            "D": self.D, "tokenizer": self.tokenizer,
            "findings": [f.to_dict() for f in self.findings], "skipped": [s.to_dict() for s in self.skipped],
            "accounting": self.accounting.to_dict(self.tokens),
            "reachability": None if self.reachability is None else self.reachability.to_dict(),
            "degenerate": [d.to_dict(self.tokens) for d in self.degenerate],
            "undertrained": None if self.undertrained is None else self.undertrained.to_dict(self.tokens, categories),
            "notes": list(self.notes),
            **({"run": self.run.to_dict()} if self.run is not None else {}),
        }


def audit(stored: Any, inventory: Any = None, *, unused: Sequence[int | range] | range = (),
          percentile: float = ut.DEFAULT_PERCENTILE, no_tokenizer: str | None = None) -> AuditResult:
    """Audit a model's table, head and tokenizer.

    Parameters
    ----------
    stored : sources.stored.StoredTables
        The token table and the head as stored.
    inventory : sources.tokenizer.TokenizerInventory, optional
        The tokenizer; None without one (``no_tokenizer`` says why).
    unused : sequence of (int or range), or range
        Ids known to be unused, added to the reference set; a ``range`` stands for its ids (its ends are
        checked against V before it is expanded).
    percentile : float
        Candidates lie at or under this percentile (0 to 100) of the population's main indicator.
    no_tokenizer : str, optional
        Why there is no tokenizer, for ``skipped``.

    Returns
    -------
    AuditResult

    Raises
    ------
    SizeError
        (a ``ValueError``) for a percentile outside [0, 100].
    TokenIdError, TokenTypeError
        For an ``unused`` id (or a range's end) outside the rows of the table measured, or not an int; the
        error's ``value`` is the id or the range given (the CLI writes a range as typed: ``1-99999999999``).
    """
    _check_percentile(percentile)
    scans = [scan_rows(stored.table, "input")] + ([scan_rows(stored.head, "head")] if stored.head is not None else [])
    tokens = tuple(inventory.tokens) if inventory is not None else tuple(stored.words or ())
    given = _checked_ids(unused, stored)
    known = frozenset(ut.named_reference(tokens)) | (inventory.unused if inventory is not None else frozenset()) \
        | frozenset(given)  # tokens known to be unused
    counts = _accounting(stored, inventory, tokens, scans, known)
    skipped: list[Skipped] = []
    reach = _reachability(inventory, no_tokenizer, skipped)
    under = _undertrained(stored, inventory, tokens, counts, reach, scans, given, known, percentile, skipped)
    notes = [*stored.notes, *(inventory.notes if inventory is not None else ()), *(reach.notes if reach else ())]
    head_source = None if stored.head_provenance is None else stored.head_provenance.to_dict()
    return AuditResult(source=stored.provenance.to_dict(), head_source=head_source, tied=stored.tied,
                       D=int(stored.table.shape[1]), tokenizer=None if inventory is None else inventory.reader,
                       tokens=tokens, accounting=counts, reachability=reach,
                       degenerate=tuple(scan.degenerate for scan in scans), undertrained=under,
                       findings=_findings(tokens, counts, reach, scans, under), skipped=tuple(skipped),
                       notes=tuple(notes))


# -- the parts -------------------------------------------------------------------------------

def _accounting(stored: Any, inventory: Any, tokens: tuple[str | None, ...], scans: list[RowScan],
                known: frozenset[int]) -> Accounting:
    V, V_head = stored.table.shape[0], None if stored.head is None else stored.head.shape[0]
    if inventory is None:
        return account(None, table_rows=V, head_rows=V_head, vocab_size=stored.vocab_size,
                       vocab_size_key=stored.vocab_size_key)
    counts = account(tokens, table_rows=V, head_rows=V_head, vocab_size=stored.vocab_size,
                     vocab_size_key=stored.vocab_size_key, tokenizer_length=inventory.length,
                     base_vocabulary=inventory.base_size, special=inventory.special, added=inventory.added)
    return replace(counts, resize=resize(inventory.length, V, tokens, scans, unused=known))


def _reachability(inventory: Any, no_tokenizer: str | None, skipped: list[Skipped]) -> Reachability | None:
    if inventory is None:
        skipped.append(Skipped("accounting", f"the tokenizer's ids: {no_tokenizer or 'no tokenizer'}"))
        skipped.append(Skipped("reachability", no_tokenizer or "no tokenizer"))
        return None
    if inventory.runner is None:
        skipped.append(Skipped("reachability", f"a token list ({inventory.reader}) is no tokenizer to run: "
                                               "decoding and encoding need the model's tokenizer (tokenizer.json)"))
        return None
    return reachability(inventory.tokens, inventory.special, inventory.runner)


def _undertrained(stored: Any, inventory: Any, tokens: tuple[str | None, ...], counts: Accounting,
                  reach: Reachability | None, scans: list[RowScan], given: tuple[int, ...], known: frozenset[int],
                  percentile: float, skipped: list[Skipped]) -> Undertrained | None:
    untied = stored.head is not None
    mat, scan = (stored.head, scans[1]) if untied else (stored.table, scans[0])
    V = mat.shape[0]
    padding = counts.padding or ()
    trained = looks_trained(padding, tokens, scans, unused=known)[0] if padding else ()
    named = tuple(i for i in ut.named_reference(tokens) if i < V)
    by = {"padding": tuple(i for i in padding if i not in set(trained)), "named": named,
          "unused_type": tuple(sorted(i for i in (inventory.unused if inventory is not None else ()) if i < V)),
          "given": given}
    by = {name: tuple(i for i in ids if i < V) for name, ids in by.items() if ids}
    reference = tuple(sorted({i for ids in by.values() for i in ids}))
    if not reference and not untied:
        head = "the head is the token table" if stored.tied else "there is no output head of its own"
        trained_note = f", {len(trained):,} rows no token maps to that look trained" if trained else ""
        skipped.append(Skipped("undertrained", "no reference rows (no row past the tokenizer, no token named like "
                                               f"{', '.join(ut.REFERENCE_PATTERNS)}, no ids given as known unused"
                                               f"{trained_note}) and {head}: there is nothing to compare to"))
        return None
    found = ut.indicators(mat, reference, input_norms=scans[0].norms if untied else None, finite=scan.finite)
    population, eligible, words = _population(V, inventory, tokens, reach)
    known_rows = set(found.reference)  # the yardstick, not candidates: reachable ones are a finding of their own
    population, eligible = [i for i in population if i not in known_rows], [i for i in eligible if i not in known_rows]
    threshold, candidates = ut.threshold_and_candidates(found.values[found.main], population, eligible, percentile)
    return Undertrained(on="head" if untied else "input", main=found.main, values=found.values,
                        reference=found.reference, reference_by=by, percentile=float(percentile), threshold=threshold,
                        population=words, population_size=len(population), candidates=candidates,
                        component=found.component, left_out=found.left_out,
                        named_like=ut.reference_names(tokens, named), trained_padding=tuple(trained))


def _population(V: int, inventory: Any, tokens: tuple[str | None, ...],
                reach: Reachability | None) -> tuple[list[int], list[int], str]:
    """(ids the threshold is a percentile of, ids that can be candidates, which population it is: ``POPULATIONS``)."""
    if reach is not None:  # magikarp: the percentile of the OK tokens; candidates among OK and OK_SPECIAL
        ok = [i for i in reach.categories["OK"] if i < V]
        return ok, sorted(i for name in REACHABLE for i in reach.categories[name] if i < V), "reachable"
    if inventory is not None and inventory.types is not None:
        normal = [i for i, kind in enumerate(inventory.types) if kind == "normal" and i < V]
        control = [i for i, kind in enumerate(inventory.types) if kind == "control" and i < V]
        return normal, sorted(normal + control), "typed_normal"
    if tokens:
        special = inventory.special if inventory is not None else frozenset()
        held = [i for i in range(min(V, len(tokens))) if tokens[i] is not None and i not in special]
        return held, held, "with_token"
    return list(range(V)), list(range(V)), "every_row"


# -- findings ----------------------------------------------------------------------------------

def _findings(tokens: tuple[str | None, ...], counts: Accounting, reach: Reachability | None, scans: list[RowScan],
              under: Undertrained | None) -> tuple[Finding, ...]:
    found: list[Finding] = []

    def add(code: str, severity: str, ids: Sequence[int], part: str | None = None, count: int | None = None) -> None:
        if ids or count:
            found.append(Finding(code, severity, len(ids) if count is None else count, tuple(ids), part))

    add("ids_past_table", "fatal", counts.past_table or (), "input")
    add("ids_past_head", "fatal", counts.past_head or (), "head")
    for scan in scans:
        d = scan.degenerate
        add("nonfinite_rows", "fatal", d.nonfinite, d.part)
        token_zero = [i for i in d.zero if _token(tokens, i) is not None]
        add("zero_token_rows", "warning", token_zero, d.part)
        add("duplicate_rows", "warning", [i for group in d.duplicates for i in group], d.part)
    if counts.vocab_size is not None and counts.vocab_size != counts.table_rows:
        add("config_vocab_size", "warning", (), None, abs(counts.vocab_size - counts.table_rows))
    if counts.head_rows is not None and counts.head_rows != counts.table_rows:
        add("head_rows", "warning", (), "head", abs(counts.head_rows - counts.table_rows))
    warned: set[int] = set()  # rows a resize warning names: the note on what a resize changes leaves them out
    if counts.resize is not None:
        add("resize_drops_tokens", "warning", counts.resize.tokens_dropped)
        add("resize_drops_trained", "warning", [i for i in counts.resize.trained
                                                if i not in set(counts.resize.tokens_dropped)])
        warned = set(counts.resize.tokens_dropped) | set(counts.resize.trained)
    if under is not None:
        add("undertrained", "warning", under.candidates, under.on)
    if under is not None and reach is not None:
        reachable = {i for name in REACHABLE for i in reach.categories[name]}
        add("reachable_unused", "warning", [i for i in under.reference if i in reachable])
    if reach is not None:
        add("unreachable", "note", [u.id for u in reach.unreachable if u.category != "UNREACHABLE_SPECIAL"])
    add("holes", "note", counts.holes or ())
    add("padding_rows", "note", counts.padding or (), "input")
    if counts.resize is not None:
        others = [i for i in counts.resize.dropped if i not in warned]
        add("resize_changes", "note", others, "input", len(others) + counts.resize.added)
    return tuple(sorted(found, key=lambda f: SEVERITIES.index(f.severity)))


# -- checks and helpers ----------------------------------------------------------------------------

def _check_percentile(percentile: float) -> None:
    if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not math.isfinite(percentile) \
            or not 0 <= percentile <= 100:
        raise SizeError(f"percentile={percentile!r} must be a number from 0 to 100", parameter="percentile",
                        value=percentile, expected="a number from 0 to 100")


def _checked_ids(unused: Sequence[int | range] | range, stored: Any) -> tuple[int, ...]:
    """The ids given as known unused, each an int in the rows of the table measured.

    A ``range`` (one, or among the ids) is checked by its ends before it is expanded: ``range(1, 10**11)`` is
    refused at once, naming it as typed (``1-99999999999``), not after 10^11 ids were listed.
    """
    V = (stored.head if stored.head is not None else stored.table).shape[0]
    expected = f"ids in [0, V = {V:,})"
    ids: set[int] = set()
    for item in ([unused] if isinstance(unused, range) else unused):
        if isinstance(item, range):
            if item.step != 1:
                raise TokenTypeError(f"unused ranges must step by 1, got {item!r}", parameter="unused",
                                     value=item, expected="ids and ranges of consecutive ids")
            if len(item) and not (0 <= item.start and item.stop - 1 < V):
                raise TokenIdError(f"unused ids {_range_text(item)} are out of range for V={V}", parameter="unused",
                                   value=item, expected=expected)
            ids.update(item)
            continue
        if isinstance(item, bool) or not isinstance(item, (int, np.integer)):
            raise TokenTypeError(f"unused ids must be ints, got {item!r}", parameter="unused", value=item,
                                 expected="token ids (ints)")
        if not 0 <= int(item) < V:
            raise TokenIdError(f"unused id {int(item)} is out of range for V={V}", parameter="unused",
                               value=int(item), expected=expected)
        ids.add(int(item))
    return tuple(sorted(ids))


def _range_text(ids: range) -> str:
    """A range of ids as the command line takes it: ``range(5, 10)`` -> ``"5-9"``, ``range(5, 6)`` -> ``"5"``."""
    last = ids.stop - 1
    return str(ids.start) if last == ids.start else f"{ids.start}-{last}"


def _named_ids(ids: Sequence[int], tokens: Sequence[str | None]) -> list[dict[str, Any]]:
    return [{"id": i, "token": _token(tokens, i)} for i in ids]


def _token(tokens: Sequence[str | None], i: int) -> str | None:
    return tokens[i] if 0 <= i < len(tokens) else None


def _rounded(x: float) -> float | None:
    """An indicator for the JSON: ``INDICATOR_DIGITS`` significant digits; None for NaN."""
    return None if not math.isfinite(x) else float(f"{x:.{INDICATOR_DIGITS}g}")
