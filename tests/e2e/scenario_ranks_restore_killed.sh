#!/usr/bin/env bash
# A task of a tree of ranks (mockgpu-workload --ranks 4) killed from outside in the middle of its
# restore: the restore is held (`mock fault --stall`) in the recreation of the third rank's GPU
# context, in the task criu is restoring it in, and that task gets SIGKILL. The restore fails,
# nothing half-restored runs, no GPU context of the failed restore stays (those the other ranks
# had recreated included), and the workload's output is untouched; the same images then restore
# cleanly: the ranks take a step, then stop (--stop-file) with the checksums of an uninterrupted
# run of as many steps.
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
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
cp "$WORK/out.txt" "$WORK/out.at-dump"

"$TOOL" mock reset --root "$ROOT" >/dev/null
"$TOOL" mock fault --root "$ROOT" --op restore --at 3 --stall >/dev/null
MARKER=$ROOT/faults.stalled
(
    rc=0
    "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o restore-killed.log -d \
        --pidfile "$WORK/img/restored.pid" || rc=$?
    echo "$rc" >"$WORK/restore.rc"
) &
RESTORER=$!
for _ in $(seq 200); do [ -e "$MARKER" ] && break; sleep 0.05; done
[ -e "$MARKER" ] || fail "the restore never reached the third context's recreation"
read -r _ call TASK <"$MARKER"
# descends_from PID ANCESTOR: true when ANCESTOR is PID's parent, grandparent, ...
descends_from() {
    local p=$1
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null)
        [ "$p" = "$2" ] && return 0
    done
    return 1
}
descends_from "$TASK" "$RESTORER" ||
    fail "the stalled restore names $TASK, not a task criu is restoring: $(cat "$MARKER")"
# criu's main process does not recreate contexts (no parallel restore here): a restored task.
[ "$(pgrep -P "$RESTORER")" != "$TASK" ] || fail "criu's own process ($TASK) stalled, not a task it restores"
kill -9 "$TASK"
note "restore held in restore call $call; the task restoring it ($TASK) killed"
rm -f "$MARKER"
wait "$RESTORER" || true
"$TOOL" mock fault --root "$ROOT" --clear >/dev/null
rc=$(cat "$WORK/restore.rc")
[ "$rc" -ne 0 ] || fail "the restore succeeded with one of its tasks killed"
sleep 0.5
pgrep -f "mockgpu-workload --root $ROOT" >/dev/null && fail "a half-restored rank is running"
STATUS=$("$TOOL" mock status --root "$ROOT")
grep -q "no open devices" <<<"$STATUS" ||
    fail "the killed restore left GPU state behind: $STATUS $(ls -la "$ROOT"/state/contexts)"
cmp -s "$WORK/out.txt" "$WORK/out.at-dump" || fail "the killed restore ran the workload"
note "the restore failed (criu exit $rc): nothing running, no GPU context left, output untouched"

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_next_step "$WORK/out.txt" "rank 3"
finish_stopped "$REF" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksums after the killed restore $GOT, uninterrupted run $EXPECTED"
note "the same images restored cleanly afterwards, stopped after ($STOPPED_AFTER): checksums $GOT"
