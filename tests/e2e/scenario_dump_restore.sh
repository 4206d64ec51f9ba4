#!/usr/bin/env bash
# Scenario 1: dump the workload mid-computation, reset the mock machine (GPU state gone, as after
# a reboot), restore, and the workload finishes with the checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 3 --size 262144)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 5/"
FDS_BEFORE=$(fds_of "$WPID")
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
ls "$WORK/img" | grep -q '^amdgpu-renderD-' || fail "no render-node image written"
ls "$WORK/img" | grep -q '^amdgpu-topology.img$' || fail "no topology image written"
"$TOOL" mock reset --root "$ROOT" >/dev/null
"$TOOL" mock status --root "$ROOT" | grep -q "no open devices" || fail "reset left state behind"

criu_restore "$WORK/img"
FDS_AFTER=$(fds_of "$RPID")
[ "$FDS_BEFORE" = "$FDS_AFTER" ] || fail "the restored process's fds differ from the original's:
$(diff <(echo "$FDS_BEFORE") <(echo "$FDS_AFTER"))"
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
note "dump/restore: checksum $GOT matches the uninterrupted run"
