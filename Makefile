# One command to set up and run, one to test. Everything installs into .venv from PyPI.
VENV ?= .venv
REPO ?= .
PYTHON ?= python3

.PHONY: setup run test lint bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

# Index REPO (default: this repository) and open the app, with the bundled offline models.
run: setup
	$(VENV)/bin/coderag $(REPO)

test: setup
	$(VENV)/bin/pytest

lint: setup
	$(VENV)/bin/ruff check coderag_tui tests bench
	$(VENV)/bin/mypy

bench: setup
	$(VENV)/bin/python -m bench.bench_index
