# The two commands a newcomer needs (README): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-python test-editors bench lint

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

bench: setup
	$(BIN)/python bench/trim_bench.py
