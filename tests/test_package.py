"""The package's boundaries, as folder rules: what each layer may import, and its public names.

Layers, from the bottom (house style, design.md):

* ``embed.py``: the standard library only, nothing from the package (copyable alone);
* ``errors.py`` and ``deprecation.py`` (old spellings of renamed names): the standard library only;
* ``engine/``: NumPy; nothing from ``sources/``, ``measure/``, ``report/`` or ``cli/``;
* ``nn.py``: the torch modules, beside the engine; nothing from ``sources/``, ``measure/``,
  ``report/`` or ``cli/`` (position similarity is ``engine/position_similarity.py``);
* ``sources/``: the only code that reads files; nothing from ``measure/``, ``report/`` or ``cli/``;
* ``measure/``: one experiment per module; nothing from ``report/`` or ``cli/``;
* ``report/``: renderers; nothing from ``cli/``;
* ``cli/``: parses, calls one library function, renders.

The k nearest is one wing, ``engine/neighbors/``, with one front door: a measurement
imports its front door (``search``) and its defaults, never a room behind the door;
the CLI, the API and the figures read the defaults alone (standard library only).

Heavy libraries stay where they belong: PyTorch in ``nn.py`` (and lazily, inside
functions, in the transformers-backed reader under ``sources/`` and in the torch
screen under ``engine/neighbors/``); numba in the integer screen's compiled kernels
(``engine/neighbors/int16_kernel.py``, ``engine/neighbors/simd.py``, with llvmlite), the bf16
self-join's filter (``engine/neighbors/bf16_filter.py``) and
lazily, inside functions, elsewhere under ``engine/``; llvmlite alone, lazily, in the engine's compiled
loops (``engine/jit.py`` compiles the IR that ``engine/sum_of_squares.py``, ``engine/widened_product.py`` and
``engine/neighbors/pair_scores.py`` write; ``engine/neighbors/amx_kernel.py`` writes its IR as text, as
``engine/neighbors/avx512_bf16_kernel.py`` does, asking llvmlite only LLVM's version); transformers lazily, inside functions, under ``sources/`` only;
matplotlib in ``report/plots.py``, its fonts, ``report/fonts.py``, and ``report/labels.py``,
which places their labels with adjustText; scikit-learn and
umap-learn in ``measure/projection.py``. The modules the seed report runs on import
the standard library alone at import time. The deployment reductions
(``engine/compression.py``) import scikit-learn (PCA) and faiss (product
quantisation) lazily, inside the functions that need them.
"""

import ast
import importlib
import sys
from pathlib import Path

import pytest

import embedlab

SRC = Path(embedlab.__file__).parent
FILES = sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py"))
LAYERS = ("engine", "sources", "measure", "report", "cli")
# The layers above the engine, and the front doors above them all.
ABOVE_ENGINE = {"sources", "measure", "report", "cli", "api", "figures"}
# What each folder (or file) must not import from the package (a lower layer never reaches up).
# nn.py (torch modules) sits beside the engine: it reaches the array code down in engine/
# (positional formulas, position similarity), never a measurement or a renderer.
NOT_FROM = {
    "engine": ABOVE_ENGINE | {"nn"},
    "nn.py": ABOVE_ENGINE,
    "sources": {"measure", "report", "cli", "nn", "api", "figures"},
    "measure": {"report", "cli"},
    "report": {"cli"},
}
# The seed report's path: these must import on a bare Python (tests/test_imports.py computes the whole path).
STDLIB_ONLY = {"embed.py", "errors.py", "deprecation.py", "__init__.py", "__main__.py", "api.py", "figures.py",
               "measure/__init__.py", "measure/lab.py", "measure/defaults.py", "report/__init__.py",
               "report/locales.py", "report/formats.py", "report/files.py", "report/lab.py",
               "engine/__init__.py", "engine/neighbors/__init__.py", "engine/neighbors/defaults.py",
               *(f for f in FILES if f.startswith("cli/"))}
# The k nearest's wing: what a layer above may import of it (the front door and the defaults).
WING = "engine/neighbors"
WING_DOORS = {"measure": {"search", "defaults"}, "report": set(), "cli": {"defaults"}, "sources": set(),
              "api.py": {"defaults"}, "figures.py": {"defaults"}}
# library -> (files that may import it anywhere, folders that may import it lazily inside a function)
HEAVY = {
    "torch": ({"nn.py", "measure/demo.py"}, {"sources", "engine"}),
    "numba": ({"engine/neighbors/int16_kernel.py", "engine/neighbors/simd.py", "engine/neighbors/bf16_filter.py"},
              {"engine"}),
    "llvmlite": ({"engine/neighbors/simd.py", "engine/jit.py", "engine/sum_of_squares.py",
                  "engine/widened_product.py", "engine/neighbors/pair_scores.py",
                  "engine/neighbors/avx512_bf16_kernel.py"}, set()),
    "transformers": (set(), {"sources"}),
    "matplotlib": ({"report/plots.py", "report/fonts.py", "report/labels.py"}, set()),
    "adjustText": ({"report/labels.py"}, set()),
    "sklearn": ({"measure/projection.py"}, {"engine"}),  # engine/compression.py's PCA, lazily
    "faiss": (set(), {"engine"}),  # engine/compression.py's product quantisation, lazily
    "umap": ({"measure/projection.py"}, set()),
    "plotly": ({"report/projector.py"}, set()),
}


