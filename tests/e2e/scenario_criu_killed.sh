#!/usr/bin/env bash
# criu itself SIGKILLed in the middle of a dump, at five points: in the middle of the pause (the
# process's driver calls held, its queues not stopped yet), right after the pause (before the GPU
# state is checkpointed), during the copy of the BO contents, after criu wrote the task's
# pages (while the device file's images are written), and during DUMP_FINISH (the unpause). Each
# point is reached by stalling that mock driver call (`mock fault --stall`), and criu is killed
# while it waits there. No plugin hook runs after that: the dump's guardian (a process outside
# criu) must release the GPU work within a second, log what it did, and leave no record; the
# workload takes new steps at once; the images left behind are refused by `image verify` as
# incomplete (killed in DUMP_FINISH, criu had written them all: verify finds them whole). Then
# criu and its guardian are killed together, and `criu-amdgpu paused` lists and releases what
# they left paused. A --leave-running dump then succeeds with nothing left for a guardian, and the
# workload ends with the checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
# What the README promises (a second); the ASan build, whose guardian is instrumented, is given
# more (GUARDIAN_LIMIT_MS, from tests/e2e/CMakeLists.txt): it took 1.2 s there under load.
LIMIT_MS=${GUARDIAN_LIMIT_MS:-1000}
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
# Steps enough to outlast every round (about 22 a round, under a sanitizer too: 120 ran out there
# before the --leave-running dump), ending in the checksum checked last.
ARGS=(--gpus 2 --buffers 2 --size 65536)
GUARDIANS=/run/criu-amdgpu
MARKER=$ROOT/faults.stalled

# last_step: the last step the workload printed.
last_step() { grep -oE 'step [0-9]+' "$WORK/out.txt" | tail -1 | awk '{print $2}'; }
# running PID: PID is alive and not a zombie (a detached guardian waits for init to reap it).
running() { grep -qE '^State:\s+[^Z]' "/proc/$1/status" 2>/dev/null; }
# criu_of PID: criu's own pid for the process started as "$CRIU": that process itself, or, under
# ASan, the one child of the sanitizer wrapper (a shell that runs criu and then reads its reports).
criu_of() {
    local child
    case "$CRIU" in
    */sanitizer/criu)
        child=$(pgrep -P "$1" | head -1)
        echo "${child:-$1}"
        ;;
    *) echo "$1" ;;
    esac
}
# paused_contexts: the mock GPU's contexts whose queues are paused.
paused_contexts() { "$TOOL" mock status --root "$ROOT" | grep -c PAUSED || true; }

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 50 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 2/"

