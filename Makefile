# Set-up and daily commands. `make run` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/pip --quiet --disable-pip-version-check

.PHONY: venv run test test-fast test-faults test-slurm lint format bench clean

$(STAMP): envs/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -r envs/requirements.txt
	$(PIP) install --no-deps -e .
	touch $@

venv: $(STAMP)

# Default sweep on the embedded engine: builds llama-server and fetches the model on first use.
run: $(STAMP)
	$(BIN)/snakemake --cores 1 all

# Unit tests, end-to-end tests on the real llama-server (built on first use) and on a real single-host
# Slurm (tests/slurm: installed with apt-get, started and stopped by the tests), in two phases: the
# `quiet` tests, which assert on measured speed or timing, alone on the machine; then the rest in parallel on
# TEST_WORKERS pytest-xdist workers (tests/schedule.py: the Slurm lanes mostly wait on Slurm). Both
# phases always run; the target fails if either did.
TEST_WORKERS ?= 4
test: $(STAMP)
	@status=0; \
	$(BIN)/pytest -m quiet || status=1; \
	$(BIN)/pytest -m "not quiet" -n $(TEST_WORKERS) || status=1; \
	exit $$status

# The quick loop (under 3 min on 2 cores): unit tests, no real engine, no Slurm, no fault suite, no whole
# workflow; as `make test`, the timing-sensitive ones alone first, the rest on 2 workers. `make test` runs
# these and everything else.
FAST := not engine and not slurm and not workflow
test-fast: $(STAMP)
	@status=0; \
	$(BIN)/pytest -m "quiet and $(FAST)" --ignore=tests/faults --ignore=tests/slurm || status=1; \
	$(BIN)/pytest -m "not quiet and $(FAST)" -n 2 --ignore=tests/faults --ignore=tests/slurm || status=1; \
	exit $$status

# Only the fault suite on the stand-in engine (tests/faults; its real-engine tests too, once the engine is built).
test-faults: $(STAMP)
	$(BIN)/pytest tests/faults

# Only the cluster tests, its two lanes side by side: installs (apt-get, root), starts and stops a
# single-host Slurm by itself.
test-slurm: $(STAMP)
	$(BIN)/pytest tests/slurm -n 2

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
