#!/usr/bin/env bash
# One supported CPython version: its virtual environment .pythons/VERSION (made once, and
# again when pyproject.toml or requirements-dev.txt change), the extension built for it
# with `maturin develop` (cargo profile `pythons`, its own target directory, so another
# version's build does not undo this one's), then pytest on the given test paths and the
# encoder's cost. The extension lands in python/amfkit/ under this version's suffix
# (_amfkit.cpython-3XX-...so), beside the other versions' (each interpreter imports only
# its own).
#
#   tests/pythons/run.sh VERSION PYTHON [PYTEST ARGS ...]     (make test-pythons runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

version=$1
python=$2
shift 2
venv=.pythons/$version
stamp=$venv/.amfkit-venv.stamp
start=$SECONDS

say() { printf '== CPython %s: %s\n' "$version" "$*"; }

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

if [ ! -x "$venv/bin/python" ] || [ ! -e "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements-dev.txt -nt "$stamp" ]; then
  say "creating $venv with $python"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # The dev tools less those of the browser page's tests and the benchmark report, which
  # these tests do not use (the largest downloads: Playwright, matplotlib, gRPC).
  grep -v -E '^(playwright|matplotlib|rich|protobuf|grpcio-tools)([<>=!~; ]|$)' requirements-dev.txt > "$venv/requirements.txt"
  "$venv/bin/python" -m pip install --quiet -r "$venv/requirements.txt"
  touch "$stamp"
fi
t_venv=$((SECONDS - start))

say "building the extension (profile pythons, target/pythons-$version)"
VIRTUAL_ENV=$PWD/$venv PATH="$PWD/$venv/bin:$PATH" \
  "$venv/bin/maturin" develop --quiet --profile pythons --target-dir "target/pythons-$version"
t_build=$((SECONDS - start - t_venv))

say "pytest $*"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
t_test=$((SECONDS - start - t_venv - t_build))

"$venv/bin/python" tests/pythons/encode_cost.py --runs 20
say "done in $((SECONDS - start)) s (environment ${t_venv} s, build ${t_build} s, tests ${t_test} s)"
