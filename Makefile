# The two set-up commands from the README: `make demo` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/magma: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3
	$(BIN)/pip install -q -e '.[test]'
	touch $(BIN)/magma

.PHONY: install demo test lint
install: $(BIN)/magma

demo: install
	mkdir -p out
	$(BIN)/magma simulate examples/seed-h100 --until 2h --json out/seed-h100.json --report out/seed-h100.html

lint: install
	$(BIN)/lint-imports

test: install lint
	$(BIN)/pytest
