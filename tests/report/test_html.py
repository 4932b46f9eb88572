"""The HTML report, parsed with the standard library's html.parser: every heading, every figure as
inline SVG whose text stays text, alt text written from the numbers (checked against numbers
computed here with math), width and height, the run record, and nothing outside the page."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")  # before report.html, which imports it
pytest.importorskip("sklearn")

from embedlab import embed  # noqa: E402
from embedlab.measure import lab  # noqa: E402
from embedlab.report import html as html_report, run as run_record  # noqa: E402
from embedlab.report.locales import WORDS  # noqa: E402


@dataclass
class Figure:
    """One <figure> of the page: its <svg>'s attributes, the <title> naming it, its texts, its caption."""

    svg: dict[str, str]
    title_id: str | None = None
    title: str = ""
    texts: list[str] = field(default_factory=list)
    caption: str = ""
    caption_id: str | None = None


class Page(HTMLParser):
    """What the tests look at: h2 headings, figures, every reference out of an element, ids, the footer."""

    def __init__(self) -> None:
        super().__init__()
        self.h2: list[str] = []
        self.figures: list[Figure] = []
        self.refs: list[str] = []  # src, href, xlink:href and url(...) values
        self.ids: list[str] = []
        self.tags: list[str] = []
        self.footer = ""
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = {key: value or "" for key, value in attrs}
        self.tags.append(tag)
        self._stack.append(tag)
        self.ids += [attrs["id"]] if "id" in attrs else []
        self.refs += [value for key, value in attrs.items() if key in ("src", "href", "xlink:href")]
        self.refs += re.findall(r"url\(\s*['\"]?([^)'\"]*)", attrs.get("style", ""))
        if tag == "svg" and "figure" in self._stack:
            self.figures.append(Figure(svg=attrs))
        if tag == "title" and "svg" in self._stack:
            self.figures[-1].title_id = attrs.get("id")
        if tag == "figcaption":
            self.figures[-1].caption_id = attrs.get("id")

    def handle_endtag(self, tag):
        while self._stack and self._stack.pop() != tag:
            pass

    def handle_data(self, data):
        where = self._stack[-1] if self._stack else None
        if where == "h2":
            self.h2.append(data)
        elif where == "title" and "svg" in self._stack:
            self.figures[-1].title += data
        elif "svg" in self._stack and ("text" in self._stack or "tspan" in self._stack):
            self.figures[-1].texts.append(data)
        elif where == "figcaption":
            self.figures[-1].caption += data
        elif "footer" in self._stack:
            self.footer += data
        elif where == "style":
            self.refs += re.findall(r"url\(\s*['\"]?([^)'\"]*)", data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


def sig3(x: float) -> str:
    """3 significant digits in fixed point, the alt text's documented form: 2.3 -> '2.30', 0.0457."""
    return f"{x:,.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


ROWS = embed.make_table(64, 8, 1)
# Row 9 is the longest by far: length 5 exactly (a 3-4-5 triangle), so its norm reads 5.00.
ROWS[9] = [3.0, 4.0] + [0.0] * 6
RUN = run_record.Run(version="9.9.9", date="2026-09-17T08:00:00Z", command="embedlab report --html --out r")


@pytest.fixture(scope="module")
def result():
    measured = lab.measure(lab.ReferenceBackend(ROWS), lab.LabSettings(probe=3), figures=True)
    return replace(measured, run=RUN)


@pytest.fixture(scope="module")
def pages(result):
    """The page in each language, drawn once for the module (six figures take seconds)."""
    drawn: dict[str, str] = {}

    def page(lang: str) -> str:
        if lang not in drawn:
            drawn[lang] = html_report.report_html(result, lang)
        return drawn[lang]

    return page


@pytest.mark.parametrize("lang", list(WORDS))
def test_page_holds_every_section_and_every_figure_as_inline_svg(pages, lang):
    text = pages(lang)
    page = parse(text)
    assert page.h2 == list(WORDS[lang]["headings"])
    # projection and norms, cost, params, stretch, scale: one figure per name in the section list
    assert len(page.figures) == 6 and "img" not in page.tags and "script" not in page.tags
    assert [f.caption for f in page.figures] == [WORDS[lang]["captions"][name] for name in
                                                 ("projection", "norms", "cost", "params", "stretch", "scale")]
    for figure in page.figures:
        assert figure.svg["role"] == "img"
        assert (figure.svg["width"], figure.svg["height"]) == ("1200", "800")  # the figure's pixels
        assert figure.svg["viewbox"] == "0 0 864 576"  # matplotlib's points: 12 x 8 inches
        assert figure.svg["aria-labelledby"] == figure.title_id and figure.title
        assert figure.svg["aria-describedby"] == figure.caption_id
        assert figure.title != figure.caption and figure.caption not in figure.title
        assert figure.texts  # titles, ticks and labels stay text
    assert "<?xml" not in text and "<!DOCTYPE svg" not in text and "<metadata" not in text
    for key in lab.REPORT_KEYS:
        assert f"<code>{key}</code>" in text


def test_ids_are_unique_across_the_inline_figures(pages):
    page = parse(pages("en"))
    assert len(page.ids) == len(set(page.ids)) > 6 * 10
    internal = [ref for ref in page.refs if ref.startswith("#")]
    assert internal and {ref[1:] for ref in internal} <= set(page.ids)  # clip paths and markers resolve


def test_the_page_links_nothing_outside_itself(pages):
    text = pages("en")
    page = parse(text)
    # in-page references only: ids, and the fonts carried inside the page as data: URLs
    assert page.refs and all(ref.startswith(("#", "data:font/woff2;base64,")) for ref in page.refs)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|file:|//)""", text, flags=re.I)
    assert not re.search(r"""url\(\s*["']?\s*(?!#|data:font/woff2;base64,)""", text)
    assert "http://" not in text and "https://" not in text and "@import" not in text


def test_figure_text_holds_the_numbers_and_labels_drawn(pages, result):
    page = parse(pages("en"))
    projection, norms, cost, params, stretch, scale = page.figures
    texts = {name: " ".join(f.texts) for name, f in zip(("projection", "norms", "cost", "params", "stretch", "scale"),
                                                         page.figures)}
    assert str(64 * 8) in texts["cost"]  # the one-hot product's bar label: V x D multiplications
    assert "9 (5)" in norms.texts  # the longest row's label (row 9, length 5), as text
    assert all(str(i) in projection.texts for i in result.cos_neighbors)


@pytest.mark.parametrize("lang", list(WORDS))
def test_alt_text_describes_the_data_with_numbers_computed_here(pages, result, lang):
    page = parse(pages(lang))
    alt = {name: f.title for name, f in zip(("projection", "norms", "cost", "params", "stretch", "scale"),
                                            page.figures)}
    norms = [math.sqrt(sum(x * x for x in row)) for row in ROWS]
    assert "64" in alt["norms"] and "9 5.00" in alt["norms"]  # 64 rows; the longest, row 9, of length 5
    assert sig3(min(norms)) in alt["norms"]  # the histogram starts at the shortest row
    assert f"{64 * 8:,}" in alt["cost"] and "64 × 8" in alt["cost"]
    assert f"{64 * 8:,}" in alt["params"] and f"{2 * 64 * 8:,}" in alt["params"] and f"{128 * 8 * 2:,}" in alt["params"]
    probe = ROWS[3]
    nearest = result.cos_neighbors[0]
    cosine = sum(a * b for a, b in zip(probe, ROWS[nearest])) / (math.dist(probe, [0] * 8) * norms[nearest])
    assert f"{nearest} {sig3(cosine)}" in alt["stretch"]
    assert f"{nearest} {sig3(norms[nearest])} → {sig3(norms[nearest] * math.sqrt(8))}" in alt["scale"]
    assert f"{len(result.views.projection.ids)}" in alt["projection"]
    for name, caption in WORDS[lang]["captions"].items():
        assert alt[name] != caption


def test_the_footer_records_version_date_and_command(pages):
    page = parse(pages("en"))
    assert "9.9.9" in page.footer and "2026-09-17T08:00:00Z" in page.footer
    assert "embedlab report --html --out r" in page.footer


def test_cjk_tokens_are_text_in_the_svg_and_fonts_for_them_are_named():
    np = pytest.importorskip("numpy")
    from embedlab.engine.table import EmbeddingTable

    words = ["王", "春", "夏", "秋", "冬", "king", "queen", "가", "ひ", "x"] + [f"w{i}" for i in range(30)]
    matrix = np.random.default_rng(0).normal(size=(len(words), 6))  # (40, 6)
    measured = lab.measure(EmbeddingTable(matrix, vocabulary=words), lab.LabSettings(probe=0, k=4), figures=True)
    text = html_report.report_html(measured, "ko")
    page = parse(text)
    drawn = [t for f in page.figures for t in f.texts]
    assert any("王" in t for t in drawn)  # the probe's token, as text a browser draws and Ctrl+F finds
    stretch = page.figures[4]
    assert any(words[i] in t for t in stretch.texts for i in measured.cos_neighbors)
    assert "Noto Sans CJK KR" in text and "var(--cjk-fonts)" in text  # behind the page's own faces


class Text(HTMLParser):
    """The text a reader sees: character data outside style and script; and the font-family of each rule
    and of each SVG text, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self.css, self.svg_families, self._in = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self._in.append(tag)
        style = dict(attrs).get("style") or ""
        if tag == "text" and "font-family" in style:
            self.svg_families.append(re.search(r"font-family: ([^;]*)", style)[1])

    def handle_endtag(self, tag):
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data):
        (self.css if self._in and self._in[-1] == "style" else self.text).append(data)


@pytest.mark.parametrize("lang", list(WORDS))
def test_the_page_carries_a_glyph_for_every_character_it_shows(lang):
    """Every character outside ASCII that the page shows (Korean headings, CJK tokens, ×, √) has a glyph
    in the fonts the page embeds, read back from their data URLs with fontTools; the page's CSS and each
    figure's text name that family first, so no machine's own fonts are needed to read it."""
    np = pytest.importorskip("numpy")
    from embedded_fonts import covered

    from embedlab.engine.table import EmbeddingTable

    words = ["王", "春", "한국어", "かな", "國語", "简体", "king"] + [f"w{i}" for i in range(33)]
    matrix = np.random.default_rng(1).normal(size=(len(words), 6))  # (40, 6)
    measured = lab.measure(EmbeddingTable(matrix, vocabulary=words), lab.LabSettings(probe=0, k=4), figures=True)
    page = Text()
    page.feed(html_report.report_html(measured, lang))
    shown = "".join(page.text)
    assert "王" in shown and "한국어" in shown
    css = "".join(page.css)
    outside_ascii = {ord(c) for c in shown if ord(c) > 127}
    assert outside_ascii and outside_ascii <= covered(css)
    assert re.search(r'body \{ font-family: "embedlab", ', css)
    assert page.svg_families and all(f.startswith("'embedlab', 'DejaVu Sans', 'Noto Sans CJK JP'")
                                     for f in page.svg_families)


def test_a_result_measured_without_figures_is_refused():
    plain = lab.measure(lab.ReferenceBackend(embed.make_table(16, 4, 1)), lab.LabSettings(probe=3))
    with pytest.raises(ValueError, match="figures=True"):
        html_report.report_html(plain)


@pytest.mark.parametrize("lang", list(WORDS))
def test_a_left_out_figure_is_one_line_saying_why(lang):
    # D = 1: a PCA projection to 2-D needs D >= 2, so the projection is left out and says so.
    narrow = lab.measure(lab.ReferenceBackend(embed.make_table(12, 1, 1)), lab.LabSettings(probe=3), figures=True)
    text = html_report.report_html(narrow, lang)
    line = WORDS[lang]["figure_left_out"].format(reason="a 2-D projection by pca needs D &gt;= 2, got D=1")
    assert text.count('<p class="left-out">') == 1 and f'<p class="left-out">{line}</p>' in text
    assert len(parse(text).figures) == 5
    assert "<footer>" not in text  # measured, not run through embedlab.report: no run record to show


def test_the_same_result_gives_the_same_page(pages, result):
    assert html_report.report_html(result, "en") == pages("en")


def test_the_cost_figure_its_caption_and_alt_text_say_the_same_thing(pages, result):
    """The bars are the table entries read per token (a row of D = 8; all V x D = 64 x 8, each multiplied
    once): the axis, the caption and the alt text all say entries read, and the alt text the multiplications."""
    from embedlab.report import plots

    fig = plots.cost_figure(result, lang="en")
    widths = sorted(bar.get_width() for bar in fig.axes[0].patches)
    assert widths == [8, 64 * 8]  # entries read: one row; every row
    assert fig.axes[0].get_xscale() == "log" and "entries read" in fig.axes[0].get_xlabel()
    page = parse(pages("en"))
    cost = page.figures[2]
    assert "entries read" in cost.caption and "log scale" in cost.caption
    assert "reads 8 table entries" in cost.title and f"reads {64 * 8:,} entries" in cost.title
    assert f"{64 * 8:,} multiplications" in cost.title and "with 0 multiplications" in cost.title


def test_the_page_records_its_table_for_tools_that_name_files_by_it(pages):
    """tools/screenshots.py names a report's PNG by its table, read from this meta (the title names none)."""
    assert pages("ko").count('<meta name="embedlab-table" content="the table">') == 1  # no provenance: "the table"


def test_projection_alt_text_writes_coordinates_with_one_fixed_number_of_decimals(pages, result):
    """Every coordinate in fixed-point with the same decimals, enough for 3 digits of the cloud's spread;
    none in scientific notation (a point near 0 read -7.97e-04 beside 0.179)."""
    alt = parse(pages("en")).figures[0].title
    np = pytest.importorskip("numpy")
    points = np.asarray(result.views.projection.points, dtype=np.float64)  # (n, 2)
    span = float(np.ptp(points, axis=0).max())
    places = max(0, 2 - int(np.floor(np.log10(span))))
    pairs = re.findall(r"\((-?[\d,]+(?:\.\d+)?), (-?[\d,]+(?:\.\d+)?)\)", alt)
    assert pairs and "e-" not in alt and "e+" not in alt
    for x, y in pairs:
        for value in (x, y):
            assert len(value.partition(".")[2]) == places
    probe = list(result.views.projection.groups).index("probe")
    expected = [f"{v:.{places}f}" for v in points[probe]]
    expected = [e[1:] if float(e) == 0 and e.startswith("-") else e for e in expected]
    assert f"({expected[0]}, {expected[1]})" in alt
