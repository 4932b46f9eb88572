"""Whole-vocabulary hubs in this process and on a Dask LocalCluster of 1 and 2 workers.

    pip install -c constraints.txt -e '.[cluster,data]'
    python benchmarks/cluster.py                  # minilm, every token, k = 10
    python benchmarks/cluster.py --queries 5000   # a sample
    python benchmarks/cluster.py --bf16 32768 2048   # random bfloat16 rows: the bf16 self-join's steps

Each configuration runs ``measure_hubs`` (dot and cosine, each query leaving out
its own id) on the same queries: in this process (``search``'s own threads, one
per core), then on a ``LocalCluster`` of 1 and of 2 worker processes with 1
thread each (the table and its int16 codes scattered once; ``--memory`` per
task). Cluster start-up is not timed; scattering the table is. The k-occurrence
counts are checked equal to the in-process ones. Distributed's nanny starts each
worker with ``MALLOC_TRIM_THRESHOLD_=65536`` (its ``pre-spawn-environ``): glibc then
maps every block of 128 KiB or more anew and returns it when freed, so each large
NumPy or torch temporary is zeroed by the kernel again; ``--malloc-trim-threshold
BYTES`` starts the workers with another value. ``--bf16 V D`` searches a random
V x D table of bfloat16 values instead (a bf16 checkpoint's table, seed 0), whose
every-row lists come from the bf16 self-join: in this process its block pairs on
2 threads, on the cluster its steps as tasks (``ScatteredTable.pair_steps``). "GFLOP/s" counts the float32
products a full scan implies, 2 * N * V * D per metric, over the wall time of
both metrics: an effective rate (the int16 screen computes integer products
instead, where the CPU has AVX2).

On a shared machine wall time says little about scaling, so each run also
reports CPU seconds (user + system, ``resource.getrusage``) of this process or
of each worker process over the run, and the load average before it: with the
work split evenly, the busiest worker's CPU seconds are the wall time the run
would take with a core of its own per worker.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--queries", type=int, default=None, help="N sampled tokens (default every token)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--bf16", type=int, nargs=2, metavar=("V", "D"),
                        help="a random V x D table of bfloat16 values instead of --model")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2],
                        help="the runs: 0 in this process, N on a LocalCluster of N workers (default 0 1 2)")
    parser.add_argument("--malloc-trim-threshold", type=int, metavar="BYTES",
                        help="the workers' MALLOC_TRIM_THRESHOLD_ (distributed's nanny sets 65536 by default)")
    args = parser.parse_args()

    import dask
    from distributed import Client, LocalCluster

    if args.malloc_trim_threshold is not None:
        dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": args.malloc_trim_threshold})
    trim = dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_", None)

    from embedlab import sources
    from embedlab.measure.hubs import measure_hubs

    if args.bf16:
        from embedlab.engine.table import EmbeddingTable

        V, D = args.bf16
        rows = np.random.default_rng(0).standard_normal((V, D), dtype=np.float32)
        table = EmbeddingTable((rows.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32))  # bf16 values
        args.model = f"random bf16 {V} x {D}"
    else:
        table = sources.load(args.model)
    table.norms()
    N = table.V if args.queries is None else args.queries
    flops = 2 * 2 * N * table.V * table.D  # both metrics
    print(f"{args.model}: V={table.V} D={table.D}, N={N}, k={args.k}; {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0))} cores available; the workers' MALLOC_TRIM_THRESHOLD_ {trim}")
    print(f"{'run':<34} {'load':>5} {'dot s':>6} {'cos s':>6} {'wall s':>7} {'GFLOP/s':>8}  CPU s per process")
    reference = None
    for workers in args.workers:
        cluster = client = None
        if workers:
            cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, memory_limit="3GiB",
                                   dashboard_address=None)
            client = Client(cluster, set_as_default=False)
        try:
            load = os.getloadavg()[0]
            before = _cpu_seconds() if client is None else client.run(_cpu_seconds)
            start = time.perf_counter()
            result = measure_hubs(table, args.k, queries=args.queries, scheduler=client)
            total = time.perf_counter() - start
            after = _cpu_seconds() if client is None else client.run(_cpu_seconds)
        finally:
            if cluster is not None:
                client.close()
                cluster.close()
        cpu = [after - before] if client is None else [after[w] - before[w] for w in sorted(after)]
        counts = {m: result.k_occurrence[m] for m in ("dot", "cosine")}
        if reference is None:
            reference = counts
        same = all(np.array_equal(counts[m], reference[m]) for m in counts)
        name = "in-process" if not workers else f"LocalCluster {workers} worker{'s' * (workers > 1)} x 1 thread"
        print(f"{name:<34} {load:5.1f} {result.metrics['dot'].seconds:6.1f} {result.metrics['cosine'].seconds:6.1f} "
              f"{total:7.1f} {flops / total / 1e9:8.1f}  {' '.join(f'{c:.1f}' for c in cpu)}"
              + ("" if same else "  COUNTS DIFFER"))


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
