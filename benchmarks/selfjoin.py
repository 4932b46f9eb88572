"""Whole-vocabulary scans: the self-join (each block pair of W W^T once) against one query per row.

    python benchmarks/selfjoin.py --markdown                       # minilm and the first 100,000 rows of glove
    python benchmarks/selfjoin.py --tables glove --rows 0 --repeats 1   # all of glove (minutes)

Every row of the table is a query and leaves out its own id, top-k (10), cosine
and dot: what ``hubs`` over every token and ``graph`` compute. Ways timed, in
one process, taking turns in rounds (best of ``--repeats``, 0.5 s rest before
each run so BLAS threads stop spinning), each on one thread per core:

- self-join: ``engine.neighbors.self_join.self_join`` (float32 GEMM of each
  block pair once, both sides fed; the float screen's margin filter and float64
  rescoring), with the plan the front door would make for it;
- int16 screen: the front door, ``Search(table, k, metric, ids=arange(V))``
  with the table's codes, one query per row (what ``Search.every_row`` runs
  where the CPU has AVX2);
- float screen: the same search with ``screen="float"`` (the GEMM of every
  query against every row; what runs without AVX2).

The codes and row lengths are built before the clock starts. Every way's
lists are checked equal, id for id, to the int16 screen's.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from embedlab import sources
from embedlab.engine.lengths import vector_norms
from embedlab.engine.neighbors import capability
from embedlab.engine.neighbors.codes import encode_rows
from embedlab.engine.neighbors.defaults import DEFAULT_MEMORY
from embedlab.engine.neighbors.plan import plan_self_join
from embedlab.engine.neighbors.precision import gemm_dtype
from embedlab.engine.neighbors.search import ArrayTable, Search
from embedlab.engine.neighbors.self_join import self_join
from embedlab.engine.neighbors.threads import worker_count

SETTLE = 0.5
WAYS = ("self-join", "int16 screen", "float screen")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=["minilm", "glove"], choices=["seed", "minilm", "glove"])
    parser.add_argument("--rows", type=int, default=100_000,
                        help="use the first ROWS rows of each table (0: all; default 100000)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds, the best kept (default 2)")
    parser.add_argument("--skip", nargs="*", default=[], help="ways to leave out (e.g. 'float screen')")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print(f"CPU: {capability.describe()}; cores: {len(os.sched_getaffinity(0))}; "
          f"load average at the start: {os.getloadavg()[0]:.2f}")
    rows = []
    for name in args.tables:
        W = sources.load(name).W_E
        W = W[:args.rows] if args.rows else W
        rows += bench_table(name, np.ascontiguousarray(W), args)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}\n")
    headers = ["table", "(V, D)", "metric", "way", "seconds", "rows/s", "its time / self-join", "same lists"]
    if args.markdown:
        print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
        for row in rows:
            print("| " + " | ".join(str(c) for c in row) + " |")
    else:
        for row in rows:
            print("  ".join(str(c) for c in row))


def bench_table(name: str, W: np.ndarray, args) -> list[tuple]:
    V, D = W.shape
    norms = vector_norms(W)  # (V,)
    table = ArrayTable(W, norms=norms, codes=encode_rows(W, row_norms=norms))  # built before the clock

    def joined(metric):
        itemsize = np.dtype(gemm_dtype(W.dtype, metric, norms, norms)).itemsize
        plan = plan_self_join(V, D, args.k, itemsize, DEFAULT_MEMORY, workers=worker_count(None))
        return np.concatenate([ids for _, _, ids, _ in self_join(W, args.k, metric, plan, row_norms=norms)])

    runs = {
        "self-join": joined,
        "int16 screen": lambda metric: Search(table, args.k, metric, ids=np.arange(V)).nearest(metric).ids,
        "float screen": lambda metric: Search(table, args.k, metric, ids=np.arange(V),
                                              screen="float").nearest(metric).ids,
    }
    ways = [w for w in WAYS if w not in args.skip]
    out = []
    for metric in ("cosine", "dot"):
        best = dict.fromkeys(ways, float("inf"))
        lists = {}
        for _ in range(args.repeats):
            for way in ways:
                time.sleep(SETTLE)
                start = time.perf_counter()
                lists[way] = runs[way](metric)
                best[way] = min(best[way], time.perf_counter() - start)
                print(f"  {name} {metric} {way}: {best[way]:.2f} s", flush=True)
        reference = lists.get("int16 screen", lists[ways[0]])
        for way in ways:
            same = int((lists[way] == reference).all(axis=1).sum())
            ratio = f"{best[way] / best['self-join']:.2f}x" if "self-join" in best else ""
            out.append((name, f"({V:,}, {D})", metric, way, f"{best[way]:.2f}", f"{V / best[way]:,.0f}", ratio,
                        f"{same:,}/{V:,}"))
    return out


if __name__ == "__main__":
    main()
