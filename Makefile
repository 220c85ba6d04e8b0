# amfkit: `make help` lists every target. `make run` and `make test` work on a fresh clone:
# they create a project-local virtual environment (.venv) and install what they need.

.DEFAULT_GOAL := help
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
MAKEFLAGS += --no-print-directory

# The Python that creates .venv (3.10 or newer); override with `make PYTHON=python3.12 ...`.
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
# Rebuild whenever .venv's extension module is missing (after `make clean`, say). The
# other CPython versions' modules (`make test-pythons`) sit beside it under their own
# suffixes, which .venv's interpreter never imports.
EXT_SUFFIXES := $(if $(wildcard $(VPY)),$(shell $(VPY) -c 'import importlib.machinery as m; print(*m.EXTENSION_SUFFIXES)' 2>/dev/null))
EXTENSION := $(wildcard $(foreach s,$(or $(EXT_SUFFIXES),.so .pyd),python/amfkit/_amfkit*$(s)))

# Extra arguments: `make test-python PYTEST_ARGS='-k cli -x'`, `make bench ARGS=--quick` or `ARGS='codec --quick'` (experiment names first).
PYTEST_ARGS ?=
ARGS ?=

.PHONY: help
help: ## show this help
	@echo 'amfkit: make TARGET (fresh clone: `make run` or `make test` does everything)'
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9_-]+:[^#]*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: venv
venv: $(VENV_STAMP) ## create .venv and install the build and dev tools and the benchmark lab, bench/ (redone when their lists change)
	@true

$(VENV_STAMP): pyproject.toml requirements-dev.txt bench/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { \
	  echo "error: amfkit needs Python 3.10 or newer as '$(PYTHON)'; run make PYTHON=/path/to/python3 ..." >&2; exit 1; }
	@if [ ! -x $(VPY) ] || ! $(VPY) -c 'import pip' >/dev/null 2>&1; then \
	  rm -rf $(VENV); \
	  echo "$(PYTHON) -m venv $(VENV)"; \
	  $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	    echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)," >&2; \
	    echo "       or run make PYTHON=/path/to/another/python3 ..." >&2; exit 1; }; \
	fi
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -r requirements-dev.txt
	@# The benchmark lab (`amfkit bench`), editable; its dependencies are in the list above
	@# and amfkit is the one maturin builds here, never one from the index.
	$(VPY) -m pip install --quiet --no-deps -e ./bench
	@touch $@

.PHONY: build
build: $(BUILD_STAMP) ## compile the Rust extension (release) into .venv with maturin develop
	@true

$(BUILD_STAMP): $(VENV_STAMP) $(BUILD_INPUTS) $(if $(EXTENSION),,FORCE)
	VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin develop --release
	@# A module left under another suffix this interpreter imports (abi3 or not) could
	@# shadow the new one: keep the newest of those. Other versions' modules stay.
	@mods="$$(for s in $$($(VPY) -c 'import importlib.machinery as m; print(*m.EXTENSION_SUFFIXES)'); do \
	  ls python/amfkit/_amfkit$$s 2>/dev/null || true; done)"; \
	newest=$$(ls -t $$mods 2>/dev/null | head -n 1 || true); \
	for f in $$mods; do \
	  if [ -e "$$f" ] && [ "$$f" != "$$newest" ]; then echo "rm $$f (stale)"; rm -f "$$f"; fi; \
	done
	@touch $@

.PHONY: FORCE
FORCE:

.PHONY: run
run: build ## build, then serve the demo gateway on http://127.0.0.1:8000/gateway (ARGS='--port 9000')
	$(VENV)/bin/amfkit serve --demo $(ARGS)

.PHONY: demo
demo: build ## the codec demo: round-trip a sample graph, decode every fixtures/*.amf
	$(VPY) -m amfkit.demo $(ARGS)

.PHONY: test
test: build system-deps bench-deps test-rust fuzz-smoke test-python test-pythons-ends test-install ## build, then run every test: cargo test (core), clippy, a fuzz smoke run, pytest, the codec, gateway and CLI tests on the oldest and newest CPython, and a wheel installed without Rust

