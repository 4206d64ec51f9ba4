#!/usr/bin/env bash
# Scenario 6: a fault injected into each dump step in turn (DUMP_FAULT_OPS, default all of them).
# Each dump fails cleanly with an error naming the GPU step, the process keeps running with its
# GPU unpaused, and it finishes its computation with the uninterrupted checksum. The workload
# steps until the faults are done (--stop-file: a fixed number of steps ran out before the fourth
# dump under ASan and load), and its checksum is then that of an uninterrupted run of as many.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 2 --size 65536)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --steps 100000 --step-ms 100 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 2/"
for op in ${DUMP_FAULT_OPS:-pause checkpoint read-bo write-images}; do
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at 1 >/dev/null
    rc=0
    criu_dump "$WORK/img-$op" "$WPID" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    [ "$rc" -ne 0 ] || fail "$op: the dump succeeded despite the injected fault"
    grep -q "injected fault in $op" "$WORK/img-$op/dump.log" || fail "$op: criu's log does not name the failed step"
    kill -0 "$WPID" 2>/dev/null || fail "$op: the process died with the failed dump"
    sleep 0.3
    "$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "$op: GPU queues left paused"
    step=$(grep -oE 'step [0-9]+' "$WORK/out.txt" | tail -1)
    note "$op fault: dump failed cleanly, process running ($step)"
done
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the failed dumps $GOT, expected $EXPECTED"
note "all injected dump faults left the workload intact: checksum $GOT"
