"""Neighbour search and lookup: embedlab against the tools users would pick instead.

    pip install -c constraints.txt -e '.[bench]'
    python benchmarks/neighbors.py                # minilm and glove, 1,000 and 10,000 queries, top-10
    python benchmarks/neighbors.py --markdown     # the tables of benchmarks/README.md
    python benchmarks/neighbors.py --queries 1000 --tables minilm   # one size, one table

Every tool answers the same queries (token ids sampled with a seed, 1,000 and
10,000 by default, ``--queries``; each query leaves out its own id). Each tool
runs in a process of its own, started once per table and number of queries (a
library reads ``OPENBLAS_CORETYPE`` when it loads, so each
gets its own), and the tools take turns in rounds, so that a busy moment of
the machine hits every tool alike, with a short rest before each run (BLAS and
OpenMP threads spin a while after a call). Each is timed best-of-``--repeats``
after a warm-up. Indexes, normalised copies, norms and embedlab's integer
codes are built before the clock starts, for every tool alike.

BLAS cores: before the run, each library is loaded once in a probe process
with ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` unset, and threadpoolctl
says which OpenBLAS kernel it picked. Where a bundled OpenBLAS falls back to a
generic core (Prescott, Core2, ...: faiss-cpu's OpenBLAS 0.3.15 does on some
new Intel CPUs), that tool's process is told the CPU's own core: SkylakeX with
AVX-512, Haswell (Intel) or Zen (AMD) with AVX2, never one whose instructions
the CPU lacks. Where the library detects the CPU right, the variables stay
unset. The kernel each process runs is printed. (torch uses MKL, linked into
it; threadpoolctl does not see MKL's kernel, so torch's line names its own
CPU capability.)

- embedlab.neighbors: the public call, ``embedlab.neighbors(table, ids, k=k,
  metrics=[metric])``, what ``embedlab neighbors`` runs: the table as
  ``sources.load`` gives it, no codes given by hand; the screen is the one the
  search chooses (printed, from the result's plans). The untimed first call
  (the warm-up) leaves on the table what a first call leaves: its lengths,
  and its integer codes where the search built them (768 queries or more, 384 where D <= 128).
  The ratios are against this row.
- embedlab.neighbors, new table: the same call on a new ``EmbeddingTable`` over
  the same array for every run, so that the lengths and any codes are built
  inside the clock: what one ``embedlab neighbors`` process pays after the read.
- embedlab prebuilt codes: the front door (``engine.neighbors.search.Search``)
  with the table's integer codes built by hand before the clock (the integer
  screen where the CPU has AVX2), ``embedlab float`` with ``screen="float"``
  (the float32 GEMM screen), and ``embedlab bf16`` with ``screen="bf16"``
  (bfloat16 products on AMX / AVX512-BF16 through torch's oneDNN, torch's own
  kernels elsewhere; the table's bfloat16 rows built before the clock, like
  the codes); all exact, equal scores by the smaller id.
- faiss: ``IndexFlatIP`` over the rows (unit rows for cosine), k + 1, own id dropped.
- torch: ``Q @ W.T`` and ``torch.topk`` over blocks of 256 queries (its fastest
  block size here), k + 1, own id dropped.
- numpy: the naive way: normalise, one matmul, ``argpartition``, sort the k + 1.
- gensim: ``KeyedVectors.most_similar`` one query at a time (cosine only).
  numpy and gensim run only up to ``--slow-tools-up-to`` queries (default
  1,000): at 10,000 GloVe queries each run would take minutes.
- GEMM floor: the float32 product ``Q @ W.T`` alone (best of one call and
  blocks of 1024 x 4096), which a float screen must at least compute.

Lists are compared with embedlab's: the fraction of queries whose set of k ids
agrees, and, where the order differs, whether the swapped rows tie exactly
(float64 scores equal) or nearly (within 1e-6). Ratios are their time / ours
(ours: the ``embedlab.neighbors`` row); the goal column holds issue 22's goal
for faiss and torch: their time / ours at least 1.5 ("met"). "rescored" is the
share of the table's rows that ``embedlab.neighbors`` scores again in float64,
per query (counted in an untimed run).

The kernels ``embedlab.neighbors`` runs are listed from a probe process of
their own per table and number of queries (the same call, untimed, with
``ONEDNN_VERBOSE=1`` and ``MKL_VERBOSE=1``: the oneDNN primitives, e.g. an
AMX bf16 matmul, and the MKL calls it made; none where it runs NumPy's BLAS
and numba only), so that the timed processes print nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

import embedlab
from embedlab import sources
from embedlab.engine.neighbors import capability, rescore
from embedlab.engine.neighbors.search import ArrayTable, Search
from embedlab.engine.table import EmbeddingTable
from llm_size import VERBOSE, kernel_counts, onednn_isa  # benchmarks/llm_size.py, beside this script

TORCH_BLOCK = 256
# Seconds of rest before each timed run: BLAS and OpenMP worker threads spin for a
# while after a call, and would otherwise steal cores from the next tool.
SETTLE = 0.5
OURS = "embedlab.neighbors"
TOOLS = (OURS, "embedlab.neighbors, new table", "embedlab prebuilt codes", "embedlab float", "embedlab bf16",
         "faiss IndexFlatIP",
         "torch matmul+topk", "numpy naive", "gensim most_similar", "GEMM floor")
SLOW_TOOLS = ("numpy naive", "gensim most_similar")
GOAL_TOOLS, GOAL = ("faiss IndexFlatIP", "torch matmul+topk"), 1.5  # issue 22: their time / ours >= 1.5
FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
MODULES = {"faiss IndexFlatIP": "faiss", "torch matmul+topk": "torch", "gensim most_similar": "gensim"}
# OpenBLAS cores without AVX2 kernels: on a CPU with AVX2 a library that picks one runs generic code.
GENERIC_CORES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai", "coppermine",
                 "northwood", "banias", "generic", "opteron", "opteron_sse3", "barcelona", "bobcat", "sandybridge"}
BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="+", default=["minilm", "glove"], choices=["seed", "minilm", "glove"],
                        help="tables to search (default: minilm glove)")
    parser.add_argument("--queries", type=_positive, nargs="+", default=[1000, 10000],
                        help="numbers of queries per table, sampled (default 1000 10000)")
    parser.add_argument("--slow-tools-up-to", type=_positive, default=1000,
                        help="run numpy naive and gensim only up to this many queries (default 1000)")
    parser.add_argument("--k", type=_positive, default=10, help="neighbours per query (default 10)")
    parser.add_argument("--repeats", type=_positive, default=5, help="timed rounds; the best is kept (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the query sample (default 0)")
    parser.add_argument("--skip", nargs="*", default=[], help="tools to leave out (e.g. gensim)")
    parser.add_argument("--no-lookup", action="store_true", help="leave out the lookup benchmark")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    print(machine())
    flags = capability.cpu_flags()
    print("CPU flags: " + ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in FLAGS))
    print(f"embedlab's screen here (capability.describe()): {capability.describe()}")
    if importlib.util.find_spec("torch") is not None:
        print(f"oneDNN (one bf16 matmul, ONEDNN_VERBOSE=1): {onednn_isa()}")
    print(f"load average at the start: {load_average()}\n")
    missing = [name for name in ("faiss", "torch", "gensim") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"not installed, left out: {', '.join(missing)} (pip install -c constraints.txt -e '.[bench]')\n")
    tools = [t for t in TOOLS if not any(t.startswith(s) for s in args.skip)
             and (t not in MODULES or importlib.util.find_spec(MODULES[t]) is not None)]
    envs = blas_environments(tools)
    print()
    neighbor_rows, lookup_rows = [], []
    for name in args.tables:
        for count in args.queries:
            live = [t for t in tools if t not in SLOW_TOOLS or count <= args.slow_tools_up_to]
            if OURS in live:
                print(f"{name}, {count:,} queries: kernels of {OURS}: {probe_kernels(name, count, args)}")
            neighbor_rows += bench_table(name, count, live, envs, args)
        if not args.no_lookup:
            lookup_rows += bench_lookup(name, sources.load(name), args.repeats)
    print(f"load average at the end: {load_average()}\n")
    if args.markdown:
        print(markdown(["table", "queries", "metric", "tool", "seconds", "queries/s", "their time / ours",
                        f"goal >= {GOAL}x", "of GEMM floor", "rescored", "same sets",
                        "order differs (exact ties / near ties / other)"], neighbor_rows))
        print()
        if lookup_rows:
            print(markdown(["table", "(B, T)", "embedlab lookup(out=)", "torch index_select(out=)",
                            "their time / ours", "torch index_select(out=), 1 thread", "their time / ours",
                            "embedlab lookup", "torch index_select"], lookup_rows))
    else:
        print(f"table  queries  metric  tool  seconds  queries/s  their time / ours  goal >= {GOAL}x  of GEMM floor  "
              "rescored  same sets  order differs")
        for row in neighbor_rows + [()] + lookup_rows:
            print("  ".join(str(c) for c in row))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


# -- BLAS cores -----------------------------------------------------------------------------

def blas_environments(tools: list[str]) -> dict[str, dict[str, str | None]]:
    """Each tool's BLAS variables: unset where its libraries detect the CPU, its own core where one falls back."""
    own = own_core(capability.cpu_flags(), cpu_vendor())
    envs = {}
    for tool in tools:
        module = MODULES.get(tool, "embedlab.engine.neighbors.search")
        cores = probe_cores(module)
        env: dict[str, str | None] = dict.fromkeys(BLAS_VARIABLES)  # None: unset
        fallback = [c for c in cores if c["architecture"].lower() in GENERIC_CORES]
        if fallback and own is not None:
            env["OPENBLAS_CORETYPE"] = own
        elif fallback:
            warnings.warn(f"{tool}: OpenBLAS runs the generic core {fallback[0]['architecture']} and this CPU's own "
                          f"core is not known; its times are not those of a tuned BLAS", stacklevel=1)
        envs[tool] = env
        chosen = probe_cores(module, env) if env["OPENBLAS_CORETYPE"] else cores
        for c in chosen:
            note = f" (detected {fallback[0]['architecture']}: a generic core; told {own})" if fallback else ""
            print(f"BLAS of {tool}: OpenBLAS {c['version']} {c['architecture']}{note}, {c['num_threads']} threads, "
                  f"{os.path.basename(c['filepath'])}")
            if c["architecture"].lower() in GENERIC_CORES:
                warnings.warn(f"{tool} still runs OpenBLAS's generic core {c['architecture']}", stacklevel=1)
        if tool.startswith("torch"):
            print(f"BLAS of {tool}: {torch_blas()}")
    return envs


