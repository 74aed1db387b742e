# Set-up and daily commands. `make run` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/pip --quiet --disable-pip-version-check

.PHONY: venv run test lint format bench clean

$(STAMP): envs/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -r envs/requirements.txt
	$(PIP) install --no-deps -e .
	touch $@

venv: $(STAMP)

# Default sweep on the embedded engine: builds llama-server and fetches the model on first use.
run: $(STAMP)
	$(BIN)/snakemake --cores 1 all

# Unit tests, then the end-to-end tests on the real llama-server (built on first use).
test: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/ruff format --check src tests scripts benchmarks
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/snakemake --lint

format: $(STAMP)
	$(BIN)/ruff check --fix src tests scripts benchmarks
	$(BIN)/ruff format src tests scripts benchmarks
	$(BIN)/snakefmt Snakefile workflow

# Benchmarks of specsweep itself (fidelity, overhead, scale): prints the table, writes benchmarks/results.json.
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py --default

clean:
	rm -rf results logs .snakemake