.PHONY: test-hosts
test-hosts: build system-deps ## messaging across hosts made of network namespaces, the full run (root, iproute2; `make test` runs the quick form)
	AMFKIT_HOSTS=full $(VPY) -m pytest -q tests/hosts $(PYTEST_ARGS)

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
test-python: build system-deps bench-deps js-deps ruffle-deps ## build, then run pytest against the built extension (and the TypeScript codec's tests, through tests/js)
	$(VPY) -m pytest -q $(PYTEST_ARGS)

# The tests start a real PostgreSQL server (tests/support/pg.py) and a real Redis server
# (tests/support/redis_server.py): install each when it is not found. Quick and silent
# when both are there; a loud failure when one cannot be installed (those tests are never
# skipped).
PG_BINDIR := $(firstword $(patsubst %/pg_ctl,%,$(wildcard /usr/lib/postgresql/*/bin/pg_ctl)))

.PHONY: system-deps
system-deps: ## install the servers and tools the tests use when missing (PostgreSQL, Redis, memcached, nginx, Chromium, haxe, tshark, tcpdump, iproute2, xxd, hexdump; via apt-get)
	@if [ -n "$(PG_BINDIR)" ] || { command -v pg_ctl && command -v initdb; } >/dev/null 2>&1 \
	  || { command -v pg_config >/dev/null 2>&1 && [ -x "$$(pg_config --bindir)/pg_ctl" ]; }; then \
	  exit 0; \
	fi; \
	echo "PostgreSQL server not found (the tests start one): installing it"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "error: no apt-get here: install a PostgreSQL server yourself (initdb and pg_ctl on PATH," >&2; \
	  echo "       e.g. brew install postgresql or dnf install postgresql-server), then run make again" >&2; \
	  exit 1; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else \
	  echo "error: installing PostgreSQL needs root: run 'sudo apt-get install -y postgresql', then make again" >&2; \
	  exit 1; \
	fi; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql \
	  || { echo "error: apt-get could not install postgresql (the PostgreSQL tests need it)" >&2; exit 1; }; \
	ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
	  || { echo "error: postgresql was installed but no /usr/lib/postgresql/*/bin/pg_ctl exists" >&2; exit 1; }
	@# Redis: a recipe line of its own (each runs in its own shell), after PostgreSQL's
	@# so that two apt-get runs never compete for the package lock.
	@if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]; then exit 0; fi; \
	echo "Redis server not found (the tests start one): installing it"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "error: no apt-get here: install a Redis server yourself (redis-server on PATH," >&2; \
	  echo "       e.g. brew install redis or dnf install redis), then run make again" >&2; \
	  exit 1; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else \
	  echo "error: installing Redis needs root: run 'sudo apt-get install -y redis-server', then make again" >&2; \
	  exit 1; \
	fi; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server \
	  || { echo "error: apt-get could not install redis-server (the Redis tests need it)" >&2; exit 1; }; \
	command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] \
	  || { echo "error: redis-server was installed but is not on PATH" >&2; exit 1; }
	@# memcached (the asset store's memcached:// backend and cache), nginx (the asset
	@# benchmark's web server), Chromium (the browser tests, driven by Playwright), haxe
	@# (it compiles the SWF tests/browser/test_ruffle.py runs in Ruffle), tcpdump (the
	@# capture tests record loopback traffic), tshark (they check what amfkit reads
	@# from a pcap against it; its debconf question about non-root capture is answered
	@# "no" beforehand), iproute2 (`ip`: the multi-host tests' network namespaces), xxd
	@# and hexdump (bsdextrautils: the hex dumps `amfkit decode` reads, made by the tools
	@# themselves): one apt-get for all.
	@missing=""; \
	{ command -v memcached || [ -x /usr/bin/memcached ]; } >/dev/null 2>&1 || missing="$$missing memcached"; \
	command -v xxd >/dev/null 2>&1 || missing="$$missing xxd"; \
	command -v hexdump >/dev/null 2>&1 || missing="$$missing bsdextrautils"; \
	{ command -v nginx || [ -x /usr/sbin/nginx ]; } >/dev/null 2>&1 || missing="$$missing nginx-light"; \
	{ command -v chromium || [ -x /usr/bin/chromium ]; } >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v haxe >/dev/null 2>&1 || missing="$$missing haxe"; \
	{ command -v tshark || [ -x /usr/bin/tshark ]; } >/dev/null 2>&1 || missing="$$missing tshark"; \
	{ command -v tcpdump || [ -x /usr/bin/tcpdump ]; } >/dev/null 2>&1 || missing="$$missing tcpdump"; \
	{ command -v ip || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; } >/dev/null 2>&1 || missing="$$missing iproute2"; \
	[ -z "$$missing" ] && exit 0; \
	echo "not found (the tests start them):$$missing: installing"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
	  echo "error: no apt-get here: install$$missing yourself (on PATH), then run make again" >&2; exit 1; \
	fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "error: installing$$missing needs root: run 'sudo apt-get install -y$$missing', then make again" >&2; exit 1; \
	fi; \
	if command -v debconf-set-selections >/dev/null 2>&1; then \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | $$sudo debconf-set-selections; \
	fi; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing \
	  || { echo "error: apt-get could not install$$missing" >&2; exit 1; }

# Fuzzing: cargo-fuzz targets in crates/fuzz (outside the workspace; corpus, artifacts and
# builds are git-ignored). `make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS='packet sol'`.
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 12
FUZZ_TARGETS ?=

.PHONY: fuzz-deps
fuzz-deps: ## install cargo-fuzz when missing (cargo install cargo-fuzz --locked)
	@$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked

.PHONY: fuzz
fuzz: fuzz-deps ## fuzz every target FUZZ_SECONDS (300) each, nightly+ASan if installed; fails on a crash
	CARGO=$(CARGO) FUZZ_TARGETS="$(FUZZ_TARGETS)" crates/fuzz/run.sh $(FUZZ_SECONDS) auto

.PHONY: fuzz-smoke
fuzz-smoke: fuzz-deps ## seed the corpora, fuzz every target 12 s (stable, no sanitizer); fails on a crash
	CARGO=$(CARGO) FUZZ_TARGETS="$(FUZZ_TARGETS)" crates/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) none

