"""Working memory of a neighbour search against its ``memory`` budget: traced peak and RSS growth.

For each table (random float32, V x D, seed 0) and budget, a fresh Python
process builds the table (in chunks, so that building it leaves no freed
high-water mark behind), its lengths and, for the integer screen, its codes,
runs one small search to start the BLAS threads and load the kernels, then
times and measures one search of 1,000 queries by id (every query leaves its
own id out), k = 10, cosine:

- **traced peak**: the most bytes NumPy held at once during the search, as
  ``tracemalloc`` sees them (NumPy reports its allocations to it);
- **RSS growth**: the largest resident set size a sampling thread saw during
  the search (psutil, every millisecond), less the RSS just before it. It
  counts what tracemalloc cannot see: BLAS and OpenMP buffers, numba's
  allocations, the allocator's free lists and pages of freed memory the
  C library keeps;
- **plan**: the bytes the search's plan counts (``EmbeddingTable.plan``);
  **resident**: the table, its lengths and its codes, which are outside the
  budget (``EmbeddingTable.resident``).

Usage::

    python benchmarks/memory.py                 # every case, a Markdown table
    python benchmarks/memory.py --screen int16  # the integer screen (codes built before the clock)
    python benchmarks/memory.py --quick         # V = 50k only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
import tracemalloc

SIZES = [(50_000, 64), (50_000, 384), (200_000, 64), (200_000, 384), (800_000, 64), (800_000, 384)]
BUDGETS = [16 * 2**20, 64 * 2**20, 256 * 2**20]
N_QUERIES, K = 1_000, 10


def one_case(V: int, D: int, memory: int, screen: str) -> dict:
    """Measure one search in this process; returns the row as a dict."""
    import numpy as np
    import psutil

    from embedlab.engine.neighbors.search import Search
    from embedlab.engine.table import EmbeddingTable

    rng = np.random.default_rng(0)
    W = np.empty((V, D), dtype=np.float32)
    for start in range(0, V, 65_536):  # in chunks: no table-sized temporary
        rng.standard_normal(out=W[start:start + 65_536], dtype=np.float32)
    table = EmbeddingTable(W)  # a writable row-major array is copied once into a read-only one
    del W
    table.norms()
    if screen == "int16":
        table.codes()
    queries = np.sort(rng.choice(V, N_QUERIES, replace=False))
    table.nearest(queries[:8], K, "cosine", memory=memory)  # BLAS threads and kernels started
    plan = Search(table, K, "cosine", ids=queries, memory=memory).plan("cosine")  # what table.nearest follows
    process = psutil.Process()
    base = process.memory_info().rss
    high = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            high[0] = max(high[0], process.memory_info().rss)
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    table.nearest(queries, K, "cosine", memory=memory)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    table.nearest(queries, K, "cosine", memory=memory)
    traced = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    resident = table.resident()
    return {"V": V, "D": D, "memory": memory, "screen": plan.screen, "plan": plan.bytes, "traced": traced,
            "rss": high[0] - base, "table": resident.table, "codes": resident.codes, "norms": resident.norms,
            "outputs": N_QUERIES * K * 16, "seconds": seconds, "blocks": f"{plan.queries} x {plan.rows}",
            "workers": plan.workers}


def mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", nargs=3, type=int, metavar=("V", "D", "MEMORY"), help=argparse.SUPPRESS)
    p.add_argument("--screen", choices=("float", "int16"), default="float",
                   help="float (what 1,000 queries run; default) or int16 (codes built before the clock)")
    p.add_argument("--quick", action="store_true", help="V = 50k only")
    args = p.parse_args(argv)
    if args.case:
        print(json.dumps(one_case(*args.case, args.screen)))
        return 0
    from embedlab.engine.neighbors.capability import describe

    print(f"machine: {platform.processor() or platform.machine()}, {_cpu_name()}, {os.cpu_count()} cores; "
          f"Python {platform.python_version()}; screen asked: {args.screen}; auto here: {describe()}")
    print()
    print("| V | D | budget MiB | screen | blocks x workers | plan MiB | traced peak MiB | RSS growth MiB "
          "| table MiB | codes MiB | RSS over budget MiB | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    sizes = [s for s in SIZES if not args.quick or s[0] == 50_000]
    for V, D in sizes:
        for memory in BUDGETS:
            out = subprocess.run([sys.executable, __file__, "--case", str(V), str(D), str(memory), "--screen",
                                  args.screen], capture_output=True, text=True)
            if out.returncode:
                print(f"| {V:,} | {D} | {mib(memory)} | failed: {out.stderr.strip().splitlines()[-1]} |||||||||")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {V:,} | {D} | {mib(memory)} | {r['screen']} | {r['blocks']} x {r['workers']} | {mib(r['plan'])} "
                  f"| {mib(r['traced'])} | {mib(r['rss'])} | {mib(r['table'])} | {mib(r['codes'])} "
                  f"| {mib(max(0, r['rss'] - r['memory']))} | {r['seconds']:.2f} |", flush=True)
    return 0


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU unknown"


if __name__ == "__main__":
    sys.exit(main())
