"""When the integer codes pay: the float screen against the int16 screen with its codes built inside the clock.

    python benchmarks/codes_pay.py                       # minilm and glove, 250 to 2,000 queries
    python benchmarks/codes_pay.py --table glove --queries 500 1000

A search of N queries either runs the float screen (a float32 GEMM) or builds the
table's int16 codes (``EmbeddingTable.codes``, once per table) and runs the integer
screen. This times both, each on a new table (no lengths or codes cached before the
clock, lengths given as a loader gives them), both metrics as ``embedlab neighbors``
asks for them, best of ``--repeats``, after one untimed call that loads numba's
compiled kernels. ``capability.coded_queries(D)`` is where ``"auto"`` switches;
this is the measurement behind it. Prints the CPU's flags, the OpenBLAS kernel
NumPy runs (threadpoolctl) and the load average.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_info

from embedlab import sources
from embedlab.engine.neighbors.capability import coded_queries, cpu_flags
from embedlab.engine.neighbors.search import Search
from embedlab.engine.table import EmbeddingTable


def timed(table: EmbeddingTable, ids: np.ndarray, screen: str) -> tuple[float, float]:
    """Wall and CPU seconds of both metrics' lists on a new table over the same rows and lengths."""
    fresh = EmbeddingTable(table.W_E, norms=np.array(table.norms()))
    wall, cpu = time.perf_counter(), time.process_time()
    with Search(fresh, 10, ("cosine", "dot"), ids=ids, screen=screen) as search:
        for metric in search.metrics:
            search.nearest(metric)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", nargs="+", default=["minilm", "glove"])
    parser.add_argument("--queries", nargs="+", type=int, default=[250, 500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"]
    blas = [f"{i['internal_api']} {i['version']} {i.get('architecture')}" for i in threadpool_info()
            if i["internal_api"] == "openblas"]
    print(f"CPU flags: {' '.join(f for f in wanted if f in cpu_flags())}; {len(os.sched_getaffinity(0))} cores; "
          f"NumPy BLAS: {', '.join(blas)}; load average {os.getloadavg()[0]:.2f}")
    print("| table | D | queries | float screen s (CPU s) | codes built + int16 screen s (CPU s) | auto builds codes |")
    print("|---|---|---|---|---|---|")
    for name in args.table:
        table = sources.load(name)
        table.norms()
        timed(table, np.arange(4), "int16")  # numba's compiled kernels loaded, outside the clock
        for n in args.queries:
            ids = np.random.default_rng(n).choice(table.V, n, replace=False)
            best = {s: min(timed(table, ids, s) for _ in range(args.repeats)) for s in ("float", "int16")}
            cells = [f"{w:.3f} ({c:.3f})" for w, c in best.values()]
            print(f"| {name} | {table.D} | {n:,} | {cells[0]} | {cells[1]} | {'yes' if n >= coded_queries(table.D) else 'no'} |")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
