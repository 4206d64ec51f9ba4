#!/usr/bin/env bash
# A device subset on the KFD path under real criu (issue 50, the matrix's "device subset"): a
# container given some of a node's GPUs, as AMD's device plugin gives them (its /dev holds
# /dev/kfd and the render nodes of its GPUs, its devices cgroup refuses the others, sysfs lists
# every GPU; kfd-driver --hide-render). kfd-driver-workload, AMD's thunk, runs in a pod given
# renderD129, the second GPU of two: it uses that GPU only. criu dumps it with our plugin on the
# kfd backend. A restore onto a node whose pod was given none of its GPUs is refused before the
# process runs, naming the render nodes the pod lacks, and leaves no KFD process in the driver.
# A restore "in a new pod" on a node of four GPUs with other gpu_ids, given only renderD130, maps
# the workload onto that GPU: its queues on the workload's rings there, every byte checked to the
# last step, the doorbells in the restored queues, the checksum of an uninterrupted run.
# (scenario_device_view.sh is the mock's; the restore here needs no cgroup of the scenario's own:
# the driver's devices cgroup is the one the KFD process and the plugin's probe meet.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"

run_to_gate --gpus 2 --hide-render 128
OLD_GPU=$(gpu_of_minor 129)
BEFORE=$(query "$WPID")
[ "$(grep -c "^queue [a-z]* $OLD_GPU " <<<"$BEFORE")" = 2 ] ||
    fail "the workload does not run on its pod's GPU $OLD_GPU (renderD129): $BEFORE"
criu_dump "$WORK/img" "$WPID" --link-remap || fail "criu dump failed"
wait_gone "$WPID" 10
claimed "$WORK/img/dump.log"

# A node of two GPUs whose pod was given neither: refused, naming the nodes, nothing left.
end_driver
start_driver --gpus 2 --gpu-id-base 0x4000 --hide-render 128 --hide-render 129
rm -f "$WORK/img/refused.pid"
if run_criu restore -D "$WORK/img" -v4 -o refused.log -d --pidfile "$WORK/img/refused.pid" \
    --link-remap 2>/dev/null; then
    STARTED_PIDS+=("$(cat "$WORK/img/refused.pid")")
    fail "restored into a pod that was given no GPU"
fi
grep -q "it was not given the device nodes of .*renderD128.*renderD129" "$WORK/img/refused.log" ||
    fail "the refused restore does not name the render nodes the pod lacks: $(grep 'Error (amdgpu)' "$WORK/img/refused.log")"
no_processes_left

# A node of four GPUs whose new pod was given renderD130 only.
end_driver
start_driver --gpus 4 --gpu-id-base 0x4000 --hide-render 128 --hide-render 129 --hide-render 131
NEW_GPU=$(gpu_of_minor 130)
criu_restore "$WORK/img" --link-remap
check_restored "$NEW_GPU"
finish_restored "$NEW_GPU"
end_driver
note "kfd driver subset: the pod's GPU $OLD_GPU (renderD129 of 2) restored onto $NEW_GPU (renderD130, the one of 4 the new pod was given), refused onto a pod given none, every byte checked, checksum $GOT"