def own_core(flags: frozenset[str], vendor: str) -> str | None:
    """The OpenBLAS core this CPU really is, named only from instructions it has; None where unsure."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags and vendor == "GenuineIntel":
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Zen" if vendor == "AuthenticAMD" else "Haswell"
    return None


def probe_cores(module: str, env: dict[str, str | None] | None = None) -> list[dict]:
    """The OpenBLAS libraries ``module`` loads and the core each picked, in a fresh process with ``env``."""
    code = (f"import json, {module}\nfrom threadpoolctl import threadpool_info\n"
            "print(json.dumps([i for i in threadpool_info() if i['internal_api'] == 'openblas']))")
    result = subprocess.run([sys.executable, "-c", code], env=child_environment(env or {}), capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def child_environment(changes: dict[str, str | None]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in BLAS_VARIABLES}
    env.update({key: value for key, value in changes.items() if value is not None})
    return env


def torch_blas() -> str:
    code = ("import torch; c = torch.__config__.show(); "
            "print(('MKL' if 'BLAS_INFO=mkl' in c else 'other BLAS') + ', CPU capability ' + "
            "torch.backends.cpu.get_cpu_capability() + ', %d threads' % torch.get_num_threads())")
    result = subprocess.run([sys.executable, "-c", code], env=child_environment({}), capture_output=True, text=True)
    return result.stdout.strip() or result.stderr.strip().splitlines()[-1]


def cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return next((line.split(":", 1)[1].strip() for line in handle if line.startswith("vendor_id")), "")
    except OSError:
        return ""


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"
    except OSError:
        return "unknown"


def probe_kernels(name: str, count: int, args) -> str:
    """The oneDNN primitives and MKL calls of ``embedlab.neighbors``'s search, both metrics, in a verbose child."""
    code = ("import sys, numpy as np, embedlab\nfrom embedlab import sources\n"
            "name, count, seed, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])\n"
            "table = sources.load(name)\n"
            "ids = np.sort(np.random.default_rng(seed).choice(table.V, min(count, table.V), replace=False)).tolist()\n"
            "for metric in ('cosine', 'dot'):\n"
            "    embedlab.neighbors(table, ids, k=k, metrics=[metric])\n")
    result = subprocess.run([sys.executable, "-c", code, name, str(count), str(args.seed), str(args.k)],
                            env={**child_environment({}), **VERBOSE}, capture_output=True, text=True)
    if result.returncode != 0:
        return f"probe failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}"
    found = kernel_counts(result.stdout.splitlines() + result.stderr.splitlines())
    return "; ".join(found) or "no oneDNN or MKL call (NumPy's BLAS, numba)"


