"""Which screen a neighbour search runs: integer codes where this CPU multiplies them fast, the float GEMM otherwise.

The room of the wing that decides, for the front door (``search.Search``),
between the screens beside it: ``float_screen`` (the float GEMM),
``int16_screen`` (integer codes) and ``torch_screen`` (a device, asked for by
name). It also says when a table's integer codes are worth building
(``builds_codes``, ``int16_runs``); the codes themselves are ``codes``'.

The exact answer never depends on the screen; the time does. The integer
screen (``int16_screen``) multiplies int16 pairs with ``vpmaddwd``, twice the
multiply-adds per instruction of a float32 FMA, on any CPU with AVX2; where
AVX2 is missing it would still be exact but slower than the BLAS GEMM, so
``"auto"`` keeps the float screen there. (On a CPU with AVX-VNNI or
AVX512-VNNI, LLVM fuses the multiply-add and the add into ``vpdpwssd``.)
The CPU's flags come from ``/proc/cpuinfo`` (Linux); elsewhere they are
unknown and ``"auto"`` keeps the float screen.
"""

from __future__ import annotations

import functools
import importlib.util

from ...errors import ChoiceError, MissingExtraError
import numpy as np

from .codes import HIGH, LOW, codes_fit

__all__ = ["SCREENS", "CODED_QUERIES", "cpu_flags", "fast_int16", "fast_bf16", "choose_screen", "builds_codes",
           "int16_runs", "describe"]

SCREENS = ("auto", "int16", "float", "bf16")
# Queries from which a search builds the table's integer codes (``EmbeddingTable.codes``): building them
# costs about one search of 1,000 queries, which the integer screen wins back over a few thousand.
CODED_QUERIES = 2048


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


def fast_int16() -> bool:
    """Whether the integer screen is faster than the float GEMM here: AVX2 and numba present."""
    return "avx2" in cpu_flags() and importlib.util.find_spec("numba") is not None


def fast_bf16() -> bool:
    """Whether bfloat16 products run on this CPU's matrix units: AMX-BF16 or AVX512-BF16, and torch with oneDNN."""
    flags = cpu_flags()
    if not flags & {"amx_bf16", "avx512_bf16"} or importlib.util.find_spec("torch") is None:
        return False
    import torch
    return bool(torch.backends.mkldnn.is_available())


def describe() -> str:
    """One line for benchmarks and reports: the screen ``"auto"`` picks here, and why.

    >>> describe().startswith(("int16", "float"))
    True
    """
    flags = cpu_flags()
    vnni = sorted(flags & {"avx512_vnni", "avx_vnni"})
    cpu = f"AVX2 {'yes' if 'avx2' in flags else 'no'}, VNNI {'yes (' + ', '.join(vnni) + ')' if vnni else 'no'}"
    if fast_int16():
        return f"int16 codes, vpmaddwd ({cpu})"
    return f"float GEMM ({cpu}{'' if importlib.util.find_spec('numba') else '; numba not installed'})"


def choose_screen(screen: str, *, codes_given: bool, fits: bool) -> str:
    """The screen a search runs: ``"int16"`` or ``"float"``.

    Parameters
    ----------
    screen : {"auto", "int16", "float", "bf16"}
        ``"auto"``: the integer screen where the caller has the table's codes,
        their bound holds (``fits``) and this CPU multiplies them fast
        (``fast_int16``); else the float screen. ``"int16"``: the integer
        screen whatever the CPU (the codes are built if not given).
        ``"float"``: the float GEMM screen. ``"bf16"``: the float screen here;
        every row's lists take bfloat16 products (``every_row.choose_method``).
    codes_given : bool
        Whether the caller passed the table's codes.
    fits : bool
        Whether every nonzero length lies where the bound is certified (``codes.codes_fit``).

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for another screen.
    ValueError
        For ``"int16"`` on lengths outside [1e-15, 1e15].
    MissingExtraError
        (an ``ImportError``) for ``"int16"`` without numba.

    >>> choose_screen("auto", codes_given=False, fits=True), choose_screen("float", codes_given=True, fits=True)
    ('float', 'float')
    """
    if screen not in SCREENS:
        raise ChoiceError(f"unknown screen {screen!r}: expected one of {', '.join(SCREENS)}", parameter="screen",
                          value=screen, expected=", ".join(SCREENS))
    if screen in ("float", "bf16"):  # "bf16": the self-join's products (every_row); one query at a time screens in float
        return "float"
    if screen == "int16":
        if not fits:
            raise ValueError(f"screen='int16' certifies lengths from {LOW:g} to {HIGH:g} only; some query or row "
                             f"is outside: use screen='auto' or 'float'")
        if importlib.util.find_spec("numba") is None:
            raise MissingExtraError.for_module("numba", "integer screens", ("models",))
        return "int16"
    return "int16" if codes_given and fits and fast_int16() else "float"


def builds_codes(n_queries: int) -> bool:
    """Whether a search of ``n_queries`` queries builds the table's codes: enough queries, and a CPU that multiplies them fast.

    >>> builds_codes(10)
    False
    """
    return n_queries >= CODED_QUERIES and fast_int16()


def int16_runs(row_norms: np.ndarray) -> bool:
    """Whether the integer screen runs with the rows (V,) as queries, given the table's codes (every row's k nearest).

    >>> int16_runs(np.array([1e20, 1.0]))  # a length the codes' bound does not certify
    False
    """
    return choose_screen("auto", codes_given=True, fits=codes_fit(row_norms, row_norms)) == "int16"
