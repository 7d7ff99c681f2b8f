# Set-up, tests and checks. Everything installs into .venv in the repo root.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# PyFlink pins older numpy/pandas/pyarrow: it gets its own environment (connectors/flink).
FLINK_VENV := .venv-flink
FLINK_STAMP := $(FLINK_VENV)/.installed

.PHONY: demo demo-flink demo-flink-sql example-java flink-env test check docs system-deps clean bench

demo: system-deps $(STAMP)  ## set up, then run the product end to end (simulator)
	$(VENV)/bin/mace demo

demo-flink: system-deps $(STAMP) $(FLINK_STAMP)  ## the demo on a real Flink job
	$(VENV)/bin/mace demo --engine flink

demo-flink-sql: system-deps $(STAMP) $(FLINK_STAMP)  ## the demo on a Flink SQL job read through Prometheus
	$(VENV)/bin/mace demo --engine flink-sql

example-java: system-deps $(STAMP) $(FLINK_STAMP)  ## a Java Flink job with FileSink writes its own outputs/ (examples/java-filesink)
	rm -rf build/java-filesink/landing build/java-filesink/mace.duckdb
	examples/java-filesink/run.sh build/java-filesink/landing javarun 60
	$(VENV)/bin/mace ingest build/java-filesink/landing --db build/java-filesink/mace.duckdb
	$(VENV)/bin/mace report --db build/java-filesink/mace.duckdb

flink-env: $(FLINK_STAMP)  ## the PyFlink environment for the Flink demo and tests

# Both environments are built at once (-j2): their installs mostly wait on downloads
# and disk. --durations: the log ends with the 25 slowest tests, to see where CI's time goes.
test: system-deps  ## set up, then run the whole test suite
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(FLINK_STAMP)
	$(PY) -m pytest -q --durations=25

$(FLINK_STAMP):
	$(PYTHON) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FLINK_VENV)/bin/python -m pip install --quiet 'apache-flink>=2.3,<2.4'
	touch $(FLINK_STAMP)

check: $(STAMP)  ## lint, format check, type check and the layer contracts (docs/design.md, "Layout")
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy estimator simulator ingest storage dashboard mace connectors benchmarks
	$(VENV)/bin/lint-imports

docs: $(STAMP)  ## the documentation site into site/ (every warning is an error)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

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
	rm -rf $(VENV) $(FLINK_VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache
