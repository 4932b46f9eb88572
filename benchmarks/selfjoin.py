"""Whole-vocabulary scans: the self-join (each block pair of W W^T once) against one query per row.

    python benchmarks/selfjoin.py --markdown                       # minilm and the first 100,000 rows of glove
    python benchmarks/selfjoin.py --tables glove --rows 0 --repeats 1   # all of glove (minutes)

Every row of the table is a query and leaves out its own id, top-k (10), cosine
and dot: what ``hubs`` over every token and ``graph`` compute. Ways timed, in
one process, taking turns in rounds (best of ``--repeats``, 0.5 s rest before
each run so BLAS threads stop spinning), each on one thread per core:

- self-join: ``engine.self_join.self_join`` (float32 GEMM of each block pair
  once, both sides fed; the float screen's margin filter and float64 rescoring);
- int16 screen: ``search(W, None, k, metric, exclude=arange(V), codes=...)``,
  one query per row (what ``EmbeddingTable.nearest`` runs where the CPU has AVX2);
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
from embedlab.engine import capability
from embedlab.engine.codes import encode_rows
from embedlab.engine.lengths import vector_norms
from embedlab.engine.search import search
from embedlab.engine.self_join import self_join

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
    codes = encode_rows(W, row_norms=norms)
    runs = {
        "self-join": lambda metric: np.concatenate(
            [ids for _, _, ids, _ in self_join(W, args.k, metric, row_norms=norms)]),
        "int16 screen": lambda metric: search(W, None, args.k, metric, exclude=np.arange(V), row_norms=norms,
                                              codes=codes)[0],
        "float screen": lambda metric: search(W, None, args.k, metric, exclude=np.arange(V), row_norms=norms,
                                              screen="float")[0],
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