# -- one process per tool ----------------------------------------------------------------------

@dataclass
class Worker:
    tool: str
    process: multiprocessing.Process
    conn: object

    def ask(self, *message):
        self.conn.send(message)
        answer = self.conn.recv()
        if isinstance(answer, BaseException):
            raise answer
        return answer


@contextlib.contextmanager
def environment(changes: dict[str, str | None]) -> Iterator[None]:
    """os.environ with ``changes`` (None: unset) while a process is started, then as it was."""
    before = {key: os.environ.get(key) for key in changes}
    try:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def start_worker(tool, env, name, queries, k) -> Worker:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    with environment(env):
        process = context.Process(target=serve, args=(child, tool, name, queries, k), daemon=True)
        process.start()
    return Worker(tool, process, parent)


def serve(conn, tool: str, name: str, queries: np.ndarray, k: int) -> None:
    """A tool's process: build it for both metrics, then answer (kind, metric) messages until ("stop", None).

    Kinds: "ids" (the answer, also the warm-up), "time" (seconds of one run: a run's ``prepare``, where it
    has one, runs first, outside the clock; so do freeing the last run's answer and a collection of the
    process's garbage, as for every tool), "rescored" (embedlab.neighbors's rescored share), "screen"
    (the screen embedlab.neighbors's last call ran, from its plans), "sizes" (bytes of the table and of
    its codes, seconds to build them).
    """
    try:
        table = sources.load(name)
        start = time.perf_counter()
        codes = table.codes() if tool == "embedlab prebuilt codes" else None  # resident codes, built by hand
        built = time.perf_counter() - start
        runs = {metric: make_run(tool, table, queries, k, metric) for metric in ("cosine", "dot")}
        conn.send("ready")
    except BaseException as exc:  # shown by the parent
        conn.send(exc)
        return
    while True:
        kind, metric = conn.recv()
        try:
            if kind == "stop":
                return
            run = runs.get(metric)
            if kind == "ids":
                conn.send(None if run is None else "floor" if tool == "GEMM floor" else run())
            elif kind == "time":
                getattr(run, "prepare", lambda: None)()
                # The last run's answer was held until this one returned, and freed inside the clock (100,000
                # Python objects of embedlab's lists at 10,000 queries; faiss's and torch's answers are arrays);
                # and the garbage of earlier runs, collected whenever the collector's counts say, landed in
                # whichever run came next. Both now happen before the clock, in every tool's process.
                own = None
                gc.collect()
                start = time.perf_counter()
                own = run()  # the GEMM floor times itself
                conn.send(own if tool == "GEMM floor" else time.perf_counter() - start)
            elif kind == "rescored":
                conn.send(rescored_rows(run.table, queries, k, metric))
            elif kind == "screen":
                conn.send(getattr(run, "screen", None))
            elif kind == "sizes":
                conn.send((table.W_E.nbytes, None if codes is None else codes.nbytes, built))
        except BaseException as exc:
            conn.send(exc)


