"""Neighbour search and lookup: embedlab against the tools users would pick instead.

    pip install -c constraints.txt -e '.[bench]'
    python benchmarks/neighbors.py                # minilm and glove, 1,000 queries, top-10
    python benchmarks/neighbors.py --markdown     # the tables of benchmarks/README.md

Every tool answers the same 1,000 queries (token ids sampled with a seed; each
query leaves out its own id) in the same process, one after the other, each
timed best-of-``--repeats`` after a warm-up, in rounds so that a busy moment of
the machine hits every tool alike, with a short rest before each run (BLAS and
OpenMP threads spin a while after a call). Indexes, normalised copies and norms
are built before the clock starts, for every tool alike.

- embedlab: ``nearest.search`` (exact; equal scores by the smaller id).
- faiss: ``IndexFlatIP`` over the rows (unit rows for cosine), k + 1, own id dropped.
- torch: ``Q @ W.T`` and ``torch.topk`` over blocks of 256 queries (its fastest
  block size here), k + 1, own id dropped.
- numpy: the naive way: normalise, one matmul, ``argpartition``, sort the k + 1.
- gensim: ``KeyedVectors.most_similar`` one query at a time (cosine only).
- GEMM floor: the float32 product ``Q @ W.T`` alone (best of one call and
  blocks of 1024 x 4096), which every exact method must at least compute.

Lists are compared with embedlab's: the fraction of queries whose set of k ids
agrees, and, where the order differs, whether the swapped rows tie exactly
(float64 scores equal) or nearly (within 1e-6). Ratios are their time / ours.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from embedlab import sources
from embedlab.engine.search import search

TORCH_BLOCK = 256
# Seconds of rest before each timed run: BLAS and OpenMP worker threads spin for a
# while after a call, and would otherwise steal cores from the next tool.
SETTLE = 0.5


@dataclass
class Tool:
    name: str
    run: Callable[[], np.ndarray]  # -> ids (N, K)
    seconds: float = float("inf")
    ids: np.ndarray | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=["minilm", "glove"], choices=["seed", "minilm", "glove"],
                        help="tables to search (default: minilm glove)")
    parser.add_argument("--queries", type=_positive, default=1000, help="queries per table, sampled (default 1000)")
    parser.add_argument("--k", type=_positive, default=10, help="neighbours per query (default 10)")
    parser.add_argument("--repeats", type=_positive, default=5, help="timed rounds; the best is kept (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the query sample (default 0)")
    parser.add_argument("--skip", nargs="*", default=[], help="tools to leave out (e.g. gensim)")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    print(machine(), end="\n\n")
    missing = [name for name in ("faiss", "torch", "gensim") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"not installed, left out: {', '.join(missing)} (pip install -c constraints.txt -e '.[bench]')\n")
    neighbor_rows, lookup_rows = [], []
    for name in args.tables:
        table = sources.load(name)
        W = np.ascontiguousarray(table.W_E, dtype=np.float32)  # (V, D)
        queries = np.sort(np.random.default_rng(args.seed).choice(table.V, args.queries, replace=False))
        for metric in ("cosine", "dot"):
            neighbor_rows += bench_neighbors(name, table, W, queries, args.k, metric, args.repeats, args.skip)
        lookup_rows += bench_lookup(name, table, args.repeats)
    if args.markdown:
        print(markdown(["table", "metric", "tool", "seconds", "queries/s", "their time / ours", "of GEMM floor",
                        "same sets", "order differs (exact ties / near ties / other)"], neighbor_rows))
        print()
        print(markdown(["table", "(B, T)", "embedlab lookup(out=)", "torch index_select(out=)",
                        "their time / ours", "torch index_select(out=), 1 thread", "their time / ours",
                        "embedlab lookup", "torch index_select"], lookup_rows))
    else:
        print("table  metric  tool  seconds  queries/s  their time / ours  of GEMM floor  same sets  order differs")
        for row in neighbor_rows + [()] + lookup_rows:
            print("  ".join(str(c) for c in row))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def bench_neighbors(name, table, W, queries, k, metric, repeats, skip) -> list[tuple]:
    norms = table.norms()  # (V,) cached by the table
    tools = [Tool("embedlab", lambda: search(table.W_E, None, k, metric, exclude=queries, row_norms=norms)[0])]
    unit = W / np.maximum(norms, 1e-30)[:, None].astype(np.float32) if metric == "cosine" else W  # (V, D)
    for make in (faiss_tool, torch_tool, numpy_tool, gensim_tool):
        tool = make(W, unit, norms, queries, k, metric)
        if tool is not None and tool.name not in skip:
            tools.append(tool)
    floors = gemm_floor_tools(W, queries)
    for tool in tools + floors:
        tool.ids = tool.run()  # warm-up, and the answer
    for _ in range(repeats):
        for tool in tools + floors:
            time.sleep(SETTLE)
            start = time.perf_counter()
            tool.run()
            tool.seconds = min(tool.seconds, time.perf_counter() - start)
    floor = min(tool.seconds for tool in floors)
    ours = tools[0]
    rows = []
    for tool in tools:
        same, order = compare(tool.ids, ours.ids, lambda r, i: exact_score(W, queries[r], i, metric, norms))
        rows.append((name, metric, tool.name, f"{tool.seconds:.3f}", f"{len(queries) / tool.seconds:,.0f}",
                     f"{tool.seconds / ours.seconds:.2f}x", f"{floor / tool.seconds:.0%}",
                     f"{same}/{len(queries)}", order))
    rows.append((name, metric, "GEMM floor", f"{floor:.3f}", f"{len(queries) / floor:,.0f}",
                 f"{floor / ours.seconds:.2f}x", "100%", "", ""))
    return rows


def faiss_tool(W, unit, norms, queries, k, metric) -> Tool | None:
    try:
        import faiss
    except ImportError:
        return None
    index = faiss.IndexFlatIP(W.shape[1])
    index.add(unit)
    Q = unit[queries]  # (N, D) the query rows, already unit for cosine

    def run():
        _, ids = index.search(Q, k + 1)
        return drop_self(ids, queries, k)

    return Tool("faiss IndexFlatIP", run)


def torch_tool(W, unit, norms, queries, k, metric) -> Tool | None:
    try:
        import torch
    except ImportError:
        return None
    Wt = torch.from_numpy(np.array(unit))  # (V, D) a writable copy
    Qt = Wt[torch.from_numpy(queries)]  # (N, D)

    def run():
        parts = [torch.topk(Qt[s:s + TORCH_BLOCK] @ Wt.T, k + 1, dim=1).indices
                 for s in range(0, len(Qt), TORCH_BLOCK)]
        return drop_self(torch.cat(parts).numpy(), queries, k)

    return Tool("torch matmul+topk", run)


def numpy_tool(W, unit, norms, queries, k, metric) -> Tool:
    def run():
        Q = W[queries]  # (N, D)
        if metric == "cosine":
            Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        S = Q @ unit.T  # (N, V)
        top = np.argpartition(-S, k + 1, axis=1)[:, :k + 1]  # (N, K+1) unordered
        order = np.argsort(-np.take_along_axis(S, top, axis=1), axis=1)
        return drop_self(np.take_along_axis(top, order, axis=1), queries, k)

    return Tool("numpy naive", run)


def gensim_tool(W, unit, norms, queries, k, metric) -> Tool | None:
    if metric != "cosine":
        return None  # most_similar ranks by cosine only
    try:
        from gensim.models import KeyedVectors
    except ImportError:
        return None
    kv = KeyedVectors(W.shape[1])
    kv.add_vectors([str(i) for i in range(len(W))], W)
    kv.fill_norms()

    def run():
        return np.array([[int(key) for key, _ in kv.most_similar(str(q), topn=k)] for q in queries])

    return Tool("gensim most_similar", run)


def gemm_floor_tools(W, queries) -> list[Tool]:
    """The float32 product Q @ W.T alone: in one call, and in blocks of 1024 x 4096 rows."""
    Q = W[queries]  # (N, D)
    S = np.empty((min(1024, len(Q)), 4096), dtype=np.float32)

    def blocks():
        for s in range(0, len(Q), 1024):
            for v in range(0, len(W), 4096):
                q, w = Q[s:s + 1024], W[v:v + 4096]
                np.matmul(q, w.T, out=S[:len(q), :len(w)])

    return [Tool("GEMM one call", lambda: Q @ W.T), Tool("GEMM blocks", blocks)]


def drop_self(ids: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Top k + 1 with the query's own id removed (or the last one, if absent) -> (N, K)."""
    out = np.empty((len(ids), k), dtype=np.int64)
    for r, (row, q) in enumerate(zip(ids.tolist(), queries.tolist())):
        out[r] = [i for i in row if i != q][:k]
    return out


