# Two entry points for a fresh machine: `make demo` (install, run the quickstart, print its report and figure)
# and `make test` (install with the dev extras, run the default test suite on every core).  Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.privgame-installed

.PHONY: demo test test-slow lint bench bench-quick wheel-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the CPU build of torch first (on this machine's disk), so that the dev extra pulls no multi-GB CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privgame run experiments/quickstart.toml --out runs/quickstart --n-jobs 2
	$(BIN)/privgame report runs/quickstart --plot runs/quickstart/lower_bounds.png

test: $(STAMP)
	$(BIN)/python -m pytest -n auto

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -n auto

lint: $(STAMP)
	$(BIN)/ruff check analysis games mechanisms attacks tests benchmarks privgame docs/examples
	$(BIN)/ruff format --check analysis games mechanisms attacks tests benchmarks privgame docs/examples
	$(BIN)/mypy privgame

wheel-check: $(STAMP)
	bash .ci/wheel_check.sh

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_one_run.py
	$(BIN)/python benchmarks/bench_estimators.py

bench-quick: $(STAMP)
	$(BIN)/python benchmarks/smoke.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache *.egg-info
