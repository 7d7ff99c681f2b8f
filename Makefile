# Set-up, tests and checks. Everything installs into .venv in the repo root.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test check system-deps clean bench

demo: system-deps $(STAMP)  ## set up, then run the product end to end
	$(VENV)/bin/mace demo

test: system-deps $(STAMP)  ## set up, then run the whole test suite
	$(PY) -m pytest -q

check: $(STAMP)  ## lint, format check, type check and the layer contracts (DESIGN section 3)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy estimator simulator ingest storage dashboard mace benchmarks
	$(VENV)/bin/lint-imports

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"' \
	  || { echo "error: $(PYTHON) is older than 3.11; install Python 3.11+ or run make PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Java runs Spark; Debian's chromium and chromium-driver run the browser tests.
system-deps:
	@bash scripts/system-deps.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
