"""Which plotly.js the projector page inlines: a bundle of only the traces it draws, else plotly's full one.

The page draws three of plotly.js's 47 trace types: ``scattergl`` (the 2-D
points and search rings), ``scatter3d`` (``--dims 3``) and ``scatter`` (the
2-D selection overlay, in SVG so the browser shapes its labels; every 2-D
trace where WebGL is missing). ``plotly-projector.min.js``, beside this
module, is plotly.js's core with those traces registered and nothing else
(1.8 MB against the full bundle's 4.8 MB), built from the npm package
of the same plotly.js version as the Python plotly package inlines, by
``tools/plotly_bundle/`` (its README says how to rebuild it). A browser
parses and compiles all of an inlined script before the page can draw, so
the smaller file makes the page ready sooner (README, the projector section).

When that file is missing (a source tree where it was never built), or its
plotly.js major version differs from the one the installed plotly package
writes figures for, the page falls back to the plotly package's full bundle
(``plotly.offline.get_plotlyjs()``); the page records which one it carries.

Standard library at import; plotly (the ``plots`` extra) when called.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["PlotlyJs", "plotly_js", "BUNDLE_FILE", "BUNDLE_TRACES"]

BUNDLE_FILE = "plotly-projector.min.js"
BUNDLE_TRACES = ("scatter", "scattergl", "scatter3d")  # what tools/plotly_bundle/entry.js registers
# The bundle's first comment, as tools/plotly_bundle/build.mjs writes it from plotly.js's own dist header.
HEADER = re.compile(r"\A/\*\*\n\* plotly\.js v(?P<version>\S+) \(custom bundle for embedlab's projector: "
                    r"traces (?P<traces>[a-z0-9, ]+)\)\n")


@dataclass(frozen=True)
class PlotlyJs:
    """plotly.js as a page inlines it.

    Attributes
    ----------
    text : str
        The script, minified (1.8 MB for the projector's bundle, 4.8 MB for the full one).
    version : str
        Its plotly.js version, e.g. ``"4.1.1"``.
    traces : tuple of str or None
        The trace types it registers; None for plotly's full bundle (every trace type).
    """

    text: str
    version: str
    traces: tuple[str, ...] | None

    @property
    def label(self) -> str:
        """How the page names it: ``plotly.js 4.1.1 (scatter, scattergl, scatter3d)`` or ``... (full bundle)``."""
        kind = ", ".join(self.traces) if self.traces is not None else "full bundle"
        return f"plotly.js {self.version} ({kind})"


def plotly_js(plotly: Any) -> PlotlyJs:
    """The plotly.js a projector page inlines: the projector's bundle, else ``plotly``'s full one.

    Parameters
    ----------
    plotly : module
        The imported ``plotly`` package (``plotly.offline`` loaded); its plotly.js version
        (``plotly.offline.get_plotlyjs_version()``) is the one its figures are written for.

    Returns
    -------
    PlotlyJs
        The bundle beside this module when it is there and has the same plotly.js major
        version; otherwise (a fallback) ``plotly.offline.get_plotlyjs()`` with ``traces=None``.

    Raises
    ------
    ValueError
        When the bundle file is there but its first comment does not name its version and traces
        (a file not written by ``tools/plotly_bundle/build.mjs``).
    """
    wanted = plotly.offline.get_plotlyjs_version()
    bundle = _bundle()
    if bundle is not None and bundle.version.split(".")[0] == wanted.split(".")[0]:
        return bundle
    return PlotlyJs(plotly.offline.get_plotlyjs(), wanted, None)  # the fallback: every trace type, 4.8 MB


@lru_cache(maxsize=1)
def _bundle() -> PlotlyJs | None:
    """The projector's bundle beside this module, or None when it was not built."""
    path = resources.files(__package__).joinpath(BUNDLE_FILE)
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    header = HEADER.match(text)
    if header is None:
        raise ValueError(f"{BUNDLE_FILE} does not start with the header tools/plotly_bundle/build.mjs writes "
                         f"(plotly.js version and traces): {text[:120]!r}")
    return PlotlyJs(text, header["version"], tuple(t.strip() for t in header["traces"].split(",")))
