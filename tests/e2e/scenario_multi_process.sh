#!/usr/bin/env bash
# Scenario 4: a process with several mock devices open, and a parent and a child that both use the
# GPU: the whole tree is dumped and restored and finishes with the uninterrupted checksum.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 3)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 3 --buffers 2 --size 65536 --steps 25 --fork)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100
wait_for_line "$WORK/out.txt" "child: step 4/"
wait_for_line "$WORK/out.txt" "parent: step 4/"
[ "$("$TOOL" mock status --root "$ROOT" | grep -c '^context ')" = 6 ] || fail "expected 6 open devices"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
[ "$(ls "$WORK/img" | grep -c '^amdgpu-renderD-')" = 6 ] || fail "expected 6 render-node images"
"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_line "$WORK/out.txt" "^checksum " 120
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, expected $EXPECTED"
note "parent+child with 3 devices each: checksum $GOT"