def bench_table(name, count, tools, envs, args) -> list[tuple]:
    table = sources.load(name)
    queries = np.sort(np.random.default_rng(args.seed).choice(table.V, min(count, table.V), replace=False))
    workers = [start_worker(tool, envs[tool], name, queries, args.k) for tool in tools]
    for worker in workers:
        answer = worker.conn.recv()
        if isinstance(answer, BaseException):
            raise answer
    by_tool = {w.tool: w for w in workers}
    rows = []
    W = np.ascontiguousarray(table.W_E, dtype=np.float32)
    norms = table.norms()
    if "embedlab prebuilt codes" in by_tool:
        table_bytes, code_bytes, built = by_tool["embedlab prebuilt codes"].ask("sizes", None)
        print(f"{name}, {len(queries):,} queries: the table {table_bytes / 2**20:.1f} MiB, its integer codes "
              f"{code_bytes / 2**20:.1f} MiB beside it (resident, not working memory; built in {built:.2f} s "
              f"before the clock, for the prebuilt-codes row)")
    try:
        for metric in ("cosine", "dot"):
            ids = {w.tool: w.ask("ids", metric) for w in workers}  # warm-up, and the answer
            live = [w for w in workers if ids[w.tool] is not None]
            seconds = dict.fromkeys(ids, float("inf"))
            for _ in range(args.repeats):
                for worker in live:
                    time.sleep(SETTLE)
                    seconds[worker.tool] = min(seconds[worker.tool], worker.ask("time", metric))
            share = by_tool[OURS].ask("rescored", metric) if OURS in by_tool else None
            screens = {tool: by_tool[tool].ask("screen", metric) for tool in by_tool if tool.startswith(OURS)}
            for tool, screen in screens.items():
                print(f"{name}, {len(queries):,} queries, {metric}: {tool} ran the {screen or 'unnamed'} screen")
            rows += table_rows(name, metric, live, ids, seconds, share, W, queries, norms)
    finally:
        for worker in workers:
            worker.conn.send(("stop", None))
            worker.process.join(timeout=30)
    return rows


