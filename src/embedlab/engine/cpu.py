"""The CPU's feature flags, read once from /proc/cpuinfo: what the screens and compiled loops choose by.

``cpu_flags()`` is the set Linux lists on the ``flags`` line (``avx2``,
``fma``, ``avx512_vnni``, ``amx_bf16``, ...); empty where there is no
/proc/cpuinfo (another OS), where every choice keeps its portable path.
"""

from __future__ import annotations

import functools

__all__ = ["cpu_flags"]


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``avx2``, ``fma``, ``avx512_vnni``, ...) from /proc/cpuinfo; empty where unreadable."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()
