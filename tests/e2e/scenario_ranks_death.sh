#!/usr/bin/env bash
# A rank of a tree that shares GPU memory (mockgpu-workload --ranks 4) dies in the middle of a
# dump, not by an injected fault but from outside, at an exact point that a stalled mock call
# holds the dump at (`mock fault --stall`):
#   RANK_DEATH=killed: every rank paused and frozen, the dump held before the checkpoint of the
#     first rank's device; one rank that criu has paused but not checkpointed gets SIGKILL.
#   RANK_DEATH=exited: the dump held in the pause of the last rank (the others are paused and
#     stopped by criu); that rank, which criu has not stopped yet, gets SIGTERM (how torchrun's
#     agent ends a rank) and exits before criu stops it. It is the last rank the launcher reads
#     from: the restored tree ends on it only after the others' next step, once criu has let
#     every task go (a tree that ended at once would fail criu's restore as it detaches).
# Killed, the dump fails; exited, criu dumps the rank as a zombie and the dump succeeds (then the
# restored tree is checked). Either way no rank is left paused (the mock's paused markers, then
# `mock status`), and the tree ends as the workload's contract for a dead peer says: the launcher
# finds the rank gone and ends, and so does every rank, leaving nothing on the GPU.
source "$(dirname "$0")/lib.sh"
DEATH=${RANK_DEATH:?RANK_DEATH must be killed or exited}
ROOT=$(make_machine machine --gpus 4)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--ranks 4 --gpus 4 --size 65536 --steps 400 --step-ms 300)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}"
wait_for_line "$WORK/out.txt" "rank 3: step 2/"
mapfile -t RANKS < <(pgrep -P "$WPID" | sort -n)
[ "${#RANKS[@]}" = 4 ] || fail "expected 4 ranks under the launcher $WPID, found: ${RANKS[*]}"

case $DEATH in
killed) "$TOOL" mock fault --root "$ROOT" --op checkpoint --at 1 --stall >/dev/null ;;
exited) "$TOOL" mock fault --root "$ROOT" --op pause --at 4 --stall >/dev/null ;;
*) fail "RANK_DEATH=$DEATH: must be killed or exited" ;;
esac
MARKER=$ROOT/faults.stalled
rc_file=$WORK/dump.rc
(
    rc=0
    criu_dump "$WORK/img" "$WPID" || rc=$?
    echo "$rc" >"$rc_file"
) &
DUMPER=$!
for _ in $(seq 200); do [ -e "$MARKER" ] && break; sleep 0.05; done
[ -e "$MARKER" ] || fail "the dump never reached the stalled call: $(tail -3 "$WORK/img/dump.log" 2>/dev/null)"
read -r op call _ <"$MARKER"

traced() { awk '/^TracerPid:/{print $2}' "/proc/$1/status" 2>/dev/null; }
STATUS=$("$TOOL" mock status --root "$ROOT")
case $DEATH in
killed)
    # Every rank is paused and stopped by criu; the last one is killed before its device's
    # checkpoint.
    [ "$(echo "$STATUS" | grep -c PAUSED)" = 4 ] || fail "not every rank paused at the stall: $STATUS"
    VICTIM=${RANKS[3]}
    [ "$(traced "$VICTIM")" != 0 ] || fail "rank $VICTIM is not stopped by criu at the stall"
    kill -9 "$VICTIM"
    for _ in $(seq 100); do grep -q '^State:.*Z' "/proc/$VICTIM/status" 2>/dev/null && break; sleep 0.05; done
    grep -q '^State:.*Z' "/proc/$VICTIM/status" || fail "rank $VICTIM did not die of SIGKILL"
    ;;
exited)
    # Three ranks paused and stopped; the one criu has not stopped yet is ended with SIGTERM.
    [ "$(echo "$STATUS" | grep -c PAUSED)" = 3 ] || fail "not 3 ranks paused at the stall: $STATUS"
    VICTIM=""
    for r in "${RANKS[@]}"; do [ "$(traced "$r")" = 0 ] && { VICTIM=$r; break; }; done
    [ -n "$VICTIM" ] || fail "every rank is stopped by criu at the stall of $op call $call"
    kill -TERM "$VICTIM"
    for _ in $(seq 100); do grep -q '^State:.*Z' "/proc/$VICTIM/status" 2>/dev/null && break; sleep 0.05; done
    grep -q '^State:.*Z' "/proc/$VICTIM/status" || fail "rank $VICTIM did not exit on SIGTERM"
    ;;