def table_rows(name, metric, live, ids, seconds, share, W, queries, norms) -> list[tuple]:
    """One row per tool; ratios against the first tool (embedlab.neighbors where it ran)."""
    ours = seconds[live[0].tool]
    floor = seconds.get("GEMM floor", float("nan"))
    rows = []
    for worker in live:
        tool, t = worker.tool, seconds[worker.tool]
        rescored = f"{share:.3%}" if tool == OURS and share is not None else ""
        goal = ("met" if t / ours >= GOAL else "not met") if tool in GOAL_TOOLS and live[0].tool == OURS else ""
        head = (name, f"{len(queries):,}", metric, tool, f"{t:.3f}", f"{len(queries) / t:,.0f}", f"{t / ours:.2f}x",
                goal)
        if tool == "GEMM floor":
            rows.append((*head, "100%", "", "", ""))
            continue
        same, order = compare(ids[tool], ids[live[0].tool], lambda r, i: exact_score(W, queries[r], i, metric, norms))
        rows.append((*head, f"{floor / t:.0%}", rescored, f"{same}/{len(queries)}", order))
    return rows


def rescored_rows(table, queries, k, metric) -> float:
    """The share of the table's rows that embedlab.neighbors rescores in float64, per query (an untimed run)."""
    counted = []
    top_k = rescore.Rescorer.top_k

    def counting(self, qi, cand):
        counted.append(int(np.count_nonzero(cand >= 0)))
        return top_k(self, qi, cand)

    rescore.Rescorer.top_k = counting
    try:
        embedlab.neighbors(table, queries.tolist(), k=k, metrics=[metric])
    finally:
        rescore.Rescorer.top_k = top_k
    return sum(counted) / (len(queries) * table.V)


def lists(rows, queries, k, metric, **options) -> np.ndarray:
    """embedlab's ids (N, K) through its front door: checked, planned and searched (no token strings)."""
    return Search(rows, k, metric, ids=queries, **options).nearest(metric).ids


def make_run(tool, table, queries, k, metric) -> Callable[[], np.ndarray] | None:
    """The timed call of one tool (-> ids (N, K)), with everything it needs built first; None: not for this metric."""
    W = np.ascontiguousarray(table.W_E, dtype=np.float32)  # (V, D)
    norms = table.norms()  # (V,)
    unit = W / np.maximum(norms, 1e-30)[:, None].astype(np.float32) if metric == "cosine" else W  # (V, D)
    if tool.startswith(OURS):
        return api_run(table, queries, k, metric, new_table=tool != OURS)
    if tool == "embedlab prebuilt codes":
        rows = ArrayTable(table.W_E, norms=norms, codes=table.codes())  # codes built before the clock (like faiss's index)
        return lambda: lists(rows, queries, k, metric)
    if tool == "embedlab float":
        rows = ArrayTable(table.W_E, norms=norms)
        return lambda: lists(rows, queries, k, metric, screen="float")
    if tool == "embedlab bf16":
        rows = ArrayTable(table.W_E, norms=norms)
        rows.bf16_rows()  # built before the clock, as the codes are for "embedlab prebuilt codes"
        return lambda: lists(rows, queries, k, metric, screen="bf16")
    if tool == "GEMM floor":
        return gemm_floor(W, queries)
    return {"faiss IndexFlatIP": faiss_run, "torch matmul+topk": torch_run, "numpy naive": numpy_run,
            "gensim most_similar": gensim_run}[tool](W, unit, queries, k, metric)


