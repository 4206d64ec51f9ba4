#!/usr/bin/env bash
# Scenario 2: dump with --leave-running. The original keeps running, is unpaused and finishes with
# the right checksum; the images then restore (after a reset) and finish with it too. The workload
# steps until the scenario is done with it (--stop-file: a fixed number of steps could end before
# or right after the dump under load, and the original be gone when it is looked for); the
# restored one takes a step and stops, the stop file there by then.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 3 --size 131072)

# stdout goes to /dev/null: the original keeps writing after the dump, and a log file it grows
# would fail the restore's file-size check. The checksum arrives through --result; the steps are
# seen on each GPU's queue: three fills, then three commands per step.
start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
wait_for_gpu_commands "$ROOT" 2 12 # step 3
criu_dump "$WORK/img" "$WPID" --leave-running || fail "criu dump --leave-running failed"
kill -0 "$WPID" 2>/dev/null || fail "the original process did not keep running"
"$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "the original's GPU queues stayed paused"
touch "$WORK/stop"
wait_gone "$WPID" 60
expect_stopped_result "$ROOT" "the original after the dump" "${ARGS[@]}"
note "leave-running: the original finished with $GOT"

restore_stopped "$WORK/img" "the restored copy"
note "leave-running: the restored copy finished with $GOT too"
