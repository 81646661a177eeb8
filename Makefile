# One command to set up and run, one to test. Everything installs into .venv from PyPI.
VENV ?= .venv
REPO ?= .
PYTHON ?= python3

.PHONY: setup run test test-fast lint bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

# Index REPO (default: this repository) and open the app, with the bundled offline models.
run: setup
	$(VENV)/bin/coderag $(REPO)

# Every test: what .ci/run runs.
test: setup
	$(VENV)/bin/pytest

# The unit and in-process tests: leaves out those whose fixtures start PostgreSQL, a server
# process, the app or the model, or download releases, and the slow ones (tests/helpers/marks.py).
FAST = not (postgres or model or app or server or network or slow)
test-fast: setup
	$(VENV)/bin/pytest -q -m "$(FAST)"

lint: setup
	$(VENV)/bin/ruff check coderag_tui tests bench
	$(VENV)/bin/mypy

bench: setup
	$(VENV)/bin/python -m bench.bench_index
