"""The HTML report, parsed: every heading, every figure, no external reference."""

import html
from html.parser import HTMLParser

import pytest

from embedlab import embed
from embedlab.report import html as html_report
from embedlab.measure import lab
from embedlab.report.locales import WORDS


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.h2, self.images, self.refs, self.scripts, self._in_h2 = [], [], [], 0, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self._in_h2 = tag == "h2"
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if key in attrs:
                self.refs.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data):
        if self._in_h2:
            self.h2.append(data)


pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def result():
    return lab.measure(lab.ReferenceEngine(embed.make_table(64, 8, 1)), lab.LabSettings(probe=3), figures=True)


@pytest.mark.parametrize("lang", list(WORDS))
def test_page_holds_every_section_and_figure(result, lang):
    page = Page()
    text = html_report.report_html(result, lang)
    page.feed(text)
    assert page.h2 == list(WORDS[lang]["headings"])
    # projection and norms, cost, params, stretch, scale: one figure per name in the section list
    assert len(page.images) == 6
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert all(ref.startswith("data:") for ref in page.refs)  # nothing from the network
    assert page.scripts == 0
    for caption in WORDS[lang]["captions"].values():
        assert html.escape(caption) in text
    for key in lab.REPORT_KEYS:
        assert f"<code>{key}</code>" in text


def test_a_result_measured_without_figures_is_refused():
    plain = lab.measure(lab.ReferenceEngine(embed.make_table(16, 4, 1)), lab.LabSettings(probe=3))
    with pytest.raises(ValueError, match="figures=True"):
        html_report.report_html(plain)


@pytest.mark.parametrize("lang", list(WORDS))
def test_a_left_out_figure_is_one_line_saying_why(lang):
    # D = 1: a PCA projection to 2-D needs D >= 2, so the projection is left out and says so.
    narrow = lab.measure(lab.ReferenceEngine(embed.make_table(12, 1, 1)), lab.LabSettings(probe=3), figures=True)
    text = html_report.report_html(narrow, lang)
    line = WORDS[lang]["figure_left_out"].format(reason="a 2-D projection by pca needs D &gt;= 2, got D=1")
    assert text.count('<p class="left-out">') == 1 and f'<p class="left-out">{line}</p>' in text
    page = Page()
    page.feed(text)
    assert len(page.images) == 5
