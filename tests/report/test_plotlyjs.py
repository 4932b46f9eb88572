"""The plotly.js the projector page inlines: the bundle of its three traces, and the fallback to plotly's full one.

What the bundle holds is read from its text and checked against plotly's full
bundle (``plotly.offline.get_plotlyjs()``), where the same patterns find every
trace type; its version against ``tools/plotly_bundle``'s pinned package files.
"""

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("sklearn")
plotly = pytest.importorskip("plotly")

import plotly.offline  # noqa: E402

import embedlab  # noqa: E402
from embedlab.report import plotlyjs  # noqa: E402
from embedlab.report import projector as page  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = Path(plotlyjs.__file__).with_name(plotlyjs.BUNDLE_FILE)
TRACE = re.compile(r'moduleType:"trace",name:"([a-z0-9]+)"')  # each trace module's registration object
URL = re.compile(r"""https?://[^\s"'`<>()\\]+""")


@pytest.fixture(scope="module")
def bundle_text():
    if not BUNDLE.is_file():
        pytest.skip(f"{BUNDLE.name} is not built (tools/plotly_bundle/README.md)")
    return BUNDLE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def full_text():
    return plotly.offline.get_plotlyjs()


def test_the_bundle_holds_exactly_the_traces_the_page_draws(bundle_text, full_text):
    full = set(TRACE.findall(full_text))
    assert len(full) > 40 and {"bar", "scattergeo", "mesh3d", "scattergl", "scatter3d"} <= full  # the pattern works
    assert sorted(TRACE.findall(bundle_text)) == ["scatter", "scatter3d", "scattergl"]
    assert set(plotlyjs.BUNDLE_TRACES) == {"scatter", "scattergl", "scatter3d"}
    assert len(bundle_text) < 0.5 * len(full_text)  # the point of it: 1.8 MB against 4.8 MB


def test_the_page_draws_only_the_bundled_traces(bundle_text):
    """Every trace type in a 2-D and a 3-D page's figure, and the SVG fallback projector.js switches to."""
    types = set()
    for dims in (2, 3):
        figure = page.projector_figure(embedlab.projector("seed", sample=40, k=3, dims=dims)).to_plotly_json()
        types |= {trace["type"] for trace in figure["data"]}
    assert types == {"scattergl", "scatter", "scatter3d"}
    script = page._asset("projector.js")
    assert set(re.findall(r'trace\.type = "([a-z0-9]+)"', script)) == {"scatter"}  # no WebGL: scattergl -> scatter


def test_licence_header_and_version_as_pinned(bundle_text):
    lines = bundle_text.split("\n", 6)
    pinned = json.loads((ROOT / "tools/plotly_bundle/package.json").read_text())["devDependencies"]["plotly.js"]
    lock = json.loads((ROOT / "tools/plotly_bundle/package-lock.json").read_text())
    assert lock["packages"]["node_modules/plotly.js"]["version"] == pinned
    assert lines[0] == "/**"
    traces = "traces scatter, scattergl, scatter3d"
    assert lines[1] == f"* plotly.js v{pinned} (custom bundle for embedlab's projector: {traces})"
    assert re.fullmatch(r"\* Copyright 2012-20\d\d, Plotly, Inc\.", lines[2])
    assert lines[4] == "* Licensed under the MIT license" and lines[5] == "*/"


def test_the_bundle_is_the_plotly_packages_version(bundle_text):
    """Built from the plotly.js the installed plotly writes its figures for (plotly 7.1.0: 4.1.1)."""
    chosen = plotlyjs.plotly_js(plotly)
    assert chosen.traces == ("scatter", "scattergl", "scatter3d") and chosen.text == bundle_text
    assert chosen.version == plotly.offline.get_plotlyjs_version()


def test_no_network_reference_beyond_the_full_bundles(bundle_text, full_text):
    """The bundle names no address plotly's full bundle does not (both name a few in strings they never fetch
    for these traces: the page requests nothing, tools/screenshots.py checks in Chromium)."""
    assert set(URL.findall(bundle_text)) <= set(URL.findall(full_text))
    assert "</script" not in bundle_text.lower() and "<!--" not in bundle_text  # it cannot end its script early


def test_the_page_names_the_plotly_js_it_carries(bundle_text):
    text = page.projector_html(embedlab.projector("seed", sample=30, k=3), "en")
    label = f"plotly.js {plotly.offline.get_plotlyjs_version()} (scatter, scattergl, scatter3d)"
    assert f'<script id="plotly-js" data-plotly-js="{label}">' + bundle_text + "</script>" in text
    assert f"· {label}</p>" in text
    assert plotly.offline.get_plotlyjs()[:2000] not in text  # the full bundle is not there as well


def test_a_missing_bundle_falls_back_to_the_full_one(monkeypatch, full_text):
    monkeypatch.setattr(plotlyjs, "BUNDLE_FILE", "no-such-bundle.min.js")
    plotlyjs._bundle.cache_clear()
    page._plotly_js.cache_clear()
    try:
        text = page.projector_html(embedlab.projector("seed", sample=30, k=3), "en")
    finally:
        plotlyjs._bundle.cache_clear()
        page._plotly_js.cache_clear()
    label = f"plotly.js {plotly.offline.get_plotlyjs_version()} (full bundle)"
    assert f'<script id="plotly-js" data-plotly-js="{label}">' + full_text + "</script>" in text
    assert f"· {label}</p>" in text


def test_another_major_version_falls_back_to_the_full_one(bundle_text):
    """A plotly package that writes figures for another plotly.js major version gets its own full bundle."""
    offline = SimpleNamespace(get_plotlyjs_version=lambda: "3.0.1", get_plotlyjs=lambda: "/* plotly.js v3.0.1 */")
    chosen = plotlyjs.plotly_js(SimpleNamespace(offline=offline))
    assert (chosen.text, chosen.version, chosen.traces) == ("/* plotly.js v3.0.1 */", "3.0.1", None)
    assert chosen.label == "plotly.js 3.0.1 (full bundle)"


def test_a_bundle_without_its_header_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(plotlyjs, "resources", SimpleNamespace(files=lambda _: tmp_path))
    (tmp_path / plotlyjs.BUNDLE_FILE).write_text("var Plotly = {};", encoding="utf-8")
    plotlyjs._bundle.cache_clear()
    try:
        with pytest.raises(ValueError, match="plotly-projector.min.js does not start with the header"):
            plotlyjs.plotly_js(plotly)
    finally:
        plotlyjs._bundle.cache_clear()
