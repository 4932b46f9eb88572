"""The projector page in headless Chromium: its plotly.js bundle against plotly's full bundle, in one run.

For each page given (written by ``embedlab projector``, which inlines the
projector's bundle of three traces, ``report/plotlyjs.py``), a twin is written
beside it in a temporary folder with plotly's full bundle
(``plotly.offline.get_plotlyjs()``) in the plotly.js script instead, all else
byte for byte the same. The pages then take turns, ``--repeats`` rounds, each
opened in a fresh tab of one Chromium by ``tools/screenshots.py`` (whose
docstring defines the measures), and the script prints each run and the
median per page and bundle, with the load average before each round: on a
shared machine the wall times grow with the load, the CPU times much less.

Not part of ``make test``: it needs Chromium and playwright (see ``tools/screenshots.py``)::

    embedlab projector --model glove --sample 10000 --out glove2.html
    embedlab projector --model glove --sample 10000 --dims 3 --out glove3.html
    /tmp/shots/bin/python benchmarks/projector_page.py glove2.html glove3.html --repeats 5

The twin is built with the plotly package of ``--python`` (default: the venv at /work/main/.venv, else
``python3``), since the playwright venv need not hold plotly.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import screenshots  # noqa: E402

MEASURES = ("ready_ms", "cpu_ms", "script_ms", "plotly_ms", "plot_ms", "hover_ms", "list_ms", "search_ms")
SCRIPT = re.compile(r'<script id="plotly-js" data-plotly-js="[^"]*">.*?</script>', re.DOTALL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="projector pages (embedlab projector --out)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; each opens every page once (default 5)")
    parser.add_argument("--search", default="king", help="text typed into the search box (default king)")
    default_python = "/work/main/.venv/bin/python" if Path("/work/main/.venv/bin/python").exists() else "python3"
    parser.add_argument("--python", default=default_python, help="a Python with plotly, for the full bundle")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    full_js, full_version = full_bundle(args.python)
    with tempfile.TemporaryDirectory(prefix="embedlab-bundle-") as tmp, sync_playwright() as pw:
        pages = [(path, "projector bundle") for path in args.pages]
        for path in args.pages:
            twin = Path(tmp) / f"{path.stem}-full.html"
            text = path.read_text(encoding="utf-8")
            label = f"plotly.js {full_version} (full bundle)"
            swapped = SCRIPT.sub(lambda _: f'<script id="plotly-js" data-plotly-js="{label}">{full_js}</script>',
                                 text, count=1)
            if swapped == text:
                raise SystemExit(f"{path}: no <script id=\"plotly-js\"> to swap (a page from an older embedlab?)")
            twin.write_text(swapped, encoding="utf-8")
            pages.append((twin, "full bundle"))
        shot_args = argparse.Namespace(timeout=60.0, full_page=False, search=args.search, out=Path(tmp) / "shots")
        shot_args.out.mkdir()
        runs: dict[tuple[str, str], list[dict]] = {}
        with tempfile.TemporaryDirectory(prefix="embedlab-chromium-") as profile:
            browser = pw.chromium.launch_persistent_context(profile, executable_path=screenshots.CHROMIUM,
                                                            headless=True, args=screenshots.FLAGS,
                                                            viewport={"width": 1400, "height": 900})
            browser.add_init_script(script=screenshots.PLOTLY_START)
            try:
                for r in range(args.repeats):
                    print(f"round {r + 1}: load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
                    for path, kind in pages:
                        found = screenshots.shoot(browser, path, shot_args, profile, set())
                        name = path.stem.removesuffix("-full")
                        runs.setdefault((name, kind), []).append(found)
                        print(json.dumps({"page": name, "bundle": kind, "MB": round(found["bytes"] / 1e6, 2),
                                          **{m: found.get(m) for m in MEASURES},
                                          "outside": found["outside"], "errors": found["errors"]}), flush=True)
            finally:
                browser.close()
    print("\nmedians (ms):")
    print(f"{'page':<16}{'bundle':<18}{'MB':>6}" + "".join(f"{m:>11}" for m in MEASURES))
    for (name, kind), found in runs.items():
        cells = [statistics.median([f[m] for f in found if f.get(m) is not None] or [float("nan")]) for m in MEASURES]
        print(f"{name:<16}{kind:<18}{found[0]['bytes'] / 1e6:>6.2f}" + "".join(f"{c:>11.0f}" for c in cells))
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


def full_bundle(python: str) -> tuple[str, str]:
    """plotly's full plotly.js and its version, read by ``python`` (which has the plotly package)."""
    code = ("import json, plotly.offline as o; "
            "print(json.dumps([o.get_plotlyjs(), o.get_plotlyjs_version()]))")
    done = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True)
    js, version = json.loads(done.stdout)
    return js, version


if __name__ == "__main__":
    sys.exit(main())
