# kary: one command for each job a person or CI does.
#   make demo    set up, then run the main job on this machine and parse it, and race
#                three fan-outs on emulated links
#   make check   lint (ruff, import rules), types (mypy), every test (pytest) and the
#                figures; CI runs this
#   make figures re-make every README and docs/ figure from its command and compare
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: figures setup demo check lint types test bench clean lock

# The venv's own pip, not upgraded: the install a user types must resolve too,
# and CI (make check -> setup) proves it on every run.  LOCK pins every package to
# the versions the committed figures were made with (issue 57: a release between
# two CI runs moved them); `make setup LOCK=` installs pyproject's ranges alone.
# The pins need Python 3.11 or newer (numpy 2.4); an older Python takes the ranges.
LOCK ?= $(shell $(PYTHON) -c 'import sys; print("constraints.txt" if sys.version_info >= (3, 11) else "")')
$(BIN)/kary: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]' $(if $(LOCK),-c $(LOCK))
	touch $@

setup: $(BIN)/kary

# Real flux-core for the demo: the `flux` on PATH, else the build script beside
# this checkout (builds flux-core 0.88 once, ~5 min, cached, saying what it waits
# for: scripts/flux-bin); else the emulator.  A built `flux` is linked into
# .venv/bin, so the shell `source .venv/bin/activate` sets up runs the README's
# next commands on the same real Flux (not the emulator, which would not mix).
FLUX_BUILD ?= ../shared/tools/build-flux-core
# (Asked once, and only by a recipe that uses it: `make check` builds nothing here.)
FLUX_BIN = $(eval FLUX_BIN := $(shell scripts/flux-bin $(FLUX_BUILD)))$(FLUX_BIN)

demo: setup
	$(if $(FLUX_BIN),ln -sf $(FLUX_BIN)/flux $(BIN)/flux)
	PATH="$(if $(FLUX_BIN),$(FLUX_BIN):)$$PATH" $(BIN)/kary run --exact-nodes 30 --topo kary:16 --iters 1
	$(BIN)/kary parse --data data/raw --out data/parsed
	@echo "plots and report: data/parsed/ (open data/parsed/report.html)"
	@echo "then what kary is for: which fan-out is fastest, raced on emulated 100 Mbit/s links"
	$(BIN)/kary race --backend local --exact-nodes 4 --topo kary:1,kary:2,kary:3 --sizes 16M \
	    --link-bandwidth 100Mbit --data-dir data/race-demo; test $$? -le 1  # 1: not separated

# lint-imports: DESIGN's import rules and no import cycle (pyproject's [tool.importlinter]).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

types: setup
	$(BIN)/mypy

# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
# -n: the suite on TEST_WORKERS processes (pytest-xdist), twice CI's 2 cores: a third of
# the suite's time is waiting (real brokers' timeouts, fake kubelets, polls), so two
# workers left the cores idle.  One run each on 2 cores, 2026-11-29: -n 2 495 s,
# -n 3 419 s, -n 4 374 s (worksteal: an idle worker takes half another's queue, so
# no worker ends with a long test alone).  Dealing each worker its share of the slow
# tests first (tried 2026-11-29, two rounds alternated: 316 / 354 s against 321 / 340 s)
# left the cores less idle but the wall no shorter: the suite is CPU-bound, mostly real
# Flux's own start-up (docs/speed.md).  TEST_WORKERS=0 runs it serially, in this
# process, as `pytest -q` does.
# --durations: the 25 slowest tests of every run, where the suite's time goes.
# PYTHONDONTWRITEBYTECODE emptied: an environment that sets it (container images do)
# made every worker re-rewrite every test module's asserts at collection and every
# kary the tests start compile kary from source, on every run; a checkout keeps
# its bytecode in __pycache__ (git ignores it) as a developer's own runs do.
TEST_WORKERS ?= 4

test: setup
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n $(TEST_WORKERS) $(if $(filter 0,$(TEST_WORKERS)),,--dist worksteal) --durations=25; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# The four side by side: the suite leaves a fifth of two cores idle (its waits), and
# mypy (cold in a fresh clone, ~20 s of one core) and the figures (~20 s) fit there.
# --output-sync: each part's output in one piece, as it ends; setup runs once, first.
check: setup
	$(MAKE) --no-print-directory -j4 --output-sync=target lint types test figures

# With flux-core: the emulator against real Flux on cells its CPU costs were never
# fitted on (they were fitted on N 8 and 16 at 64M and 256M); exit 1 outside x1.5.
FIDELITY_HELD_OUT = --nodes 12 --sizes 128M --iters 4

bench: setup
	$(BIN)/python benchmarks/local_bench.py
	$(BIN)/python benchmarks/topology_bench.py
	$(BIN)/python benchmarks/parse_bench.py
	@if PATH="$(if $(FLUX_BIN),$(FLUX_BIN):)$$PATH" command -v flux >/dev/null 2>&1; then \
	  PATH="$(if $(FLUX_BIN),$(FLUX_BIN):)$$PATH" $(BIN)/python benchmarks/fidelity.py $(FIDELITY_HELD_OUT); \
	else echo "bench: no flux-core on PATH: the emulator's fidelity is not measured"; fi

# Every README and docs/ figure re-made from its command on committed data and compared
# whole with its golden file in docs/figures/ (about a minute; --update rewrites them).
figures: setup
	$(BIN)/python benchmarks/figures.py

# constraints.txt anew: a scratch venv, the newest versions pyproject's ranges allow.
# Review the figures it moves (make figures) and commit both.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -e '.[dev]'
	{ sed -n '/^#/p' constraints.txt; .lock-venv/bin/pip freeze --exclude-editable | grep -v '^kary'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt && rm -rf .lock-venv

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
