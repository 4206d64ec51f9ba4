#!/usr/bin/env bash
# podman end to end onto another machine (issue 21; the move of criu issue 2888): the container
# is given one GPU of three the podman way, as AMD's device plugin gives it (`--device` of the
# node's kfd and of that GPU's render node, nothing else of /dev/dri; the mock machine's sysfs
# shows every GPU), and the workload uses the GPUs it sees in its /dev (`--dev-dir /dev`). It is
# checkpointed with `podman container checkpoint --export` mid-computation, the machine is
# replaced by another at the same place (four GPUs with other gpu_ids; renderD131 is now the
# third GPU, not the second), and the export is restored with `podman container restore --import
# --name NEW`. podman 4.3 restores the container with the devices it was created with (the same
# render node, by name and numbers; it cannot be given others), so the plugin maps the
# checkpoint's GPU onto the new machine's GPU behind that node (not onto the first GPU, nor the
# second), and the workload, stopped then, finishes with the checksum of an uninterrupted run of as
# many steps. Before that, a restore onto a machine without that render node fails, naming what
# the container lacks. criu's options come from the file of the container's
# org.criu.config annotation (`podman run --annotation`), which the export carries to the restore.
source "$(dirname "$0")/podman_lib.sh"
CONF=$WORK/criu-podman.conf
podman_prepare "$CONF" "" 1 65536 --gpus 3 --gpu-id-base 0x2000 --render-minor-base 130
MINOR=131
SRC=$(gpu_of_render_node "$ROOT" "$MINOR")
[ -n "$SRC" ] || fail "the machine has no GPU with renderD$MINOR"
GPU_DEVICES=(--device "$ROOT/dev/kfd:/dev/kfd" --device "$ROOT/dev/dri/renderD$MINOR:/dev/dri/renderD$MINOR")
WORKLOAD_VIEW=(--dev-dir /dev)
# First onto a machine where the container's render node is no GPU (minors from 150): the
# restored container cannot be given another node, and the restore fails before touching a GPU,
# saying which nodes the container has and which it lacks.
before_move() {
    local log
    replace_machine "$ROOT" 0x3000 150
    if pm container restore --keep --import "$WORK/gpu-job.tar.gz" --name gpu-job-nowhere \
        >"$WORK/podman-restore-nowhere.log" 2>&1; then
        fail "restored onto a machine without renderD$MINOR"
    fi
    log=$(podman_criu_log gpu-job-nowhere restore.log)
    mkdir -p "$WORK/criu-nowhere" && cp "$log" "$WORK/criu-nowhere/"
    grep -q "/dev holds kfd, dri/renderD$MINOR; it was not given the device nodes of 0x3000 (renderD150)" "$log" ||
        fail "the refused restore does not say what the container has and lacks (see $log)"
    "$TOOL" mock status --root "$ROOT" | grep -q '^context ' &&
        fail "the refused restore left a context: $("$TOOL" mock status --root "$ROOT")"
    pm rm -f gpu-job-nowhere >/dev/null
}
podman_move "$CONF" "$CONF" "$SRC" 0x4000 129
WANT=$(gpu_of_render_node "$ROOT" "$MINOR")
[ "$MOVED_TO" = "$WANT" ] ||
    fail "GPU $SRC restored onto $MOVED_TO, not onto $WANT, the new machine's GPU behind renderD$MINOR"
check_system_untouched
note "podman export/import: GPU $SRC (renderD$MINOR) restored onto $MOVED_TO, the new machine's renderD$MINOR, checksum $EXPECTED after $STOPPED_AFTER steps"
