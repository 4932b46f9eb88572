"""Sums of squares in the fixed order: the compiled loop and NumPy's against a plain-Python reading of the order,
and against the exact sum (fractions)."""

from __future__ import annotations

import importlib.util
import math
import os
import platform
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab.engine import sum_of_squares
from embedlab.engine.bf16_matrix import Bf16Matrix
from embedlab.engine.jit import Loops, library_calls
from embedlab.engine.lengths import vector_norms
from embedlab.engine.sum_of_squares import LANES, sums_of_squares

HAS_LLVMLITE = importlib.util.find_spec("llvmlite") is not None
WIDTHS = [1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 384, 1031]


def _by_the_order(row: list[float]) -> float:
    """The module docstring's order in plain Python floats (float64), one entry at a time: lanes, then the tree."""
    lanes = [0.0] * LANES
    for j, x in enumerate(row):
        lanes[j % LANES] = lanes[j % LANES] + x * x
    t = [(lanes[i] + lanes[i + 8]) + (lanes[i + 16] + lanes[i + 24]) for i in range(8)]
    t = [t[i] + t[i + 4] for i in range(4)]
    t = [t[i] + t[i + 2] for i in range(2)]
    return t[0] + t[1]


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(np.asarray(a, dtype=np.float64).view(np.int64),
                                                 np.asarray(b, dtype=np.float64).view(np.int64))


def _rows(rng: np.random.Generator, b: int, D: int) -> np.ndarray:
    """(b, D) float64 rows whose scales differ by up to 1e12 between rows and within them, a few zeros."""
    X = rng.standard_normal((b, D)) * 10.0 ** rng.integers(-6, 7, size=(b, 1)) * 10.0 ** rng.integers(-3, 4, (b, D))
    X[rng.random((b, D)) < 0.05] = 0.0
    return X


def _bf16_bits(X: np.ndarray) -> np.ndarray:
    """float values -> the bfloat16 bits of their float32, truncated (any bits are a bfloat16)."""
    return (np.asarray(X, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("D", WIDTHS)
def test_each_dtype_sums_in_the_documented_order_bit_for_bit(compiled, D):
    rng = np.random.default_rng(D)
    X64 = _rows(rng, 9, D)
    for X in (X64, X64.astype(np.float32), np.clip(X64, -6e4, 6e4).astype(np.float16)):
        expected = np.array([_by_the_order([float(x) for x in row]) for row in X])  # float values, widened exactly
        assert _same_bits(sums_of_squares(X, compiled=compiled), expected), X.dtype
    bits = _bf16_bits(X64)
    widened = (bits.astype(np.uint32) << 16).view(np.float32)  # (9, D) by hand
    expected = np.array([_by_the_order([float(x) for x in row]) for row in widened])
    assert _same_bits(sums_of_squares(bits, bf16=True, compiled=compiled), expected)


@pytest.mark.skipif(not HAS_LLVMLITE, reason="llvmlite (numba's LLVM, the models extra) is not installed")
def test_where_llvmlite_is_installed_the_loop_is_compiled():
    assert sum_of_squares.compiled(), sum_of_squares.kernel_status()
    assert sum_of_squares.kernel_status().startswith("compiled for ")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-1e150, max_value=1e150, allow_nan=False, allow_infinity=False),
                min_size=1, max_size=200))
def test_the_sum_is_within_float64s_bound_of_the_exact_sum(row):
    """Higham 2002, section 4.2: a float64 sum of D nonnegative terms is within (D - 1) u of the exact one,
    u = 2**-53, plus a relative u for each square's own rounding; checked against fractions.Fraction."""
    X = np.array([row])
    got = sums_of_squares(X)[0]
    assert _same_bits(np.array([got]), sums_of_squares(X, compiled=False))
    exact = sum(Fraction(x) ** 2 for x in row)
    if exact == 0:
        assert got == 0.0
        return
    if exact > Fraction(np.finfo(np.float64).max):
        assert got == math.inf
        return
    bound = (len(row) + 1) * 2.0**-53  # D terms: D - 1 additions and one rounding of each square
    assert abs(Fraction(got) - exact) <= Fraction(bound) * exact + Fraction(len(row)) * Fraction(2.0**-1074)