.PHONY: fuzz-python
fuzz-python: build ## the Python-layer targets (tests/support/fuzz_targets.py) under atheris, FUZZ_SECONDS each; crashes in out/fuzz-python
	$(VPY) -m pip install --quiet 'atheris>=2.3'
	@mkdir -p out/fuzz-python
	@cd out/fuzz-python && for t in amf0 amf3 packet gateway sol nested forms; do \
	  echo "atheris $$t: $(FUZZ_SECONDS) s"; \
	  $(VENV_ABS)/bin/python $(CURDIR)/crates/fuzz/atheris_fuzz.py $$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 2>&1 | tail -n 3; \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "atheris $$t: crash, input in out/fuzz-python/crash-*" >&2; exit 1; }; \
	done

.PHONY: bench
bench: build bench-deps ## build, then every benchmark: out/bench.json and the HTML report out/bench.html (ARGS='--quick', ARGS='codec --quick')
	$(VENV)/bin/amfkit bench $(ARGS) --json out/bench.json --report out/bench.html

.PHONY: bench-deps
bench-deps: ## install wrk (the gateway benchmark's load generator) when missing
	@command -v wrk >/dev/null 2>&1 && exit 0; \
	echo "wrk not found (the gateway benchmark's load generator): installing it"; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo -n"; fi; \
	$$sudo apt-get update -qq && $$sudo apt-get install -y -qq wrk >/dev/null || { \
	  echo "error: could not install wrk; install it (apt-get install wrk) and run make bench again" >&2; exit 1; }

# The TypeScript codec (js/): its build tools come from npm (package-lock.json), once.
JS_STAMP := js/node_modules/.amfkit-js.stamp

.PHONY: js-deps
js-deps: $(JS_STAMP) ## install the TypeScript codec's build tools into js/node_modules (npm ci; redone when package-lock.json changes)
	@true

$(JS_STAMP): js/package.json js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js 18 or newer with npm (apt-get install nodejs npm), then run make again" >&2; exit 1; }
	cd js && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Ruffle (its self-hosted build from npm) for tests/browser/test_ruffle.py, once.
RUFFLE_STAMP := tests/browser/ruffle/node_modules/.amfkit-ruffle.stamp

