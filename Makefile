# The two commands a newcomer needs (README): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-python test-editors test-editors-vscode bench lint

$(BIN)/ctxlayer: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/ctxlayer

demo: setup
	$(BIN)/ctxlayer demo

lint: setup
	$(BIN)/lint-imports
	$(BIN)/ruff check server clients/python tests bench

test-python: setup
	$(BIN)/lint-imports
	$(BIN)/pytest

test: test-python

# VS Code: TS client, extension unit/e2e tests, and the real VS Code test (installs its tools,
# cached: apt chromium + build deps, node 24, code-server; see editors/vscode/scripts/).
test-editors-vscode: setup
	bash editors/vscode/scripts/test.sh

bench: setup
	$(BIN)/python bench/trim_bench.py