def exact_score(W, q: int, i: int, metric: str, norms) -> float:
    """The float64 score of row i for query q: to judge ties."""
    dot = float(np.dot(W[q].astype(np.float64), W[i].astype(np.float64)))
    return dot / (norms[q] * norms[i]) if metric == "cosine" else dot


def compare(theirs: np.ndarray, ours: np.ndarray, exact: Callable[[int, int], float]) -> tuple[int, str]:
    """Queries with the same set of ids; where the order differs, are the swapped rows tied?"""
    same = sum(set(a) == set(b) for a, b in zip(theirs.tolist(), ours.tolist()))
    ties = near = other = 0
    for r in np.flatnonzero((theirs != ours).any(axis=1)):
        if set(theirs[r]) != set(ours[r]):
            continue
        for a, b in zip(theirs[r], ours[r]):
            if a != b:
                gap = abs(exact(r, a) - exact(r, b))
                ties += gap == 0.0
                near += 0.0 < gap <= 1e-6
                other += gap > 1e-6
    return same, f"{ties} / {near} / {other}"


def bench_lookup(name, table, repeats) -> list[tuple]:
    try:
        import torch
    except ImportError:
        return []
    W = table.W_E
    Wt = torch.from_numpy(np.array(W))  # the same row-major layout, writable for torch
    rows = []
    for shape in [(8, 128), (32, 512), (64, 2048)]:
        ids = np.random.default_rng(0).integers(0, table.V, size=shape)
        ids_t = torch.from_numpy(ids.reshape(-1))
        out = np.empty((*shape, table.D), dtype=W.dtype)
        out_t = torch.empty((ids.size, table.D), dtype=Wt.dtype)
        runs = {
            "ours_out": lambda: table.lookup(ids, out=out),
            "torch_out": lambda: torch.index_select(Wt, 0, ids_t, out=out_t),
            "torch_out_1": lambda: torch.index_select(Wt, 0, ids_t, out=out_t),  # timed with 1 thread
            "ours": lambda: table.lookup(ids),
            "torch": lambda: torch.index_select(Wt, 0, ids_t),
        }
        times = {key: float("inf") for key in runs}
        for _ in range(max(repeats, 5)):  # rounds of 20 calls each, the tools taking turns
            for key, run in runs.items():
                time.sleep(SETTLE / 10)
                with torch_threads(1 if key == "torch_out_1" else None):
                    times[key] = min(times[key], *(timed(run) for _ in range(20)))
        assert np.array_equal(out.reshape(-1, table.D), out_t.numpy())
        rows.append((name, str(shape), f"{times['ours_out'] * 1e3:.3f} ms", f"{times['torch_out'] * 1e3:.3f} ms",
                     f"{times['torch_out'] / times['ours_out']:.2f}x", f"{times['torch_out_1'] * 1e3:.3f} ms",
                     f"{times['torch_out_1'] / times['ours_out']:.2f}x", f"{times['ours'] * 1e3:.3f} ms",
                     f"{times['torch'] * 1e3:.3f} ms"))
    return rows


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run torch ops with ``threads`` intra-op threads (None: as they are), then restore."""
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def machine() -> str:
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = [f"python {platform.python_version()}", f"numpy {numpy.__version__}"]
    for module in ("faiss", "torch", "gensim"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except ImportError:
            pass
    blas = ""
    try:
        from threadpoolctl import threadpool_info

        blas = ", ".join(f"{i['internal_api']} {i['version']} ({i['num_threads']} threads)" for i in threadpool_info()
                         if i["user_api"] == "blas")
    except ImportError:
        pass
    return f"machine: {cpu}, {cores} cores; {'; '.join(versions)}; BLAS: {blas or 'unknown'}"


def markdown(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
