"""The HTML report, parsed: every heading, every figure, no external reference."""

from html.parser import HTMLParser

import pytest

from embedlab import embed
from embedlab.report import html as html_report
from embedlab.measure import lab
from embedlab.report.locales import WORDS

PNG = b"\x89PNG\r\n\x1a\nfake"


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


@pytest.fixture(scope="module")
def result():
    return lab.measure(lab.ReferenceEngine(embed.make_table(64, 8, 1)), lab.LabSettings(probe=3))


@pytest.mark.parametrize("lang", list(WORDS))
def test_page_holds_every_section_and_figure(result, lang):
    figures = {"what": [(PNG, "a <figure> & more")], "scale": [(PNG, "two"), (PNG, "three")]}
    page = Page()
    text = html_report.report_html(result, lab.LabSettings(probe=3), figures, lang)
    page.feed(text)
    assert page.h2 == list(WORDS[lang]["headings"])
    assert len(page.images) == 3
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert all(ref.startswith("data:") for ref in page.refs)  # nothing from the network
    assert page.scripts == 0
    assert "a &lt;figure&gt; &amp; more" in text
    for key in lab.REPORT_KEYS:
        assert f"<code>{key}</code>" in text


def test_unknown_section(result):
    with pytest.raises(ValueError, match="unknown sections"):
        html_report.report_html(result, lab.LabSettings(probe=3), {"intro": [(PNG, "x")]})


@pytest.mark.parametrize("lang", list(WORDS))
def test_a_left_out_figure_is_one_line_saying_why(result, lang):
    text = html_report.report_html(result, lab.LabSettings(probe=3), {}, lang, {"what": ["D <too> small"]})
    line = WORDS[lang]["figure_left_out"].format(reason="D &lt;too&gt; small")
    assert text.count('<p class="left-out">') == 1 and f'<p class="left-out">{line}</p>' in text
    with pytest.raises(ValueError, match="unknown sections"):
        html_report.report_html(result, lab.LabSettings(probe=3), {}, lang, {"intro": ["x"]})
