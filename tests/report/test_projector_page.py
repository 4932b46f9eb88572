"""The projector page: one file that links nothing outside itself, and data that survive the trip.

The data block is read back the way the page's script reads it (the text of the
one ``<script type="application/json">``, parsed as JSON); expected neighbour
lists come from an independent NumPy full sort over the whole table.
"""

import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("plotly")

import embedlab  # noqa: E402
from embedlab.engine.table import EmbeddingTable  # noqa: E402
from embedlab.errors import MissingExtraError  # noqa: E402
from embedlab.report import projector as page  # noqa: E402
from embedlab.report.locales import PROJECTOR_WORDS  # noqa: E402

TRICKY = ["</script>", "<!--", "</SCRIPT >", 'say "hi"', "it's", "王", "春", "한국어", "مرحبا", "😀", "a&b",
          "<b>x</b>", "\u2028", "back\\slash"]
V, D = 60, 5


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    W = rng.normal(size=(V, D))  # (V, D)
    W[31] = W[30]  # equal rows: equal scores, the smaller id first
    return EmbeddingTable(W, vocabulary=TRICKY + [f"w{i}" for i in range(len(TRICKY), V)])


@pytest.fixture(scope="module")
def result(table):
    # keep_degenerate: w31, a copy of w30, is drawn too (left out by default: test_a_copy_is_left_out_and_named)
    return embedlab.projector(table, tokens=TRICKY + ["w30", "w31"], probe="w40", k=6, keep_degenerate=True)


@pytest.fixture(scope="module")
def html_text(result):
    return page.projector_html(result, "en")


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script and style element."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self.styles, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._in = (tag, dict(attrs), [])

    def handle_data(self, data):
        if self._in is not None:
            self._in[2].append(data)

    def handle_endtag(self, tag):
        if self._in is not None and tag == self._in[0]:
            kind, attrs, parts = self._in
            (self.scripts if kind == "script" else self.styles).append((attrs, "".join(parts)))
            self._in = None


def parsed(text):
    tags = Tags()
    tags.feed(text)
    tags.close()
    return tags


def page_data(text):
    """The data block as the page's script reads it: the one JSON script's text, parsed."""
    blocks = [body for attrs, body in parsed(text).scripts if attrs.get("type") == "application/json"]
    assert len(blocks) == 1
    return json.loads(blocks[0])


def full_sort(W, q, k, metric):
    """Row q's k best ids over all V rows but q, ordered by (-score, id)."""
    X = np.asarray(W, dtype=np.float64)
    scores = X @ X[q]  # (V,)
    if metric == "cosine":
        norms = np.linalg.norm(X, axis=1)
        scores = np.clip(scores / (norms * norms[q]), -1.0, 1.0)
    order = np.lexsort((np.arange(len(X)), -scores))  # by -score, then by id
    return [int(j) for j in order if j != q][:k]


def test_nothing_is_linked_or_fetched_from_outside(html_text):
    tags = parsed(html_text)
    for tag, attrs in tags.tags:
        assert tag != "link", attrs
        for name in ("src", "href", "srcset", "action", "data", "poster"):
            assert name not in attrs or attrs[name].startswith(("#", "data:")), (tag, attrs)
    assert all("src" not in attrs for attrs, _ in tags.scripts)
    for pattern in (r"<script[^>]*\ssrc\s*=", r"<link[^>]*\shref\s*=", r"url\(\s*['\"]?https?:", r"@import"):
        assert not re.search(pattern, html_text, re.IGNORECASE), pattern
    for _, css in tags.styles:  # the only url(): the page's own fonts, inside it
        assert [u[:23] for u in re.findall(r"url\(([^)]*)\)", css)] == ["data:font/woff2;base64,"] * css.count("url(")


