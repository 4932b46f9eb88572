"""The tests' own maps stay true: every module has a test a person can find, every handed case is listed.

Two Markdown tables are read here, as a person reads them:

* ``tests/README.md``, "Map": a module of ``src/embedlab`` is tested by a file of its name in the mirrored
  folder (``engine/table.py`` -> ``tests/engine/test_table.py``, ``cli/params.py`` ->
  ``tests/cli/test_cli_params.py``), or it has a row naming the files that test it;
* ``tests/cases/README.md``: one row per case file ``tests/cases/test_cNN_*.py``, and no row without its file.

Standard library only: it runs in any venv.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "embedlab"
CASES = TESTS / "cases"

CODE = re.compile(r"`([^`]+)`")
CASE_FILE = re.compile(r"test_c(\d\d)_\w+\.py")


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of each row of the first Markdown table after ``heading`` (header and rule left out)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("#") and heading in line), None)
    assert start is not None, f"no heading with {heading!r}"
    rows, seen_table = [], False
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if seen_table:
                break
            continue
        seen_table = True
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert len(rows) > 2, f"no table under {heading!r}"
    return rows[2:]  # the header row and the |---| rule


def named_test_files(module: Path) -> list[Path]:
    """The test files named after ``module`` (relative to src/embedlab) in its mirrored folder of tests/.

    >>> [p.name for p in named_test_files(Path("engine/table.py"))]
    ['test_table.py']
    """
    folder = TESTS / module.parent
    prefixes = [f"test_{module.stem}"]
    if module.parent != Path("."):
        prefixes.append(f"test_{module.parent.name}_{module.stem}")  # tests/cli/test_cli_params.py
    return sorted(p for p in folder.glob("test_*.py")
                  if any(p.stem == prefix or p.stem.startswith(prefix + "_") for prefix in prefixes))


def module_map() -> dict[str, list[str]]:
    """module (relative to src/embedlab) -> test files (relative to tests/), as tests/README.md's map says."""
    mapped: dict[str, list[str]] = {}
    for cells in table_rows((TESTS / "README.md").read_text(encoding="utf-8"), "Map"):
        assert len(cells) == 2, f"a map row has two cells, module and tests: {cells}"
        modules, tests = CODE.findall(cells[0]), CODE.findall(cells[1])
        assert len(modules) == 1 and tests, f"a map row names one module and at least one test file: {cells}"
        assert modules[0] not in mapped, f"{modules[0]} has two rows in the map"
        mapped[modules[0]] = tests
    return mapped


def test_every_module_has_a_test_file_of_its_name_or_a_row_in_the_map():
    mapped = module_map()
    unfound = [str(m.relative_to(SRC)) for m in sorted(SRC.rglob("*.py"))
               if str(m.relative_to(SRC)) not in mapped and not named_test_files(m.relative_to(SRC))]
    assert not unfound, (f"modules with no test file of their name and no row in tests/README.md's map: {unfound}; "
                         "add a row naming the files that test each")


def test_every_row_of_the_map_names_a_module_and_test_files_that_exist():
    wrong = []
    for module, tests in module_map().items():
        if not (SRC / module).is_file():
            wrong.append(f"module {module} (not in src/embedlab)")
        wrong += [f"{t} (for {module})" for t in tests
                  if not ((TESTS / t).is_file() and Path(t).name.startswith("test_") and t.endswith(".py"))]
    assert not wrong, f"tests/README.md's map names files that do not exist: {wrong}"


def test_the_map_rule_finds_the_mirrored_files_only():
    assert named_test_files(Path("cli/params.py")) == [TESTS / "cli" / "test_cli_params.py"]
    assert TESTS / "measure" / "test_params.py" in named_test_files(Path("measure/params.py"))
    assert named_test_files(Path("report/files.py")) == []  # tests/sources/test_files.py is another folder's
    assert TESTS / "report" / "test_labels.py" not in named_test_files(Path("report/lab.py"))
    assert named_test_files(Path("__init__.py")) == []


# -- tests/cases/README.md ---------------------------------------------------------------------------------

def listed_cases() -> dict[str, str]:
    """file name -> id, one per row of tests/cases/README.md's table of cases."""
    listed: dict[str, str] = {}
    for cells in table_rows((CASES / "README.md").read_text(encoding="utf-8"), "The cases"):
        ids = re.findall(r"\bC\d\d\b", cells[0])
        files = [name for name in CODE.findall(cells[1]) if CASE_FILE.fullmatch(name)]
        assert len(ids) == 1 and len(files) == 1, f"a case row names one id and one file: {cells}"
        assert files[0] not in listed, f"{files[0]} is listed twice"
        listed[files[0]] = ids[0]
    return listed


def test_every_case_file_is_listed_and_every_listed_file_exists():
    on_disk = {p.name for p in CASES.glob("test_c*.py") if CASE_FILE.fullmatch(p.name)}
    listed = listed_cases()
    unlisted, absent = sorted(on_disk - set(listed)), sorted(set(listed) - on_disk)
    assert not unlisted, f"case files with no row in tests/cases/README.md: {unlisted}"
    assert not absent, f"tests/cases/README.md lists files that do not exist: {absent}"


def test_each_listed_case_file_carries_its_id():
    wrong = {name: case for name, case in listed_cases().items()
             if f"C{CASE_FILE.fullmatch(name)[1]}" != case}
    assert not wrong, f"rows whose id is not their file's: {wrong}"
