"""The package's boundaries: what each module may import, and its public names.

Import rules (house style): ``embed.py`` the standard library only; NumPy only
from ``table.py`` onward (never in the modules the seed report runs on);
PyTorch only in ``nn.py``; matplotlib only in ``plots.py``; scikit-learn and
umap-learn only in ``projection.py``.
"""

import ast
import importlib
import sys
from pathlib import Path

import pytest

import embedlab

SRC = Path(embedlab.__file__).parent
MODULES = sorted(p.stem for p in SRC.glob("*.py"))
# Modules on the seed report's path: they must import on a bare Python.
STDLIB_ONLY = {"embed", "errors", "vocabulary", "lab", "render", "locales", "html_report", "cli", "__init__", "__main__"}
ONLY_IN = {"torch": {"nn"}, "matplotlib": {"plots"}, "sklearn": {"projection"}, "umap": {"projection"}}


def imports(module: str) -> set[str]:
    """Top-level names of every module imported anywhere in the file (functions included)."""
    tree = ast.parse((SRC / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def top_level_imports(module: str) -> set[str]:
    """Names imported when the module is imported (not inside functions)."""
    tree = ast.parse((SRC / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks run no import
            continue
    return names


@pytest.mark.parametrize("module", sorted(STDLIB_ONLY))
def test_seed_report_modules_import_only_the_standard_library(module):
    assert top_level_imports(module) <= set(sys.stdlib_module_names), module


@pytest.mark.parametrize("library, allowed", sorted(ONLY_IN.items()))
def test_heavy_libraries_stay_in_their_module(library, allowed):
    users = {m for m in MODULES if library in imports(m)}
    assert users <= allowed, f"{library} imported by {sorted(users - allowed)}"


def test_embed_imports_nothing_from_the_package():
    tree = ast.parse((SRC / "embed.py").read_text(encoding="utf-8"))
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


@pytest.mark.parametrize("module", [m for m in MODULES if m != "__main__"])
def test_public_names_exist(module):
    mod = importlib.import_module(f"embedlab.{module}" if module != "__init__" else "embedlab")
    for name in getattr(mod, "__all__", []):
        assert hasattr(mod, name), f"embedlab.{module}.__all__ names {name!r}, which it does not define"