def test_the_page_carries_a_glyph_for_every_token_and_word_it_can_show(result):
    """Every character outside ASCII of the tokens the data names and of the page's words has a glyph in the
    fonts the page embeds (read back with fontTools; DejaVu Sans has the Arabic and the emoji of TRICKY);
    the style sheet and Plotly's text name the page's faces first."""
    pytest.importorskip("brotli")
    from embedded_fonts import covered

    text = page.projector_html(result, "ko")
    data = page_data(text)
    css = "".join(body for _, body in parsed(text).styles)
    words = PROJECTOR_WORDS["ko"]
    shown = "".join([*(t for t in data["named"]["tokens"] if t), *map(str, data["words"].values()),
                     words["title"], words["search"], words["reset"]])
    glyphs = covered(css)
    outside = {ord(c) for c in shown if ord(c) > 127} - {0x2028}  # a line separator: no glyph in any font
    assert {ord(c) for c in "王春한국어😀مرحبا" + words["search"].replace(" ", "")} <= outside <= glyphs
    assert ':root { --page-font: "embedlab"; }' in css and "font-family: var(--page-font)," in css
    assert data["figure"]["layout"]["font"]["family"].startswith('"embedlab", ')
    assert data["font_family"] == "embedlab"


def test_one_data_block_and_no_token_written_into_a_script(html_text, result):
    tags = parsed(html_text)
    kinds = [attrs.get("type") for attrs, _ in tags.scripts]
    assert kinds == ["application/json", None, None]  # the data, plotly.js, the page's script
    data_text = tags.scripts[0][1]
    assert "<" not in data_text and ">" not in data_text and "&" not in data_text
    script = tags.scripts[2][1]
    assert html_text.lower().count("</script") == 3  # no token ends a script early
    for token in ("a&b", "한국어", "w40"):
        assert token not in script


def test_tokens_and_ids_round_trip(html_text, result, table):
    data = page_data(html_text)
    assert data["rows"]["ids"] == [table.token_id("w40"), *range(len(TRICKY)), 30, 31]
    tokens = dict(zip(data["named"]["ids"], data["named"]["tokens"]))
    assert [tokens[i] for i in data["rows"]["ids"]] == ["w40", *TRICKY, "w30", "w31"]
    assert data["probe"] == 40 and data["k"] == 6
    assert data["figure"]["data"][0]["customdata"] == data["rows"]["ids"]
    assert data["rows"]["groups"] == ["probe"] + ["chosen"] * (len(TRICKY) + 2)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_neighbour_lists_equal_a_full_sort_over_the_whole_table(html_text, table, metric):
    data = page_data(html_text)
    X = table.W_E.astype(np.float64)
    for i, q in enumerate(data["rows"]["ids"]):
        assert data["neighbors"][metric]["ids"][i] == full_sort(X, q, 6, metric), q
        expected = [float(X[q] @ X[j]) for j in data["neighbors"][metric]["ids"][i]]
        if metric == "cosine":
            expected = [s / (np.linalg.norm(X[q]) * np.linalg.norm(X[j]))
                        for s, j in zip(expected, data["neighbors"][metric]["ids"][i])]
        assert data["neighbors"][metric]["scores"][i] == pytest.approx(expected, rel=1e-3, abs=1e-12)
    listed = {j for row in data["neighbors"][metric]["ids"] for j in row}
    assert listed <= set(data["named"]["ids"])
    assert listed - set(data["rows"]["ids"])  # neighbours outside the projection are named too
    assert data["neighbors"]["cosine"]["ids"][data["rows"]["ids"].index(30)][0] == 31


def test_two_and_three_dims(result, table):
    flat = page.projector_figure(result)
    assert flat.data[0].type == "scattergl" and len(flat.data[0].x) == len(result.ids)
    deep = page.projector_figure(embedlab.projector(table, tokens=["w20", "w21", "w22", "w23", "w24"], dims=3))
    assert deep.data[0].type == "scatter3d" and len(deep.data[0].z) == 5
    assert deep.layout.scene.aspectmode == "cube"  # the box fits the view, however long one axis is
    data = page_data(page.projector_html(embedlab.projector(table, sample=20, k=3, dims=3, probe="w20"), "ko"))
    assert data["figure"]["data"][0]["type"] == "scatter3d" and data["dims"] == 3
    assert len(data["figure"]["data"][0]["z"]) == 20


