"""Screenshots and timings of embedlab's HTML pages in headless Chromium, as a person would see them.

Not part of ``make test``: it needs a browser, which the package does not
depend on. It opens each page from disk in Debian's Chromium, waits until the
page says it is ready, saves a PNG, and prints what a person would notice:

* ``ready_ms``: the projector page's own mark, ``document.body.dataset.readyMs``,
  set to ``performance.now()`` two frames after Plotly's first draw, so it
  counts from the start of navigation: reading the file, parsing plotly.js
  and the data, and drawing every point (for the HTML report, which has no
  mark, the load event);
* ``plotly_ms``: from the plotly.js script element reaching the page (a MutationObserver, whose
  callback runs as the parser meets the script's end tag) until the page's own script starts: reading,
  compiling and running plotly.js; ``plotly_js``: which plotly.js the page carries (its bundle and version);
* ``cpu_ms``: CPU time that all of Chromium's processes spent until then (renderer,
  GPU process with its CPU WebGL, browser), read from /proc: on a machine busy with
  other work the wall time grows, this does not; on an idle machine the wall time is
  about this much or less, as the work runs on several processes at once;
* ``hover_ms``: from moving the mouse onto the selected point until its label shows;
* ``list_ms``, ``search_ms``: from typing ``--search`` into the search box until the list of
  matches shows, and until the rings and the zoom are drawn too;
* ``click_selects``: in a 3-D page, whether clicking a point (found by hovering a grid until
  a label shows) selects it in the panel;
* ``outside``: every request the page made beyond its own file (there should be none);
* ``errors``: every script error and console error.

Install (outside the package's extras; nothing is downloaded at run time)::

    apt-get install -y chromium   # Debian's browser (the pages carry the glyphs of their CJK and Hangul text)
    python3 -m venv /tmp/shots && /tmp/shots/bin/pip install playwright==1.65.2
                                                 # the driver only: it runs /usr/bin/chromium, no browser download

Run::

    embedlab projector --model glove --sample 10000 --out glove.html
    /tmp/shots/bin/python tools/screenshots.py glove.html --out shots/ --search king
    /tmp/shots/bin/python tools/screenshots.py out/embed_report.html --out shots/ --full-page

Each PNG is named by the page's kind, table, language and file name
(``projector-glove-en-glove.png``, ``report-minilm-ko-embed_report.png``), with ``-2`` for a
repeat, so pages of the same name never overwrite each other.

Chromium runs with --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
--disable-background-networking --disable-component-update --disable-sync and a new
--user-data-dir; WebGL (Plotly's 3-D and large 2-D scatters) then runs on SwiftShader,
the CPU renderer, which --enable-unsafe-swiftshader allows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
READY = "document.body && (document.body.dataset.readyMs !== undefined)"
# Before any page script: note when the parser inserts the plotly.js script element (id plotly-js).
PLOTLY_START = """new MutationObserver((records, observer) => {
    for (const record of records) for (const node of record.addedNodes)
        if (node.id === "plotly-js") { window.__plotlyStartMs = performance.now(); observer.disconnect(); }
}).observe(document, {childList: true, subtree: true});"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="HTML files to open")
    parser.add_argument("--out", type=Path, default=Path("shots"), help="folder for the PNGs (default shots/)")
    parser.add_argument("--size", default="1400x900", help="window WIDTHxHEIGHT in CSS pixels (default 1400x900)")
    parser.add_argument("--search", help="also type this into the projector's search box and save a second PNG")
    parser.add_argument("--full-page", action="store_true", help="capture the whole page, not only the window")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a page (default 30)")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"the browser (default {CHROMIUM})")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("needs playwright: python3 -m venv /tmp/shots && /tmp/shots/bin/pip install playwright==1.65.2",
              file=sys.stderr)
        return 2
    width, height = (int(v) for v in args.size.lower().split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="embedlab-chromium-") as profile:
        browser = pw.chromium.launch_persistent_context(
            profile, executable_path=args.chromium, headless=True, args=FLAGS,
            viewport={"width": width, "height": height})
        browser.add_init_script(script=PLOTLY_START)
        try:
            taken: set[str] = set()
            for page_path in args.pages:
                print(json.dumps(shoot(browser, page_path, args, profile, taken), ensure_ascii=False))
        finally:
            browser.close()
    return 0