esac
note "dump held in $op call $call; rank $VICTIM $DEATH"
rm -f "$MARKER"
wait "$DUMPER" || true
rc=$(cat "$rc_file")
"$TOOL" mock fault --root "$ROOT" --clear >/dev/null

# the_tree_ends PID WHEN CONTEXTS: the tree under PID runs again unpaused, and ends on its dead
# peer. The launcher is the first process of the tree's pid namespace, so when it ends the kernel
# ends every rank, paused or not: the proof that no queue stayed paused is the mock's own state,
# read before anything reaps it (its CONTEXTS contexts, the dead rank's among them, none with
# the paused marker), then `mock status`.
the_tree_ends() {
    local pid=$1 when=$2 contexts=$3 status dirs
    dirs=$(ls -d "$ROOT"/state/contexts/[0-9]* 2>/dev/null | wc -l)
    [ "$dirs" = "$contexts" ] || fail "$when: $dirs mock contexts, expected $contexts: $(ls "$ROOT"/state/contexts)"
    ls "$ROOT"/state/contexts/[0-9]*/paused >/dev/null 2>&1 &&
        fail "$when: GPU queues left paused: $(ls "$ROOT"/state/contexts/[0-9]*/paused)"
    status=$("$TOOL" mock status --root "$ROOT")
    grep -q PAUSED <<<"$status" && fail "$when: GPU queues left paused: $status"
    wait_gone "$pid" 20
    pgrep -f "mockgpu-workload --root $ROOT" >/dev/null &&
        fail "$when: a rank still runs after its launcher ended: $(pgrep -af "mockgpu-workload --root $ROOT")"
    # The launcher (pid 1 of the namespace) says how it found the rank gone: "the peer went
    # away" when it reads from it, a broken pipe or a reset when it writes to it.
    grep -qE '^mockgpu-workload\[1\]: .*(went away|Broken pipe|Connection reset)' "$WORK/out.txt" ||
        fail "$when: the launcher does not say that a rank went away: $(tail -5 "$WORK/out.txt")"
    status=$("$TOOL" mock status --root "$ROOT")
    grep -q "no open devices" <<<"$status" || fail "$when: GPU state left behind: $status"
}

case $DEATH in
killed)
    # criu cannot dump a task that died while it held it.
    [ "$rc" -ne 0 ] || fail "the dump succeeded with rank $VICTIM killed while criu held it"
    note "the dump failed (criu exit $rc): $(grep -E 'Error' "$WORK/img/dump.log" | grep -v RLIMIT | head -1)"
    [ "$(grep -c 'amdgpu: mock: process [0-9]* unpaused (dump failed)' "$WORK/img/dump.log")" = 4 ] ||
        fail "the plugin did not unpause the 4 ranks: $(grep 'unpaused' "$WORK/img/dump.log")"
    the_tree_ends "$WPID" "after the failed dump" 4
    note "every rank unpaused (the plugin logs it, no paused marker), the tree ended on the dead peer; no GPU state left"
    ;;
exited)
    # A rank that exited before criu stopped it is a zombie, which criu dumps as one: the dump
    # succeeds, the plugin checkpoints the live ranks only (the exited rank was paused, never
    # checkpointed, and its shared memory is owned by a rank that imported it), and criu ends
    # the tree. The restored tree must behave as the original would have: every rank runs
    # unpaused and the tree ends on the dead peer, leaving nothing on the GPU.
    [ "$rc" -eq 0 ] || fail "the dump of a tree with an exited rank failed (criu exit $rc)"
    grep -q "Obtaining zombie stat" "$WORK/img/dump.log" || fail "criu did not dump rank $VICTIM as a zombie"
    grep -q "process $VICTIM checkpointed" "$WORK/img/dump.log" && fail "the exited rank $VICTIM was checkpointed"
    [ "$(grep -c 'amdgpu: mock: process [0-9]* checkpointed' "$WORK/img/dump.log")" = 3 ] ||
        fail "not the 3 live ranks checkpointed: $(grep 'checkpointed' "$WORK/img/dump.log")"
    wait_gone "$WPID" 10
    "$TOOL" image check "$WORK/img" >/dev/null 2>&1 ||
        fail "image check of the dump with a zombie rank: $("$TOOL" image check "$WORK/img" 2>&1 | tail -3)"
    note "the dump succeeded with rank $VICTIM as a zombie; 3 ranks checkpointed"
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    criu_restore "$WORK/img"
    the_tree_ends "$RPID" "after the restore" 3
    note "the restored tree resumed unpaused and ended on the dead peer; no GPU state left"
    ;;
esac
