"""How long each command takes on the tables the project ships: what a user waits, first run and again.

    python benchmarks/commands.py                 # every command of the README's examples, twice each
    python benchmarks/commands.py --skip hubs-glove compress-minilm
    python benchmarks/commands.py --only compress-minilm hubs-glove --once

Each command runs as a user runs it (``python -m embedlab ...``, a fresh process,
output to a temporary folder), twice: the first run pays what a first run pays
once per machine or per process (numba's cached kernels, matplotlib's font
cache, the page cache of the shipped files), the second what every later run
pays. Wall seconds.
Prints the CPU, its flags and the load average at start and end: the README's
table of command times comes from this script.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (name, arguments after ``embedlab``): the README's examples on the shipped tables (seed, minilm, glove).
COMMANDS = [
    ("report", ["report"]),
    ("report-minilm", ["report", "--model", "minilm", "--probe", "king"]),
    ("report-minilm-html", ["report", "--model", "minilm", "--probe", "king", "--html"]),
    ("neighbors-glove", ["neighbors", "--model", "glove", "paris", "--k", "5"]),
    ("params-minilm", ["params", "--model", "minilm"]),
    ("positions-minilm", ["positions", "--model", "minilm"]),
    ("encode-minilm", ["encode", "--model", "minilm", "i like apples", "apples are red"]),
    ("demo", ["demo"]),
    ("plot-neighbors-minilm", ["plot", "neighbors", "--model", "minilm", "--probe", "king", "--out", "{out}/n.png"]),
    ("plot-projection-glove-umap", ["plot", "projection", "--model", "glove", "--probe", "king", "--method", "umap",
                                    "--out", "{out}/p.png"]),
    ("projector-minilm", ["projector", "--model", "minilm", "--tokens", "春,夏,秋,king,queen", "--probe", "王",
                          "--out", "{out}/s.html"]),
    ("export", ["export", "--format", "projector", "--out", "{out}/tsv", "--limit", "100"]),
    ("audit-minilm", ["audit", "--model", "minilm", "--show", "3"]),
    ("hubs-minilm", ["hubs", "--model", "minilm"]),
    ("graph-minilm", ["graph", "--model", "minilm", "--out", "{out}/g.parquet"]),
    ("compress-minilm", ["compress", "--model", "minilm", "--quiet"]),
    ("hubs-glove", ["hubs", "--model", "glove"]),
]


def run(args: list[str], out: str) -> tuple[float, int]:
    """Wall seconds and exit status of ``embedlab ARGS`` in a fresh process, in the folder ``out``."""
    argv = [sys.executable, "-m", "embedlab", *(a.format(out=out) for a in args)]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        print(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-300:]}", file=sys.stderr)
    return seconds, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], help="names of commands to leave out")
    parser.add_argument("--only", nargs="*", default=None, help="names of the commands to run")
    parser.add_argument("--once", action="store_true", help="one run each (the 'again' column left empty)")
    args = parser.parse_args(argv)
    flags = set(next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), []))
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"]
    print(f"CPU: {model}, {len(os.sched_getaffinity(0))} cores, flags: {' '.join(f for f in wanted if f in flags)}; "
          f"load average at start {os.getloadavg()[0]:.2f}")
    rows = []
    for name, command in COMMANDS:
        if name in args.skip or (args.only is not None and name not in args.only):
            continue
        with tempfile.TemporaryDirectory() as out:
            first, code1 = run(command, out)
            again, code2 = run(command, out) if not args.once else (float("nan"), 0)
        rows.append((name, "embedlab " + " ".join(a.replace("{out}/", "") for a in command), first, again, code1 or code2))
        print(f"{name}: {first:.1f} s, again {again:.1f} s", file=sys.stderr, flush=True)
    print("| command | first run s | again s | exit |")
    print("|---|---|---|---|")
    for name, shown, first, again, code in rows:
        print(f"| `{shown}` | {first:.1f} | {'' if again != again else f'{again:.1f}'} | {code} |")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
