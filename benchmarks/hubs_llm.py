"""Whole-vocabulary scans at LLM size: ``embedlab hubs`` over a Llama-3-shaped table, and where its time goes.

    python benchmarks/llama_checkpoint.py /tmp/llama3                   # once: V = 128,256, D = 4,096, bf16
    python benchmarks/hubs_llm.py /tmp/llama3 --memory 2G               # a cold `embedlab hubs`: wall time, peak RSS
    python benchmarks/hubs_llm.py /tmp/llama3 --breakdown --rows 32768  # in process: the time of each part

Prints the CPU's flags that decide the screen (``amx_bf16``, ``avx512_bf16``,
``avx512_vnni``, ``avx2``), the cores this process may use, the load average, and
the way ``every_row.choose_method`` picks for the table (``"bf16 self-join"``
where ``capability.fast_bf16``: bfloat16 products by torch's oneDNN matmul on
AMX or AVX512-BF16).

Default: runs ``python -m embedlab hubs --model DIR --json`` in a new process
(loading included, as a user runs it) and reports its wall time, the seconds
each metric's lists took (from the JSON), the child's CPU time (user + system:
on a shared machine, how many of the cores it got) and peak RSS
(``getrusage(RUSAGE_CHILDREN)``).

``--breakdown``: in this process, the table loaded first (not timed), the
first ``--rows`` rows; ``Search(..., every_row=True, screen=...)`` for both
metrics as ``hubs`` asks it, with the parts timed by wrapping them (so a
little slower than unwrapped): the bfloat16 products (``Bf16SelfJoin._product``,
torch's matmul), the filter (``bf16_filter.filter_block``), the first bars
(``_sample_kth``), the candidate pools (``CandidatePool.add``) and the float64
rescoring (``Rescorer.scores``); the rest is Python between them. Run with
``--screen float`` for the float32 self-join's time (its parts are not split).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f", "avx2")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a model folder, e.g. one written by benchmarks/llama_checkpoint.py")
    parser.add_argument("--memory", default=None, help="--memory of embedlab hubs (e.g. 2G); default its own")
    parser.add_argument("--breakdown", action="store_true", help="time the parts in this process instead")
    parser.add_argument("--rows", type=int, default=0, help="--breakdown: the first N rows only (0: all)")
    parser.add_argument("--screen", default="auto", help="--breakdown: Search's screen (auto, bf16, float)")
    args = parser.parse_args(argv)
    machine()
    if args.breakdown:
        breakdown(args.model, args.rows, args.screen, args.memory)
    else:
        cold_hubs(args.model, args.memory)
    return 0


def machine() -> None:
    """The flags that decide the screen, the cores, the load."""
    from embedlab.engine.neighbors.capability import cpu_flags, fast_bf16

    flags = cpu_flags()
    print(f"CPU flags: {' '.join(f + ('+' if f in flags else '-') for f in FLAGS)}; fast_bf16: {fast_bf16()}")
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; load average: {os.getloadavg()}")


def cold_hubs(model: str, memory: str | None) -> None:
    """``embedlab hubs`` in a new process: wall time, each metric's seconds, peak RSS."""
    command = [sys.executable, "-m", "embedlab", "hubs", "--model", model, "--json"]
    command += ["--memory", memory] if memory else []
    print("running:", " ".join(command))
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(done.returncode)
    result = json.loads(done.stdout)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = usage.ru_maxrss * 1024  # Linux: KiB
    cpu = usage.ru_utime + usage.ru_stime
    seconds = {m: round(result["metrics"][m]["seconds"], 1) for m in result["metrics"]}
    print(f"V={result['V']:,} D={result['D']:,} k={result['k']}: wall {wall:.1f} s (load included), lists {seconds} s "
          f"(a metric held from the other's scan shows ~0), CPU {cpu:.1f} s ({cpu / wall:.2f} cores on average), "
          f"peak RSS {peak / 2**30:.2f} GiB; load average after: {os.getloadavg()}")


def breakdown(model: str, rows: int, screen: str, memory: str | None) -> None:
    """Both metrics' lists in this process, each part timed."""
    import numpy as np

    from embedlab import sources
    from embedlab.cli.arguments import byte_size
    from embedlab.engine.neighbors import bf16_join, pool, rescore
    from embedlab.engine.neighbors.search import Search

    table = sources.load(model)
    W = table.W_E if not rows else np.ascontiguousarray(table.W_E[:rows])
    spent: dict[str, float] = defaultdict(float)

    def timed(name, fn):
        def wrapper(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - t
        return wrapper

    kernel = bf16_join._kernel()
    bf16_join._kernel = lambda: None if kernel is None else timed("filter (numba, one pass)", kernel)
    bf16_join.Bf16SelfJoin._product = timed("products (torch bf16 matmul)", bf16_join.Bf16SelfJoin._product)
    bf16_join.Bf16SelfJoin._sample_kth = timed("first bars (sample)", bf16_join.Bf16SelfJoin._sample_kth)
    pool.CandidatePool.add = timed("pools (CandidatePool.add)", pool.CandidatePool.add)
    rescore.Rescorer.scores = timed("rescoring (float64)", rescore.Rescorer.scores)
    budget = None if memory is None else byte_size(memory)
    start = time.perf_counter()
    search = Search(W, 10, ("cosine", "dot"), every_row=True, screen=screen, memory=budget)
    plan_s = time.perf_counter() - start
    print(f"V={len(W):,} D={W.shape[1]:,}: method {search._method}, both metrics from one product per pair: "
          f"{search._joint is not None}; plans {search._pairs}")
    total = {}
    for metric in ("dot", "cosine"):
        t = time.perf_counter()
        n = sum(len(ids) for _, _, ids, _ in search.every_row(metric))
        total[metric] = time.perf_counter() - t
        assert n == len(W)
    wall = plan_s + sum(total.values())
    print(f"checks and plans {plan_s:.1f} s; lists: " + ", ".join(f"{m} {s:.1f} s" for m, s in total.items())
          + f"; in all {wall:.1f} s; load average after: {os.getloadavg()}")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:32s} {s:7.1f} s  {100 * s / wall:5.1f}%")
    print(f"  {'the rest (Python, merges, lists)':32s} {wall - sum(spent.values()):7.1f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    raise SystemExit(main())