for point in "pause:in the middle of the pause" "checkpoint:right after the pause" \
    "read-bo:during the contents copy" \
    "write-images:after the pages were written" "unpause:during DUMP_FINISH"; do
    op=${point%%:*} where=${point#*:}
    img=$WORK/img-$op
    mkdir -p "$img"
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at 1 --stall >/dev/null
    plugins=(-L "$PLUGIN_DIR")
    [ "${E2E_INSTALLED:-0}" = 1 ] && plugins=()
    "$CRIU" dump -t "$WPID" -D "$img" -v4 -o dump.log "${plugins[@]}" 2>"$img/criu-stderr.log" &
    STARTED=$! # criu or its sanitizer wrapper (run_criu, a function, would run in a subshell)
    for _ in $(seq 200); do [ -e "$MARKER" ] && break; sleep 0.05; done
    [ -e "$MARKER" ] || fail "$op: the dump never reached the $op call"
    CRIU_PID=$(criu_of "$STARTED")
    # In the middle of the pause, the process's driver calls are held and no queue is stopped yet.
    [ "$op" = pause ] || [ "$(paused_contexts)" -gt 0 ] || fail "$op: no GPU context paused at the $op call"
    GUARDIAN=$(grep -oE 'guardian [0-9]+ releases' "$img/dump.log" | awk '{print $2}')
    [ -n "$GUARDIAN" ] || fail "$op: criu's log names no guardian"
    running "$GUARDIAN" || fail "$op: the guardian $GUARDIAN is not running"
    [ -e "$GUARDIANS/paused-$CRIU_PID" ] || fail "$op: no record of the paused processes"
    steps_before=$(last_step)
    kill -9 "$CRIU_PID"
    wait "$STARTED" 2>/dev/null || true
    killed_at=$(date +%s%N)
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null # the stalled call died with criu
    for _ in $(seq 100); do [ "$(paused_contexts)" = 0 ] && break; sleep 0.02; done
    released_ms=$((($(date +%s%N) - killed_at) / 1000000))
    [ "$(paused_contexts)" = 0 ] || fail "$op: GPU contexts still paused 2 s after criu died"
    [ "$released_ms" -le "$LIMIT_MS" ] || fail "$op: the guardian took $released_ms ms (more than $LIMIT_MS ms)"
    log=$GUARDIANS/guardian-$CRIU_PID.log
    grep -q "process $WPID: unpaused" "$log" 2>/dev/null ||
        fail "$op: the guardian's log does not say it unpaused $WPID: $(cat "$log" 2>/dev/null)"
    grep -qE "mock: (context [0-9]+ of process $WPID unpaused|call gate of process $WPID opened)" "$log" ||
        fail "$op: the backend's own lines are not in the guardian's log: $(cat "$log")"
    for _ in $(seq 50); do running "$GUARDIAN" || break; sleep 0.02; done
    running "$GUARDIAN" && fail "$op: the guardian is still running after its work"
    [ -e "$GUARDIANS/paused-$CRIU_PID" ] && fail "$op: the record outlived the release"
    wait_for_line "$WORK/out.txt" "step $((steps_before + 2))/" 5
    kill -0 "$WPID" || fail "$op: the workload died with criu"
    rc=0
    "$TOOL" image verify "$img" >"$img/verify.txt" 2>&1 || rc=$?
    # 2: a dump that stopped part-way; 1: criu wrote nothing a checkpoint is made of yet. In
    # DUMP_FINISH criu has written every image (inventory.img last): the checkpoint is whole, as
    # one of --leave-running, and image verify says so.
    if [ "$op" = unpause ]; then
        [ "$rc" = 0 ] || fail "$op: image verify refused the whole dump: $(cat "$img/verify.txt")"
    else
        [ "$rc" = 2 ] || { [ "$rc" = 1 ] && grep -q "not a checkpoint" "$img/verify.txt"; } ||
            fail "$op: image verify answered $rc for the dump criu left: $(cat "$img/verify.txt")"
    fi
    rm -f "$log"
    verdict="refused (image verify exit $rc)"
    [ "$rc" = 0 ] && verdict="whole (image verify exit 0)"
    note "criu killed $where: released in $released_ms ms, workload at step $(last_step), images $verdict"
done

# criu and its guardian killed together (a whole cgroup killed): the operator's tool lists what
# is left paused and releases it.
img=$WORK/img-both
mkdir -p "$img"
"$TOOL" mock fault --root "$ROOT" --op read-bo --at 1 --stall >/dev/null
"$CRIU" dump -t "$WPID" -D "$img" -v4 -o dump.log "${plugins[@]}" 2>"$img/criu-stderr.log" &
STARTED=$!
for _ in $(seq 200); do [ -e "$MARKER" ] && break; sleep 0.05; done
[ -e "$MARKER" ] || fail "the dump never reached the read-bo call"
CRIU_PID=$(criu_of "$STARTED")
GUARDIAN=$(grep -oE 'guardian [0-9]+ releases' "$img/dump.log" | awk '{print $2}')
kill -9 "$GUARDIAN" "$CRIU_PID"
wait "$STARTED" 2>/dev/null || true
"$TOOL" mock fault --root "$ROOT" --clear >/dev/null
sleep 0.3
[ "$(paused_contexts)" -gt 0 ] || fail "nothing stayed paused with criu and its guardian killed"
LIST=$("$TOOL" paused list)
grep -q "process $WPID: paused by criu $CRIU_PID (gone), guardian $GUARDIAN (gone), mock backend" \
    <<<"$LIST" || fail "paused list does not name $WPID: $LIST"
grep -q "queues paused" <<<"$LIST" || fail "paused list shows no paused mock context: $LIST"
steps_before=$(last_step)
OUT=$("$TOOL" paused release "$WPID") || fail "paused release $WPID failed: $OUT"
grep -q "process $WPID: unpaused (mock backend)" <<<"$OUT" || fail "paused release said: $OUT"
[ "$(paused_contexts)" = 0 ] || fail "GPU contexts still paused after paused release"
[ -e "$GUARDIANS/paused-$CRIU_PID" ] && fail "paused release left the record"
wait_for_line "$WORK/out.txt" "step $((steps_before + 2))/" 5
rc=0
OUT=$("$TOOL" paused release "$WPID" 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -q "process $WPID is in no dump guardian's record" <<<"$OUT" ||
    fail "a second release (of a process in no record) answered $rc: $OUT"
rm -f "$GUARDIANS/guardian-$CRIU_PID.log"
note "criu killed with its guardian: \`criu-amdgpu paused\` listed $WPID and released it"

criu_dump "$WORK/img-leave-running" "$WPID" --leave-running || fail "the --leave-running dump failed"
grep -q "guardian [0-9]* releases" "$WORK/img-leave-running/dump.log" ||
    fail "no guardian watched the --leave-running dump"
CRIU_PID=$(grep -oE "guardian-[0-9]+\.log" "$WORK/img-leave-running/dump.log" | head -1 | tr -dc 0-9)
sleep 0.2
[ ! -e "$GUARDIANS/paused-$CRIU_PID" ] && [ ! -e "$GUARDIANS/guardian-$CRIU_PID.log" ] ||
    fail "a dismissed guardian left its record or log"
[ "$(paused_contexts)" = 0 ] || fail "GPU contexts paused after the --leave-running dump"
"$TOOL" image verify "$WORK/img-leave-running" >/dev/null || fail "the --leave-running dump does not verify"
note "a --leave-running dump: guardian dismissed, nothing left behind"

# criu killed in the middle of a restore (of a second workload's dump, into a pid namespace of its
# own beside the running workload), while the restored task writes its BO contents back. The
# task is left half-restored by criu, never to run, holding its recreated context: the tool names
# it half-restored and refuses to release it; once it is killed, its GPU memory goes with it.
FIRST=$WPID
start_workload "$WORK/out2.txt" "$WORKLOAD" --root "$ROOT" --gpus 1 --buffers 1 --size 65536 \
    --steps 1000 --step-ms 50
SECOND=$WPID WPID=$FIRST
wait_for_line "$WORK/out2.txt" "step 2/"
criu_dump "$WORK/img-second" "$SECOND" || fail "the second workload's dump failed"
wait_gone "$SECOND" 10
"$TOOL" mock fault --root "$ROOT" --op write-bo --at 1 --stall >/dev/null
"$CRIU" restore -D "$WORK/img-second" -v4 -o restore-killed.log -d \
    --pidfile "$WORK/restored.pid" "${plugins[@]}" 2>"$WORK/restore-stderr.log" &
STARTED=$!
for _ in $(seq 200); do [ -e "$MARKER" ] && break; sleep 0.05; done
[ -e "$MARKER" ] || fail "the restore never reached the write-bo call"
CRIU_PID=$(criu_of "$STARTED")
read -r _ _ TASK <"$MARKER"
kill -9 "$CRIU_PID"
wait "$STARTED" 2>/dev/null || true
"$TOOL" mock fault --root "$ROOT" --clear >/dev/null
sleep 0.3
if running "$TASK"; then
    STARTED_PIDS+=("$TASK")
    LIST=$("$TOOL" paused list)
    grep -q "of process $TASK: queues paused (half-restored by criu $CRIU_PID, gone" <<<"$LIST" ||
        fail "paused list does not name the half-restored $TASK: $LIST"
    rc=0
    OUT=$("$TOOL" paused release "$TASK" 2>&1) || rc=$?
    [ "$rc" = 2 ] && grep -q "process $TASK is in no dump guardian's record" <<<"$OUT" ||
        fail "paused release of the half-restored $TASK (in no record) answered $rc: $OUT"
    kill -9 "$TASK"
    wait_gone "$TASK" 5
    note "criu killed mid-restore: task $TASK left half-restored, named so and not released (in no record); killed"
fi
STATUS=$("$TOOL" mock status --root "$ROOT")
grep -q "pid $TASK " <<<"$STATUS" && fail "the killed restore's GPU context outlived its task: $STATUS"
note "the killed restore's GPU memory went with its task"

finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the killed dumps $GOT, expected $EXPECTED"
note "criu killed at every point left the workload running to the uninterrupted checksum $GOT"
