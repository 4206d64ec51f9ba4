#!/usr/bin/env bash
# Usage: run_fuzz.sh HARNESS CORPUS_DIR ARTIFACT_DIR [libFuzzer flags...]
# Fuzzes HARNESS (built with libFuzzer) starting from the committed corpus; new inputs go to a
# temporary corpus, never into the source tree. A crash, leak, timeout or out-of-memory input is
# kept in ARTIFACT_DIR (add it to CORPUS_DIR as regress-NAME once fixed). Prints libFuzzer's
# closing lines: its last status line, "Done N runs in S second(s)", the executions, executions
# per second and peak RSS, and any finding.
set -euo pipefail
harness=$1 corpus=$2 artifacts=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
# libFuzzer pulls libstdc++ in ahead of the shared ASan runtime; nothing runs before it that
# ASan would need to see.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export TMPDIR=${FUZZ_TMPDIR:-/dev/shm}
[ -d "$TMPDIR" ] || export TMPDIR=/tmp
# Address-space randomisation feeds pointer values into libFuzzer's comparison tables, so two
# runs from the same -seed would try different inputs; without it they try (nearly) the same.
norandom=()
if setarch -R true 2>/dev/null; then norandom=(setarch -R); fi
set +e
"${norandom[@]}" "$harness" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$@" "$work" "$corpus" 2>"$work.log"
rc=$?
set -e
grep -E '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|ERROR|SUMMARY|Test unit written' "$work.log" || true
if [ $rc -ne 0 ]; then
  tail -n 60 "$work.log" >&2
fi
rm -f "$work.log"
exit $rc
