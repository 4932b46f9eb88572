"""One colour per meaning, the same in every figure and page embedlab draws.

Matplotlib figures (``report.plots``) and the projector page
(``report.projector``) both take their colours from ``PALETTE``, so cosine is
the same blue, the dot product the same orange, the probe the same black
wherever they appear. Standard library only: the projector imports it
without matplotlib.
"""

from __future__ import annotations

__all__ = ["PALETTE"]

# One colour per meaning, the same in every figure: cosine is always blue and the dot product
# orange (lists, panels, neighbour groups); sinusoidal positions always pink, learned ones green;
# grey is rows not singled out (a random sample, a whole table's histogram).
PALETTE = {
    "cosine": "#1f77b4", "dot": "#ff7f0e", "both": "#9467bd",  # neighbour lists and their scores
    "probe": "#000000", "sample": "#b0b0b0", "chosen": "#17becf",  # why a row is in a projection
    "stretched": "#d62728",  # the row stretched by the lab (the report's captions say "red")
    "rows": "#b0b0b0", "longest": "#8c564b",  # every row of a table; its longest rows
    "before": "#bcbd22", "after": "#393b79",  # before and after multiplying by sqrt(D)
    "lookup": "#e7ba52", "one_hot": "#7b4173",  # the two routes to a row
    "tied": "#637939", "untied": "#843c39",  # parameters with and without weight tying
    "learned": "#2ca02c", "sinusoidal": "#e377c2",  # position tables
    "reference": "#7f7f7f",  # lines drawn for comparison (after = before)
    # deployment reductions (embedlab compress), each its own colour; the full table is the reference grey
    "pca": "#5254a3", "truncate": "#8c6d31", "int8": "#ad494a", "binary": "#a55194", "pq": "#8ca252",
    # embedlab audit: rows known to be unused (the reference set), under-trained candidates, the threshold
    "unused": "#31a354", "candidate": "#c51b7d", "threshold": "#404040",
}
