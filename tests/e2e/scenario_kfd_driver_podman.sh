#!/usr/bin/env bash
# podman on the KFD path (scenario_podman_export_import.sh's cell on the user-space KFD driver,
# tests/kfd/DRIVER.md): kfd-driver-workload, AMD's thunk, runs in a podman container given the
# machine's GPUs as a ROCm user gives them, `--device /dev/kfd` and `--device
# /dev/dri/renderD<N>` of each GPU: here block nodes of the machine's memory (its loop device),
# made in the work folder. The driver's per-file nodes under ROOT are nodes of that same device,
# which the devices cgroup allows (every loop device, b 7:*: podman restores a container with the
# devices and rules it was created with, and the reset machine's memory may be another loop
# device, where a ROCm node's /dev/kfd keeps its numbers). ROOT is bound at its own path
# (podman_lib.sh's podman_run) and the work folder too, not recursively, where the workload's
# output and gate files lie; the interposer is preloaded from the build tree. The interposer maps
# the devices through the container's /dev/kfd and /dev/dri/renderD<N> (nodes of the machine's
# memory), so criu records those paths, as on a ROCm node. The container's /dev/shm is podman's
# own (a tmpfs of its userdata folder, bound in: criu leaves it out), whose files podman 4.3
# carries in the export (devshm-checkpoint.tar) and puts back before criu restores: the thunk's
# shared segment and its named semaphore, as the link criu's link-remap made of it. (A tmpfs of
# the container's own there, `--mount type=tmpfs,destination=/dev/shm`, as the runc cell has,
# fails podman 4.3's export: "Tar: Can't stat file .../userdata/devshm-checkpoint.tar", podman
# lists that file for the export but made none, its /dev/shm not being its own.)
# criu's options are the podman way, in the file of the org.criu.config annotation (`podman run
# --annotation`), which the export carries to the restore: the plugin's libdir, link-remap and
# the driver's root as plugin options (kfd-driver, kfd-sysfs-root; not the environment).
# `podman container checkpoint --export` runs criu 4.3 with our plugin at the workload's gate
# after step 3; the container is removed, the machine reset (a new driver on an emptied root),
# and `podman container restore --import` brings it back as a new container. The driver must
# hold the restored queues on the workload's rings and its event signaled, the userptr bytes must
# be those dumped; the workload carries on checking every byte, its doorbells land in its restored
# queues, and it ends with the checksum of an uninterrupted run (kfd_driver_lib.sh's
# check_restored, finish_restored) and exit code 0.
source "$(dirname "$0")/podman_lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
trap 'podman_cleanup; remove_link_remaps; cleanup' EXIT

# give_gpus: GPU_DEVICES, `--device` of /dev/kfd and of each render node the machine lists, from
# block nodes of its memory made in WORK/dev.
give_gpus() {
    local m
    device_nodes "$WORK/dev"
    GPU_DEVICES=(--device "$WORK/dev/kfd:/dev/kfd")
    for m in "${MINORS[@]}"; do
        GPU_DEVICES+=(--device "$WORK/dev/dri/renderD$m:/dev/dri/renderD$m")
    done
}

start_driver
reference_run
# From here criu's plugin finds the driver through criu's configuration only.
unset CRIU_AMDGPU_KFD_DRIVER CRIU_AMDGPU_KFD_SYSFS_ROOT
CONF=$WORK/criu-podman.conf
printf 'libdir %s\nlink-remap\nplugin-option amdgpu.kfd-driver=%s\nplugin-option amdgpu.kfd-sysfs-root=%s\n' \
    "$PLUGIN_DIR" "$ROOT" "$ROOT/sysfs" >"$CONF"
podman_setup
give_gpus
DEVICE_RULE="b 7:* rwm"
RUN_OPTIONS=(-v "$WORK:$WORK:rw,bind")
rm -f "$WORK/go" "$WORK/end"
: >"$WORK/out.txt"
podman_run kfd-job "$ROOT" "$WORK/out" "$WORK/out.txt" "$CONF" \
    env LD_PRELOAD="$PRELOAD" CRIU_AMDGPU_KFD_DRIVER="$ROOT" CRIU_AMDGPU_KFD_SYSFS_ROOT="$ROOT/sysfs" \
    "$DRIVER_DIR/kfd-driver-workload" --steps "$STEPS" --wait-at 3 --go-file "$WORK/go" \
    --end-file "$WORK/end"
WPID=$(podman_pid kfd-job)
[ -n "$WPID" ] && [ "$WPID" != 0 ] || fail "no pid for container kfd-job"
contained "$WPID" "the workload"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
USERPTR_DUMPED=$(userptr_digest "$WPID")
OLD_GPU=$(query "$WPID" | awk '$1 == "queue" {print $3; exit}')
[ -n "$OLD_GPU" ] || fail "the workload in the container has no queue in the driver: $(query "$WPID")"

podman_checkpoint kfd-job "$WORK/kfd-job.tar" "$CONF"
claimed "$DUMP_LOG"
grep -qaE "Handling VMA with .* /dev/kfd$" "$DUMP_LOG" &&
    grep -qaE "Handling VMA with .* /dev/dri/renderD[0-9]+$" "$DUMP_LOG" ||
    fail "criu did not hand the plugin the workload's mappings of /dev/kfd and a render node ($DUMP_LOG)"
LISTING=$(tar -tf "$WORK/kfd-job.tar") || fail "cannot list the export $WORK/kfd-job.tar"
grep -q '^checkpoint/amdgpu-kfd-[0-9]*\.img$' <<<"$LISTING" && grep -q '^checkpoint/amdgpu-pages-[0-9]*-' <<<"$LISTING" ||
    fail "no KFD image or BO contents in the export: $(grep amdgpu <<<"$LISTING" | tr '\n' ' ')"
SHM=$(tar -xOf "$WORK/kfd-job.tar" devshm-checkpoint.tar | tar -t) ||
    fail "no /dev/shm of the container in the export (devshm-checkpoint.tar)"
grep -qx './hsakmt_shared_mem' <<<"$SHM" && grep -qx './sem.hsakmt_semaphore' <<<"$SHM" ||
    fail "the export's /dev/shm lacks the thunk's segment or semaphore: $(tr '\n' ' ' <<<"$SHM")"
[ "$(podman_state kfd-job)" = exited ] || fail "the checkpointed container is $(podman_state kfd-job), not exited"
wait_gone "$WPID" 10
pm rm -f kfd-job >/dev/null
end_driver
start_driver
GPU=$(gpu_of_minor 128)
no_processes_left

podman_restore "$WORK/kfd-job.tar" kfd-job-restored "$CONF"
RPID=$(podman_pid kfd-job-restored)
[ -n "$RPID" ] && [ "$RPID" != 0 ] || fail "no pid for the restored container kfd-job-restored"
contained "$RPID" "the restored workload"
check_restored "$GPU"
finish_restored "$GPU"
podman_wait kfd-job-restored 20
end_driver
check_system_untouched
note "kfd driver in podman: checkpointed at step 3 on GPU $OLD_GPU with --export, container removed, machine reset, restored with --import onto GPU $GPU, every byte checked to step $STEPS, doorbells $COMPUTE/$SDMA in the restored queues, checksum $GOT"
