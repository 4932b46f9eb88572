"""Imports at the top of the module, except where a promise needs them inside a function.

A function-level import hides who depends on whom from a reader and from tools. One may stay
only for a reason this file can check or names:

(a) the module is on the import-free path and the import is third-party or pulls a third-party
    package in. The path is what the package promises to run on the standard library alone
    (README, design.md): ``import embedlab``; the seed report (``embedlab report --out DIR``
    through the console script, and ``embedlab.report()``); and counting parameters from
    headers (``embedlab params --vocab/--d-model``, ``params --model FILE.safetensors``,
    ``model_params.from_checkpoint``: ``tests/measure/test_model_params.py``). It is computed
    here: the embedlab modules a fresh interpreter holds after running those calls, not a list.
(b) an entry of ``ALLOWED`` below, (module file, imported module) with its reason: an optional
    dependency used on one path of a module that works without it (a missing one is a
    ``MissingExtraError``), or a cost only one path should pay (numba's import and compilation).

Everything else goes to the top of its module: package-internal imports that do not pull a
third-party package onto the path, the standard library, and third-party imports of modules off
the path (which then say a missing extra where the path imports them: ``figures.plot``,
``errors.needs_extra``, ``sources.__getattr__``, the CLI's one-line message).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from safetensors_writer import f32, write_safetensors

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "embedlab"
FILES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))

# (module file, imported module: a name or its package) -> why the import stays inside a function.
ALLOWED = {
    ("engine/jit.py", "llvmlite"):
        "the engine's compiled loops, built on first use (jit.Loops): a process that runs none never loads LLVM, "
        "and where llvmlite is missing each caller runs its NumPy way instead",
    ("engine/jit.py", "llvmlite.binding"):
        "the engine's compiled loops, built on first use (as llvmlite above)",
    ("engine/sum_of_squares.py", "llvmlite"):
        "the row lengths' loop as LLVM IR, written only when jit.Loops compiles it (llvmlite.ir)",
    ("engine/neighbors/pair_scores.py", "llvmlite"):
        "the pair scores' loop as LLVM IR, written only when jit.Loops compiles it (llvmlite.ir)",
    ("engine/neighbors/avx512_bf16_kernel.py", "llvmlite"):
        "the AVX512-BF16 kernel's IR names its intrinsic's bfloat16 operands by LLVM's version (llvmlite.binding), "
        "read only when jit.Loops compiles it",
    ("engine/widened_product.py", "llvmlite"):
        "the widened product's loop as LLVM IR, written only when jit.Loops compiles it (llvmlite.ir)",
    ("__main__.py", "embedlab.cli"):
        "a Ctrl-C while the CLI imports exits 130 with one line, no traceback (README)",
    ("engine/compression.py", "sklearn"):
        "PCA only: int8, binary and truncation work without scikit-learn (the plots extra); MissingExtraError",
    ("engine/compression.py", "faiss"):
        "product quantisation only (compress --methods pq); faiss is in no extra the rest needs; MissingExtraError",
    ("measure/projection.py", "umap"):
        "method='umap' only: PCA and t-SNE work without umap-learn, which takes seconds to import (numba, "
        "pynndescent) and warns at import; MissingExtraError",
    ("report/labels.py", "adjustText"):
        "labels in a cloud only: a row of labels (direction='x') is packed without it; it pulls in scipy and "
        "warns at import (silenced around the import); MissingExtraError",
    ("sources/tokenizer.py", "transformers"):
        "a folder without tokenizer.json only (the hf extra, AutoTokenizer); tokenizer.json, vocab.txt and "
        "GGUF token lists are read without it; MissingExtraError",
    # -- the k-nearest wing (branch wing) -------------------------------------------------------------------
    ("sources/family_rules.py", "torch"):
        "the hf extra: transformers builds the family's module on the meta device to read its rule; without "
        "it the fallback written by hand (_by_hand) reads the config, and says so",
    ("sources/family_rules.py", "transformers"):
        "the hf extra, as torch above: the family's own library reads its rule where installed",
    ("engine/neighbors/cluster.py", "distributed"):
        "hubs/graph --scheduler only (the cluster extra); every search runs in-process without it; MissingExtraError",
    ("engine/neighbors/bf16_join.py", "embedlab.engine.neighbors.bf16_filter"):
        "the bf16 self-join only, as codes.py for the int16 kernel (numba's import and compilation); torch's ops "
        "filter where numba is missing",
    ("engine/neighbors/capability.py", "torch"):
        "asked only where the CPU has AMX-BF16 or AVX512-BF16 and torch is installed: whether oneDNN is there",
    ("engine/neighbors/torch_screen.py", "torch"):
        "--device and the bf16 screens only (import_torch, the torch extra): the other CPU screens run without it, and "
        "importing torch costs seconds; MissingExtraError",
    ("engine/neighbors/codes.py", "embedlab.engine.neighbors.int16_kernel"):
        "the int16 screen only: numba takes about half a second to import and compiles the kernel on first "
        "call; the float screen, and every command that does not search, never pay it; MissingExtraError",
    ("engine/neighbors/int16_screen.py", "embedlab.engine.neighbors.int16_kernel"):
        "the int16 screen only, as codes.py (numba's import and compilation)",
    ("engine/neighbors/threads.py", "threadpoolctl"):
        "optional: without it blocks of queries run on one worker (worker_count), so the search still runs",
    # -- load lean (branch load-lean) ---------------------------------------------------------------------
    ("sources/gguf.py", "gguf"):
        "a .gguf file only: every load imported the library (~60 ms) through loaders, tokenizer and stored; "
        "MissingExtraError at first use (_library)",
    ("sources/word_vectors.py", "pyarrow"):
        "glove's parquet word list only: every safetensors load imported pyarrow (~60 ms) through loaders; "
        "MissingExtraError at first use, as before",
    # -- one name per idea (branch names) -----------------------------------------------------------------
}

# Third-party packages the path may import where they are installed: each optional, with a fallback.
OPTIONAL_ON_THE_PATH = {
    "wcwidth": "report/formats.py: terminal cells of tokens (CJK takes two); a bare Python uses unicodedata",
}

# Runs in a fresh interpreter: argv[1] a folder to write the report into, argv[2] a safetensors file.
PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
out, checkpoint = sys.argv[1], sys.argv[2]
import embedlab
embedlab.report()
from embedlab.__main__ import run  # the console script's entry
from embedlab.cli import main
from embedlab.measure import model_params
with contextlib.redirect_stdout(io.StringIO()):
    sys.argv = ["embedlab", "report", "--out", out]
    assert run() == 0
    assert main(["params", "--vocab", "8", "--d-model", "2"]) == 0
    assert main(["params", "--model", checkpoint]) == 0
model_params.from_checkpoint(checkpoint)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> list[str]:
    """The modules a fresh interpreter imports for the calls of the import-free path."""
    folder = tmp_path_factory.mktemp("import-free")
    checkpoint = write_safetensors(folder / "m.safetensors", {"wte.weight": ("F32", (3, 2), f32(*range(6))),
                                                              "lm_head.weight": ("F32", (3, 2), f32(*range(6)))})
    done = subprocess.run([sys.executable, "-c", PROBE, str(folder / "out"), str(checkpoint)], capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def path(loaded) -> set[str]:
    """The files of the package on the import-free path: ``{"__init__.py", "api.py", "cli/__init__.py", ...}``."""
    files = {_file_of(name) for name in loaded if name == "embedlab" or name.startswith("embedlab.")}
    assert None not in files, "a module of the package that is not a file of src/embedlab"
    return files


def test_the_import_free_path_imports_no_third_party_package(loaded, path):
    third_party = {name.split(".")[0] for name in loaded} - set(sys.stdlib_module_names) - {"embedlab"}
    assert third_party <= set(OPTIONAL_ON_THE_PATH), sorted(third_party)
    assert {"__init__.py", "__main__.py", "cli/__init__.py", "measure/lab.py", "measure/model_params.py"} <= path


def test_modules_on_the_import_free_path_import_the_standard_library_at_their_top(path):
    for file in sorted(path):
        found = {name for name in _top_level_imports(file) if _kind(name) == "third-party"}
        assert not found, f"{file} imports {sorted(found)} at its top, on the import-free path"


def test_function_level_imports_keep_a_promise_or_give_a_reason(path):
    unexplained = [f"{file}:{line}: {target}" for file, line, target in _function_level_imports()
                   if not _lazy_for_the_path(file, target, path) and _allowed(file, target) is None]
    assert not unexplained, "imports inside functions with no reason to be there (move them to the top, or " \
                            "add a reason to ALLOWED):\n" + "\n".join(unexplained)


def test_every_allowed_entry_is_still_needed(path):
    used = {_allowed(file, target) for file, _, target in _function_level_imports()
            if not _lazy_for_the_path(file, target, path)}
    stale = sorted(key for key in ALLOWED if key not in used)
    assert not stale, f"entries of ALLOWED no function-level import needs (remove them): {stale}"


def test_the_rules_see_what_they_judge():
    # The reader itself, on imports known by heart: faiss inside a function of engine/compression.py, a
    # TYPE_CHECKING block (never run) in sources/word2vec.py, a module of the package that pulls NumPy in.
    assert ("engine/compression.py", "faiss") in {(f, t) for f, _, t in _function_level_imports()}
    assert not {"numpy", "embedlab.engine.table"} & _top_level_imports("sources/word2vec.py")  # TYPE_CHECKING
    assert _pulls_third_party("embedlab.engine.table") and not _pulls_third_party("embedlab.measure.lab")
    assert _kind("numpy") == "third-party" and _kind("json") == "stdlib" and _kind("embedlab.api") == "package"


# -- reading the imports ------------------------------------------------------------------------------------

def _lazy_for_the_path(file: str, target: str, path: set[str]) -> bool:
    """Rule (a): on the path, an import of a third-party module or of one that pulls a third-party one in."""
    kind = _kind(target)
    return file in path and (kind == "third-party" or kind == "package" and _pulls_third_party(target))


def _allowed(file: str, target: str) -> tuple[str, str] | None:
    """The key of ``ALLOWED`` that covers this import, else None: a module of the package by its own name,
    any other by its name or a package above it (``"distributed"`` covers ``distributed.comm``)."""
    if _kind(target) == "package":
        return (file, target) if (file, target) in ALLOWED else None
    parts = target.split(".")
    names = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
    return next(((file, name) for name in names if (file, name) in ALLOWED), None)


def _kind(module: str) -> str:
    top = module.split(".")[0]
    return "package" if top == "embedlab" else "stdlib" if top in sys.stdlib_module_names else "third-party"


@cache
def _function_level_imports() -> list[tuple[str, int, str]]:
    """(file, line, imported module) for every import inside a function of the package."""
    return [(file, node.lineno, target) for file in FILES for node, in_function in _imports(file) if in_function
            for target in _targets(file, node)]


@cache
def _top_level_imports(file: str) -> frozenset[str]:
    """The modules a file imports when it is imported (outside functions and TYPE_CHECKING blocks)."""
    return frozenset(target for node, in_function in _imports(file) if not in_function
                     for target in _targets(file, node))


@cache
def _pulls_third_party(module: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether importing ``module`` of the package imports a third-party one (its packages' __init__ included)."""
    parts = module.split(".")
    chain = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    for name in (m for m in chain if m not in seen and _file_of(m) is not None):
        for target in _top_level_imports(_file_of(name)):
            kind = _kind(target)
            if kind == "third-party" or kind == "package" and _pulls_third_party(target, seen | {name}):
                return True
    return False


