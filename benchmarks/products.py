"""Which low-precision product is fast on this CPU: the first pass of an exact search needs one.

X
    python benchmarks/products.py --threads 2

Times ``Q @ W.T`` for random queries and rows of minilm's shape, each way
best of ``--repeats``, on ``--threads`` threads:

- float32: NumPy's BLAS (OpenBLAS), the float screen's GEMM;
- torch float32, bfloat16 and float16 matmul, and ``torch._int_mm`` (int8 x int8
  -> int32, oneDNN; a VNNI instruction where the CPU has one);
- embedlab's int16 kernel (``int16_kernel.screen_rows`` over blocks of rows
  as the search takes them, with a bar no row reaches: the integer product and
  one check per tile, no selection);
- where the CPU has AMX-BF16: embedlab's AMX kernel (``amx_kernel.screen_rows``,
  the bf16 screen's first pass: bfloat16 products with float32 sums on the
  tiles, each block of scores filtered in cache; here against a bar no entry
  reaches, so the product and the filter alone).

Rates are multiply-adds per nanosecond; "x float32" is the speed against
NumPy's float32 GEMM. The CPU's flags say which instructions exist (AVX2,
AVX-512, VNNI).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from embedlab.engine.neighbors import capability


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=3, default=[1000, 30522, 384], metavar=("N", "V", "D"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    N, V, D = args.shape
    print(f"CPU: {capability.describe()}; {args.threads} thread(s); Q ({N}, {D}) @ W.T ({D}, {V})")
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((N, D)).astype(np.float32)
    W = rng.standard_normal((V, D)).astype(np.float32)
    results = {}
    from threadpoolctl import threadpool_limits

    with threadpool_limits(args.threads):
        results["numpy float32 (OpenBLAS)"] = best(lambda: Q @ W.T, args.repeats)
    results.update(torch_products(Q, W, args.threads, args.repeats))
    if args.threads == 1:
        results["embedlab int16 kernel (vpmaddwd)"] = best(int16_product(Q, W), args.repeats)
    results.update(amx_products(Q, W, args.threads, args.repeats))
    base = results["numpy float32 (OpenBLAS)"]
    print("| product | seconds | MAC/ns | x float32 |\n|---|---|---|---|")
    for name, seconds in results.items():
        print(f"| {name} | {seconds:.3f} | {N * V * D / seconds / 1e9:.1f} | {base / seconds:.2f}x |")


def best(run, repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def torch_products(Q, W, threads, repeats) -> dict[str, float]:
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(threads)
    q, w = torch.from_numpy(Q), torch.from_numpy(W)
    out = {"torch float32": best(lambda: q @ w.T, repeats)}
    for dtype, name in ((torch.bfloat16, "torch bfloat16"), (torch.float16, "torch float16")):
        qd, wd = q[:256].to(dtype), w.to(dtype)  # a quarter of the queries: these can be slow; scaled below
        out[name] = best(lambda: qd @ wd.T, 1) * len(Q) / 256
    q8 = torch.randint(-127, 128, (256, Q.shape[1]), dtype=torch.int8)
    w8 = torch.randint(-127, 128, (W.shape[0], W.shape[1]), dtype=torch.int8)
    out["torch._int_mm int8"] = best(lambda: torch._int_mm(q8, w8.T), 1) * len(Q) / 256
    return out


def amx_products(Q, W, threads, repeats) -> dict[str, float]:
    """embedlab's AMX kernel (``amx_kernel.screen_rows``): bfloat16 products summed in float32 on the tiles, each
    block of scores filtered in cache against a bar no entry reaches (the product and the filter, nothing
    leaves), the rows split over ``threads`` threads; its scores checked against float64 with every bar -inf."""
    from concurrent.futures import ThreadPoolExecutor

    from embedlab.engine.neighbors import amx_kernel

    if not amx_kernel.compiled():
        print(f"AMX kernel: not run ({amx_kernel.status()})")
        return {}
    queries = amx_kernel.pack_queries(amx_kernel.bf16_bits(Q))
    m_pad, D_pad = queries.bits.shape
    rows = np.zeros((-(-len(W) // 32) * 32, D_pad), dtype=np.uint16)
    rows[:len(W), :W.shape[1]] = amx_kernel.bf16_bits(W)
    ones, qinv = np.ones(len(rows), dtype=np.float32), np.ones(m_pad, dtype=np.float32)
    never = np.full(m_pad, np.inf, dtype=np.float32)
    step = -(-len(rows) // (32 * threads)) * 32
    parts = [slice(a, min(len(rows), a + step)) for a in range(0, len(rows), step)]

    def run() -> None:
        with ThreadPoolExecutor(len(parts)) as pool:
            list(pool.map(lambda part: amx_kernel.screen_rows(rows[part], queries, ones[part], qinv, never), parts))

    r, q, s = amx_kernel.screen_rows(rows[:256], queries, ones[:256], qinv, np.full(m_pad, -np.inf, np.float32))
    wide = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    exact = wide(rows[:256]) @ wide(queries.bits).T
    err = float(np.abs(s - exact[r, q]).max() / np.abs(exact).max())
    print(f"AMX kernel ({amx_kernel.status()}): scores within {err:.1e} of the float64 product of the bfloat16 "
          "values (relative to its largest)")
    return {"embedlab AMX kernel, bf16 -> float32, filtered in cache": best(run, repeats)}


def int16_product(Q, W):
    """The integer screen's kernel over every row, with a bar no row reaches (product and tile checks only)."""
    from embedlab.engine.lengths import vector_norms
    from embedlab.engine.neighbors.codes import encode_queries, encode_rows, row_terms, tile_terms
    from embedlab.engine.neighbors.int16_kernel import screen_rows
    from embedlab.engine.neighbors.int16_screen import BLOCK_BYTES

    codes = encode_rows(W)
    q64 = Q.astype(np.float64)
    queries = encode_queries(q64, vector_norms(q64), "dot", codes.limit)
    terms = row_terms(codes, vector_norms(W), "dot")
    extremes = tile_terms(terms)
    m4 = len(queries.codes)
    own, floor = np.full(m4, -1), np.full(m4, np.inf)
    heap, cand = np.full((m4, 1), -np.inf), np.zeros((m4, 1), dtype=np.int64)
    up, counts = np.zeros((m4, 1)), np.zeros(m4, dtype=np.int64)

    step = max(1, BLOCK_BYTES // (codes.packed.shape[1] * 64))  # tiles per block of rows, as the search takes them

    def run():
        for t0 in range(0, len(codes.packed), step):
            t1 = min(len(codes.packed), t0 + step)
            screen_rows(queries.codes, queries.alpha, queries.beta, queries.top, own, floor, codes.packed[t0:t1],
                        codes.ids[t0 * 16:t1 * 16], *terms[:, t0 * 16:t1 * 16], extremes[:, t0:t1], heap, cand, up,
                        counts, False, 0)

    return run


if __name__ == "__main__":
    main()