.PHONY: ruffle-deps
ruffle-deps: $(RUFFLE_STAMP) ## install Ruffle (npm @ruffle-rs/ruffle, pinned) into tests/browser/ruffle/node_modules for the Ruffle test (npm ci)
	@true

$(RUFFLE_STAMP): tests/browser/ruffle/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js 18 or newer with npm (apt-get install nodejs npm), then run make again" >&2; exit 1; }
	cd tests/browser/ruffle && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: js-build
js-build: js-deps ## type-check the TypeScript codec and bundle it into python/amfkit/browser/static/amfkit-codec.js
	cd js && npm run --silent build

.PHONY: js-test
js-test: js-deps ## the TypeScript codec's own tests (node's test runner over fixtures/)
	cd js && npm test --silent

.PHONY: lint
lint: $(VENV_STAMP) ## rustfmt --check, clippy on all targets, mypy on python/amfkit and bench/amfkit_bench for every supported CPython
	$(CARGO) fmt --all -- --check
	PYO3_PYTHON=$(VENV_ABS)/bin/python $(CARGO) clippy --workspace --all-targets -- -D warnings
	@# The standard library as each supported version has it (typeshed's version checks).
	@for v in $$($(VPY) tests/pythons/interpreters.py --supported); do \
	  echo "$(VPY) -m mypy --python-version $$v"; $(VPY) -m mypy --python-version $$v || exit 1; \
	done

