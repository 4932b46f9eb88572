"""``embedlab audit`` on a Llama-3-8B-sized checkpoint: time and peak memory.

The checkpoint is generated here, nothing is downloaded: a folder as
``save_pretrained`` writes an untied Llama with V = 128,256 and D = 4,096 in
two shards (``model-00001-of-00002.safetensors`` holds the token table,
``model-00002-of-00002.safetensors`` the output head, both BF16, with
``model.safetensors.index.json``), its ``config.json`` and a ``tokenizer.json``
(the tokenizers library: 128,000 words and 256 added special tokens named
``<|reserved_special_token_N|>``, Llama 3's layout). The rows are random with a
shared offset and one direction of larger variance (a trained table's first
principal component); the reserved tokens' rows are small and near one point,
as rows never trained are; faults are planted: rows 3 and 4 zero, row 8 a copy
of row 7, rows 1,000 to 1,063 of the head moved to the reserved rows' mean.
About 2 GB in a temporary folder, removed afterwards (``--keep`` keeps it).

The audit then runs in a fresh Python process, timed from the call to
``embedlab.audit`` (imports excluded) to its result, with every phase timed
apart; the peak resident set size is the process's own (``ru_maxrss``), set
beside the size of the two tables in float32 (2 x V x D x 4 bytes), which the
audit may hold, plus O(V) arrays.

Usage::

    python benchmarks/audit.py              # generate, audit, print a Markdown table
    python benchmarks/audit.py --folder F   # audit an existing folder F (generated before with --keep)
    python benchmarks/audit.py --quick      # V = 16,384: a check that it runs, not a measurement
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

V, D, WORDS, RESERVED = 128_256, 4_096, 128_000, 256
ZERO, COPY, PLANTED = (3, 4), (7, 8), range(1_000, 1_064)
CHUNK = 4_096  # rows generated and written at a time


def generate(folder: Path) -> None:
    """Write the checkpoint described in the module docstring into ``folder``."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": D,
              "intermediate_size": 14_336, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "max_position_embeddings": 8_192, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16"}
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    shards = {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
              "lm_head.weight": "model-00002-of-00002.safetensors"}
    for seed, (name, shard) in enumerate(shards.items()):
        _write_table(folder / shard, name, seed, head=name == "lm_head.weight")
    index = {"metadata": {"total_size": 2 * V * D * 2}, "weight_map": shards}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    vocab = {f"w{i}": i for i in range(WORDS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens([AddedToken(f"<|reserved_special_token_{k}|>", special=True)
                                  for k in range(RESERVED)])
    tokenizer.save(str(folder / "tokenizer.json"))


def _write_table(path: Path, name: str, seed: int, *, head: bool) -> None:
    """One (V, D) BF16 tensor in its own safetensors file, a chunk of rows at a time."""
    import numpy as np

    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(D).astype(np.float32)
    direction /= np.linalg.norm(direction)
    offset = (0.01 * rng.standard_normal(D)).astype(np.float32)
    header = json.dumps({name: {"dtype": "BF16", "shape": [V, D], "data_offsets": [0, V * D * 2]}}).encode()
    header += b" " * (-len(header) % 8)
    reserved = (0.001 * rng.standard_normal((RESERVED, D)) + 0.002).astype(np.float32)  # never trained
    with open(path, "wb") as out:
        out.write(len(header).to_bytes(8, "little") + header)
        for start in range(0, V, CHUNK):
            n = min(CHUNK, V - start)
            rows = (0.02 * rng.standard_normal((n, D), dtype=np.float32) + offset
                    + 0.1 * rng.standard_normal((n, 1), dtype=np.float32) * direction)  # (n, D)
            ids = np.arange(start, start + n)
            past = ids >= WORDS
            rows[past] = reserved[ids[past] - WORDS]
            if start == 0 and not head:
                rows[list(ZERO)] = 0.0
                rows[COPY[1]] = rows[COPY[0]]
            if head:
                inside = (ids >= PLANTED.start) & (ids < PLANTED.stop)
                rows[inside] = reserved.mean(axis=0) + 1e-4 * rng.standard_normal((int(inside.sum()), D))
            out.write(_bf16(rows).tobytes())


def _bf16(rows):
    """float32 -> bfloat16 bits, rounded to nearest even (as torch rounds)."""
    import numpy as np

    bits = rows.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")


def audit(folder: Path) -> dict:
    """Run in the child process: the audit's phases, timed, and the peak RSS."""
    import threadpoolctl  # noqa: F401  (imported before the clock, as embedlab imports it)

    from embedlab import api  # noqa: F401
    from embedlab.measure import audit as _  # noqa: F401
    measure = sys.modules["embedlab.measure.audit"]
    from embedlab.sources import stored

    times = {}
    start = time.perf_counter()
    tables = stored.read_stored(folder)
    times["read the two tables"] = time.perf_counter() - start
    mark = time.perf_counter()
    inventory, reason = stored.read_tokenizer(folder)
    times["read the tokenizer"] = time.perf_counter() - mark
    mark = time.perf_counter()
    result = measure.audit(tables, inventory, no_tokenizer=reason)
    times["measure (scans, reachability, indicators)"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - start
    u = result.undertrained
    return {"times": times, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "tables_float32": 2 * V * D * 4, "findings": [(f.code, f.count) for f in result.findings],
            "candidates": len(u.candidates), "planted_found": sorted(set(PLANTED) & set(u.candidates)) == list(PLANTED),
            "component": u.component.to_dict()}


def _quick() -> None:
    global V, WORDS, RESERVED
    V, WORDS, RESERVED = 16_384, 16_256, 128


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", type=Path, help="audit this folder instead of generating one")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    parser.add_argument("--quick", action="store_true", help="V = 16,384 rows (128 reserved): a check, no measurement")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        _quick()
    if args.child is not None:
        print(json.dumps(audit(args.child)))
        return
    folder, made = args.folder, None
    if folder is None:
        made = Path(tempfile.mkdtemp(prefix="embedlab-audit-"))
        folder = made / "Llama-3-8B-like"
        start = time.perf_counter()
        generate(folder)
        print(f"generated {folder} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    try:
        quick = ["--quick"] if args.quick else []
        run = subprocess.run([sys.executable, __file__, "--child", str(folder), *quick], capture_output=True,
                             text=True, check=True)
        report(json.loads(run.stdout.splitlines()[-1]))
    finally:
        if made is not None and not args.keep:
            shutil.rmtree(made)


def report(row: dict) -> None:
    gib = 2**30
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; Python {platform.python_version()}")
    print(f"checkpoint: V = {V:,} x D = {D:,}, BF16, untied, two shards\n")
    print("| phase | seconds |\n| --- | ---: |")
    for phase, seconds in row["times"].items():
        print(f"| {phase} | {seconds:.1f} |")
    print(f"\npeak RSS {row['peak_rss'] / gib:.2f} GiB; the two tables in float32: {row['tables_float32'] / gib:.2f} GiB")
    print(f"first principal component: {row['component']}")
    print(f"findings: {row['findings']}; the 64 planted rows among the {row['candidates']} candidates: "
          f"{row['planted_found']}")


if __name__ == "__main__":
    main()
