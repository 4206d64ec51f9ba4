#!/usr/bin/env bash
# Scenario 4: a process with several mock devices open, and a parent and a child that both use the
# GPU: the whole tree is dumped and restored; each process takes a step more, then stops (--stop-file)
# with the checksum of an uninterrupted run of as many steps as it took.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 3)
# The uninterrupted run the stopped tree is compared with runs on a machine of its own, as new:
# the dumps, kills and resets of this one may leave contexts the mock reclaims under it
# ("the mock GPU device of fd 5 was reset" in a reference run of e2e.ranks_pidfd under ASan).
REF=$(make_machine reference --gpus 3)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 3 --buffers 2 --size 65536 --fork)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 \
    --steps 100000 --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "child: step 4/"
wait_for_line "$WORK/out.txt" "parent: step 4/"
[ "$("$TOOL" mock status --root "$ROOT" | grep -c '^context ')" = 6 ] || fail "expected 6 open devices"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
[ "$(ls "$WORK/img" | grep -c '^amdgpu-renderD-')" = 6 ] || fail "expected 6 render-node images"
"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_next_step "$WORK/out.txt" child
wait_for_next_step "$WORK/out.txt" parent
finish_stopped "$REF" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksums after restore $GOT, uninterrupted runs $EXPECTED"
note "parent+child with 3 devices each, stopped after steps ($STOPPED_AFTER): checksums $GOT"