@pytest.mark.parametrize("lang", list(PROJECTOR_WORDS))
def test_every_language(result, lang):
    text = page.projector_html(result, lang)
    words = PROJECTOR_WORDS[lang]
    assert f'<html lang="{lang}">' in text
    assert words["search"] in text and words["cosine"] in text and words["dot"] in text
    assert page_data(text)["words"]["columns"] == list(words["columns"])


def test_projector_words_share_keys_and_fields():
    import string

    def fields(text):
        return {name for _, name, _, _ in string.Formatter().parse(text) if name}

    base = PROJECTOR_WORDS["en"]
    for lang, words in PROJECTOR_WORDS.items():
        assert words.keys() == base.keys(), lang
        for key, value in words.items():
            if isinstance(value, str):
                assert fields(value) == fields(base[key]), (lang, key)
            elif isinstance(value, dict):
                assert value.keys() == base[key].keys(), (lang, key)
            else:
                assert len(value) == len(base[key]), (lang, key)


def test_unknown_language(result):
    with pytest.raises(ValueError, match="'fr'"):
        page.projector_html(result, "fr")


def test_missing_plotly_names_the_extra(result, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly now raises ImportError
    page._plotly_js.cache_clear()
    with pytest.raises(MissingExtraError, match=r"\.\[plots\]") as exc:
        page.projector_html(result, "en")
    assert exc.value.extras == ("plots",) and exc.value.name == "plotly"
    page._plotly_js.cache_clear()


def test_script_json_keeps_every_string():
    value = {"t": TRICKY, "n": [1.5, -0.0]}
    text = page.script_json(value)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == value


def test_the_page_script_is_valid_javascript():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = Path(page.__file__).with_name("projector.js")
    subprocess.run([node, "--check", str(script)], check=True, capture_output=True)


@pytest.mark.parametrize("lang", list(PROJECTOR_WORDS))
def test_labels_only_where_they_cannot_pile_up(table, lang):
    """Plotly places no labels: a cloud labels only the selection, its neighbours and the search matches
    (the rest on hover), and the page says so; a handful of points is labelled in full."""
    many = embedlab.projector(table, sample=30, k=3, probe="w20")
    text = page.projector_html(many, lang)
    traces = page_data(text)["figure"]["data"]
    assert len(many.ids) > page.LABEL_ALL
    assert traces[0]["mode"] == "markers"  # the cloud: hover only
    assert traces[1]["mode"] == "markers+text" and traces[2]["mode"] == "markers+text"  # selection, matches
    note = PROJECTOR_WORDS[lang]["labels_some"].format(matches=page.MATCHES_LABELLED)
    assert f'<p class="hint" id="labels-note">{html.escape(note)}</p>' in text
    script = re.search(r"const MATCHES_LISTED = (\d+);", page._asset("projector.js"))
    assert int(script[1]) == page.MATCHES_LABELLED  # the matches listed are the matches labelled
    few = embedlab.projector(table, tokens=["w41", "w42", "w43", "w44", "w45"])
    text = page.projector_html(few, lang)
    assert page_data(text)["figure"]["data"][0]["mode"] == "markers+text"
    assert html.escape(PROJECTOR_WORDS[lang]["labels_all"]) in text


NODE_HARNESS = r"""
const fs = require("fs");
const [script, dataFile] = process.argv.slice(2);
const DATA = fs.readFileSync(dataFile, "utf8");
const elements = {}, plotEvents = {}, domEvents = {};
function makeEl(id) {
  const axis = {l2p: (v) => 1000 * v};  // data -> screen pixels, as Plotly's axes give them
  return {id, dataset: {}, hidden: false, textContent: "", style: {}, children: [], value: "",
    _fullLayout: {xaxis: axis, yaxis: axis},
    tHead: {replaceChildren() {}}, tBodies: [{children: [], replaceChildren(...c) { this.children = c; }}],
    replaceChildren(...c) { this.children = c; }, append(...c) { this.children.push(...c); },
    appendChild(c) { this.children.push(c); },
    addEventListener(type, f) { (domEvents[id + ":" + type] = domEvents[id + ":" + type] || []).push(f); },
    on(type, f) { (plotEvents[type] = plotEvents[type] || []).push(f); }};
}
function el(id) { return elements[id] = elements[id] || makeEl(id); }
global.document = {body: {dataset: {}}, querySelectorAll: () => [], createTextNode: (s) => ({textContent: s}),
  getElementById: (id) => (id === "embedlab-data" ? {textContent: DATA} : el(id)),
  createElement: (tag) => (tag === "canvas" ? {getContext: () => ({})} : makeEl(tag))};
global.window = {WebGLRenderingContext: function () {}};
global.performance = {now: () => 0};
global.requestAnimationFrame = (f) => f();
const restyled = [];
global.Plotly = {newPlot: () => Promise.resolve(), restyle(plot, update, traces) { restyled.push([update, traces]); },
  update: () => Promise.resolve(), relayout() {}};
eval(fs.readFileSync(script, "utf8"));
const shownToken = () => el("selected-token").children[0].textContent;
setTimeout(() => {
  const out = {start: shownToken()};
  const fire = (type, x, y) => (domEvents["plot:" + type] || []).forEach((f) => f({clientX: x, clientY: y}));
  const hover = (point) => (plotEvents.plotly_hover || []).forEach((f) => f({points: [point]}));
  hover({curveNumber: 0, pointNumber: 2, data: {customdata: DATA_IDS()}});  // no customdata of its own
  fire("pointerdown", 10, 10); fire("pointerup", 12, 11);                     // a click: 2 pixels of travel
  out.clicked = shownToken();
  hover({customdata: JSON.parse(DATA).rows.ids[3]});
  fire("pointerdown", 10, 10); fire("pointerup", 60, 10);                     // a drag turns the scene
  out.dragged = shownToken();
  out.labels = restyled.filter(([u, t]) => String(t) === "1,2").map(([u]) => u.text[0]).pop() || null;
  const everyLabel = () => restyled.filter(([u, t]) => String(t) === "0,1,2").map(([u]) => u.text).pop() || null;
  out.all = everyLabel();
  out.lists = ["cosine", "dot"].map((m) => el("list-" + m).tBodies[0].children.map(
    (tr) => tr.children.map((td) => td.textContent)));  // each row: rank, token, id, score, length  // a small page: [trace 0's, the selection's, the rings'] labels
  el("search").value = process.argv[4] || "";
  (domEvents["search:input"] || []).forEach((f) => f());
  setTimeout(() => {
    out.searched = everyLabel();
    process.stdout.write(JSON.stringify(out));
  }, 0);
}, 0);
function DATA_IDS() { return JSON.parse(DATA).rows.ids; }
"""


@pytest.mark.parametrize("dims", [2, 3])
def test_a_click_where_a_label_shows_selects_that_point(table, tmp_path, dims):
    """projector.js run in node against a stand-in DOM: in 3-D a press and release where Plotly shows a
    point's label selects it (Plotly's own 3-D click needs the marker's centre); a drag does not."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = embedlab.projector(table, tokens=["w41", "w42", "w43", "w44", "w45"], probe="w40", dims=dims)
    data = page_data(page.projector_html(result, "en"))
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "harness.js").write_text(NODE_HARNESS, encoding="utf-8")
    script = Path(page.__file__).with_name("projector.js")
    done = subprocess.run([node, str(tmp_path / "harness.js"), str(script), str(tmp_path / "data.json")],
                          check=True, capture_output=True, text=True, timeout=60)
    shown = json.loads(done.stdout)
    ids = data["rows"]["ids"]
    token = dict(zip(data["named"]["ids"], data["named"]["tokens"]))
    assert shown["start"] == "w40"  # the probe, selected first
    if dims == 3:
        assert shown["clicked"] == token[ids[2]] and shown["dragged"] == token[ids[2]]
    else:  # 2-D keeps Plotly's own click: hovering and pressing alone select nothing
        assert shown["clicked"] == shown["dragged"] == "w40"


def test_labels_that_would_touch_on_screen_are_thinned(table, tmp_path):
    """In 2-D the selection's labels are kept greedily, the selected token first: one whose box would touch a
    kept label on the screen is left to hover. Here every point sits on one spot but one."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = embedlab.projector(table, sample=30, k=3, probe="w20")
    data = page_data(page.projector_html(result, "en"))
    ids, n = data["rows"]["ids"], len(data["rows"]["ids"])
    cos = data["neighbors"]["cosine"]["ids"][ids.index(data["probe"])]
    far = ids.index(cos[-1])  # the last cosine neighbour, alone at x = 1 (1,000 pixels away)
    trace = data["figure"]["data"][0]
    trace["x"], trace["y"] = [1.0 if i == far else 0.0 for i in range(n)], [0.0] * n
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "harness.js").write_text(NODE_HARNESS, encoding="utf-8")
    script = Path(page.__file__).with_name("projector.js")
    done = subprocess.run([node, str(tmp_path / "harness.js"), str(script), str(tmp_path / "data.json")],
                          check=True, capture_output=True, text=True, timeout=60)
    labels = json.loads(done.stdout)["labels"]
    token = dict(zip(data["named"]["ids"], data["named"]["tokens"]))
    assert labels[0] == "w20"  # the selected point keeps its label
    assert sorted(t for t in labels if t) == sorted(["w20", token[cos[-1]]])  # the far one too; the rest on hover