def test_nan_inf_zero_and_out_of_range_rows():
    X = np.array([[np.nan, 1.0], [np.inf, 1.0], [0.0, -0.0], [1e200, 1.0], [1e-200, 0.0], [-3.0, 4.0]])
    for compiled in (True, False):
        got = sums_of_squares(X, compiled=compiled)
        assert np.isnan(got[0]) and got[1:].tolist() == [math.inf, 0.0, math.inf, 0.0, 25.0]


def test_blocks_that_are_strided_big_endian_or_integers_are_read_as_their_values():
    rng = np.random.default_rng(5)
    X = _rows(rng, 6, 70)
    expected = sums_of_squares(X)
    assert _same_bits(sums_of_squares(np.asfortranarray(X)), expected)
    assert _same_bits(sums_of_squares(X.astype(">f8")), expected)
    wide = np.zeros((6, 140))
    wide[:, ::2] = X
    assert _same_bits(sums_of_squares(wide[:, ::2]), expected)
    ints = np.arange(-35, 35, dtype=np.int16).reshape(2, 35)
    assert sums_of_squares(ints).tolist() == [float(sum(i * i for i in range(-35, 0))),
                                              float(sum(i * i for i in range(35)))]


def test_the_rows_and_out_are_not_changed_and_out_is_written():
    X = np.arange(12.0).reshape(3, 4)
    before = X.copy()
    out = np.full(3, 7.0)
    assert sums_of_squares(X, out=out) is out and out.tolist() == [14.0, 126.0, 366.0]
    assert np.array_equal(X, before)
    assert sums_of_squares(np.zeros((0, 5))).shape == (0,)


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match=r"rows must be 2-D \(b, D\), got shape \(4,\)"):
        sums_of_squares(np.ones(4))
    with pytest.raises(TypeError, match="bfloat16 bits must be uint16, got dtype float32"):
        sums_of_squares(np.ones((2, 2), dtype=np.float32), bf16=True)
    with pytest.raises(TypeError,
                       match=r"out must be a C-contiguous float64 array of shape \(2,\), got float32 \(2,\)"):
        sums_of_squares(np.ones((2, 2)), out=np.ones(2, dtype=np.float32))
    with pytest.raises(TypeError, match=r"of shape \(2,\), got float64 \(2,\) \(strided\)"):  # what is wrong with it
        sums_of_squares(np.ones((2, 2)), out=np.ones(4)[::2])


