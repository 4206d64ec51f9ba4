#!/usr/bin/env bash
# Faults in a tree of ranks that share GPU memory (mockgpu-workload --ranks 4). A fault injected
# into one rank's part of the dump (the third rank's pause or checkpoint, a BO read of a later rank,
# the images of the third) fails the dump and leaves every rank running with its GPU unpaused; the
# tree then runs on (stopped in the end by --stop-file, with the checksums of an uninterrupted run
# of as many steps). A fault in one rank's restore (the third
# context's recreation, an import of shared memory) fails the whole restore: no rank is left
# running and nothing stays allocated on the GPU. Without the image of the rank that owns the
# shared memory, image check and the restore name it at once. The same images then restore
# cleanly: the ranks take a step, then stop with the checksums of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 4)
# The uninterrupted run the stopped tree is compared with runs on a machine of its own, as new:
# the dumps, kills and resets of this one may leave contexts the mock reclaims under it
# ("the mock GPU device of fd 5 was reset" in a reference run of e2e.ranks_pidfd under ASan).
REF=$(make_machine reference --gpus 4)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--ranks 4 --gpus 4 --size 65536)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 \
    --steps 100000 --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "rank 3: step 2/"
for fault in pause:3 checkpoint:3 read-bo:5 write-images:3; do
    op=${fault%:*} at=${fault#*:}
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at "$at" >/dev/null
    rc=0
    criu_dump "$WORK/img-$op" "$WPID" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    [ "$rc" -ne 0 ] || fail "$op: the dump succeeded despite the injected fault"
    grep -q "injected fault in $op" "$WORK/img-$op/dump.log" || fail "$op: criu's log does not name the failed step"
    kill -0 "$WPID" 2>/dev/null || fail "$op: the tree died with the failed dump"
    sleep 0.3
    STATUS=$("$TOOL" mock status --root "$ROOT")
    grep -q PAUSED <<<"$STATUS" && fail "$op: GPU queues left paused: $STATUS"
    [ "$(echo "$STATUS" | grep -c '^context ')" = 4 ] || fail "$op: a rank lost its GPU: $STATUS"
    note "$op fault in call $at: dump failed cleanly, every rank running ($(grep -oE 'rank 3: step [0-9]+' "$WORK/out.txt" | tail -1))"
done

criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
cp "$WORK/out.txt" "$WORK/out.at-dump"
for fault in restore:3 import:2; do
    op=${fault%:*} at=${fault#*:}
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at "$at" >/dev/null
    rm -f "$WORK/img/restored.pid"
    rc=0
    "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o "restore-$op.log" -d \
        --pidfile "$WORK/img/restored.pid" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    [ "$rc" -ne 0 ] || fail "$op: the restore succeeded despite the injected fault"
    grep -q "injected fault in $op" "$WORK/img/restore-$op.log" || fail "$op: criu's log does not name the failed step"
    sleep 0.5
    pgrep -f "mockgpu-workload --root $ROOT" >/dev/null && fail "$op: a half-restored rank is running"
    "$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
        fail "$op: the failed restore left GPU state behind: $("$TOOL" mock status --root "$ROOT"; ls -la "$ROOT"/state/contexts/*)"
    cmp -s "$WORK/out.txt" "$WORK/out.at-dump" || fail "$op: the failed restore ran the workload"
    note "$op fault in call $at: restore failed cleanly, nothing left running or allocated"
done

# The image of the rank that owns the shared memory removed: image check says so, and the restore
# fails at once, naming it, instead of waiting for memory that never comes.
OWNER=$("$TOOL" image show "$WORK/img" | grep -oE 'contents with amdgpu-renderD-[0-9]+\.img' | head -1 | awk '{print $3}')
[ -n "$OWNER" ] || fail "image show names no owner of shared memory"
cp -r "$WORK/img" "$WORK/img-cut"
rm "$WORK/img-cut/$OWNER"
rc=0
CHECK=$("$TOOL" image check "$WORK/img-cut" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "image check of a tree without $OWNER exited $rc: $CHECK"
grep -q "$OWNER (BO [0-9]* of amdgpu-renderD-[0-9]*.img shares memory" <<<"$CHECK" ||
    fail "image check does not name the missing owner $OWNER: $CHECK"
"$TOOL" mock reset --root "$ROOT" >/dev/null
t0=$SECONDS
rc=0
"$CRIU" restore -D "$WORK/img-cut" -L "$PLUGIN_DIR" -v4 -o restore.log -d \
    --pidfile "$WORK/img-cut/restored.pid" || rc=$?
[ "$rc" -ne 0 ] || fail "a tree without the owner of its shared memory restored"
[ $((SECONDS - t0)) -lt 60 ] || fail "the restore without $OWNER took $((SECONDS - t0)) s to fail"
# The ranks that import from it say so, unless criu ended them first for the owner's own file.
OWNER_ID=$(printf '0x%x' "$(echo "$OWNER" | grep -oE '[0-9]+')")
grep -qE "with a BO of $OWNER, which is not in the checkpoint|Unable to restore $OWNER_ID\b" \
    "$WORK/img-cut/restore.log" ||
    fail "the restore's error does not name $OWNER: $(grep -E 'Error' "$WORK/img-cut/restore.log" | tail -3)"
sleep 0.5
pgrep -f "mockgpu-workload --root $ROOT" >/dev/null && fail "a half-restored rank is running"
"$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
    fail "the restore without $OWNER left GPU state behind: $("$TOOL" mock status --root "$ROOT")"
note "without $OWNER: image check and the restore name it; nothing left running or allocated"

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_next_step "$WORK/out.txt" "rank 3"
finish_stopped "$REF" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksums after the failed dumps and restores $GOT, uninterrupted run $EXPECTED"
note "a tree of 4 ranks through failed dumps and restores, stopped after ($STOPPED_AFTER): checksums $GOT"
