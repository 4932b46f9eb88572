"""A Llama-3-shaped checkpoint through the commands users run: first answer, report, hubs, graph; time and peak RSS.

    python benchmarks/llama_checkpoint.py /tmp/llama3        # writes the checkpoint (2.1 GB, once)
    python benchmarks/llm_size.py /tmp/llama3 --markdown     # (a) and (b), a Markdown table
    python benchmarks/llm_size.py /tmp/llama3 --hubs         # (c) too: every token's lists (minutes)
    python benchmarks/llm_size.py /tmp/llama3 --graph --skip first-answer report  # (d) alone (minutes)
    python benchmarks/llm_size.py /tmp/llama3 --cluster 2 --skip first-answer report  # (e) alone (minutes)

The checkpoint is the one ``benchmarks/llama_checkpoint.py`` writes (random bf16 rows, V = 128,256,
D = 4,096, an untied head, two shards; nothing is downloaded); any Hugging Face style folder works.
The goals are issue 22's:

- (a) **first answer**: ``embedlab neighbors --model DIR 5 17 --k 5`` from a cold process, against the
  ten-line script of the issue (``TEN_LINES`` below: safetensors ``safe_open`` + torch: read, widen
  to float32, row lengths, one matmul per metric, ``topk``). Goals: at most 0.5x the script's time,
  and a peak resident set of at most 1.25x the float32 table (V x D x 4 bytes). Both must print the
  same ids (checked; a difference is printed, not hidden).
- (b) **report**: ``embedlab report --model DIR --out TMP``, goal under 10 s.
- (c) **hubs** (``--hubs``; minutes): ``embedlab hubs --model DIR``, every token's lists, goal under
  5 minutes where the CPU has AMX; on a CPU without it the time is stated, with no goal.
- (d) **graph** (``--graph``; minutes): ``embedlab graph --model DIR --out TMP/graph.parquet --json``,
  every token's lists under both metrics written as Parquet (2 x V x 10 rows); the issue names it
  beside hubs with no time of its own: the time is stated. Run once, with no probe run before it
  (the page cache is warm from the runs before; the screens come from its own ``--json``).
- (e) **hubs on a cluster** (``--cluster WORKERS``; minutes): (c) with ``--scheduler`` on a
  ``LocalCluster`` of WORKERS processes x 1 thread started here (not timed): the bf16 self-join's
  steps as tasks. The issue names the cluster path with no time of its own: the time is stated, with
  the command's and each worker's peak RSS.

How it measures: each run is a fresh process (the interpreter, imports and the read included, as a
user meets them), started by a fresh wrapper process that times it (wall seconds, from start to exit)
and reads its peak resident set from ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the wrapper has no
other child, so that is the command's own high-water mark). The tools take turns, best of
``--repeats`` rounds with a short rest before each run; the peak RSS shown is the largest of the runs.
The page cache is **warm**: one untimed run of each command comes first (it reads the files into the
page cache). ``--drop-caches`` adds one cold-cache run of each command of (a) and (b), after
``sync`` and ``echo 3 > /proc/sys/vm/drop_caches`` (root only, and it empties the page cache of the
whole machine: only on a machine of your own); where the cache cannot be dropped the script says
so and gives no cold figure. That first
run is also the kernel probe: it runs with ``ONEDNN_VERBOSE=1`` and ``MKL_VERBOSE=1``, and the
oneDNN primitives and MKL calls it made are listed (the kernel each process ran), and, for embedlab,
with ``--json``, whose plans name the screen each search ran.

Printed first: the CPU's model and the flags that decide the screens (avx2, avx512f, avx512_vnni,
avx512_bf16, amx_bf16, amx_int8), torch's CPU capability, the ISA oneDNN dispatches to (one bf16
matmul in a child with ``ONEDNN_VERBOSE=1``: whether it runs on AMX), the BLAS libraries embedlab's
process loads (threadpoolctl), embedlab's ``capability.describe()``, and the load average at the
start and the end (the machine may be shared: say so beside any figure).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_FOLDER = Path("/work/bench/llama3")
QUERIES, K = (5, 17), 5
SETTLE = 1.0  # seconds of rest before each run: BLAS/OpenMP threads of the last process die down
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
GOAL_TIME_RATIO, GOAL_RSS_RATIO, GOAL_REPORT_S, GOAL_HUBS_S = 0.5, 1.25, 10.0, 300.0
LLAMA3 = (128_256, 4_096)  # (V, D): the goals are set for this shape only
VERBOSE = {"ONEDNN_VERBOSE": "1", "MKL_VERBOSE": "1"}

# The ten-line script, as a user would write it: read the token table, widen it, and search.
TEN_LINES = r'''
import json, os, sys, torch
from safetensors import safe_open
folder, ids, k = sys.argv[1], [int(a) for a in sys.argv[2:-1]], int(sys.argv[-1])
shard = json.load(open(os.path.join(folder, "model.safetensors.index.json")))["weight_map"]["model.embed_tokens.weight"]
with safe_open(os.path.join(folder, shard), framework="pt") as f:
    W = f.get_tensor("model.embed_tokens.weight").float()  # (V, D) bf16 -> float32
norms = W.norm(dim=1)  # (V,)
Q = W[ids]  # (N, D)
lists = {"cosine": (Q / norms[ids, None]) @ W.T / norms, "dot": Q @ W.T}  # two (N, V) products
for metric, S in lists.items():
    S[torch.arange(len(ids)), torch.tensor(ids)] = -float("inf")  # leave out the query itself
    for q, row in zip(ids, torch.topk(S, k, dim=1).indices.tolist()):
        print(f"query {q} {metric}: {' '.join(map(str, row))}")
'''

# The wrapper: a fresh process per run, so RUSAGE_CHILDREN is this command's own peak RSS.
WRAPPER = r'''
import json, resource, subprocess, sys, time
cmd, env = json.loads(sys.argv[1]), json.loads(sys.argv[2])
start = time.perf_counter()
p = subprocess.run(cmd, env=env, capture_output=True, text=True)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
print(json.dumps({"seconds": seconds, "peak": peak, "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}))
'''


@dataclass
class Tool:
    """One command to time: its case, name, argv and the best of its runs."""

    case: str
    name: str
    argv: list[str]
    probe_argv: list[str] | None = None  # the untimed first run (kernel probe, cache warm-up)
    seconds: list[float] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)
    probe: dict | None = None
    output: str = ""
    cold: bool = False  # runs after the page cache was dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER,
                        help=f"the checkpoint folder (default {DEFAULT_FOLDER})")
    parser.add_argument("--repeats", type=_positive, default=3, help="timed rounds of (a) and (b); best kept (default 3)")
    parser.add_argument("--hubs", action="store_true", help="also (c): embedlab hubs over every token, run once (minutes)")
    parser.add_argument("--graph", action="store_true",
                        help="also (d): embedlab graph over every token, run once (minutes)")
    parser.add_argument("--cluster", type=_positive, metavar="WORKERS",
                        help="also (e): embedlab hubs --scheduler on a LocalCluster of WORKERS processes x 1 thread, "
                             "run once (minutes)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["first-answer", "report"], help="cases to leave out")
    parser.add_argument("--drop-caches", action="store_true",
                        help="also a cold-cache run of (a) and (b): drops the whole machine's page cache first (root)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (for the README)")
    args = parser.parse_args()
    V, D, dtype = token_table_shape(args.folder)
    table_bytes = V * D * 4
    print(machine())
    print(f"load average at the start: {load_average()}")
    print(f"checkpoint: {args.folder}: token table {V:,} x {D:,} {dtype}; float32 table {table_bytes / 2**30:.2f} GiB "
          f"({table_bytes / 1e9:.2f} GB), RSS goal {GOAL_RSS_RATIO} x that = {GOAL_RSS_RATIO * table_bytes / 1e9:.2f} GB")
    print("page cache: warm (an untimed run of each command first)"
          + ("; and cold: one run each after dropping it" if args.drop_caches else "") + "\n")
    with tempfile.TemporaryDirectory(prefix="llm_size_") as out:
        tools = commands(args.folder, out, args.skip)
        measure(tools, args.repeats)  # probes first (warm cache), then the timed rounds
        if args.drop_caches:
            tools += cold_runs(tools)
        if args.hubs:
            embedlab = [sys.executable, "-m", "embedlab", "hubs", "--model", str(args.folder)]
            # the probe: a sample of 2,048 queries, for the kernels and screens, not the time
            hubs = Tool("hubs", "embedlab hubs", embedlab, embedlab + ["--queries", "2048", "--json"])
            measure([hubs], 1)
            tools.append(hubs)
        if args.graph:
            graph = Tool("graph", "embedlab graph", [sys.executable, "-m", "embedlab", "graph", "--model",
                                                     str(args.folder), "--out", str(Path(out) / "graph.parquet"),
                                                     "--json"])
            measure([graph], 1, probe=False)
            tools.append(graph)
        if args.cluster:
            tools.append(cluster_hubs(args.folder, args.cluster))
    print(f"load average at the end: {load_average()}\n")
    for tool in tools:
        if tool.probe is not None:  # the cold-cache runs have none: the same commands
            print(kernels(tool))
    answers = same_answers(tools)
    if answers:
        print(answers)
    print()
    rows = table_rows(tools, table_bytes, amx="amx_bf16" in cpu_flags(), full=(V, D) == LLAMA3)
    headers = ["case", "command", "seconds (best)", "runs", "peak RSS GB (largest)", "RSS / float32 table",
               "time / ten-line script", "goal", "met"]
    if args.markdown:
        print("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
        print("\n".join("| " + " | ".join(row) + " |" for row in rows))
    else:
        print("  ".join(headers))
        print("\n".join("  ".join(row) for row in rows))


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


# -- running -----------------------------------------------------------------------------------------

def commands(folder: Path, out: str, skip: list[str]) -> list[Tool]:
    """The commands of (a) and (b), as a user types them (``out``: the report's folder)."""
    embedlab = [sys.executable, "-m", "embedlab"]
    ids = [str(q) for q in QUERIES]
    tools = []
    if "first-answer" not in skip:
        command = embedlab + ["neighbors", "--model", str(folder), *ids, "--k", str(K)]
        tools += [Tool("first answer", "embedlab neighbors", command, command + ["--json"]),
                  Tool("first answer", "ten-line script", [sys.executable, "-c", TEN_LINES, str(folder), *ids, str(K)])]
    if "report" not in skip:
        tools.append(Tool("report", "embedlab report", embedlab + ["report", "--model", str(folder), "--out", out]))
    return tools


def measure(tools: list[Tool], repeats: int, *, probe: bool = True) -> None:
    """Each tool's probe (untimed, verbose: the kernels; it warms the page cache), then ``repeats`` timed rounds;
    ``probe=False``: no probe run, the last timed run's output read as the probe's (its ``--json`` plans)."""
    for tool in tools if probe else ():
        tool.probe = run(tool.probe_argv or tool.argv, VERBOSE)
        check(tool, tool.probe)
    for _ in range(repeats):  # the tools take turns
        for tool in tools:
            time.sleep(SETTLE)
            result = run(tool.argv)
            check(tool, result)
            tool.seconds.append(result["seconds"])
            tool.peaks.append(result["peak"])
            tool.output = result["stdout"]
            if not probe:
                tool.probe = result


def cluster_hubs(folder: Path, workers: int) -> Tool:
    """(e): ``embedlab hubs --scheduler`` on a fresh ``LocalCluster`` of ``workers`` processes x 1 thread, run once.

    Starting the cluster is not timed; the command is (its read, scattering the table, the scan). The peak RSS
    is the command's own; each worker's peak resident set is printed beside it (``getrusage`` in the worker).
    """
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        argv = [sys.executable, "-m", "embedlab", "hubs", "--model", str(folder), "--scheduler",
                cluster.scheduler_address, "--json"]
        tool = Tool("hubs, cluster", f"embedlab hubs --scheduler (LocalCluster {workers} x 1 thread)", argv)
        measure([tool], 1, probe=False)
        peaks = client.run(_peak_rss)
        print(f"{tool.name}: workers' peak RSS {', '.join(f'{p / 1e9:.2f} GB' for p in peaks.values())}")
    finally:
        client.close()
        cluster.close()
    return tool


def _peak_rss() -> int:
    """This process's peak resident set in bytes (run in each worker)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(argv: list[str], extra_env: dict[str, str] | None = None) -> dict:
    """One run of ``argv`` in a fresh wrapper process -> seconds, peak (bytes), rc, stdout, stderr."""
    env = {**os.environ, **(extra_env or {})}
    if extra_env is None:
        for name in VERBOSE:
            env.pop(name, None)
    wrapped = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(argv), json.dumps(env)],
                             capture_output=True, text=True, check=True)
    return json.loads(wrapped.stdout)


def cold_runs(tools: list[Tool]) -> list[Tool]:
    """One run of each tool after ``sync`` and dropping the page cache; [] (and a line) where it cannot be dropped."""
    cold = []
    for tool in tools:
        time.sleep(SETTLE)
        try:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as handle:
                handle.write("3\n")
        except OSError as exc:
            print(f"page cache not dropped ({exc.strerror}): cold-cache runs not measured")
            return []
        result = run(tool.argv)
        check(tool, result)
        cold.append(Tool(tool.case, f"{tool.name}, cold cache", tool.argv, seconds=[result["seconds"]],
                         peaks=[result["peak"]], output=result["stdout"], cold=True))
    return cold


def check(tool: Tool, result: dict) -> None:
    if result["rc"] != 0:
        tail = (result["stderr"] or result["stdout"]).strip().splitlines()[-5:]
        raise SystemExit(f"{tool.name} failed (exit {result['rc']}): {' | '.join(tail)}")


# -- what each process ran ---------------------------------------------------------------------------

def kernels(tool: Tool) -> str:
    """The kernels ``tool``'s probe run used: oneDNN primitives and MKL calls, counted; embedlab's screens."""
    lines = (tool.probe or {}).get("stdout", "").splitlines() + (tool.probe or {}).get("stderr", "").splitlines()
    said = kernel_counts(lines)
    screens = screens_of(tool)
    if screens:
        said.append(f"embedlab screens {screens}")
    said += [line.strip() for line in lines if "screen" in line.lower() and not line.lstrip().startswith(("{", '"'))
             and not line.startswith(("onednn_verbose", "MKL_VERBOSE"))][:4]
    probe = {"hubs": " (probe: a sample of 2,048 queries)", "graph": " (its timed run; no oneDNN verbose)",
             "hubs, cluster": " (its timed run; no oneDNN verbose)"}.get(tool.case, "")
    return f"kernels of {tool.name}{probe}: {'; '.join(said) or 'no oneDNN or MKL call (NumPy BLAS: see above)'}"


def kernel_counts(lines: list[str]) -> list[str]:
    """The oneDNN primitives (implementation, dtypes) and MKL functions that verbose lines name, with counts.

    >>> kernel_counts(["onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,"
    ...                "src:bf16::blocked:ab::f0 wei:bf16::blocked:ab::f0 dst:f32::blocked:ab::f0,,,64x256:256x512,7.7",
    ...                "MKL_VERBOSE SGEMM(N,N,512,64,256,...) 8.01ms CNR:OFF Dyn:1 FastMM:1 TID:0  NThr:2"])
    ['oneDNN matmul brg_matmul:avx10_1_512_amx (bf16/bf16/f32) x1', 'MKL SGEMM x1']
    """
    onednn: collections.Counter[str] = collections.Counter()
    mkl: collections.Counter[str] = collections.Counter()
    for line in lines:
        if line.startswith("onednn_verbose") and ",primitive,exec," in line:
            parts = line.split(",")  # onednn_verbose,v1,primitive,exec,cpu,<primitive>,<implementation>,...
            dtypes = "/".join(m.group(1) for m in re.finditer(r"(?:src|wei|dst):(\w+):", line))
            onednn[f"{parts[5]} {parts[6]} ({dtypes})"] += 1
        elif line.startswith("MKL_VERBOSE") and "(" in line and "oneMKL" not in line and "Intel(R) MKL" not in line:
            mkl[line.split()[1].split("(")[0]] += 1
    return ([f"oneDNN {name} x{n}" for name, n in onednn.most_common()]
            + [f"MKL {name} x{n}" for name, n in mkl.most_common()])


def screens_of(tool: Tool) -> dict[str, str]:
    """The screen of each metric's search, from the plans in the probe's ``--json`` output; {} where absent."""
    try:
        document = json.loads(strip_verbose((tool.probe or {}).get("stdout", "")))
    except ValueError:
        return {}
    found = {}
    for key in ("memory", "plans"):
        plans = (document.get(key) or {}) if isinstance(document, dict) else {}
        plans = plans.get("plans", plans) if isinstance(plans, dict) else {}
        for metric, plan in plans.items():
            if isinstance(plan, dict) and "screen" in plan:
                found[metric] = plan["screen"]
    return found


def strip_verbose(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(("onednn_verbose", "MKL_VERBOSE")))


# -- the answers -------------------------------------------------------------------------------------

def same_answers(tools: list[Tool]) -> str:
    """Whether embedlab and the ten-line script printed the same ids, per query and metric."""
    ours = next((t for t in tools if t.name == "embedlab neighbors"), None)
    theirs = next((t for t in tools if t.name == "ten-line script"), None)
    if ours is None or theirs is None:
        return ""
    a, b = embedlab_ids(ours), script_ids(theirs.output)
    text = embedlab_text_ids(ours.output)
    if text and text != a:
        return f"embedlab's table and its --json differ: {text} vs {a}"
    if a == b and a:
        return f"same ids: yes ({len(a)} lists of {K}: queries {', '.join(map(str, QUERIES))}, cosine and dot)"
    return f"same ids: NO\n  embedlab: {a}\n  ten-line script: {b}"


def embedlab_ids(tool: Tool) -> dict[tuple[int, str], list[int]]:
    """(query id, metric) -> ids, from the probe's ``--json`` output."""
    document = json.loads(strip_verbose(tool.probe["stdout"]))
    return {(q["id"], metric): [x["id"] for x in listed] for q in document["queries"]
            for metric, listed in q["lists"].items()}


def embedlab_text_ids(output: str) -> dict[tuple[int, str], list[int]]:
    """(query id, metric) -> ids, from the timed run's table (rows: rank, cosine token (id) score norm, dot ...).

    >>> embedlab_text_ids("query tok5 (5), norm 0.666\\n#  cosine  score  norm  dot  score  norm\\n"
    ...                   "1  tok(9) (9)  0.1255  0.622  tok7 (7)  -0.0520  0.622")
    {(5, 'cosine'): [9], (5, 'dot'): [7]}
    """
    found: dict[tuple[int, str], list[int]] = {}
    query = None
    for line in output.splitlines():
        head = re.match(r"query .*\((\d+)\), norm", line)
        if head:
            query = int(head.group(1))
        elif query is not None and re.match(r"\s*\d+\s", line):
            ids = [int(m) for m in re.findall(r"\((\d+)\)\s+-?\d[\d.e+-]*\s+\d", line)]
            for metric, i in zip(("cosine", "dot"), ids):
                found.setdefault((query, metric), []).append(i)
    return found


def script_ids(output: str) -> dict[tuple[int, str], list[int]]:
    """(query id, metric) -> ids, from the ten-line script's lines.

    >>> script_ids("query 5 cosine: 9 3 1\\nquery 5 dot: 3 9 1")
    {(5, 'cosine'): [9, 3, 1], (5, 'dot'): [3, 9, 1]}
    """
    found = {}
    for line in output.splitlines():
        m = re.match(r"query (\d+) (\w+): ([\d ]+)$", line.strip())
        if m:
            found[(int(m.group(1)), m.group(2))] = [int(x) for x in m.group(3).split()]
    return found


# -- the table ---------------------------------------------------------------------------------------

def table_rows(tools: list[Tool], table_bytes: int, *, amx: bool, full: bool = True) -> list[list[str]]:
    """The table's rows; ``full``: the checkpoint has the Llama-3 shape the goals are set for (else "met" is n/a)."""
    rows = []
    for tool in tools:
        script = next((t for t in tools if t.name.startswith("ten-line script") and t.cold == tool.cold), None)
        best, peak = min(tool.seconds), max(tool.peaks)
        rss_ratio = peak / table_bytes
        ratio, goal, met = "", "", ""
        if tool.name.startswith("embedlab neighbors"):
            time_ratio = best / min(script.seconds) if script else float("nan")
            ratio = f"{time_ratio:.2f}x"
            goal = f"time <= {GOAL_TIME_RATIO}x script, RSS <= {GOAL_RSS_RATIO}x float32 table"
            met = (f"time {'met' if time_ratio <= GOAL_TIME_RATIO else 'not met'}, "
                   f"RSS {'met' if rss_ratio <= GOAL_RSS_RATIO else 'not met'}")
        elif tool.name.startswith("ten-line script"):
            ratio = "1.00x"
        elif tool.case == "report":
            goal, met = f"< {GOAL_REPORT_S:.0f} s", "met" if best < GOAL_REPORT_S else "not met"
        elif tool.case == "hubs":
            goal = f"< {GOAL_HUBS_S / 60:.0f} min (CPU with AMX)" if amx else "none (no AMX here: time stated)"
            met = ("met" if best < GOAL_HUBS_S else "not met") if amx else ""
        elif tool.case in ("graph", "hubs, cluster"):
            goal = "none (time stated)"
        if met and not full:
            met = f"n/a (goals are for {LLAMA3[0]:,} x {LLAMA3[1]:,})"
        rows.append([tool.case, tool.name, f"{best:.2f}", str(len(tool.seconds)), f"{peak / 1e9:.2f}",
                     f"{rss_ratio:.2f}x", ratio, goal, met])
    return rows


def token_table_shape(folder: Path) -> tuple[int, int, str]:
    """(V, D, dtype) of the token table, from the safetensors header (8-byte length, then JSON)."""
    index = folder / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        name = next(n for n in weight_map if n.endswith("embed_tokens.weight"))
        files = [folder / weight_map[name]]
    else:
        files, name = sorted(folder.glob("*.safetensors")), None
    for path in files:
        with open(path, "rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
        for tensor, entry in header.items():
            if tensor == name or (name is None and tensor.endswith("embed_tokens.weight")):
                V, D = entry["shape"]
                return V, D, entry["dtype"]
    raise SystemExit(f"{folder}: no token table (model.embed_tokens.weight) found")


# -- the machine -------------------------------------------------------------------------------------

def cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return frozenset(next(line for line in handle if line.startswith("flags")).split(":", 1)[1].split())
    except (OSError, StopIteration):
        return frozenset()


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    flags = cpu_flags()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [f"CPU: {cpu}, {cores} cores; python {platform.python_version()}",
             "flags: " + ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in FLAGS),
             f"torch: {child(TORCH_PROBE)}",
             f"oneDNN (one bf16 matmul, ONEDNN_VERBOSE=1): {onednn_isa()}",
             f"embedlab's BLAS: {child(BLAS_PROBE)}",
             f"embedlab's screen here (capability.describe()): "
             f"{child('from embedlab.engine.neighbors import capability; print(capability.describe())')}",
             f"embedlab's row lengths (sum_of_squares.kernel_status()): "
             f"{child('from embedlab.engine import sum_of_squares; print(sum_of_squares.kernel_status())')}"]
    return "\n".join(lines)


TORCH_PROBE = ("import torch; print(torch.__version__, 'CPU capability', torch.backends.cpu.get_cpu_capability(), "
               "'threads', torch.get_num_threads())")
BLAS_PROBE = ("import embedlab.engine.neighbors.search\nfrom threadpoolctl import threadpool_info\n"
              "print('; '.join(f\"{i['internal_api']} {i['version']} {i.get('architecture', '')}, {i['num_threads']} "
              "threads\" for i in threadpool_info() if i['user_api'] == 'blas') or 'none seen')")


def onednn_isa() -> str:
    """The ISA oneDNN names and the implementation of one bf16 matmul (``brg_matmul:..._amx``: AMX)."""
    code = "import torch; a = torch.ones(64, 256, dtype=torch.bfloat16); print((a @ a.T).dtype)"
    text = child(code, {"ONEDNN_VERBOSE": "1"}, whole=True)
    isa = re.search(r"info,cpu,isa:([^\n]+)", text)
    impl = re.search(r"primitive,exec,cpu,matmul,([^,]+),", text)
    amx = "AMX used" if impl and "amx" in impl.group(1) else "AMX not used"
    if not isa and not impl:
        return "no oneDNN matmul seen (" + (text.strip().splitlines() or ["?"])[-1] + ")"
    return f"isa {isa.group(1).strip() if isa else '?'}; bf16 matmul runs {impl.group(1) if impl else '?'} ({amx})"


def child(code: str, extra_env: dict[str, str] | None = None, whole: bool = False) -> str:
    env = {**os.environ, **(extra_env or {})}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    text = result.stdout + result.stderr
    if whole:
        return text
    lines = (result.stdout.strip() or result.stderr.strip()).splitlines()
    return lines[-1] if lines else "?"


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