def test_without_llvmlite_the_numpy_order_runs_and_says_why():
    """A fresh interpreter where llvmlite cannot be imported: the same lengths, NumPy's loop, and the reason."""
    code = (
        "import sys; sys.modules['llvmlite'] = None\n"
        "import numpy as np\n"
        "from embedlab.engine import sum_of_squares as s\n"
        "from embedlab.engine.lengths import vector_norms\n"
        "X = np.random.default_rng(2).standard_normal((50, 77)).astype(np.float32)\n"
        "print(s.compiled(), s.kernel_status())\n"
        "print(vector_norms(X).view(np.int64).tolist())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, lengths = done.stdout.splitlines()
    assert first.startswith("False NumPy (llvmlite is not installed")
    X = np.random.default_rng(2).standard_normal((50, 77)).astype(np.float32)
    assert lengths == str(vector_norms(X).view(np.int64).tolist())


@pytest.mark.parametrize("compiled", [True, False])
def test_a_bf16_tables_lengths_from_its_bits_equal_those_of_its_widened_rows(monkeypatch, compiled):
    if not compiled:
        monkeypatch.setattr(sum_of_squares._LOOPS, "functions", lambda: None)  # as where the loop did not compile
    rng = np.random.default_rng(8)
    X = _rows(rng, 300, 45)
    X[7] = 3e-39  # float32 subnormals: float64 holds their squares
    X[8] = 0.0  # a zero row: below NORM_LOW, measured again (top entry 0), length 0
    bits = _bf16_bits(X)
    widened = (bits.astype(np.uint32) << 16).view(np.float32)  # (300, 45)
    got = Bf16Matrix(bits).lengths(parallel=False)
    assert _same_bits(got, vector_norms(widened, parallel=False))
    assert np.allclose(got, np.sqrt((widened.astype(np.float64) ** 2).sum(axis=1)), rtol=1e-14, atol=0)


@pytest.mark.skipif(not HAS_LLVMLITE or platform.machine() not in ("x86_64", "AMD64"),
                    reason="compiles x86 code for other x86 CPUs (needs llvmlite and an x86-64 CPU to run it)")
@pytest.mark.parametrize("cpu", ["x86-64", "haswell"])
def test_the_loop_compiled_for_an_older_cpu_gives_the_same_bits(cpu):
    """The code an AVX2-only CPU (haswell's features: AVX2, FMA, no AVX-512) or the x86-64 baseline (SSE2) gets
    from the same IR, run here: the order is the IR's, so the bits are the same as NumPy's."""
    if cpu == "haswell" and "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU cannot run AVX2 code")
    loops = Loops(lambda triple: [sum_of_squares._ir(kind, triple) for kind in sum_of_squares.KINDS],
                  {f"sums_{kind}": sum_of_squares._SIGNATURE for kind in sum_of_squares.KINDS}, cpu=cpu)
    functions = loops.functions()
    assert functions is not None, loops.status()
    assert loops.status().startswith(f"compiled for {cpu} by llvmlite")
    rng = np.random.default_rng(11)
    for D in (5, 64, 1031):
        X = _rows(rng, 20, D)
        for kind, block in (("float64", X), ("float32", X.astype(np.float32)), ("bf16", _bf16_bits(X))):
            out = np.full(20, np.nan)
            functions[f"sums_{kind}"](block.ctypes.data, 20, D, out.ctypes.data)
            assert _same_bits(out, sums_of_squares(block, bf16=kind == "bf16", compiled=False)), (kind, D)
    if cpu == "haswell":  # haswell converts halves (F16C): its float16 loop is leaf code, run here too
        halves = Loops(lambda triple: [sum_of_squares._ir("float16", triple)],
                       {"sums_float16": sum_of_squares._SIGNATURE}, cpu=cpu, leaf=True)
        function = halves.functions()["sums_float16"]
        for D in (5, 64, 1031):
            block = np.clip(_rows(rng, 20, D), -6e4, 6e4).astype(np.float16)  # subnormal halves among them
            out = np.full(20, np.nan)
            function(block.ctypes.data, 20, D, out.ctypes.data)
            assert _same_bits(out, sums_of_squares(block, compiled=False)), ("float16", D)


@pytest.mark.skipif(not HAS_LLVMLITE or platform.machine() not in ("x86_64", "AMD64"),
                    reason="reads x86 assembly (needs llvmlite and an x86-64 CPU)")
@pytest.mark.parametrize("cpu", ["x86-64", "haswell", "skylake-avx512", None])
def test_the_loops_call_no_library_function_on_any_x86_cpu(cpu):
    """A loop compiled by MCJIT must be leaf code: a library call LLVM emits where a CPU lacks an instruction
    (half to float without F16C calls __extendhfsf2) is not resolved in this process and would jump to
    address 0. Both loops' assembly, for each CPU and this one (None), holds no call."""
    import llvmlite.binding as llvm

    from embedlab.engine import widened_product

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    name = cpu or llvm.get_host_cpu_name()
    features = "" if cpu else llvm.get_host_cpu_features().flatten()
    machine = llvm.Target.from_default_triple().create_target_machine(cpu=name, features=features, opt=3)
    texts = [sum_of_squares._ir(kind, triple) for kind in sum_of_squares.KINDS] + [widened_product._ir(triple)]
    for text in texts:
        assert not library_calls(machine.emit_assembly(llvm.parse_assembly(text)))
    halves = [sum_of_squares._ir("float16", triple), widened_product._ir(triple, "f16")]  # F16C or a library call
    calls = [library_calls(machine.emit_assembly(llvm.parse_assembly(text))) for text in halves]
    assert all(calls) if cpu == "x86-64" else not any(calls)


