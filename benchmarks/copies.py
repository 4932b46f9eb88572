"""Whole-vocabulary hubs of a table with many identical rows: with and without the table's copies set aside.

    python benchmarks/copies.py                          # V = 20,000, D = 64, 0 / 1,000 / 5,000 copies
    python benchmarks/copies.py --copies 0 2500 --bf16   # the rows rounded to bfloat16 values

Rows never trained and set to one value, or new tokens initialised to one mean, make a group of
identical rows. Each copy scores exactly what its original scores, so a pool of 2k + 8 slots meets
them all as exact ties and settles them in float64, again and again; where the copies are queries
too (hubs, graph), that cost grows as the square of the group. ``engine/neighbors/copies.py``
searches the table without its copies and expands the lists.

Each table (random normal rows, seed 0, ``--copies N``: one row copied over N others) runs
``measure_hubs`` (every token, both metrics, k = 10) twice in this process, taking turns: as
embedlab runs it, and with ``search.find_copies`` replaced by one that finds none (the way
before: every copy screened), after one untimed search of a small table (imports, compiled
loops). The k-occurrence counts of the two are checked equal. Printed: the CPU and its flags,
the BLAS library and its kernel (threadpoolctl), embedlab's screen, then wall seconds of each and
their ratio. ``--bf16`` rounds the rows
to bfloat16 values (a bf16 checkpoint's table), whose every-row lists come from the bf16
self-join where the CPU has bf16 units.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--V", type=int, default=20_000)
    parser.add_argument("--D", type=int, default=64)
    parser.add_argument("--copies", type=int, nargs="+", default=[0, 1_000, 5_000])
    parser.add_argument("--bf16", action="store_true", help="round the rows to bfloat16 values")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    from embedlab.engine.neighbors import search as front_door
    from embedlab.engine.neighbors.capability import describe
    from embedlab.engine.table import EmbeddingTable
    from embedlab.measure.hubs import measure_hubs

    flags = _flags()
    print(f"CPU: {_model()}, {len(os.sched_getaffinity(0))} cores; flags: "
          + ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in ("avx2", "avx512f", "avx512_vnni",
                                                                         "avx512_bf16", "amx_bf16")))
    from threadpoolctl import threadpool_info

    measure_hubs(EmbeddingTable(np.random.default_rng(1).standard_normal((500, args.D), dtype=np.float32)),
                 args.k)  # untimed: the imports and compilations of a first search
    blas = [f"{i['internal_api']} {i['version']} {i.get('architecture', '')}, {i['num_threads']} threads"
            for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"BLAS: {'; '.join(blas) or 'none loaded'}")
    print(f"embedlab's screen here: {describe()}")
    print(f"V={args.V:,} D={args.D} k={args.k}, {'bfloat16 values' if args.bf16 else 'float32'}; "
          f"one row copied over N others\n")
    print(f"{'copies N':>9} {'copies set aside s':>19} {'every copy screened s':>22} {'ratio':>7}  same counts")
    real = front_door.find_copies
    for n in args.copies:
        rng = np.random.default_rng(0)
        W = rng.standard_normal((args.V, args.D), dtype=np.float32)
        if n:
            W[rng.choice(np.arange(1, args.V), size=n, replace=False)] = W[0]
        if args.bf16:
            W = (W.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        seconds, counts = {}, {}
        for way in ("set aside", "screened"):
            front_door.find_copies = real if way == "set aside" else (lambda *a, **kw: None)
            try:
                table = EmbeddingTable(W.copy())
                table.norms()
                start = time.perf_counter()
                result = measure_hubs(table, args.k)
                seconds[way] = time.perf_counter() - start
                counts[way] = result.k_occurrence
            finally:
                front_door.find_copies = real
        same = all(np.array_equal(counts["set aside"][m], counts["screened"][m]) for m in ("cosine", "dot"))
        print(f"{n:>9,} {seconds['set aside']:>19.2f} {seconds['screened']:>22.2f} "
              f"{seconds['screened'] / seconds['set aside']:>6.1f}x  {'yes' if same else 'NO'}")


def _flags() -> set[str]:
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
        for line in handle:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def _model() -> str:
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
