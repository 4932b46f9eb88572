"""Alt text of the lab report's figures: what each figure shows, written from the measured values.

A figure's caption says what the figure is about ("The distribution of row
lengths"); its alt text says what a sighted reader sees in it, with the
numbers ("Histogram of 30,522 row norms from 0.252 to 1.69 ...; the longest
rows: [unused12] 1.69, ..."), for a screen reader, a text browser, or a
search. The HTML report gives it to each figure as its accessible name. The
words are ``locales.WORDS[lang]["alt"]``; the values come from the
``LabResult`` the figure is drawn from, as they are: nothing is measured here.
Standard library only (the projection's and histogram's arrays are read
through ``tolist()``).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ..measure.lab import LabResult
from .locales import DEFAULT_LANGUAGE, WORDS

__all__ = ["figure_alt_text", "value_text", "coordinate_places"]


def figure_alt_text(name: str, result: LabResult, lang: str = DEFAULT_LANGUAGE) -> str:
    """The alt text of the lab report's figure ``name`` (``report.plots.lab_figure``'s names) in ``lang``.

    Parameters
    ----------
    name : {"projection", "norms", "cost", "params", "stretch", "scale"}
    result : LabResult
        Measured with ``figures=True`` for ``projection`` and ``norms``.
    lang : {"ko", "en", "ja", "zh"}

    Returns
    -------
    str
        Plain text (not escaped). Counts with thousands separators, other
        values to 3 significant digits (``value_text``); a projection's
        coordinates with one fixed number of decimals (``coordinate_places``).

    Raises
    ------
    KeyError
        For an unknown figure name or language.
    ValueError
        For ``projection`` or ``norms`` on a result measured without figures,
        or a figure the result left out (``result.views.left_out``).
    """
    words = WORDS[lang]["alt"]
    write = _WRITERS[name]
    if name in ("projection", "norms"):
        if result.views is None:
            raise ValueError(f"figure {name!r} is drawn from what was measured: measure the lab with figures=True")
        if name in result.views.left_out:
            raise ValueError(f"figure {name!r} was left out: {result.views.left_out[name]}")
    return write(result, words)


def value_text(x: float) -> str:
    """A measured float for people: 3 significant digits, fixed-point, thousands separated;
    scientific below 1e-3 (never a bare 0 for a value that is not 0).

    >>> value_text(1.6934), value_text(-0.04567), value_text(26.572), value_text(1234.5), value_text(1e-7), value_text(0.0)
    ('1.69', '-0.0457', '26.6', '1,234', '1.00e-07', '0')
    """
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) < 1e-3:
        return f"{x:.2e}"
    places = max(0, 2 - math.floor(math.log10(abs(x))))
    return f"{x:,.{places}f}"


def _projection(result: LabResult, words: dict[str, Any]) -> str:
    proj = result.views.projection
    points = proj.points.tolist()  # (n, 2)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    places = coordinate_places(max(max(xs) - min(xs), max(ys) - min(ys)))
    by_group: dict[str, list[str]] = {}
    probe, at = "", ""
    for label, group, (x, y) in zip(proj.labels, proj.groups, points):
        if group == "probe":
            probe, at = label, _point(x, y, places)
        else:
            by_group.setdefault(group, []).append(f"{label} {_point(x, y, places)}")
    clauses = [words["group"].format(name=words["groups"][group], n=len(items), items=words["sep"].join(items))
               for group, items in by_group.items() if group != "sample"]
    if "sample" in by_group:
        clauses.append(words["sample"].format(n=f"{len(by_group['sample']):,}"))
    return words["projection"].format(
        n=f"{len(points):,}", method=_METHODS.get(proj.method, proj.method),
        x0=_fixed(min(xs), places), x1=_fixed(max(xs), places), y0=_fixed(min(ys), places),
        y1=_fixed(max(ys), places),
        probe=probe, at=at, groups=words["clause_sep"].join(clauses))


def _norms(result: LabResult, words: dict[str, Any]) -> str:
    dist = result.views.norms
    edges, counts = dist.edges.tolist(), dist.counts.tolist()  # (bins + 1,), (bins,)
    fullest = max(range(len(counts)), key=lambda b: (counts[b], -b))  # the first of equal bins
    longest = [f"{label} {value_text(norm)}" for label, norm in zip(dist.longest_labels, dist.longest_norms)]
    return words["norms"].format(
        n=f"{sum(counts):,}", low=value_text(edges[0]), high=value_text(edges[-1]), bins=f"{len(counts):,}",
        a=value_text(edges[fullest]), b=value_text(edges[fullest + 1]), peak=f"{counts[fullest]:,}",
        top=f"{len(longest):,}", longest=words["sep"].join(longest))


def _cost(result: LabResult, words: dict[str, Any]) -> str:
    # The bars are the entries read per token (a row of D; every row, V x D, one multiplication each), as drawn.
    return words["cost"].format(lookup_read=f"{result.dim:,}", lookup=f"{result.lookup_mults:,}",
                                one_hot=f"{result.one_hot_mults:,}",
                                V=f"{result.vocab:,}", D=f"{result.dim:,}", diff=value_text(result.max_abs_diff))


def _params(result: LabResult, words: dict[str, Any]) -> str:
    return words["params"].format(
        V=f"{result.vocab:,}", tied=f"{result.tied_params:,}", untied=f"{result.untied_params:,}",
        bigger_V=f"{result.bigger_vocab:,}", bigger_tied=f"{result.bigger_tied:,}",
        bigger_untied=f"{result.bigger_untied:,}")


def _stretch(result: LabResult, words: dict[str, Any]) -> str:
    cmp = result.stretch

    def scored(lst: Any) -> str:
        labels = lst.tokens or [str(i) for i in lst.ids]
        return words["sep"].join(f"{label} {value_text(score)}" for label, score in zip(labels, lst.scores))

    names = dict(zip(cmp.cos_before.ids, cmp.cos_before.tokens or [str(i) for i in cmp.cos_before.ids]))
    return words["stretch"].format(
        k=f"{len(cmp.cos_before.ids):,}", probe=cmp.probe_token or str(cmp.probe),
        cos_before=scored(cmp.cos_before), dot_before=scored(cmp.dot_before),
        target=names.get(cmp.target, str(cmp.target)), factor=f"{cmp.factor:.4g}",
        cos_after=scored(cmp.cos_after), dot_after=scored(cmp.dot_after))


def _scale(result: LabResult, words: dict[str, Any]) -> str:
    cmp = result.scale
    labels = cmp.tokens or [str(i) for i in cmp.ids]
    return words["scale"].format(
        n=f"{len(cmp.ids):,}", factor=f"{cmp.factor:.4g}", probe=cmp.probe_token or str(cmp.probe),
        lengths=_pairs(labels, cmp.norms_before, cmp.norms_after, words["sep"]),
        cosines=_pairs(labels, cmp.cos_before, cmp.cos_after, words["sep"]))


def _pairs(labels: Sequence[str], before: Sequence[float], after: Sequence[float], sep: str) -> str:
    return sep.join(f"{label} {value_text(a)} → {value_text(b)}" for label, a, b in zip(labels, before, after))


def coordinate_places(span: float) -> int:
    """Decimals for the coordinates of one picture: the same for every point, enough for 3 significant
    digits of the cloud's largest spread ``span`` (a point near 0 reads 0.00, not -7.97e-04).

    >>> coordinate_places(3.2), coordinate_places(0.05), coordinate_places(250.0), coordinate_places(0.0)
    (2, 4, 0, 2)
    """
    if not span > 0 or not math.isfinite(span):
        return 2
    return max(0, 2 - math.floor(math.log10(span)))


def _fixed(x: float, places: int) -> str:
    text = f"{x:,.{places}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text  # no "-0.00"


def _point(x: float, y: float, places: int) -> str:
    return f"({_fixed(x, places)}, {_fixed(y, places)})"


_METHODS = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}  # as the field writes them

_WRITERS: dict[str, Callable[[LabResult, dict[str, Any]], str]] = {
    "projection": _projection, "norms": _norms, "cost": _cost, "params": _params, "stretch": _stretch,
    "scale": _scale,
}
