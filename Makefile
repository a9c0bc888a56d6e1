# The two commands a newcomer needs (README): `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup tools demo test test-python test-editors-vscode bench lint

$(BIN)/ctxlayer: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	@# setuptools reports every editable install with an "Editable installation" banner, an
	@# information only (its own word), hidden so that `make demo` shows just the demo
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/ctxlayer

demo: setup
	$(BIN)/ctxlayer demo

lint: setup
	$(BIN)/lint-imports
	$(BIN)/ruff check server clients/python tests bench

# System tools the tests drive (Debian's chromium for the browser tests, node 24 and
# code-server for the real VS Code test; the real CLI clients of tests/clients_real, pinned in
# its versions.env), installed once and cached; never used at run time.
tools:
	bash editors/vscode/scripts/ensure-tools.sh >/dev/null || [ "$$CTXLAYER_REQUIRE_EDITORS" != 1 ]
	bash tests/clients_real/ensure-clients.sh >/dev/null || [ "$$CTXLAYER_REQUIRE_EDITORS" != 1 ]

test-python: setup
	$(BIN)/lint-imports
	$(BIN)/ruff check server clients/python tests bench
	$(BIN)/pytest

# The whole suite, what CI runs: Python (core, workspace, store, daemon, CLI, inspector in
# Chromium, Neovim headless), then the VS Code client, extension and real-editor tests.
test: setup tools test-python test-editors-vscode

# VS Code: TS client, extension unit/e2e tests, and the real VS Code test (installs its tools,
# cached: apt chromium + build deps, node 24, code-server; see editors/vscode/scripts/).
test-editors-vscode: setup
	bash editors/vscode/scripts/test.sh

bench: setup
	$(BIN)/python bench/trim_bench.py
	$(BIN)/python bench/session_bench.py
	@if [ "$(PEERS)" = 1 ]; then $(BIN)/python bench/peers.py; fi  # gptme + LangChain (network, once)
