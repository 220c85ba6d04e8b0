#!/usr/bin/env bash
# tests/pythons/run.sh for each CPython version that tests/pythons/interpreters.py finds,
# JOBS versions at a time, every line of a version's output prefixed with its version;
# a summary at the end; exits 1 when any version failed (after all have run).
#
#   tests/pythons/each.sh JOBS "INTERPRETERS.PY ARGS" [PYTEST ARGS ...]
#
# Two at a time on two cores: while one version's pytest runs (one core), the other's
# environment is installed or its extension built (their builds share target/pythons and
# cargo's lock on it, so they take turns).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

jobs=$1
selection=$2
shift 2

list=$(.venv/bin/python tests/pythons/interpreters.py $selection)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run() {  # VERSION PYTHON: run.sh's output, prefixed, and its exit status in $logs/VERSION
  local version=$1 python=$2 status=0
  tests/pythons/run.sh "$version" "$python" "${@:3}" </dev/null 2>&1 \
    | sed -u "s/^/[$version] /" || status=$?
  echo "$status" > "$logs/$version"
}

versions=()
while read -r version python; do
  [ -n "$version" ] || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  versions+=("$version")
  run "$version" "$python" "$@" &
done <<< "$list"
wait

failed=()
for version in "${versions[@]}"; do
  status=$(cat "$logs/$version" 2>/dev/null || echo 1)
  if [ "$status" = 0 ]; then echo "== CPython $version: passed"; else echo "== CPython $version: FAILED"; failed+=("$version"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: CPython ${failed[*]} failed (their lines above are prefixed [VERSION])" >&2
  exit 1
fi
