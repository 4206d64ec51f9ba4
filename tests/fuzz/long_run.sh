#!/usr/bin/env bash
# Usage: long_run.sh BUILD_DIR NAME RUNS [SEED]
# One long run of fuzz target NAME of the sanitizer build BUILD_DIR (build-asan): RUNS executions
# from SEED (20261202 by default), through run_fuzz.sh. Its closing lines (libFuzzer's last status
# line, "Done N runs in S second(s)", the final stats: executions, executions per second, peak
# RSS; any finding) are kept in tests/fuzz/long-runs/NAME.txt beside the README, with the target,
# seed, commit, compiler and the time it finished, so that the README's table of long runs reads
# from files a run wrote. A run that finds something fails, and its lines are kept all the same.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
build=$(cd "$1" && pwd) name=$2 runs=$3 seed=${4:-20261202}
here=$(cd "$(dirname "$0")" && pwd)
harness=$build/tests/fuzz/fuzz_$name
[ -x "$harness" ] || { echo "long_run.sh: no fuzz target $harness (build it in a sanitizer build)" >&2; exit 2; }
out=$here/long-runs/$name.txt
mkdir -p "$here/long-runs"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$SECONDS
status=0
"$here/run_fuzz.sh" "$harness" "$here/corpus/$name" "$build/fuzz-artifacts/$name" \
    -seed="$seed" -runs="$runs" >"$log" 2>&1 || status=$?
{
    echo "target: $name"
    echo "asked: $runs executions from seed $seed"
    echo "commit: $commit"
    echo "compiler: $(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt") ($(sed -n 's/^CRIU_AMDGPU_SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt") sanitizer build)"
    echo "started: $started; wall time $((SECONDS - t0)) s; exit status $status"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) over $(nproc) CPUs"
    echo "closing lines:"
    sed 's/^/  /' "$log"
} >"$out"
cat "$out"
exit "$status"