def shoot(browser, path: Path, args: argparse.Namespace, profile: str, taken: set[str]) -> dict:
    """Open one page, wait until ready, save its PNG(s) under a name of their own; return what was measured."""
    page = browser.new_page()
    cpu_before = chromium_cpu_seconds(profile)
    outside, errors = [], []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.resolve().as_uri(), wait_until="load", timeout=args.timeout * 1000)
    projector = page.evaluate("Boolean(document.getElementById('embedlab-data'))")
    found = {"page": str(path), "bytes": path.stat().st_size}
    if projector:
        page.wait_for_function(READY, timeout=args.timeout * 1000)
        marks = page.evaluate("({...document.body.dataset})")
        found["ready_ms"] = int(marks["readyMs"])
        found["cpu_ms"] = round((chromium_cpu_seconds(profile) - cpu_before) * 1000)
        # plotly.js parsed and run (the page's own script starts), the first draw done
        found["script_ms"], found["plot_ms"] = int(marks["scriptMs"]), int(marks.get("plotMs", -1))
        start = page.evaluate("window.__plotlyStartMs === undefined ? null : window.__plotlyStartMs")
        found["plotly_ms"] = None if start is None else round(int(marks["scriptMs"]) - start)
        found["plotly_js"] = page.evaluate("(document.getElementById('plotly-js') || {dataset: {}}).dataset.plotlyJs")
        found.update(hover(page))
    else:
        found["ready_ms"] = int(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
    name = shot_name(page, path, taken)
    png = args.out / f"{name}.png"
    page.screenshot(path=str(png), full_page=args.full_page)
    found["png"] = str(png)
    if projector:
        found.update(click_3d(page))  # after the PNG: it shows the page as it opens
    if projector and args.search:
        found["list_ms"], found["search_ms"] = search(page, args.search)
        found["matches"] = page.inner_text("#match-count")
        png = args.out / f"{name}-search.png"
        page.screenshot(path=str(png), full_page=args.full_page)
        found["search_png"] = str(png)
    found["outside"], found["errors"] = outside, errors
    page.close()
    return found


# The pages name their table in <meta name="embedlab-table">, whatever the language of their title.
TABLE_NAME = "(document.querySelector('meta[name=embedlab-table]') || {}).content || null"


def shot_name(page, path: Path, taken: set[str]) -> str:
    """A file name no other page of this run has: the page's kind, its table, its language and the file's
    own name (``projector-glove-en-glove``), so that pages of the same name in different folders, or
    of several models and languages, never overwrite each other's PNGs; a repeat gets ``-2``, ``-3``."""
    kind = "projector" if page.evaluate("Boolean(document.getElementById('embedlab-data'))") else "report"
    table = page.evaluate(TABLE_NAME) or ""  # the table's name, as both kinds of page record it
    lang = page.evaluate("document.documentElement.lang") or "xx"
    parts = [kind, table, lang, path.stem]
    name = "-".join(p for p in (re.sub(r"[^\w.]+", "_", part).strip("_.")[:40] for part in parts) if p)
    unique, count = name, 1
    while unique in taken:
        count += 1
        unique = f"{name}-{count}"
    taken.add(unique)
    return unique


def click_3d(page) -> dict:
    """In a 3-D scene, find a point by hovering a grid until a label shows, click there as a person
    does (press, a short hold, release), and say whether the panel then shows that point."""
    box = page.evaluate("""() => { const plot = document.getElementById('plot');
        if (!plot.data || !plot.data[0] || plot.data[0].type !== 'scatter3d') return null;
        const r = plot.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }""")
    if box is None:
        return {}
    before = page.inner_text("#selected-token")
    for gy in range(10, 91, 4):
        for gx in range(10, 91, 4):
            x, y = box[0] + box[2] * gx / 100, box[1] + box[3] * gy / 100
            page.mouse.move(x, y)
            page.wait_for_timeout(40)
            label = page.evaluate("[...document.querySelectorAll('g.hovertext')].map((g) => g.textContent).join(' ')")
            if label and label.split("id ")[0] not in before:
                page.mouse.down()
                page.wait_for_timeout(80)
                page.mouse.up()
                page.wait_for_timeout(300)
                after = page.inner_text("#selected-token")
                return {"click_label": label, "click_selects": after != before and label.split("id ")[0] in after}
    return {"click_selects": None}


def chromium_cpu_seconds(profile: str) -> float:
    """User + system CPU seconds of every process of this Chromium (its command line names ``profile``)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and profile in (proc / "cmdline").read_bytes().decode(errors="replace"):
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except OSError:
            continue  # a process that ended meanwhile
    return total


def hover(page) -> dict:
    """Move the mouse onto the selected point (the probe); time until Plotly's label shows, and read it."""
    where = page.evaluate("""() => {
        const plot = document.getElementById('plot'), trace = plot.data[1];
        if (!trace || !trace.x.length || trace.z) return null;   // nothing selected, or a 3-D scene
        const xa = plot._fullLayout.xaxis, ya = plot._fullLayout.yaxis, box = plot.getBoundingClientRect();
        return [box.left + xa._offset + xa.l2p(trace.x[0]), box.top + ya._offset + ya.l2p(trace.y[0])];
    }""")
    if where is None:
        return {}
    start = time.perf_counter()
    page.mouse.move(*where)
    try:
        page.wait_for_selector("g.hovertext", timeout=5000)
    except Exception:
        return {"hover_ms": None}
    took = (time.perf_counter() - start) * 1000
    label = page.evaluate("[...document.querySelectorAll('g.hovertext tspan.line, g.hovertext text.nums')]"
                          ".map((t) => t.textContent).filter(Boolean).join(' | ')")
    return {"hover_ms": round(took), "hover_label": label}


def search(page, text: str) -> tuple[int, int]:
    """Type ``text`` into the search box: milliseconds until the list shows, and until the rings are drawn."""
    listed, drawn = page.evaluate("""(text) => new Promise((done) => {
        const input = document.getElementById('search'), start = performance.now();
        input.value = text;
        input.dispatchEvent(new Event('input'));
        const listed = performance.now() - start;
        requestAnimationFrame(() => requestAnimationFrame(() => done([listed, performance.now() - start])));
    })""", text)
    return round(listed), round(drawn)


if __name__ == "__main__":
    sys.exit(main())