.PHONY: clean
clean: ## remove build outputs and caches (keeps .venv; `make distclean` removes it too)
	-$(CARGO) clean
	rm -rf python/amfkit/_amfkit*.so python/amfkit/_amfkit*.pyd build dist .pytest_cache .mypy_cache .hypothesis $(BUILD_STAMP)
	rm -f $(PYTHONS_DIR)/*/.amfkit-*.stamp
	find python bench tests -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: distclean
distclean: clean ## clean, and remove .venv (and the other versions' .pythons/): back to a fresh clone
	rm -rf $(VENV) $(PYTHONS_DIR)

# -- every supported CPython ----------------------------------------------------------------
# The supported versions are pyproject.toml's `Programming Language :: Python :: 3.X`
# classifiers; tests/pythons/interpreters.py finds each (python3.X on PATH, or pyenv).
# Each version other than .venv's gets its own environment in .pythons/3.X and its own
# build of the extension (cargo profile `pythons`: release without the fat LTO, a third of
# the build time; one target directory, target/pythons, shared by those versions, so the
# crates that do not depend on the interpreter compile once): tests/pythons/run.sh.
# .venv's version is tested in .venv, with `make build`'s extension.
PYTHONS_DIR := .pythons
# `make test-pythons PYTHONS='3.10 3.13'`: some versions only (default: every supported one).
PYTHONS ?=
# What `make test-pythons` runs on each version: the whole suite, as `make test-python`
# runs it on .venv's (PYTHONS_TESTS='tests/codec tests/remoting' for less).
PYTHONS_TESTS ?=
# How many versions at once (tests/pythons/each.sh): one, so that the timed tests of the
# whole suite run as they do in `make test`.
PYTHONS_JOBS ?= 1

# Run tests/pythons/run.sh for each version interpreters.py finds with the arguments $(2),
# $(1) at a time (tests/pythons/each.sh); $(3): environment; $(4): the tests.
define run_pythons
	env $(3) tests/pythons/each.sh $(1) "$(2)" $(PYTEST_ARGS) $(4)
endef

.PHONY: test-pythons
test-pythons: $(VENV_STAMP) system-deps bench-deps js-deps ruffle-deps ## the whole suite on every supported CPython (PYTHONS='3.10 3.13' for some, PYTHONS_TESTS='tests/codec' for less, PYTHONS_JOBS=2 two at once); fails if one is missing
	$(call run_pythons,$(PYTHONS_JOBS),$(PYTHONS),PYTHONS_DEPS=all,$(PYTHONS_TESTS))

# Inside `make test` (its time budget): the codec, the door, and the gateway's and CLI's
# core modules (the gateway, services, Flex, HTTP, the client and the fast route; the CLI
# and `amfkit serve`/`call`), with fewer hypothesis examples (profile `pythons`), in
# environments holding only what these tests import (PYTHONS_DEPS=ends), both versions at
# once (one's tests run while the other builds). The package's type check is mypy's, for
# every supported version, in `make lint` and in `make test-pythons`.
PYTHONS_ENDS_TESTS ?= tests/codec tests/compat/test_pyamf_door.py tests/compat/test_pyamf_program.py \
  tests/remoting/test_gateway.py tests/remoting/test_services.py tests/remoting/test_gateway_flex.py \
  tests/remoting/test_gateway_http.py tests/remoting/test_client.py tests/remoting/test_gateway_fast_route.py \
  tests/remoting/test_sqlite_sessions.py \
  tests/cli/test_cli.py tests/cli/test_cli_call.py tests/cli/test_serve_servers.py \
  --deselect tests/codec/test_stub.py::test_package_type_checks

.PHONY: test-pythons-ends
test-pythons-ends: $(VENV_STAMP) ## the codec, door and core gateway/CLI tests on the oldest and the newest supported CPython, fewer generated examples (part of make test)
	$(call run_pythons,2,--ends,HYPOTHESIS_PROFILE=pythons PYTHONS_DEPS=ends,$(PYTHONS_ENDS_TESTS))

.PHONY: pyamf-suite
pyamf-suite: build ## fetch Py3AMF's sdist and run its own test suite against amfkit.compat.pyamf: how many pass, per module
	$(VPY) tests/compat/py3amf_suite.py $(ARGS)

# -- wheels -----------------------------------------------------------------------------------
# Release wheels for Linux x86_64: one per supported CPython found (the dict walk is
# version-specific, so no abi3 wheel), linked by zig against glibc 2.28 (maturin --zig,
# the `ziglang` package: no Docker, works offline once installed) so they carry the
# manylinux_2_28 tag (RHEL 8, Debian 10, Ubuntu 18.10 and newer), checked with
# auditwheel; and the sdist. .github/workflows/release.yml builds the other platforms.
WHEEL_COMPATIBILITY ?= manylinux_2_28
# The wheel tools, installed into .venv by `make wheels` only (not dev dependencies:
# nothing else needs them): zig's C toolchain as a PyPI package, and auditwheel.
WHEEL_TOOLS := 'ziglang>=0.13,<1' 'auditwheel>=6,<7'

.PHONY: wheels
wheels: $(VENV_STAMP) ## release wheels (manylinux_2_28, via zig) for every supported CPython found, and the sdist, into dist/, checked with auditwheel
	$(VPY) -m pip install --quiet $(WHEEL_TOOLS)
	rm -rf dist && mkdir -p dist
	@list="$$($(VPY) tests/pythons/interpreters.py --found)"; \
	while read -r version python; do \
	  echo "== CPython $$version: maturin build --release --zig --compatibility $(WHEEL_COMPATIBILITY)"; \
	  VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin build --quiet --release --zig \
	    --compatibility $(WHEEL_COMPATIBILITY) -i "$$python" -o dist --target-dir target/wheels </dev/null || exit 1; \
	done <<< "$$list"
	VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin sdist -o dist
	@for w in dist/*.whl; do \
	  $(VPY) -m auditwheel show "$$w" | tr '\n' ' ' | grep -q 'consistent with the following platform tag: "$(WHEEL_COMPATIBILITY)_x86_64"' \
	    || { echo "error: auditwheel does not find $$w $(WHEEL_COMPATIBILITY)" >&2; $(VPY) -m auditwheel show "$$w" >&2; exit 1; }; \
	  echo "auditwheel: $$w is $(WHEEL_COMPATIBILITY)_x86_64"; \
	done
	@ls -l dist

.PHONY: test-wheels
test-wheels: wheels ## make wheels, then install each into a fresh venv of its CPython with no cargo/rustc on PATH and run the smoke suite; build the sdist from source; install times and sizes
	$(VPY) tests/install/check_wheels.py dist

.PHONY: test-install
test-install: build ## a wheel of .venv's CPython (from make build's artifacts: seconds), installed into a fresh venv with no cargo/rustc on PATH, runs the smoke suite (part of make test)
	@rm -rf build/wheel && mkdir -p build/wheel
	VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin build --quiet --release -i $(VPY) -o build/wheel
	$(VPY) tests/install/check_wheels.py build/wheel --no-audit --no-sdist
