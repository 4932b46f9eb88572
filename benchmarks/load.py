"""What each step of loading a real-size checkpoint costs, in seconds and bytes, through embedlab's own functions.

    python benchmarks/llama_checkpoint.py /tmp/llama3          # once: a Llama-3-shaped folder (2.1 GB)
    python benchmarks/load.py /tmp/llama3 --repeats 3

Steps, each best of ``--repeats`` in this process (page cache warm: say so), in the order
``embedlab neighbors --model DIR 5 17 --k 5`` runs them:

1. imports: the modules ``neighbors --model DIR`` imports (NumPy, tokenizers included), in a fresh process
   (wall time, the interpreter's start included);
2. read: the token table's bytes read in blocks over the cores into the float32 array it becomes,
   BF16 widened on the way (``sources.tensor_data.read_data``), without and with the row lengths
   measured in the same pass; and a BF16 table's bits kept as they are, read into memory or mapped
   from the file (``tensor_data.read_bf16_bits``; mapped is what the load runs), the lengths measured
   from each block widened in cache;
3. lengths alone (``lengths.vector_norms`` over the finished table, what the pass saves);
4. the vocabulary (``sources.tokenizer.folder_vocabulary``: tokenizer.json through the tokenizers library);
5. the whole load (``sources.load``: everything above but the imports, as the command runs it);
6. one search per metric for 2 queries (``EmbeddingTable.nearest``), then both metrics as the command asks
   for them (``measure.neighbors.neighbor_lists``: one pass over the table serves both, ``float_screen.JointScreen``).

Bytes: the file's tensor, the table, the scratch the read holds beside it (``tensor_data.scratch_bytes``),
and this process's peak RSS at the end (``resource``). Prints the CPU, the load average at start and end.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from embedlab.engine import sum_of_squares
from embedlab.engine.lengths import vector_norms
from embedlab.measure.neighbors import neighbor_lists
from embedlab.sources import loaders, safetensors, tensor_data
from embedlab.sources.tokenizer import folder_vocabulary


def best(repeats: int, step):
    """Best wall time of ``step()`` over ``repeats`` calls, and its last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    return min(times), result


def _bytes(n) -> str:
    return "" if n == "" else f"{n:,}"


def cpu() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    flags = set(next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), []))
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"]
    return f"{model}, {len(os.sched_getaffinity(0))} cores, flags: {' '.join(f for f in wanted if f in flags)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a Llama-3-shaped folder (benchmarks/llama_checkpoint.py)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"CPU: {cpu()}; load average at start {os.getloadavg()[0]:.2f}; page cache warm (files read before)")
    print(f"row lengths' sums of squares: {sum_of_squares.kernel_status()}")
    info = safetensors.tensor_infos(args.folder)["model.embed_tokens.weight"]
    V, D = info.shape
    rows = []
    code = "import embedlab.cli, embedlab.api, embedlab.sources.loaders, embedlab.measure.neighbors"
    imports, _ = best(args.repeats, lambda: subprocess.run([sys.executable, "-c", code], check=True))
    rows.append(("imports (a fresh process)", imports, "", ""))
    plain, _ = best(args.repeats, lambda: tensor_data.read_data(info))
    rows.append((f"read {info.nbytes:,} bytes of {info.dtype} into the float32 table, "
                 f"{tensor_data.block_threads(info)} threads", plain, V * D * 4, tensor_data.scratch_bytes(info, lengths=False)))
    fused, (W, _) = best(args.repeats, lambda: tensor_data.read_data(info, lengths=True))
    rows.append(("read + row lengths in the same pass", fused, V * D * 4 + V * 8,
                 tensor_data.scratch_bytes(info, lengths=True)))
    if info.dtype == "BF16":
        kept, _ = best(args.repeats, lambda: tensor_data.read_bf16_bits(info, mapped=False))
        rows.append(("read the bfloat16 bits into memory, kept as they are, + row lengths", kept, V * D * 2 + V * 8,
                     tensor_data.scratch_bytes(info, lengths=True, bits=True)))
        mapped, (bits, _) = best(args.repeats, lambda: tensor_data.read_bf16_bits(info))
        how = "mapped" if bits.base is not None else "read (the file could not be mapped)"
        rows.append((f"the bfloat16 bits {how} from the file, + row lengths (what a BF16 checkpoint's load runs)",
                     mapped, V * D * 2 + V * 8, tensor_data.scratch_bytes(info, lengths=True, bits=True)))
        del bits
    alone, _ = best(args.repeats, lambda: vector_norms(W))
    rows.append(("row lengths alone, a second pass (saved)", alone, "", ""))
    del W
    vocab, _ = best(args.repeats, lambda: folder_vocabulary(Path(args.folder), V))
    rows.append(("vocabulary (tokenizer.json)", vocab, "", ""))
    whole, table = best(args.repeats, lambda: loaders.load(args.folder))
    rows.append(("sources.load, all of it", whole, table.resident().table + table.norms().nbytes, ""))
    for metric in ("cosine", "dot"):
        seconds, _ = best(args.repeats, lambda: table.nearest([5, 17], 5, metric))
        rows.append((f"search, 2 queries, {metric}", seconds, "", ""))
    both, _ = best(args.repeats, lambda: neighbor_lists(table, [5, 17], 5))
    rows.append(("search, 2 queries, both metrics as `neighbors` asks (one pass over the table)", both, "", ""))
    rows.append((f"the table as the searches left it: {type(table.rows()).__name__}", 0.0, table.resident().table, ""))
    print("| step | seconds (best of %d) | bytes kept | bytes beside it |" % args.repeats)
    print("|---|---|---|---|")
    for name, seconds, kept, beside in rows:
        print(f"| {name} | {seconds:.3f} | {_bytes(kept)} | {_bytes(beside)} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"peak RSS of this process {peak / 2**30:.2f} GiB (it held two tables at once; float32 table "
          f"{V * D * 4 / 2**30:.2f} GiB); "
          f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
