#!/usr/bin/env bash
# bench.parallel_restore: one checkpoint of a process using BENCH_GPUS mock GPUs (2 by default)
# of BENCH_MIB MiB each (256 by default), restored by real criu with parallel-restore and without
# it, alternately, BENCH_RUNS times each (3 by default); medians of criu's whole restore. Needs a
# criu with POST_FORKING (4.2+). Exits non-zero only when it could not measure.
# BENCH_RANKS=N measures instead the tree of a torchrun-shaped job (mockgpu-workload --ranks N):
# N processes, one GPU each, BENCH_MIB MiB per GPU in a working and a shared buffer.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
GPUS=${BENCH_GPUS:-2}
MIB=${BENCH_MIB:-256}
RUNS=${BENCH_RUNS:-3}
case "$CRIU_VERSION" in
    4.0* | 4.1*) echo "bench.parallel_restore: criu $CRIU_VERSION has no POST_FORKING: nothing to measure" >&2; exit 1 ;;
esac
RANKS=${BENCH_RANKS:-0}
if [ "$RANKS" -gt 0 ]; then
    GPUS=$RANKS
    SHAPE=(--ranks "$RANKS") WHAT="a tree of $RANKS ranks sharing memory, one GPU each"
else
    SHAPE=(--buffers 2) WHAT="a process using $GPUS mock GPUs"
fi
JOBS=$GPUS # one job per device file: per process with ranks, per GPU otherwise
ROOT=$(make_machine machine --gpus "$GPUS" --vram 16G)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" --gpus "$GPUS" "${SHAPE[@]}" \
    --size $((MIB / 2 * 1048576)) --steps 2 --step-ms 600000
wait_for_line "$WORK/out.txt" "step 1/" 600
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10

restore_once() { # restore_once PARALLEL: seconds of criu's restore
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    rm -f "$WORK/img/pid"
    local t0 s pid
    t0=$(now)
    CRIU_AMDGPU_PARALLEL_RESTORE=$1 "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 \
        -o "restore-$1.log" -d --pidfile "$WORK/img/pid" || fail "criu restore failed"
    s=$(seconds_since "$t0")
    pid=$(cat "$WORK/img/pid")
    kill -9 "$pid" 2>/dev/null || true
    wait_gone "$pid" 10
    if [ "$1" = 1 ]; then
        grep -q "parallel restore: $JOBS job(s) done" "$WORK/img/restore-1.log" ||
            fail "the parallel restore did not run its $JOBS jobs"
    else
        grep -q "handed to criu's main process" "$WORK/img/restore-0.log" &&
            fail "contents were handed over without parallel-restore"
    fi
    echo "$s"
}

serial=() parallel=()
for _ in $(seq "$RUNS"); do
    serial+=("$(restore_once 0)")
    parallel+=("$(restore_once 1)")
done
s=$(median "${serial[@]}") p=$(median "${parallel[@]}")
echo "bench.parallel_restore: criu $CRIU_VERSION, $WHAT, $MIB MiB per GPU, the same checkpoint" \
    "restored $RUNS times each way, alternately ($(conditions))"
echo "  without parallel-restore $s s (runs: ${serial[*]}), with it $p s (runs: ${parallel[*]}):" \
    "$(ratio "$s" "$p") x (target: parallel faster than serial whenever there is more than one GPU)"
faster="NOT met"
awk -v s="$s" -v p="$p" 'BEGIN { exit !(p < s) }' && faster=met
figure bench.parallel_restore "restore of $WHAT, $MIB MiB per GPU, criu $CRIU_VERSION, medians of $RUNS" \
    "with parallel-restore $p s" "without it $s s ($(ratio "$s" "$p") x)" "faster than without" "$faster"
