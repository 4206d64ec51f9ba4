#!/usr/bin/env bash
# Usage: run_ci_prefix.sh BUILD_DIR [NAME...]
# Runs every fuzz target (or the NAMEs given) of the sanitizer build BUILD_DIR for the whole of
# what CI's `fuzz.run.NAME` may run: the seed and execution count configured in BUILD_DIR's
# cache, with no time limit. CI stops each target at a time limit, so on any machine it runs a
# prefix of this; run it before committing a change to a parser or a harness, and CI's fuzz
# stage cannot fail on an input nobody has seen.
set -euo pipefail
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
seed=$(cache_value CRIU_AMDGPU_FUZZ_SEED)
runs=$(cache_value CRIU_AMDGPU_FUZZ_RUNS)
[ -n "$seed" ] && [ -n "$runs" ] || { echo "$build is not a fuzzing build (no CRIU_AMDGPU_FUZZ_SEED/RUNS)" >&2; exit 1; }
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for h in "$build"/tests/fuzz/fuzz_*; do names+=("${h##*/fuzz_}"); done
fi
failed=0
for name in "${names[@]}"; do
  start=$(date +%s)
  if "$here/run_fuzz.sh" "$build/tests/fuzz/fuzz_$name" "$here/corpus/$name" \
       "$build/fuzz-artifacts/$name" -seed="$seed" -runs="$runs" >"$build/fuzz-prefix-$name.log" 2>&1; then
    echo "$name: $runs runs from seed $seed clean in $(( $(date +%s) - start )) s"
  else
    echo "$name: FAILED (see $build/fuzz-prefix-$name.log and $build/fuzz-artifacts/$name)"
    failed=1
  fi
done
exit $failed
