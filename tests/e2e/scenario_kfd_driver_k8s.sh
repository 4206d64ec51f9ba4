#!/usr/bin/env bash
# Kubernetes on the KFD path (scenario_k8s_new_pod_other_gpu.sh's cell on the user-space KFD
# driver, tests/kfd/DRIVER.md): a new pod on another GPU through containerd's CRI.
# kfd-driver-workload, AMD's thunk, runs in a pod on node A (a containerd of k8s_lib.sh) whose
# container is given one GPU as AMD's device plugin gives it: the CRI devices /dev/kfd and the
# render node of the second of two GPUs, renderD129 (block nodes of the machine's memory made in
# the work folder; the driver's per-file nodes under ROOT, bound at its own path, are nodes of the
# same device, which the devices cgroup then allows; the driver hides renderD128, as a pod's
# devices cgroup refuses it: kfd-driver --hide-render). criu's options are in the file of the
# container's org.criu.config annotation (libdir, link-remap, the driver's root as plugin options;
# not the environment). At the workload's gate after step 3, CheckpointContainer (criu 4.3 and our
# plugin through runc; the container keeps running) makes an archive, pushed to the registry as a
# checkpoint image; node A goes away with its pod. The machine is reset into another node's: four
# GPUs with other gpu_ids, its pod given renderD130 only. Node B, a new containerd, restores the
# container from the checkpoint image in a new pod: the driver must hold the restored queues on
# the workload's rings on renderD130's GPU and its event signaled, the userptr bytes must be those
# dumped; the workload carries on checking every byte, its doorbells land in its restored queues,
# and it ends with the checksum of an uninterrupted run (kfd_driver_lib.sh's check_restored,
# finish_restored) and exit status 0.
# The pods share the host's IPC namespace and /dev/shm (POD_IPC=NODE), as the workload of the
# cells without a container does: the thunk maps its named semaphore through a file glibc renamed
# away, which criu dumps only as a link it makes beside it (link-remap) and opens at the restore,
# and the thunk's shared segment is a file there too. A pod's own /dev/shm (a tmpfs of
# containerd's state) goes with the pod, and CheckpointContainer does not carry its files (criu
# finds it an external mount and dumps none of it; podman 4.3's export does carry them:
# scenario_kfd_driver_podman.sh): with POD_IPC=POD the restore in the new pod fails ("OCI runtime
# restore failed: criu failed: type NOTIFY", tried with containerd 2.1 and criu 4.3). The
# workload's output and gate files lie in a folder of the work folder given to the pod at its own
# path (GATES; a CRI mount binds recursively, and the work folder holds containerd's mounts).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
trap 'k8s_cleanup; remove_link_remaps; cleanup' EXIT
criu_has_plugin_option || fail "criu $CRIU_VERSION has no --plugin-option (the k8s cells need 4.3)"
GATES=$WORK/gates
mkdir -p "$GATES"
GPU_NODES_DIR=$WORK/dev
POD_IPC=NODE
POD_MOUNTS="{\"container_path\": $(json_string "$GATES"), \"host_path\": $(json_string "$GATES")}"

# kfd_process: the pid (as the host sees it) of the one KFD process the driver holds. A process
# that has exited (criu, whose plugin opened /dev/kfd to probe and restore) is released by the
# driver within its reap interval (200 ms), as the kernel releases a KFD process some time after
# its mm goes (a work item): so the list may take that long to come down to one.
kfd_process() {
    local pids tries=0 pid alive
    while :; do
        pids=$("$DRIVER_DIR/kfd-driver-query" "$ROOT" --processes) || fail "the driver did not list its processes"
        [ "$(wc -l <<<"$pids")" = 1 ] && [ -n "$pids" ] && break
        if ((++tries > 20)); then
            alive=""
            for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive+=" $pid"; done
            fail "the driver holds KFD processes '$(tr '\n' ' ' <<<"$pids")', not one, 2 s on (alive:${alive:- none})"
        fi
        sleep 0.1
    done
    echo "$pids"
}

start_driver --gpus 2 --hide-render 128
reference_run
no_processes_left
# From here criu's plugin finds the driver through criu's configuration only.
unset CRIU_AMDGPU_KFD_DRIVER CRIU_AMDGPU_KFD_SYSFS_ROOT
printf 'libdir %s\nlink-remap\nplugin-option amdgpu.kfd-driver=%s\nplugin-option amdgpu.kfd-sysfs-root=%s\n' \
    "$PLUGIN_DIR" "$ROOT" "$ROOT/sysfs" >"$WORK/criu.conf"
OLD_GPU=$(gpu_of_minor 129)
device_nodes "$GPU_NODES_DIR" 129
start_registry
push_images
start_node node-a
run_pod job
rm -f "$GATES/go" "$GATES/end"
: >"$GATES/out.txt"
start_container "$(gpu_devices 129)" "$WORK/criu.conf" \
    /bin/sh -c 'out=$1; shift; exec "$@" </dev/null >"$out" 2>&1' sh "$GATES/out.txt" \
    env LD_PRELOAD="$PRELOAD" CRIU_AMDGPU_KFD_DRIVER="$ROOT" CRIU_AMDGPU_KFD_SYSFS_ROOT="$ROOT/sysfs" \
    "$DRIVER_DIR/kfd-driver-workload" --steps "$STEPS" --wait-at 3 --go-file "$GATES/go" \
    --end-file "$GATES/end"
wait_for_line "$GATES/out.txt" "^waiting for $GATES/go$" 30
WPID=$(kfd_process)
contained "$WPID" "the workload"
USERPTR_DUMPED=$(userptr_digest "$WPID")
[ "$(query "$WPID" | grep -c "^queue [a-z]* $OLD_GPU ")" = 2 ] ||
    fail "the workload does not run on its pod's GPU $OLD_GPU (renderD129): $(query "$WPID")"

checkpoint_container "$WORK/checkpoint.tar"
claimed "$WORK/dump.log"
ls_archive_images | grep -q '^amdgpu-kfd-[0-9]*\.img$' || fail "no KFD image in the checkpoint archive"
checkpoint_image "$WORK/checkpoint.tar" kfd-job-checkpoint
stop_node
wait_gone "$WPID" 10
end_driver
start_driver --gpus 4 --gpu-id-base 0x4000 --hide-render 128 --hide-render 129 --hide-render 131
NEW_GPU=$(gpu_of_minor 130)
no_processes_left
device_nodes "$GPU_NODES_DIR" 130
start_node node-b
run_pod job-restored
restore_container "$(gpu_devices 130)" "$WORK/criu.conf"
RPID=$(kfd_process)
contained "$RPID" "the restored workload"
check_restored "$NEW_GPU"
finish_restored "$NEW_GPU"
wait_exited 20
end_driver
note "kfd driver under containerd: the pod's GPU $OLD_GPU (renderD129) checkpointed at step 3 by CheckpointContainer, node gone, restored as a new pod on another node's renderD130 ($NEW_GPU), every byte checked to step $STEPS, doorbells $COMPUTE/$SDMA in the restored queues, checksum $GOT"
