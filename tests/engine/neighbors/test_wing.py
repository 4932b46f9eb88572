"""The k nearest's wing as a whole (engine/neighbors/): its map, its imports, its standard-library rooms.

Read from the source with ``ast`` (no module is imported to find its imports), so
an import inside a function counts as much as one at the top: the call graph a
reader and a tool see.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import embedlab

WING = Path(embedlab.__file__).parent / "engine" / "neighbors"
ROOMS = sorted(p.stem for p in WING.glob("*.py") if p.stem != "__init__")


def wing_imports(room: str) -> set[str]:
    """The rooms of the wing that ``room`` imports anywhere in its file (top level or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse((WING / f"{room}.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import y, or from . import x
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("embedlab.engine.neighbors."):
            found.add(node.module.split(".")[3])
    return found & set(ROOMS)


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (its rooms in order, the first again at the end), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(room: str) -> list[str] | None:
        state[room] = "open"
        path.append(room)
        for other in sorted(graph[room]):
            if state.get(other) == "open":
                return path[path.index(other):] + [other]
            if other not in state and (found := visit(other)):
                return found
        state[room] = "done"
        path.pop()
        return None

    for room in sorted(graph):
        if room not in state and (found := visit(room)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_room_imports_one_that_imports_it_back():
    graph = {room: wing_imports(room) for room in ROOMS}
    assert graph["dispatch"] >= {"float_screen", "int16_screen", "torch_screen"}  # the reader sees the imports
    assert "int16_kernel" in graph["int16_screen"]  # one made inside a function too
    assert cycle(graph) is None, f"import cycle: {' -> '.join(cycle(graph))}"


def test_the_screens_are_peers_below_the_dispatcher():
    screens = {"float_screen", "int16_screen", "torch_screen", "bf16_screen"}
    above = screens | {"dispatch", "per_query", "every_row", "self_join", "cluster", "search"}
    reached = {room: wing_imports(room) & above for room in screens}
    assert reached == {"float_screen": set(), "int16_screen": set(), "torch_screen": {"float_screen"},
                       "bf16_screen": {"torch_screen"}}  # each extends the one it names


def test_only_the_front_door_checks_and_no_room_reaches_the_table():
    assert {room for room in ROOMS if "checks" in wing_imports(room)} == {"search"}
    for room in ROOMS:
        tree = ast.parse((WING / f"{room}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("table") and node.level:
                assert room == "search" and _is_type_checking_only(tree, node), f"{room} imports the table"


def _is_type_checking_only(tree: ast.Module, node: ast.ImportFrom) -> bool:
    """Whether the import sits under ``if TYPE_CHECKING:`` (an annotation, never run)."""
    return any(isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING" and node in ast.walk(n)
               for n in ast.walk(tree))


def test_the_map_names_every_room():
    doc = ast.get_docstring(ast.parse((WING / "__init__.py").read_text(encoding="utf-8")))
    assert [room for room in ROOMS if f"``{room}``" not in doc] == []


def test_the_defaults_and_the_map_import_nothing_beyond_the_standard_library():
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import json, embedlab.engine.neighbors as wing\n"
            "from embedlab.engine.neighbors.defaults import DEFAULT_K, DEFAULT_MEMORY, METRICS\n"
            "print(json.dumps([DEFAULT_K, DEFAULT_MEMORY, list(METRICS),\n"
            "                  sorted(m for m in sys.modules if m.startswith('embedlab'))]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(WING.parents[2])})
    k, memory, metrics, loaded = json.loads(done.stdout)
    assert (k, memory, metrics) == (10, 256 * 2**20, ["cosine", "dot"])
    # The package's own __init__ brings its error classes (standard library only); nothing else of the package.
    assert loaded == ["embedlab", "embedlab.engine", "embedlab.engine.neighbors", "embedlab.engine.neighbors.defaults",
                      "embedlab.errors"]