def _imports(file: str):
    """(import node, whether it sits inside a function) for each import the file runs, at some time."""
    def visit(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            elif isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:  # the body never runs
                    yield from visit(ast.Module(body=[other], type_ignores=[]), in_function)
            else:
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                yield from visit(child, inner)

    yield from visit(_tree(file), False)


def _type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _targets(file: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement imports: ``from . import plots`` in report/html.py ->
    ``["embedlab.report.plots"]``; ``from ..errors import brief`` -> ``["embedlab.errors"]``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = _module_of(file).split(".")
        if not file.endswith("__init__.py"):
            package = package[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module
    if not base.startswith("embedlab"):
        return [base]
    # A name that is a module of the package is that module; any other name is an attribute of ``base``.
    return sorted({f"{base}.{a.name}" if _file_of(f"{base}.{a.name}") else base for a in node.names})


def _module_of(file: str) -> str:
    """``"measure/lab.py"`` -> ``"embedlab.measure.lab"``; ``"cli/__init__.py"`` -> ``"embedlab.cli"``."""
    return ".".join(["embedlab", *file.removesuffix(".py").split("/")]).removesuffix(".__init__")


@cache
def _file_of(module: str) -> str | None:
    """``"embedlab.measure.lab"`` -> ``"measure/lab.py"``; None for a name that is no file of the package."""
    parts = module.split(".")
    if parts[0] != "embedlab":
        return None
    for file in ("/".join(parts[1:]) + ".py", "/".join([*parts[1:], "__init__.py"])):
        if file in FILES:
            return file
    return None


@cache
def _tree(file: str) -> ast.Module:
    return ast.parse((PACKAGE / file).read_text(encoding="utf-8"))
