#!/usr/bin/env bash
# Run every fuzz target (or those in FUZZ_TARGETS) for SECONDS each, one after the other,
# then print the executions per target and any crash, timeout or OOM files it left.
# Exits 1 if any target failed.
#
#   crates/fuzz/run.sh SECONDS [auto|asan|none]
#
# asan: nightly toolchain + AddressSanitizer (build in target/asan); none: no sanitizer,
# any toolchain (stable works); auto (the default): asan when rustup has a nightly.
set -euo pipefail

seconds=${1:?usage: run.sh SECONDS [auto|asan|none]}
mode=${2:-auto}
cd "$(dirname "$0")/../.."
fuzz=crates/fuzz
cargo=${CARGO:-cargo}

if [ "$mode" = auto ]; then
  if command -v rustup >/dev/null 2>&1 && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    mode=asan
  else
    mode=none
  fi
fi
case $mode in
  asan) fuzz_cmd=("$cargo" +nightly fuzz); build=(--fuzz-dir "$fuzz" -s address --target-dir "$fuzz/target/asan") ;;
  none) fuzz_cmd=("$cargo" fuzz); build=(--fuzz-dir "$fuzz" -s none) ;;
  *) echo "run.sh: unknown mode '$mode' (auto, asan or none)" >&2; exit 2 ;;
esac

python3 "$fuzz/seed_corpus.py"
targets=${FUZZ_TARGETS:-$("${fuzz_cmd[@]}" list --fuzz-dir "$fuzz")}
echo "building the fuzz targets ($mode): ${fuzz_cmd[*]} build ${build[*]}"
"${fuzz_cmd[@]}" build "${build[@]}"

logs=$fuzz/target/logs
mkdir -p "$logs"
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
summary=()
failed=0
for t in $targets; do
  dict=$fuzz/dict/amf0.dict
  [ "$t" = amf3_value ] && dict=$fuzz/dict/amf3.dict
  log=$logs/$t.log
  echo "fuzzing $t for ${seconds}s ($mode), log in $log"
  rc=0
  "${fuzz_cmd[@]}" run "${build[@]}" "$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -dict="$dict" \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#' || true)
  found=$(find "$fuzz/artifacts/$t" -type f -newer "$stamp" 2>/dev/null | sort || true)
  status=ok
  if [ "$rc" != 0 ] || [ -n "$found" ]; then
    status="FAILED (exit $rc)"
    failed=1
    grep -E '^(thread .* panicked|==[0-9]+==ERROR|SUMMARY)' "$log" | head -n 5 | sed 's/^/    /' || true
  fi
  summary+=("$(printf '  %-12s %12s executions in %ss  %s' "$t" "${execs:-?}" "$seconds" "$status")")
  for f in $found; do summary+=("    crash file: $f"); done
done

echo "fuzz summary ($mode):"
printf '%s\n' "${summary[@]}"
if [ "$failed" = 1 ]; then
  echo "fuzzing found a failure: reproduce with ${fuzz_cmd[*]} run ${build[*]} TARGET FILE," >&2
  echo "minimize with ${fuzz_cmd[*]} tmin ${build[*]} TARGET FILE" >&2
  exit 1
fi
