"""Which screen a neighbour search runs: bfloat16 on the matrix units, integer codes, or the float GEMM, by CPU and shape.

The room of the wing that decides, for the front door (``search.Search``),
between the screens beside it: ``amx_screen`` (bfloat16 products on the AMX
tiles by embedlab's own kernel, no torch), ``bf16_screen`` (bfloat16 products
on AMX or AVX512-BF16 through torch), ``float_screen`` (the float GEMM), ``int16_screen`` (integer
codes) and ``torch_screen`` (a device, asked for by name). It also says when
a table's integer codes are worth building (``builds_codes``,
``int16_runs``), and why a plan runs the screen it runs (``reason``).

The exact answer never depends on the screen; the time does. ``"auto"``:

- ``"bf16"`` on embedlab's AMX kernel (``amx_screen``) where it runs here
  (``amx_runs``: AMX-BF16, the tiles lent by Linux, llvmlite) and the search
  has the shape it wins at (``amx_shape``: from ``AMX_QUERIES`` queries at any
  width from ``AMX_WIDTH``, from fewer on wide tables, ``AMX_WIDE``), either
  metric, in any process (no torch to load);
- else ``"bf16"`` on embedlab's AVX512-BF16 kernel (``avx512_bf16_kernel``:
  ``vdpbf16ps``, 16 queries a register, scores filtered in registers) on a
  CPU with AVX512-BF16 and no AMX, where it compiles (llvmlite), from as many
  queries but fewer on wide tables (``AVX512_WIDE``), either metric, no torch (``bf16_kernel`` says
  which kernel runs);
- else ``"bf16"`` on torch's matmul where this CPU multiplies bfloat16 on its matrix units
  (``fast_bf16``: AMX-BF16 or AVX512-BF16, and torch with oneDNN) and the
  search is large enough to win: D >= ``BF16_WIDTH`` (256 by cosine, 384 by
  dot) and N >= ``BF16_QUERIES``, with torch loaded already or the search big
  enough to pay for loading it (``BF16_WORK``). The screen's bar is the
  value-aware bound (``precision.bf16_value_margin``: ``A + r |s|``, each
  side's rounding counted once, none for a bf16-valued table asked by id).
  Measured through the front door on the 2-core Xeon with AMX, minilm
  (D = 384), top-10, queries by id, under a load of 4.5-5.4 (best of 5, float
  screen's time / bf16's, two runs): by cosine 1.40 at 256 queries and
  1.49-1.96 at 1,000; by dot 3.0 at 256 and 1.36-1.49 at 1,000 (the wide
  margin ``bf16_margin`` that the screen used before: cosine 0.99-1.27 and
  dot 0.88-1.26 at 1,000 in the same runs, so dot waited for D = 1,024).
  Rows passing the bar per query at 1,000 queries: 63 by cosine and 84 by
  dot (the wide margin: 69 and 111); on minilm rounded to bfloat16 values,
  42 and 40. What remains is the product's own rounding to bfloat16 (torch's
  CPU matmul returns bfloat16), ``2**-8 |s|``. Earlier, with the wide margin
  (under a load of 4-6, best of 7): a random 32,000 x 1,024 table by cosine
  2.08 and 1.35 at 256 and 1,000 queries, by dot 1.22 and 1.10; GloVe
  (D = 50) 0.57-0.94 at 1,000; 2 queries of D = 1,024: 2.2-2.7 by cosine, 0.6
  by dot (benchmarks/README.md). Widths between 256 and 384 were not measured
  for dot;
- else ``"int16"`` where the caller has the table's codes and this CPU
  multiplies them fast (``fast_int16``: ``vpmaddwd``, twice the multiply-adds
  per instruction of a float32 FMA, on any CPU with AVX2; on a CPU with
  AVX-VNNI or AVX512-VNNI, LLVM fuses it into ``vpdpwssd``);
- else the float GEMM.

Every screen but the float one certifies lengths in [1e-15, 1e15] only
(``codes.codes_fit``); outside, ``"auto"`` keeps the float screen. The CPU's
flags come from ``/proc/cpuinfo`` (Linux); elsewhere they are unknown and
``"auto"`` keeps the float screen.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from ...errors import ChoiceError, MissingExtraError
import numpy as np

from ..cpu import cpu_flags
from . import amx_kernel, avx512_bf16_kernel
from .codes import HIGH, LOW, codes_fit

__all__ = ["SCREENS", "CODED_QUERIES", "NARROW_WIDTH", "CODES_WORK", "coded_queries", "BF16_QUERIES", "BF16_WIDTH", "cpu_flags", "fast_int16", "fast_bf16", "amx_runs", "amx_shape",
           "bf16_kernel", "kernel_runs", "avx512_possible",
           "AMX_QUERIES", "AMX_WIDE", "AMX_WIDTH", "AVX512_WIDE", "kernel_wide",
           "bf16_pays", "choose_screen", "builds_codes", "int16_runs", "describe", "reason", "bf16_how",
           "numba_present"]

SCREENS = ("auto", "bf16", "int16", "float")
# Queries from which a search builds the table's integer codes (``EmbeddingTable.codes``), codes included in
# its time: measured on the 2-core Xeon (AVX-512, VNNI; benchmarks/codes_pay.py, benchmarks/README.md "When the
# codes pay"), both metrics, the float screen against the codes built and used: minilm (D = 384) 0.44 s
# against 0.49 s at 500 queries, 1.05 against 0.86 at 1,000; GloVe (D = 50, where a float32 GEMM runs far
# below its peak) 0.57 against 0.64 at 250, 1.04 against 0.87 at 500. Half as many for narrow tables.
CODED_QUERIES = 768
NARROW_WIDTH = 128  # D up to which the codes pay from CODED_QUERIES // 2 queries
# Multiply-adds (N * V * D) from which building the codes pays for loading numba in a process that has not:
# its import and cached kernels take 0.7-0.9 s on the 2-core Xeon, and the float screen ran 1e10
# multiply-adds a second on minilm and GloVe there (both metrics, screen and rescoring), of which the codes
# save 20-45%: a search needs about 2e10 to win it back.
CODES_WORK = 2e10
# Where "auto" takes the bf16 screen (on matrix units): at least this many queries of at least this width.
# Below them the product is not where the time goes (a few queries read the table once; D = 50 pads the
# matrix units' tiles), and rounding the rows to bfloat16 costs more than it saves (benchmarks/neighbors.py).
BF16_QUERIES = 256
BF16_WIDTH = {"cosine": 256, "dot": 384}  # dot: measured to win from minilm's D = 384 (module docstring)
# Where "auto" takes the bf16 screen on embedlab's own AMX kernel (``amx_screen``: no torch, scores filtered in
# cache): measured through the front door (``Search``) on the 2-core Xeon with AMX, top-10, queries by id, float
# screen's time / the AMX screen's, both metrics (benchmarks/README.md, "The bf16 screen on embedlab's AMX
# kernel"): minilm (D = 384) 0.99-1.03 at 32 queries, 1.10-1.19 at 64, 1.35-1.67 at 128, 2.2 at 256, 2.3-2.6 at
# 1,000; GloVe (D = 50) 2.6-3.5 at 256, 4.8 at 1,000; random 32,000-row tables of D = 64, 128 and 256: 0.8-1.26 at
# 64 queries, 1.9-2.5 at 256, 2.4-2.8 at 1,000. So from 256 queries at any width from 50, and from 128 where D >= 384.
AMX_QUERIES = 256
AMX_WIDE = (128, 384)  # (queries, width): fewer queries suffice on a wide table
# The same for embedlab's AVX512-BF16 kernel (``avx512_bf16_kernel``), measured through the front door on the 2-core
# AMD EPYC Zen 5 (AVX-512, VNNI, BF16, no AMX), top-10, queries by id, best of 7, milliseconds, float screen / this
# screen / the int16 codes prebuilt: minilm (D = 384) by cosine 17.6 / 12.3 / 12.2 at 32 queries, 22.1 / 12.7 / 20.5
# at 64, 31.3 / 14.1 / 20.0 at 128, 104.9 / 31.2 / 50.2 at 512 (dot alike: 16.2 / 15.1 / 15.3 at 32, 31.9 / 15.6 /
# 17.1 at 64); at 16 queries and fewer none wins by more than the noise. GloVe (D = 50, V = 400,000), where each
# search pays a pass over 400,000 rows of Python chunks: 53.3 / 46.8 / 34.0 at 64, 81.7 / 51.2 / 48.3 at 128, 188.3 /
# 55.0 / 77.7 at 256. So from AMX_QUERIES at any width from AMX_WIDTH, and from 32 where D >= 384.
AVX512_WIDE = (32, 384)
AMX_WIDTH = 50  # the narrowest width measured
# Multiply-adds (N * V * D) from which the bf16 screen pays for loading torch in a process that has not: torch
# takes about 3 s to import on the 2-core Xeon, which the float32 GEMM (about 7e10 multiply-adds a second
# there) would spend on 2e11; the bf16 screen saves at most half of it. (The 2-query search of a Llama-3-sized
# table, 1e9, stays far below; 1,000 queries of it, 5e11, reach it.)
BF16_WORK = 5e11


def fast_int16() -> bool:
    """Whether the integer screen is faster than the float GEMM here: AVX2 and numba present."""
    return "avx2" in cpu_flags() and numba_present()


def fast_bf16() -> bool:
    """Whether torch's bfloat16 products run on this CPU's matrix units: AMX-BF16 or AVX512-BF16, and torch with
    oneDNN (the bf16 self-join's and ``bf16_screen``'s; embedlab's own AMX kernel is ``amx_runs``)."""
    flags = cpu_flags()
    if not flags & {"amx_bf16", "avx512_bf16"} or importlib.util.find_spec("torch") is None:
        return False
    import torch
    return bool(torch.backends.mkldnn.is_available())


def amx_runs() -> bool:
    """Whether embedlab's own AMX kernel runs here (``amx_kernel.compiled``: AMX-BF16, the tiles lent by Linux,
    llvmlite): the bf16 screen then needs no torch. Looked at only on a CPU that has AMX-BF16."""
    return "amx_bf16" in cpu_flags() and amx_kernel.compiled()  # compiled on first use, never without the tiles


def bf16_kernel() -> Any:
    """The module of embedlab's bf16 kernel that runs here, or None: ``amx_kernel`` where it runs (``amx_runs``),
    else ``avx512_bf16_kernel`` on a CPU with AVX512-BF16 where it compiles (llvmlite). Looked at only on a CPU
    with the units: a kernel is compiled on first use, never where its instructions are missing."""
    if amx_runs():
        return amx_kernel
    if "avx512_bf16" in cpu_flags() and avx512_bf16_kernel.compiled():
        return avx512_bf16_kernel
    return None


def kernel_runs() -> bool:
    """Whether one of embedlab's own bf16 kernels runs here (``bf16_kernel``): the bf16 screen needs no torch."""
    return bf16_kernel() is not None


def bf16_pays(n_queries: int, D: int, V: int, metric: str = "cosine") -> bool:
    """Whether ``"auto"`` takes the bf16 screen for n queries of width D against V rows, on the matrix units.

    Where one of embedlab's bf16 kernels runs (``kernel_runs``: AMX, or
    AVX512-BF16): a shape it wins at (``amx_shape``), either metric. Else, on torch's bfloat16 matmul: at
    least ``BF16_QUERIES`` queries of width ``BF16_WIDTH[metric]``, and
    torch already loaded in this process or a search big enough to pay for
    loading it (``BF16_WORK`` multiply-adds). The shape is looked at first: a
    small search never imports torch or compiles the kernel.

    >>> bf16_pays(2, 4096, 128256), bf16_pays(1000, 8, 400000)  # too few queries; too narrow, on any CPU
    (False, False)
    """
    # AVX512_WIDE asks fewer queries than AMX_WIDE: a search below it never compiles a kernel
    if amx_shape(n_queries, D, AVX512_WIDE) and kernel_runs() and amx_shape(n_queries, D, kernel_wide()):
        return True
    if n_queries < BF16_QUERIES or D < BF16_WIDTH[metric]:
        return False
    return (_torch_loaded() or n_queries * D * V >= BF16_WORK) and fast_bf16()


def amx_possible() -> bool:
    """Whether embedlab's AMX kernel can be expected to run here, without compiling it (for words only: the
    choice asks ``amx_runs``): AMX-BF16 and AMX-TILE on Linux x86-64, and llvmlite installed."""
    return ({"amx_bf16", "amx_tile"} <= cpu_flags() and sys.platform == "linux"
            and importlib.util.find_spec("llvmlite") is not None)


def avx512_possible() -> bool:
    """Whether embedlab's AVX512-BF16 kernel can be expected to run here, without compiling it (for words only:
    the choice asks ``bf16_kernel``): AVX512-BF16, and llvmlite installed."""
    return "avx512_bf16" in cpu_flags() and importlib.util.find_spec("llvmlite") is not None


def amx_shape(n_queries: int, D: int, wide: tuple[int, int] = AMX_WIDE) -> bool:
    """Whether n queries of width D are enough for embedlab's bf16 kernel to win (``AMX_QUERIES``,
    ``AMX_WIDTH``, and ``wide``: ``AMX_WIDE`` for the AMX kernel, ``AVX512_WIDE`` for the AVX512-BF16 one,
    ``kernel_wide``), by shape alone.

    >>> amx_shape(64, 384), amx_shape(128, 384), amx_shape(128, 256), amx_shape(256, 50), amx_shape(1000, 8)
    (False, True, False, True, False)
    >>> amx_shape(32, 384, AVX512_WIDE), amx_shape(32, 256, AVX512_WIDE)
    (True, False)
    """
    return D >= AMX_WIDTH and (n_queries >= AMX_QUERIES or (n_queries >= wide[0] and D >= wide[1]))


def kernel_wide() -> tuple[int, int]:
    """``amx_shape``'s (queries, width) for the kernel that runs here: ``AMX_WIDE`` where the AMX kernel runs
    (``amx_runs``: asked, and so compiled, on a CPU with AMX-BF16), else ``AVX512_WIDE`` (also on a CPU with
    AMX-BF16 whose tiles Linux refuses: the AVX512-BF16 kernel runs there)."""
    return AMX_WIDE if amx_runs() else AVX512_WIDE


def _torch_loaded() -> bool:
    """Whether this process has imported torch already (its import, about 3 s, is then paid)."""
    return "torch" in sys.modules


def describe() -> str:
    """One line for benchmarks and reports: the screens ``"auto"`` picks here, and why.

    >>> describe().startswith(("bf16", "int16", "float"))
    True
    """
    flags = cpu_flags()
    vnni = sorted(flags & {"avx512_vnni", "avx_vnni"})
    cpu = f"AVX2 {'yes' if 'avx2' in flags else 'no'}, VNNI {'yes (' + ', '.join(vnni) + ')' if vnni else 'no'}"
    if fast_int16():
        rest = f"int16 codes, vpmaddwd ({cpu})"
    else:
        rest = f"float GEMM ({cpu}{'' if numba_present() else '; numba not installed'})"
    if kernel_runs():
        wide = kernel_wide()
        return (f"bf16 {_kernel_units()} for N >= {AMX_QUERIES} at D >= {AMX_WIDTH}, N >= {wide[0]} at "
                f"D >= {wide[1]}; else {rest}")
    note = f"; {why}" if (why := _amx_not_running()) else ""
    if fast_bf16():
        return (f"bf16 {_units()} for N >= {BF16_QUERIES} and D >= {BF16_WIDTH['cosine']} (cosine), "
                f"{BF16_WIDTH['dot']} (dot), and N*V*D >= {BF16_WORK:.2g} where torch is not loaded yet; else {rest}"
                f"{note}")
    return f"{rest}; no bf16 screen: {_no_bf16()}{note}"


def reason(chosen: str, screen: str, *, codes_given: bool, fits: bool, queries: int, width: int,
           rows: int = 0, metric: str = "cosine", on_device: bool = False) -> str:
    """Why a search of ``queries`` queries of width D runs the screen ``chosen`` when asked for ``screen``.

    One line for the plan (``BlockPlan.why``): the screen, the units it runs
    on, and what decided it.

    >>> reason("float", "float", codes_given=False, fits=True, queries=2, width=64, rows=512)
    "float GEMM: screen='float' asked for"
    """
    if chosen == "bf16":
        own = kernel_runs() and not on_device  # on a device (--device), torch's matmul runs the bf16 screen
        how = (f"bf16 {_kernel_units()}" if own else f"bf16 {_units()}" if fast_bf16()
               else f"bf16 in software ({_no_bf16()})")
        note = "" if own or on_device else _amx_not_running()  # torch's matmul on a CPU with AMX: why
        note = f"; {note}" if note else ""
        if screen == "bf16":
            return f"{how}: screen='bf16' asked for; D={width}{note}"
        if own and amx_shape(queries, width, kernel_wide()):
            least = kernel_wide()[0] if queries < AMX_QUERIES else AMX_QUERIES
            return f"{how}: N={queries:,} >= {least} at D={width}, no torch needed"
        work = "torch loaded" if _torch_loaded() else f"N*V*D={queries * rows * width:.2g} >= {BF16_WORK:.2g}"
        return f"{how}: D={width} >= {BF16_WIDTH[metric]}, N={queries:,} >= {BF16_QUERIES}, {work}{note}"
    if chosen == "int16":
        how = "int16 codes, vpmaddwd" + (" (AVX2, numba)" if fast_int16() else " without AVX2 (slower than the GEMM)")
        return (f"{how}: screen='int16' asked for" if screen == "int16"
                else f"{how}: {_why_not_bf16(queries, width, rows, metric)}")
    if screen == "float":
        return "float GEMM: screen='float' asked for"
    if not fits:
        return "float GEMM: some length is outside [1e-15, 1e15], where only float certifies"
    why = [_why_not_bf16(queries, width, rows, metric)]
    if not fast_int16():
        why.append("no AVX2" if "avx2" not in cpu_flags() else "numba not installed")
    elif not codes_given:
        why.append(f"no int16 codes (built from N={coded_queries(width):,}, and N*V*D >= {CODES_WORK:.2g} "
                   "where numba is not loaded yet)")
    return "float GEMM: " + "; ".join(why)


def choose_screen(screen: str, *, codes_given: bool, fits: bool, queries: int = 0, width: int = 0,
                  rows: int = 0, metric: str = "cosine") -> str:
    """The screen a search runs: ``"bf16"``, ``"int16"`` or ``"float"``.

    Parameters
    ----------
    screen : {"auto", "bf16", "int16", "float"}
        ``"auto"``: the bf16 screen where the bound holds (``fits``) and it
        pays (``bf16_pays``: N queries of width D against V rows on the matrix units); else
        the integer screen where the caller has the table's codes, their
        bound holds and this CPU multiplies them fast (``fast_int16``); else
        the float screen. ``"bf16"``: the bf16 screen whatever the CPU
        (embedlab's AMX kernel where it runs, ``amx_runs``; else torch's
        bfloat16 matmul, which runs everywhere, in software where the units
        are missing). ``"int16"``: the integer screen whatever the CPU
        (the codes are built if not given). ``"float"``: the float GEMM screen.
    codes_given : bool
        Whether the caller passed the table's codes.
    fits : bool
        Whether every nonzero length lies where the bound is certified (``codes.codes_fit``).
    queries, width, rows : int
        N, D and V of the search (N = 0: ``"auto"`` never takes the bf16 screen).
    metric : {"cosine", "dot"}
        The metric searched (the bf16 screen pays from a larger D for dot).

    Raises
    ------
    ChoiceError
        (a ``ValueError``) for another screen.
    ValueError
        For ``"bf16"`` or ``"int16"`` on lengths outside [1e-15, 1e15].
    MissingExtraError
        (an ``ImportError``) for ``"int16"`` without numba, ``"bf16"`` without torch where embedlab's AMX
        kernel does not run.

    >>> choose_screen("auto", codes_given=False, fits=True), choose_screen("float", codes_given=True, fits=True)
    ('float', 'float')
    """
    if screen not in SCREENS:
        raise ChoiceError(f"unknown screen {screen!r}: expected one of {', '.join(SCREENS)}", parameter="screen",
                          value=screen, expected=", ".join(SCREENS))
    if screen == "float":
        return "float"
    if screen in ("bf16", "int16"):  # asked for by name: refused where it cannot certify or cannot run
        if not fits:
            raise ValueError(f"screen={screen!r} certifies lengths from {LOW:g} to {HIGH:g} only; some query or row "
                             f"is outside: use screen='auto' or 'float'")
        library, what, extra = {"bf16": ("torch", "bf16 screens", "torch"),
                                "int16": ("numba", "integer screens", "models")}[screen]
        present = numba_present() if screen == "int16" else importlib.util.find_spec(library) is not None
        if not present and not (screen == "bf16" and kernel_runs()):
            raise MissingExtraError.for_module(library, what, (extra,))
        return screen
    if fits and bf16_pays(queries, width, rows, metric):
        return "bf16"
    return "int16" if codes_given and fits and fast_int16() else "float"


def builds_codes(n_queries: int, width: int = 0, rows: int = 0, metrics: tuple[str, ...] = ("cosine",)) -> bool:
    """Whether a search of ``n_queries`` queries of width D against V rows builds the table's codes: enough
    queries (``coded_queries``), numba loaded already or enough work to pay for loading it (``CODES_WORK``),
    a CPU that multiplies them fast, and no bf16 screen that runs instead for every one of the ``metrics``
    (``bf16_pays``).

    >>> builds_codes(10)
    False
    """
    return (n_queries >= coded_queries(width) and (_numba_loaded() or n_queries * width * rows >= CODES_WORK)
            and fast_int16() and not all(bf16_pays(n_queries, width, rows, m) for m in metrics))


def numba_present() -> bool:
    """Whether numba can be imported here: numba and the llvmlite it compiles with are both found (a process
    where llvmlite cannot be imported finds numba's files, then fails on its first kernel)."""
    return all(importlib.util.find_spec(name) is not None for name in ("numba", "llvmlite"))


def _numba_loaded() -> bool:
    """Whether this process has imported numba already (its import and cached kernels, about 0.8 s, are paid)."""
    return "numba" in sys.modules


def coded_queries(width: int) -> int:
    """Queries from which a search of a table of width D builds its codes: ``CODED_QUERIES``, half as many
    where D <= ``NARROW_WIDTH`` (a narrow GEMM runs far below its peak; the codes do not).

    >>> coded_queries(50), coded_queries(384)
    (384, 768)
    """
    return CODED_QUERIES // 2 if width <= NARROW_WIDTH else CODED_QUERIES


def int16_runs(row_norms: np.ndarray) -> bool:
    """Whether the integer screen runs with the rows (V,) as queries, given the table's codes (every row's k nearest).

    >>> int16_runs(np.array([1e20, 1.0]))  # a length the codes' bound does not certify
    False
    """
    return choose_screen("auto", codes_given=True, fits=codes_fit(row_norms, row_norms)) == "int16"


def bf16_how() -> str:
    """Where bfloat16 products run here, in words: on which matrix units, or in software and why.

    >>> bf16_how().startswith(("on AMX", "on AVX512-BF16", "in software"))
    True
    """
    return _units() if fast_bf16() else f"in software ({_no_bf16()})"


def _kernel_units() -> str:
    """Where the bf16 screen's products run on embedlab's own kernel, in words (``kernel_runs`` is True)."""
    kernel = bf16_kernel()
    units = "on AMX (amx_bf16" if kernel is amx_kernel else "on AVX512-BF16 (avx512_bf16, vdpbf16ps"
    return f"{units}, embedlab's kernel {kernel.status().split(', ', 1)[1]})"


def _units() -> str:
    """The matrix units torch's bfloat16 products run on here, and the software that drives them, in words."""
    import torch

    flags = cpu_flags()
    units = "on AMX" if "amx_bf16" in flags else "on AVX512-BF16"
    have = ", ".join(sorted(flags & {"amx_bf16", "avx512_bf16"}))
    return f"{units} ({have}, torch {torch.__version__.split('+')[0]} oneDNN)"


def _no_bf16() -> str:
    """Why bfloat16 products do not run on matrix units here, in words."""
    if not cpu_flags() & {"amx_bf16", "avx512_bf16"}:
        return "no AMX-BF16 or AVX512-BF16"
    return "torch not installed" if importlib.util.find_spec("torch") is None else "torch without oneDNN"


def _why_not_bf16(queries: int, width: int, rows: int, metric: str) -> str:
    """Why ``"auto"`` did not take the bf16 screen for N queries of width D against V rows (N = 0: not tried)."""
    if queries == 0:
        return "bf16 not tried for this scan"
    units = "AMX" if amx_possible() else "AVX512-BF16" if avx512_possible() else ""
    if units and not amx_shape(queries, width, AVX512_WIDE):  # no kernel's shape: said without compiling one
        wide = AMX_WIDE if units == "AMX" else AVX512_WIDE
        return (f"bf16 on {units} does not pay for N={queries:,} at D={width} (from N >= {AMX_QUERIES} at "
                f"D >= {AMX_WIDTH}, N >= {wide[0]} at D >= {wide[1]})")
    wide = kernel_wide() if units else AMX_WIDE
    if units and kernel_runs() and not amx_shape(queries, width, wide):  # between the two kernels' shapes
        units = "AMX" if bf16_kernel() is amx_kernel else "AVX512-BF16"
        return (f"bf16 on {units} does not pay for N={queries:,} at D={width} (from N >= {AMX_QUERIES} at "
                f"D >= {AMX_WIDTH}, N >= {wide[0]} at D >= {wide[1]})")
    why = _why_not_torch_bf16(queries, width, rows, metric)
    note = _amx_not_running() if amx_shape(queries, width, wide) else ""  # the shape embedlab's kernel would take
    return f"{why}; {note}" if note else why


def _amx_not_running() -> str:
    """Why embedlab's AMX kernel does not run on this CPU with AMX-BF16, in words (it asks, ``amx_runs``); ""
    where it runs or the CPU has no AMX-BF16."""
    if "amx_bf16" not in cpu_flags() or amx_runs():
        return ""
    return f"embedlab's AMX kernel does not run here: {amx_kernel.status()}"


def _why_not_torch_bf16(queries: int, width: int, rows: int, metric: str) -> str:
    """Why ``"auto"`` did not take the bf16 screen on torch's matmul for N queries of width D against V rows."""
    if queries >= BF16_QUERIES and width >= BF16_WIDTH[metric]:
        if (cpu_flags() & {"amx_bf16", "avx512_bf16"} and not kernel_runs() and not _torch_loaded()
                and queries * rows * width < BF16_WORK):
            # said without importing torch, which is what does not pay
            return f"bf16 does not pay for loading torch: N*V*D={queries * rows * width:.2g} < {BF16_WORK:.2g}"
        return f"no bf16 screen: {_no_bf16()}"
    if width < BF16_WIDTH[metric]:
        return f"bf16 does not pay at D={width} < {BF16_WIDTH[metric]}"
    return f"bf16 does not pay for N={queries:,} < {BF16_QUERIES} queries"
