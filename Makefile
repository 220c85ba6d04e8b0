# amfkit: `make help` lists every target. `make run` and `make test` work on a fresh clone:
# they create a project-local virtual environment (.venv) and install what they need.

.DEFAULT_GOAL := help
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
MAKEFLAGS += --no-print-directory

# The Python that creates .venv (3.9 or newer); override with `make PYTHON=python3.12 ...`.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
VENV_ABS := $(abspath $(VENV))

# cargo from PATH, else rustup's default home. maturin runs cargo itself, so put it on PATH.
ifeq ($(shell command -v cargo 2>/dev/null),)
  ifneq ($(wildcard $(HOME)/.cargo/bin/cargo),)
    export PATH := $(HOME)/.cargo/bin:$(PATH)
  endif
endif
CARGO ?= cargo

export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Stamps live inside .venv, so deleting .venv also forgets them.
VENV_STAMP := $(VENV)/.amfkit-venv.stamp
BUILD_STAMP := $(VENV)/.amfkit-build.stamp
# What the compiled extension is made from (the fuzz crate is outside the workspace).
RUST_SOURCES := $(shell find crates -path crates/fuzz -prune -o -type f \( -name '*.rs' -o -name Cargo.toml \) -print 2>/dev/null)
BUILD_INPUTS := Cargo.toml $(wildcard Cargo.lock) pyproject.toml $(RUST_SOURCES)
# Rebuild whenever the extension module is missing (after `make clean`, say).
EXTENSION := $(wildcard python/amfkit/_amfkit*.so python/amfkit/_amfkit*.pyd)

# Extra arguments: `make test-python PYTEST_ARGS='-k cli -x'`, `make bench ARGS=--quick`.
PYTEST_ARGS ?=
ARGS ?=

.PHONY: help
help: ## show this help
	@echo 'amfkit: make TARGET (fresh clone: `make run` or `make test` does everything)'
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9_-]+:[^#]*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: venv
venv: $(VENV_STAMP) ## create .venv and install the build and dev tools (redone only when pyproject.toml changes)
	@true

$(VENV_STAMP): pyproject.toml requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null || { \
	  echo "error: amfkit needs Python 3.9 or newer as '$(PYTHON)'; run make PYTHON=/path/to/python3 ..." >&2; exit 1; }
	@if [ ! -x $(VPY) ] || ! $(VPY) -c 'import pip' >/dev/null 2>&1; then \
	  rm -rf $(VENV); \
	  echo "$(PYTHON) -m venv $(VENV)"; \
	  $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	    echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)," >&2; \
	    echo "       or run make PYTHON=/path/to/another/python3 ..." >&2; exit 1; }; \
	fi
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

.PHONY: build
build: $(BUILD_STAMP) ## compile the Rust extension (release) into .venv with maturin develop
	@true

$(BUILD_STAMP): $(VENV_STAMP) $(BUILD_INPUTS) $(if $(EXTENSION),,FORCE)
	VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin develop --release
	@# A module left under another suffix (abi3 or not) could shadow the new one: keep the newest.
	@newest=$$(ls -t python/amfkit/_amfkit*.so python/amfkit/_amfkit*.pyd 2>/dev/null | head -n 1 || true); \
	for f in python/amfkit/_amfkit*.so python/amfkit/_amfkit*.pyd; do \
	  if [ -e "$$f" ] && [ "$$f" != "$$newest" ]; then echo "rm $$f (stale)"; rm -f "$$f"; fi; \
	done
	@touch $@

.PHONY: FORCE
FORCE:

.PHONY: run
run: build ## build, then run the demo (round-trips a sample graph, decodes fixtures/*.amf)
	$(VPY) -m amfkit.demo $(ARGS)

.PHONY: test
test: build test-rust test-python ## build, then run every test: cargo test (core), clippy, pytest

.PHONY: test-rust
test-rust: ## cargo test -p amfkit-core (no Python involved), then clippy -D warnings if installed
	$(CARGO) test -p amfkit-core
	@if $(CARGO) clippy --version >/dev/null 2>&1; then \
	  echo "$(CARGO) clippy --workspace -- -D warnings"; \
	  PYO3_PYTHON="$$( [ -x $(VPY) ] && echo $(VENV_ABS)/bin/python || command -v $(PYTHON) )" \
	    $(CARGO) clippy --workspace -- -D warnings; \
	else \
	  echo "clippy is not installed (rustup component add clippy): skipping it"; \
	fi

.PHONY: test-python
test-python: build ## build, then run pytest against the built extension
	$(VPY) -m pytest -q $(PYTEST_ARGS)

.PHONY: bench
bench: build ## build, then run the codec benchmark (amfkit bench codec; ARGS=--quick for a short run)
	$(VENV)/bin/amfkit bench codec $(ARGS)

.PHONY: lint
lint: $(VENV_STAMP) ## rustfmt --check, clippy on all targets, mypy on python/amfkit
	$(CARGO) fmt --all -- --check
	PYO3_PYTHON=$(VENV_ABS)/bin/python $(CARGO) clippy --workspace --all-targets -- -D warnings
	$(VPY) -m mypy

.PHONY: clean
clean: ## remove build outputs and caches (keeps .venv; `make distclean` removes it too)
	-$(CARGO) clean
	rm -rf python/amfkit/_amfkit*.so python/amfkit/_amfkit*.pyd build dist .pytest_cache .mypy_cache .hypothesis $(BUILD_STAMP)
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: distclean
distclean: clean ## clean, and remove .venv: back to a fresh clone
	rm -rf $(VENV)
