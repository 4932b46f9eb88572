"""A few queries times a bf16 (or float16) table, kept as it is: the compiled loop against widening for OpenBLAS.

    python benchmarks/llama_checkpoint.py /tmp/llama3          # once: a Llama-3-shaped folder (2.1 GB)
    python benchmarks/few_queries.py /tmp/llama3 --repeats 5
    python benchmarks/few_queries.py /tmp/llama3 --repeats 5 --half   # the same values as float16

The product ``widen(W) @ Q.T`` (V x D bf16 bits, m x D float32 queries) over the whole token table,
mapped from the file as a search reads it (``sources.load``), split over the cores in the blocks the
float screen uses (``--blocks`` of rows, each shared by the cores), two ways:

- **loop**: ``engine.widened_product`` (compiled by llvmlite: each row's bits widened in registers and
  multiplied by every query while the row is in L1), what the float screen runs up to
  ``widened_product.MOST_QUERIES`` queries;
- **NumPy + OpenBLAS**: what it runs otherwise: ``WIDEN_CHUNK_BYTES`` of rows widened into a float32
  buffer of the thread's, then ``np.matmul`` by the queries (``float_screen._widened_product``).

Each best of ``--repeats`` wall seconds, the page cache warm (the load reads the table once). Prints the
CPU, its flags, the loop's status and NumPy's BLAS, and the load average at the start and end.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from embedlab.engine import widened_product
from embedlab.engine.neighbors.float_screen import WIDEN_CHUNK_BYTES
from embedlab.engine.row_blocks import CORES, map_row_blocks
from embedlab.sources import loaders


def cpu() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), []))
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"]
    return f"{model}, {CORES} cores, flags: {' '.join(f for f in wanted if f in flags)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a Llama-3-shaped folder (benchmarks/llama_checkpoint.py)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=64, help="blocks of rows, as a search's plan makes them")
    parser.add_argument("--queries", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--half", action="store_true",
                        help="the same values as a float16 table in memory (a GGUF or safetensors F16 tensor)")
    args = parser.parse_args(argv)
    blas = ", ".join(f"{i['internal_api']} {i['version']} {i.get('architecture', '')}" for i in threadpool_info()
                     if i["user_api"] == "blas")
    print(f"CPU: {cpu()}\nNumPy's BLAS: {blas}\n"
          f"load average at start {os.getloadavg()[0]:.2f}")
    bits = loaders.load(args.folder).rows().bits  # (V, D) uint16, the file's map
    V, D = bits.shape
    if args.half:  # float16 rows: the bf16 values rounded to half (in range for these random rows)
        halves = np.empty((V, D), dtype=np.float16)
        for a in range(0, V, 4096):
            halves[a:a + 4096] = (bits[a:a + 4096].astype(np.uint32) << 16).view(np.float32)
        bits = halves
    print(f"rows: {bits.dtype}; loop: {widened_product.status(bits.dtype)}")
    step = -(-V // args.blocks)
    kind = "float16" if args.half else "bf16"
    print(f"table: {V:,} x {D:,} {kind}, {args.blocks} blocks of {step:,} rows, each shared by {CORES} threads\n")
    print("| queries | loop s | NumPy + OpenBLAS s | NumPy / loop |\n|---|---|---|---|")
    held = threading.local()
    chunk = max(1, WIDEN_CHUNK_BYTES // (4 * D))
    for m in args.queries:
        Q = np.random.default_rng(m).standard_normal((m, D)).astype(np.float32)  # (m, D)
        out = np.empty((V, m), dtype=np.float32)

        def loop(v0: int, a: int, b: int) -> None:
            widened_product.widened_product(bits[v0 + a:v0 + b], Q, out[v0 + a:v0 + b])

        def numpy(v0: int, a: int, b: int) -> None:
            buf = getattr(held, "rows", None)
            if buf is None or buf.shape != (chunk, D):
                buf = held.rows = np.empty((chunk, D), dtype=np.float32)
            for c0 in range(v0 + a, v0 + b, chunk):
                c1 = min(v0 + b, c0 + chunk)
                if args.half:
                    np.copyto(buf[:c1 - c0], bits[c0:c1])
                else:
                    np.left_shift(bits[c0:c1], 16, out=buf[:c1 - c0].view(np.uint32), dtype=np.uint32)
                np.matmul(buf[:c1 - c0], Q.T, out=out[c0:c1])

        times = []
        for way in (loop, numpy):
            best = np.inf
            for _ in range(args.repeats):
                start = time.perf_counter()
                for v0 in range(0, V, step):
                    n = min(V, v0 + step) - v0
                    map_row_blocks(lambda a, b: way(v0, a, b), n, -(-n // CORES))
                best = min(best, time.perf_counter() - start)
            times.append(best)
        print(f"| {m} | {times[0]:.3f} | {times[1]:.3f} | {times[1] / times[0]:.2f}x |")
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