def _tree(file: str) -> ast.Module:
    return ast.parse((SRC / file).read_text(encoding="utf-8"))


def _module_of(file: str) -> list[str]:
    """``"measure/lab.py"`` -> ``["embedlab", "measure", "lab"]``; ``__init__`` names its package."""
    parts = ["embedlab", *file[:-3].split("/")]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _package_imports(file: str) -> set[str]:
    """The first part below ``embedlab`` of every module of the package this file imports."""
    parts = _module_of(file)
    package = parts if file.endswith("__init__.py") else parts[:-1]
    found = set()
    for node in ast.walk(_tree(file)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            names = [*(node.module or "").split(".")] if node.module else []
            targets = [base + names] if node.module else [base + [a.name] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("embedlab"):
            targets = [node.module.split(".")]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names if a.name.startswith("embedlab")]
        else:
            continue
        found |= {t[1].removesuffix(".py") for t in targets if len(t) > 1}
    return found


def _third_party(file: str, top_level_only: bool) -> set[str]:
    """Top-level names of modules outside the package that the file imports."""
    tree = _tree(file)
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - {"embedlab"}


def _lazy_only(file: str, library: str) -> bool:
    """True when every import of ``library`` in the file sits inside a function."""
    return library not in _third_party(file, top_level_only=True)


@pytest.mark.parametrize("file", sorted(STDLIB_ONLY & set(FILES)))
def test_seed_report_modules_import_only_the_standard_library(file):
    assert _third_party(file, top_level_only=True) <= set(sys.stdlib_module_names), file


@pytest.mark.parametrize("folder", sorted(NOT_FROM))
def test_a_layer_never_imports_a_layer_above_it(folder):
    files = [f for f in FILES if f == folder or f.startswith(f"{folder}/")]
    assert files, f"no file under {folder}: the rule checks nothing"
    for file in files:
        reached = _package_imports(file) & NOT_FROM[folder]
        assert not reached, f"{file} imports {sorted(reached)}"


@pytest.mark.parametrize("library", sorted(HEAVY))
def test_heavy_libraries_stay_in_their_place(library):
    anywhere, lazily = HEAVY[library]
    for file in FILES:
        if library not in _third_party(file, top_level_only=False) or file in anywhere:
            continue
        assert file.split("/")[0] in lazily and _lazy_only(file, library), f"{file} imports {library}"


def _wing_rooms(file: str) -> set[str]:
    """The rooms of ``engine/neighbors/`` that a file imports, at the top or inside a function."""
    parts = _module_of(file)
    package = parts if file.endswith("__init__.py") else parts[:-1]
    rooms = set()
    for node in ast.walk(_tree(file)):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            names = [target + [a.name] for a in node.names] if not node.module else [target]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("embedlab."):
            names = [node.module.split(".")]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".") for a in node.names if a.name.startswith("embedlab.")]
        else:
            continue
        rooms |= {t[3] for t in names if t[1:3] == ["engine", "neighbors"] and len(t) > 3}
    return rooms


@pytest.mark.parametrize("layer", sorted(WING_DOORS))
def test_a_layer_above_the_wing_asks_its_front_door_only(layer):
    files = [f for f in FILES if f == layer or f.startswith(f"{layer}/")]
    assert files, layer
    for file in files:
        behind = _wing_rooms(file) - WING_DOORS[layer]
        assert not behind, f"{file} imports {sorted(behind)} of {WING}: ask its front door (search) instead"


def test_the_wing_rule_sees_the_imports_it_forbids():
    assert _wing_rooms("measure/hubs.py") == {"search", "defaults"}
    assert "codes" in _wing_rooms("engine/table.py")  # the table's own cache of the codes: a neighbour, not above


def test_numpy_never_on_the_reference_or_the_text_renderers():
    for file in ("embed.py", "errors.py", "report/locales.py"):
        if file in FILES:
            assert "numpy" not in _third_party(file, top_level_only=False), file


def test_embed_imports_nothing_from_the_package():
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(_tree("embed.py")))
    assert _package_imports("embed.py") == set()


def test_the_rules_see_the_imports_they_forbid():
    # The rule reader itself: measure/lab.py imports embed; cli/ reaches the library through api;
    # nn.py reaches position similarity down in the engine (`from .engine import position_similarity`).
    assert "embed" in _package_imports("measure/lab.py")
    assert "api" in set().union(*(_package_imports(f) for f in FILES if f.startswith("cli/")))
    assert "engine" in _package_imports("nn.py") and "engine" in _package_imports("measure/positions.py")


@pytest.mark.parametrize("file", [f for f in FILES if f != "__main__.py"])
def test_public_names_exist(file):
    mod = importlib.import_module(".".join(_module_of(file)))
    for name in getattr(mod, "__all__", []):
        assert hasattr(mod, name), f"{mod.__name__}.__all__ names {name!r}, which it does not define"
