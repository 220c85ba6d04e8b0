#!/usr/bin/env bash
# One supported CPython version: its virtual environment .pythons/VERSION, the extension
# built for it with `maturin develop`, then pytest on the given test paths and the
# encoder's cost. The extension lands in python/amfkit/ under this version's suffix
# (_amfkit.cpython-3XX-...so), beside the other versions' (each interpreter imports only
# its own).
#
#   tests/pythons/run.sh VERSION PYTHON [PYTEST ARGS ...]     (make test-pythons runs it)
#
# PYTHONS_DEPS=all (the default): the environment gets every dev dependency, for the whole
# suite. PYTHONS_DEPS=ends: only what the tests of `make test-pythons-ends` import (their
# lines of requirements-dev.txt), a third of the install time. Either list is installed
# again when requirements-dev.txt or pyproject.toml changes.
#
# The other versions share one cargo target directory (target/pythons, profile
# `pythons`): the crates that do not depend on the interpreter (syn, amfkit-core, ...)
# compile once for all of them, and only PyO3 and amfkit-py again per version. The build
# is skipped when this version's extension is newer than every Rust source, Cargo file
# and pyproject.toml (so versions taking turns do not rebuild PyO3 each time).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

version=$1
python=$2
shift 2
deps=${PYTHONS_DEPS:-all}
venv=.pythons/$version
start=$SECONDS

say() { printf '== CPython %s: %s\n' "$version" "$*"; }

# What the tests of test-pythons-ends import, besides the standard library and amfkit (and
# maturin, which builds it). The names of requirements-dev.txt's lines: their versions
# come from there.
ENDS_PACKAGES="maturin pytest hypothesis pytest-timeout mypy py3amf httpx uvicorn httptools uvloop websockets granian defusedxml tomli"

# The version of .venv is tested in .venv, with the extension `make build` builds (the
# two would otherwise write the same python/amfkit/_amfkit.cpython-3XX-...so).
if [ -x .venv/bin/python ] && [ "$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$version" ]; then
  say "the version of .venv: make build, then pytest $*"
  make --no-print-directory build
  t_build=$((SECONDS - start))
  .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
  .venv/bin/python tests/pythons/encode_cost.py --runs 20
  say "done in $((SECONDS - start)) s (build ${t_build} s, tests $((SECONDS - start - t_build)) s)"
  exit 0
fi

case $deps in
  all) requirements=requirements-dev.txt ;;
  ends)
    requirements=$venv/requirements-ends.txt
    pattern="^($(echo "$ENDS_PACKAGES" | tr ' ' '|'))([<>=!~; \[]|$)"
    ;;
  *) echo "error: PYTHONS_DEPS is 'all' or 'ends', not '$deps'" >&2; exit 2 ;;
esac
stamp=$venv/.amfkit-venv-$deps.stamp
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pip' >/dev/null 2>&1; then
  say "creating $venv with $python"
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
if [ ! -e "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements-dev.txt -nt "$stamp" ]; then
  say "installing the $deps dev dependencies into $venv"
  if [ "$deps" = ends ]; then
    grep -E "$pattern" requirements-dev.txt > "$requirements"
  fi
  # No byte-compiling at install (what the tests import is compiled as it is imported).
  # The whole list is installed by the newest pip; the few wheels of `ends` by the
  # interpreter's own (measured: upgrading pip was 8 s of the ends' 20 s install).
  pip=("$venv/bin/python" -m pip --disable-pip-version-check)
  if [ "$deps" = all ]; then "${pip[@]}" install --quiet --upgrade pip; fi
  "${pip[@]}" install --quiet --no-compile -r "$requirements"
  # The benchmark lab, as in .venv (the tests' server helpers use its daemons module).
  "${pip[@]}" install --quiet --no-compile --no-deps -e ./bench
  touch "$stamp"
fi
t_venv=$((SECONDS - start))

suffix=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
extension=python/amfkit/_amfkit$suffix
built=$venv/.amfkit-build.stamp
newer=""
if [ -e "$built" ] && [ -e "$extension" ] && "$venv/bin/python" -c 'import amfkit' >/dev/null 2>&1; then
  newer=$(find crates -path crates/fuzz -prune -o -type f \( -name '*.rs' -o -name Cargo.toml \) -newer "$built" -print -quit)
  for f in Cargo.toml Cargo.lock pyproject.toml "$extension"; do
    if [ -e "$f" ] && [ "$f" -nt "$built" ]; then newer=$f; fi
  done
else
  newer=missing
fi
if [ -n "$newer" ]; then
  say "building the extension (profile pythons, target/pythons)"
  # One version's build at a time, from cargo until its extension is installed: cargo's
  # own lock is released before maturin copies target/pythons/pythons/lib_amfkit.so, which
  # the next version's build overwrites.
  mkdir -p target
  VIRTUAL_ENV=$PWD/$venv PATH="$PWD/$venv/bin:$PATH" flock target/pythons.lock \
    "$venv/bin/maturin" develop --quiet --profile pythons --target-dir target/pythons
  touch "$built"
else
  say "the extension $extension is up to date"
fi
t_build=$((SECONDS - start - t_venv))

say "pytest $*"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
t_test=$((SECONDS - start - t_venv - t_build))

"$venv/bin/python" tests/pythons/encode_cost.py --runs 20
say "done in $((SECONDS - start)) s (environment ${t_venv} s, build ${t_build} s, tests ${t_test} s)"
