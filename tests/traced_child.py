"""Traced searches in a fresh interpreter: the tests' child scripts that measure a search's peak memory.

A child script defines ``run`` (the search, returning ids and scores) and calls it once untraced (kernels
compiled, caches filled); ``TRACED_RUN`` then runs it once under ``tracemalloc`` and prints
``{"peak": bytes over the start, "ids": the first 20 lists}`` as JSON on the last line. ``traced`` runs such a
script with this process's ``sys.path`` (argv[1]) and its arguments as JSON (argv[2]) and reads that line.
"""

from __future__ import annotations

import json
import subprocess
import sys

TRACED_RUN = """
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
got, _ = run()
peak = tracemalloc.get_traced_memory()[1] - base
tracemalloc.stop()
print(json.dumps({"peak": peak, "ids": got[:20].tolist()}))
"""


def traced(script: str, args: list) -> dict:
    """The child's last line, ``{"peak": ..., "ids": ...}``; fails the test with its stderr if it failed."""
    child = subprocess.run([sys.executable, "-c", script, json.dumps(sys.path), json.dumps(args)],
                           capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.strip().splitlines()[-1])