# Lines of assembly as LLVM writes them (AT&T x86-64, AArch64; ELF local labels ".LBB0_3", macOS ones "LBB0_3"),
# each with whether it can leave the loop's code: a call, an indirect jump, or a jump to a symbol not defined here.
LEAVING = ["\tcallq\t__extendhfsf2@PLT", "\tcall\t*%rax", "\tjmp\t__extendhfsf2", "\tjmpq\t*%rax",
           "\tjmpq\t*__f@GOTPCREL(%rip)", "\trex64 jmp\t*%rax", "\tnotrack jmpq\t*%rax", "\tjne\t__extendhfsf2",
           "\tbl\t__extendhfsf2", "\tblr\tx8", "\tblraa\tx8, x9", "\tb\t__extendhfsf2", "\tbr\tx16", "\tbraaz\tx16",
           "\tb.ne\t__extendhfsf2", "\tcbz\tx0, __f", "\ttbnz\tw8, #0, __f", "\tjmp\tLBB9_1"]
STAYING = ["\tjmp\t.LBB0_3", "\tjne\t.LBB0_3", "\tjmp\tLBB0_2", "\tb\t.LBB0_3", "\tb\tLBB0_2", "\tb.ne\tLBB0_2",
           "\tcbz\tx0, .LBB0_3", "\ttbnz\tw8, #0, LBB0_2", "\tblsrl\t%eax, %ecx", "\tbswapl\t%eax", "\tbrk\t#0x1",
           "\tbti\tc", "\tbsl\tv0.16b, v1.16b, v2.16b", "\tbic\tx0, x1, x2", "\tretq", "\tret"]


@pytest.mark.parametrize("line", LEAVING + STAYING)
def test_library_calls_lists_each_way_out_of_the_code_and_no_local_branch(line):
    assembly = f".LBB0_3:\nLBB0_2:\n{line}\n"  # both kinds of local label defined in the assembly
    assert library_calls(assembly) == ([line] if line in LEAVING else [])


@pytest.mark.skipif(not HAS_LLVMLITE, reason="llvmlite (numba's LLVM, the models extra) is not installed")
@pytest.mark.parametrize("triple, cpu", [("x86_64-apple-macosx13.0.0", "haswell"),
                                         ("arm64-apple-macosx14.0.0", "apple-m1"),
                                         ("aarch64-unknown-linux-gnu", "neoverse-v1")])
def test_the_loops_are_leaf_code_on_macos_and_aarch64(triple, cpu):
    """The loops' assembly for a Mac (local labels without the ELF dot: "LBB0_2") and for AArch64 Linux, only
    emitted, never run: no call. Before, every local jump of a Mac's assembly read as a tail call, and the float16
    loops (``leaf=True``) were refused there."""
    import llvmlite.binding as llvm

    from embedlab.engine import widened_product

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    try:
        machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=3)
    except RuntimeError as exc:  # an llvmlite built without that target
        pytest.skip(f"{triple}: {exc}")
    texts = [sum_of_squares._ir(kind, triple) for kind in (*sum_of_squares.KINDS, "float16")]
    texts += [widened_product._ir(triple, kind) for kind in ("bf16", "f16")]
    for text in texts:
        assembly = machine.emit_assembly(llvm.parse_assembly(text))
        assert "LBB0_" in assembly and not library_calls(assembly), library_calls(assembly)[:3]


@pytest.mark.skipif(not HAS_LLVMLITE or platform.machine() not in ("x86_64", "AMD64"),
                    reason="compiles x86 code for other x86 CPUs (needs llvmlite and an x86-64 CPU to run it)")
