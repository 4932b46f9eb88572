"""Loops written as LLVM IR, compiled for this CPU by llvmlite once per process, on first use.

The engine's few loops that NumPy cannot run at the speed of the CPU (a sum
in one fixed order; products that read a bf16 table's bits as they widen
them) are built as LLVM IR by their own modules (``sum_of_squares``,
``widened_product``) and compiled here: for this CPU's own name and
features (``llvm.get_host_cpu_name``: AVX-512 registers where the CPU has
them, AVX2 ones elsewhere, whatever the machine that wrote the IR), by
llvmlite, the LLVM binding numba is built on (so the ``models`` extra has
it). Nothing is compiled until a loop is first asked for: about 0.04 s to
import llvmlite and 0.02 s to compile, measured on the Xeon of
benchmarks/README.md. The loops are called through ctypes, which lets go
of the GIL for the call, so blocks of rows run side by side on the cores.

Where llvmlite is missing, or LLVM refuses the IR, ``Loops.functions()``
is None and ``Loops.status()`` says why; each caller then runs its NumPy
way, which gives the same answer (the same bits, or within the same
certified bound: each module says which).
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
import weakref
from typing import Any, Callable

__all__ = ["Loops", "Once", "halves_sum", "library_calls"]


class Loops:
    """Compiled loops of one module: ``functions()`` -> ``{name: ctypes function}``, or None; ``status()``.

    Parameters
    ----------
    build : callable (triple: str) -> list of str
        The module's LLVM IR, one or more modules as text, for the target
        ``triple`` (llvmlite's process triple).
    signatures : dict of str -> tuple of ctypes types
        Each function's name -> its argument types (every loop returns
        void): ``{"sums_bf16": (c_void_p, c_int64, c_int64, c_void_p)}``.
    cpu : str, optional
        Compile for this LLVM CPU name and its own features instead of this
        CPU (e.g. ``"haswell"``: AVX2 and FMA, no AVX-512), so that a test
        runs the code another kind of CPU would get, on any CPU that has
        that one's instructions. None (the default): this CPU. A name LLVM
        does not know is not refused but ends the process (LLVM prints "is
        not a recognized processor", then "LLVM ERROR" and aborts): for
        tests, with names such as "x86-64" and "haswell" only.
    leaf : bool
        Refuse the loops (``functions()`` None, ``status()`` says why) where
        LLVM compiled them to call a library function: code MCJIT loads has
        no such function resolved, and a call would jump to address 0. For
        IR whose operations a CPU may lack (half to float without F16C
        becomes a call to ``__extendhfsf2``); it costs one more code
        generation, to read the assembly.
    """

    def __init__(self, build: Callable[[str], list[str]], signatures: dict[str, tuple[Any, ...]], *,
                 cpu: str | None = None, leaf: bool = False) -> None:
        self._build, self._signatures, self._cpu, self._leaf = build, signatures, cpu, leaf
        self._functions: dict[str, Callable[..., None]] | None = None
        self._engine: Any = None  # keeps the compiled code alive as long as this object
        self._tried, self._why, self._lock = False, "", threading.Lock()
        if hasattr(os, "register_at_fork"):  # a child forked while a thread compiled: a lock of its own
            os.register_at_fork(after_in_child=lambda ref=weakref.ref(self): _new_lock(ref()))

    def functions(self) -> dict[str, Callable[..., None]] | None:
        """The compiled functions, compiled on the first call (thread-safe; a child forked while another thread
        compiled compiles its own); None where they cannot be."""
        if not self._tried:
            with self._lock:
                if not self._tried:
                    try:
                        self._functions = self._compile()
                    except ImportError as exc:
                        self._why = f"NumPy (llvmlite is not installed: {exc})"
                    except Exception as exc:  # noqa: BLE001 - any failure of LLVM leaves the NumPy way
                        self._why = f"NumPy (the loop did not compile: {type(exc).__name__}: {exc})"
                    self._tried = True
        return self._functions

    def status(self) -> str:
        """"compiled for <cpu> by llvmlite <version>", or "NumPy (<why not>)"; compiles on first call."""
        return self._why if self.functions() is None else self._compiled_for

    def _compile(self) -> dict[str, Callable[..., None]]:
        import llvmlite  # only here: a process that runs no loop never loads LLVM
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        cpu = self._cpu or llvm.get_host_cpu_name()
        features = "" if self._cpu else llvm.get_host_cpu_features().flatten()  # a named CPU: its own features
        modules = [llvm.parse_assembly(text) for text in self._build(llvm.get_process_triple())]
        for module in modules[1:]:
            modules[0].link_in(module)
        modules[0].verify()
        machine = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3)
        if self._leaf:
            calls = library_calls(machine.emit_assembly(modules[0]))
            if calls:
                raise RuntimeError(f"on {cpu} LLVM compiles it to call a library function ({calls[0].strip()})")
        engine = llvm.create_mcjit_compiler(modules[0], machine)
        engine.finalize_object()
        self._engine, self._compiled_for = engine, f"compiled for {cpu} by llvmlite {llvmlite.__version__}"
        return {name: ctypes.CFUNCTYPE(None, *args)(engine.get_function_address(name))
                for name, args in self._signatures.items()}


class Once:
    """A value ``compute()`` gives once per process, on the first ``get()`` (thread-safe): e.g. whether a kernel
    runs here, asked of the CPU, of Linux and of LLVM once.

    A child forked while a thread of the parent held the lock (computing) gets a lock of its own, and computes
    the value itself if the parent had not yet (the thread that held it is not in the child; it would wait for
    it for ever), as ``Loops`` does for its loops.
    """

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute, self._done, self._value, self._lock = compute, False, None, threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=lambda ref=weakref.ref(self): _new_lock(ref()))

    def get(self) -> Any:
        """The value, computed on the first call."""
        if not self._done:
            with self._lock:
                if not self._done:
                    self._value, self._done = self._compute(), True
        return self._value


def halves_sum(builder: Any, vector: Any, lanes: int) -> Any:
    """IR: the ``lanes`` lanes of ``vector`` (a power of two) added in one fixed order -> its element type.

    The upper half added to the lower half, lane by lane, until one lane is
    left: ``[0:4] + [4:8]``, then ``[0:2] + [2:4]``, then ``[0] + [1]`` for 8
    lanes. Each ``fadd`` is one rounding, never reordered (no fast-math flag).
    """
    from llvmlite import ir

    i32 = ir.IntType(32)
    while lanes > 1:
        half = lanes // 2
        low = builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(i32, half), list(range(half))))
        high = builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(i32, half), list(range(half, lanes))))
        vector, lanes = builder.fadd(low, high), half
    return builder.extract_element(vector, ir.Constant(i32, 0))


# What may leave a loop's code, in LLVM's assembly for x86-64 (AT&T) or AArch64: a call (x86 call/callq; AArch64 bl,
# blr and its pointer-authenticated forms), an indirect jump (x86 jmp *...; AArch64 br, braa...), or a jump or branch,
# conditional or not, whose target is not a label of the same assembly: a tail call. Local labels are ".LBB0_3" on
# ELF but "LBB0_3" on macOS, so a target is local by being defined here, not by its name. x86 prefixes (rex64,
# notrack) are skipped. An indirect jump is counted even where it is a jump table's: the loops have none.
_PREFIX = r"^\s*(?:(?:rex64|notrack|ds|\{[a-z0-9]+\})\s+)*"
_CALL = re.compile(_PREFIX + r"(?:(?:call[a-z]*|bl|blr[a-z]*|br|bra[ab]z?)\s|jmp[a-z]*\s+\*)")
_JUMP = re.compile(_PREFIX + r"(?:j[a-z]+|b|b\.[a-z]+|bc\.[a-z]+|cbn?z\s+\w+,|tbn?z\s+\w+,\s*#?\w+,)\s*([^\s,]+)\s*$")
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):")


def library_calls(assembly: str) -> list[str]:
    """The lines of LLVM's assembly (x86-64 or AArch64, ELF or macOS) that call, tail-call or jump out of the code.

    A jump or branch to a label defined in ``assembly`` stays inside (``jmp .LBB0_3``, ``b.ne LBB0_3``,
    ``cbz x0, .LBB0_2``); any call, any indirect jump, and a jump to any other symbol is listed.

    >>> library_calls("\\tvaddps\\t%zmm1, %zmm0, %zmm0\\n\\tjmp\\t.LBB0_3\\n\\tcallq\\t*%rax\\n.LBB0_3:\\n")
    ['\\tcallq\\t*%rax']
    >>> library_calls("LBB0_2:\\n\\tb.ne\\tLBB0_2\\n\\tb\\tLBB0_2\\n\\tbr\\tx16\\n\\tjne\\t__extendhfsf2\\n")
    ['\\tbr\\tx16', '\\tjne\\t__extendhfsf2']
    """
    lines = assembly.splitlines()
    labels = {found.group(1) for found in map(_LABEL.match, lines) if found}
    out = []
    for line in lines:
        jump = _JUMP.match(line)
        if _CALL.match(line) or (jump and jump.group(1) not in labels):
            out.append(line)
    return out


def _new_lock(owner: Loops | Once | None) -> None:
    """In a forked child: a lock of its own (the parent's may have been held by a thread the child does not have;
    the child then compiles the loops, or computes the value, itself on first use)."""
    if owner is not None:
        owner._lock = threading.Lock()