def run_page(data, tmp_path, query=""):
    """projector.js in node against the stand-in DOM, with ``query`` typed into the search box."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "harness.js").write_text(NODE_HARNESS, encoding="utf-8")
    script = Path(page.__file__).with_name("projector.js")
    done = subprocess.run([node, str(tmp_path / "harness.js"), str(script), str(tmp_path / "data.json"), query],
                          check=True, capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout)


def test_a_small_page_thins_its_labels_too_and_labels_each_point_once(table, tmp_path):
    """Up to LABEL_ALL points every point may be labelled, but two on one spot of the screen get one label
    (the other on hover), and a search match is labelled by its ring alone, not a second time by trace 0."""
    result = embedlab.projector(table, tokens=["w41", "w42", "w43", "w44", "w45"], probe="w40")
    data = page_data(page.projector_html(result, "en"))
    ids, n = data["rows"]["ids"], len(data["rows"]["ids"])
    assert n <= page.LABEL_ALL
    token = dict(zip(data["named"]["ids"], data["named"]["tokens"]))
    at = {token[i]: r for r, i in enumerate(ids)}
    spot = {"w40": 0.0, "w41": 0.1, "w42": 0.3, "w43": 0.3, "w44": 0.5, "w45": 0.7}  # x; w42 and w43 coincide
    trace = data["figure"]["data"][0]
    trace["x"] = [spot[token[i]] for i in ids]
    trace["y"] = [0.0] * n
    shown = run_page(data, tmp_path, query="w44")
    for labels in (shown["all"], shown["searched"]):
        written = [t for texts in labels for t in texts if t]
        assert len(written) == len(set(written))  # no point labelled twice
        assert ("w42" in written) != ("w43" in written)  # one of the two on one spot
        assert {"w40", "w41", "w44", "w45"} <= set(written)  # the rest, apart on the screen, all labelled
    points, overlay, rings = shown["searched"]
    assert rings == ["w44"] and points[at["w44"]] == ""  # the match: its ring's label, not trace 0's


def test_score_and_length_columns_use_one_number_of_decimals(table, tmp_path):
    """Each column of a neighbour list writes its numbers with one number of decimals: 4 significant digits
    of its largest magnitude (the data holds 4), never 3 decimals in one row and 4 in the next."""
    result = embedlab.projector(table, sample=30, k=6, probe="w20")
    data = page_data(page.projector_html(result, "en"))
    shown = run_page(data, tmp_path)
    i = data["rows"]["ids"].index(data["probe"])
    norm = dict(zip(data["named"]["ids"], data["named"]["norms"]))
    for rows, metric in zip(shown["lists"], ("cosine", "dot")):
        assert [int(r[2]) for r in rows] == data["neighbors"][metric]["ids"][i]
        for column, values in ((3, data["neighbors"][metric]["scores"][i]),
                               (4, [norm[j] for j in data["neighbors"][metric]["ids"][i]])):
            places = max(0, 3 - int(np.floor(np.log10(max(abs(v) for v in values)))))
            assert [r[column] for r in rows] == [f"{v:.{places}f}" if round(v, places) != 0 else f"{0:.{places}f}"
                                                 for v in values]


def test_whitespace_tokens_are_labelled_with_signs_and_markup_as_each_trace_draws_it(tmp_path):
    """A token that is a space, a tab or a newline had no label: it shows its signs (formats.visible_whitespace),
    in the labels, the hover text and the panel. Plotly's WebGL traces draw a label as it is (entities would
    show as '&lt;pad&gt;'), its SVG trace reads a little HTML (entities there), and scatter3d reads <b>."""
    tokens = [" ", "\t", "\n", " the", "<pad>", "<b>x</b>", "a&b", "w7"]
    rows = np.random.default_rng(4).normal(size=(len(tokens), 4))
    small = EmbeddingTable(rows, vocabulary=tokens)
    data = page_data(page.projector_html(embedlab.projector(small, tokens=list(range(8)), probe=0, k=2), "en"))
    assert data["named"]["labels"] == ["\u2423", "\u21e5", "\u21b5", "\u2423the", "<pad>", "<b>x</b>", "a&b", "w7"]
    assert data["named"]["tokens"] == tokens  # the data keep the tokens themselves
    shown = run_page(data, tmp_path, query="\u2423the")
    points, overlay, rings = shown["all"]
    selection = data["neighbors"]["cosine"]["ids"][0] + data["neighbors"]["dot"]["ids"][0]
    labelled = {i: text for i, text in enumerate(points) if text}
    for i, text in labelled.items():  # trace 0, scattergl: as it is
        assert text == data["named"]["labels"][i]
    assert overlay[0] == "\u2423"  # the probe, a space
    for r, i in enumerate(sorted(set(selection), key=selection.index)):  # trace 1, SVG: < > & as entities
        if overlay[r + 1]:
            assert overlay[r + 1] == html.escape(data["named"]["labels"][i], quote=False)
    assert shown["start"] == "\u2423"  # the panel's selected token
    assert shown["searched"][2] == ["\u2423the"]  # found as shown; its ring carries the label
    three = page_data(page.projector_html(embedlab.projector(small, tokens=list(range(8)), probe=0, k=2, dims=3),
                                          "en"))
    written = {text for texts in run_page(three, tmp_path)["all"] for text in texts if text}  # 3-D: all, once
    assert written == {"\u2423", "\u21e5", "\u21b5", "\u2423the", "<pad>", "<\u2060b>x<\u2060/b>", "a&b", "w7"}


def test_search_finds_a_decomposed_token_by_the_syllable_a_person_types(tmp_path):
    """ALBERT's vocabulary stores 표 decomposed (NFKD: U+1111 U+116D); the page's search compares text
    canonically composed (NFC), as it reads, so the typed syllable finds it."""
    import unicodedata

    typed, stored = "\ud45c", unicodedata.normalize("NFKD", "\ud45c")
    assert stored == "\u1111\u116d" and typed != stored
    tokens = [stored, "a", "b", "c", "d"]
    small = EmbeddingTable(np.random.default_rng(2).normal(size=(5, 3)), vocabulary=tokens)
    data = page_data(page.projector_html(embedlab.projector(small, tokens=list(range(5)), probe=1, k=2), "en"))
    assert run_page(data, tmp_path, query=typed)["searched"][2] == [stored]