def test_the_float16_loops_are_refused_where_they_would_call_a_library_function():
    loops = Loops(lambda triple: [sum_of_squares._ir("float16", triple)], {"sums_float16": sum_of_squares._SIGNATURE},
                  cpu="x86-64", leaf=True)
    assert loops.functions() is None
    assert loops.status().startswith("NumPy (the loop did not compile: RuntimeError: on x86-64 LLVM compiles it to "
                                     "call a library function")


@pytest.mark.parametrize("D", [1, 2, 16, 31, 64, 100])
@pytest.mark.parametrize("kind", ["float32", "int16", "strided"])
def test_numpys_loop_holds_no_more_than_norms_bytes_counts(monkeypatch, D, kind):
    """``lengths.norms_bytes`` bounds what ``vector_norms`` holds besides its result, in NumPy's loop too (as
    where llvmlite is missing): a block's float64 copy (integers, strided rows) and the loop's own arrays, measured
    by tracemalloc, which traces NumPy's allocations. 16 KiB allowed for NumPy's iterator buffers and Python's
    objects; one thread, blocks of 1 MiB (an int16 block of D = 31 held 1.8 times the bound before the loop's
    chunks counted the group of columns and the tree)."""
    import tracemalloc

    from embedlab.engine.lengths import norms_bytes

    monkeypatch.setattr(sum_of_squares._LOOPS, "functions", lambda: None)  # as where the loop did not compile
    block = 2**20
    M = 3 * block // (8 * D) + 5  # three blocks and a few rows
    X64 = np.random.default_rng(D).standard_normal((M, D)) * 100
    X = {"float32": X64.astype(np.float32), "int16": X64.astype(np.int16), "strided": X64[::-1]}[kind]
    vector_norms(X[:50], block_bytes=block, parallel=False)  # NumPy's first calls allocate caches of their own
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        got = vector_norms(X, block_bytes=block, parallel=False)
        held = tracemalloc.get_traced_memory()[1] - base - got.nbytes
    finally:
        tracemalloc.stop()
    assert held <= norms_bytes(M, D, block) + 2**14, (held, norms_bytes(M, D, block))
    assert np.allclose(got, np.sqrt((np.asarray(X, dtype=np.float64) ** 2).sum(axis=1)), rtol=1e-13, atol=0)


@pytest.mark.skipif(not HAS_LLVMLITE or not hasattr(os, "fork"), reason="forks a process that compiles the loop")
def test_a_child_forked_while_another_thread_compiles_compiles_its_own():
    """A fork while a thread of the parent holds the compile's lock: the child would wait for it forever (the
    thread is not in the child); it gets a lock of its own and compiles the loop itself."""
    import threading
    import time
    import warnings

    parent, started, release = os.getpid(), threading.Event(), threading.Event()

    def build(triple):
        if os.getpid() == parent:  # the parent's compile waits, holding the lock, until the child is done
            started.set()
            release.wait(30)
        return [sum_of_squares._ir("float64", triple)]

    loops = Loops(build, {"sums_float64": sum_of_squares._SIGNATURE})
    compiling = threading.Thread(target=loops.functions)
    compiling.start()
    assert started.wait(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12: fork() of a process with threads
        pid = os.fork()
    if pid == 0:  # the child: exit 0 where it compiled the loop and it sums as NumPy's way does
        try:
            X = np.arange(70.0).reshape(2, 35)
            out = np.empty(2)
            loops.functions()["sums_float64"](X.ctypes.data, 2, 35, out.ctypes.data)
            os._exit(0 if out.tolist() == sums_of_squares(X, compiled=False).tolist() else 1)
        finally:
            os._exit(2)
    try:
        deadline = time.monotonic() + 30
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0, "the child waited on the parent's lock"
    finally:
        release.set()
        compiling.join()
    assert loops.functions() is not None


def test_once_computes_its_value_once_whatever_the_threads():
    import threading
    import time

    from embedlab.engine.jit import Once

    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.05)  # long enough for the other threads to arrive while it computes
        return len(calls)

    once = Once(compute)
    got = []
    threads = [threading.Thread(target=lambda: got.append(once.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == [1] * 8 and calls == [1] and once.get() == 1
