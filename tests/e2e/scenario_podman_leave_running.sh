#!/usr/bin/env bash
# podman with --leave-running (issue 21): `podman container checkpoint --leave-running --export`
# of a container whose process uses the mock GPU; the original keeps running, its GPU queues
# unpaused, and finishes with the checksum of an uninterrupted run (of as many steps: the workload
# steps until the scenario stops it); the mock machine is then
# replaced by another at the same place (other gpu_ids and render minors) and the export is
# restored as a second container (`restore --import --name`), which finishes with it too. criu's
# options come from the org.criu.config annotation.
source "$(dirname "$0")/podman_lib.sh"
CONF=$WORK/criu-podman.conf
podman_prepare "$CONF" "" 2 131072
# The workload's output goes to podman's log (conmon's pipe, which criu dumps and podman gives the
# restored copy anew), not to a file of /out: the original keeps writing after the checkpoint, and
# a file it grows would fail the restore's file-size check. It steps until the scenario touches
# the stop file (STOPPABLE): a fixed 30 steps of 100 ms ran out before the checkpoint under load
# ("the original container did not keep running").
podman_run gpu-job "$ROOT" "$WORK/out" /dev/stdout "$CONF" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" \
    --step-ms 100 "${STOPPABLE[@]}"
wait_for_submissions "$ROOT" 9
podman_checkpoint gpu-job "$WORK/gpu-job.tar.gz" "$CONF" --leave-running
[ "$(podman_state gpu-job)" = running ] || fail "the original container did not keep running"
"$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "the original's GPU queues stayed paused"
podman_finish_stopped gpu-job "$WORK/original.txt"
[ "$GOT" = "$EXPECTED" ] || fail "original after the checkpoint: checksum $GOT, expected $EXPECTED"
note "podman --leave-running: the original stopped after step $STOPPED_AFTER with $GOT"

rm -f "$STOP_FILE"
replace_machine "$ROOT" 0x5000 160
podman_restore "$WORK/gpu-job.tar.gz" gpu-job-copy "$CONF"
check_remapped "$RESTORE_LOG" "$ROOT" 0x1000
podman_finish_stopped gpu-job-copy "$WORK/copy.txt"
[ "$GOT" = "$EXPECTED" ] || fail "the restored copy: checksum $GOT, expected $EXPECTED"
check_system_untouched
note "podman --leave-running: the copy restored onto GPU $MOVED_TO stopped after step $STOPPED_AFTER with $GOT"
