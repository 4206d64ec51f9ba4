#!/usr/bin/env bash
# Scenario 2: dump with --leave-running. The original keeps running, is unpaused and finishes with
# the right checksum; the images then restore (after a reset) and finish with it too.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 3 --size 131072 --steps 25)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")

# stdout goes to /dev/null: the original keeps writing after the dump, and a log file it grows
# would fail the restore's file-size check. The checksum arrives through --result.
start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --result "$WORK/result.txt"
sleep 0.8
criu_dump "$WORK/img" "$WPID" --leave-running || fail "criu dump --leave-running failed"
kill -0 "$WPID" 2>/dev/null || fail "the original process did not keep running"
"$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "the original's GPU queues stayed paused"
wait_gone "$WPID" 60
expect_result "the original after the dump"
note "leave-running: the original finished with $GOT"

restore_result "$WORK/img" "the restored copy"
note "leave-running: the restored copy finished with $GOT too"