def api_run(table, queries, k, metric, *, new_table: bool) -> Callable[[], np.ndarray]:
    """``embedlab.neighbors`` as a user calls it, on a table of its own (one per metric, so that one metric's
    warm-up does not leave codes for the other); ``new_table``: a new table before every run (``prepare``).

    The run records the screen its search ran (``run.screen``, from the result's plans) and keeps its
    table (``run.table``) for the untimed rescoring count.
    """
    ids = queries.tolist()

    def fresh() -> None:
        run.table = EmbeddingTable(table.W_E, vocabulary=table.vocabulary, provenance=table.provenance)

    def run() -> np.ndarray:
        result = embedlab.neighbors(run.table, ids, k=k, metrics=[metric])  # (N) QueryLists, token strings too
        plans = result.memory.plans if result.memory is not None else {}
        run.screen = plans.get(metric, {}).get("screen")
        return np.array([[x.id for x in q.lists[metric]] for q in result.queries], dtype=np.int64)  # (N, K)

    run.screen = None
    fresh()
    if new_table:
        run.prepare = fresh
    return run


def faiss_run(W, unit, queries, k, metric):
    import faiss

    index = faiss.IndexFlatIP(W.shape[1])
    index.add(unit)
    Q = unit[queries]  # (N, D) the query rows, already unit for cosine

    def run():
        _, ids = index.search(Q, k + 1)
        return drop_self(ids, queries, k)

    return run


def torch_run(W, unit, queries, k, metric):
    import torch

    Wt = torch.from_numpy(np.array(unit))  # (V, D) a writable copy
    Qt = Wt[torch.from_numpy(queries)]  # (N, D)

    def run():
        parts = [torch.topk(Qt[s:s + TORCH_BLOCK] @ Wt.T, k + 1, dim=1).indices
                 for s in range(0, len(Qt), TORCH_BLOCK)]
        return drop_self(torch.cat(parts).numpy(), queries, k)

    return run


def numpy_run(W, unit, queries, k, metric):
    def run():
        Q = W[queries]  # (N, D)
        if metric == "cosine":
            Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        S = Q @ unit.T  # (N, V)
        top = np.argpartition(-S, k + 1, axis=1)[:, :k + 1]  # (N, K+1) unordered
        order = np.argsort(-np.take_along_axis(S, top, axis=1), axis=1)
        return drop_self(np.take_along_axis(top, order, axis=1), queries, k)

    return run


def gensim_run(W, unit, queries, k, metric):
    if metric != "cosine":
        return None  # most_similar ranks by cosine only
    from gensim.models import KeyedVectors

    kv = KeyedVectors(W.shape[1])
    kv.add_vectors([str(i) for i in range(len(W))], W)
    kv.fill_norms()

    def run():
        return np.array([[int(key) for key, _ in kv.most_similar(str(q), topn=k)] for q in queries])

    return run


def gemm_floor(W, queries):
    """The float32 product Q @ W.T alone: the better of one call and blocks of 1024 x 4096 rows."""
    Q = W[queries]  # (N, D)
    S = np.empty((min(1024, len(Q)), 4096), dtype=np.float32)

    def blocks():
        for s in range(0, len(Q), 1024):
            for v in range(0, len(W), 4096):
                q, w = Q[s:s + 1024], W[v:v + 4096]
                np.matmul(q, w.T, out=S[:len(q), :len(w)])

    def run() -> float:  # seconds of the faster way in this call: the floor is the faster of the two
        times = []
        for call in (lambda: Q @ W.T, blocks):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    return run


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
