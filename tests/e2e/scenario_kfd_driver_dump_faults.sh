#!/usr/bin/env bash
# Dump faults on the KFD path under real criu (issue 55 item 1's sample through real criu; the
# in-process sweep of every call is tests/kfd/fault_sweep_test.cpp): kfd-driver-workload, AMD's
# thunk, waits at its gate after step 3 while criu dumps it with our plugin again and again, each
# time with one call of the user-space KFD driver failing once (ROOT/faults: the fake's
# failCall), a sample spread over the dump: pausing the queues (PROCESS_INFO), the checkpoint
# ioctl, and the BO copies (the render node and libdrm device of the SDMA engine, the import of
# a BO's dmabuf, the staging buffer, the submission, the fence). Each dump must fail with the
# plugin's error naming the step, the GPU where the call is a GPU's, the call and its errno; the
# workload must be left running, no longer traced by criu, and the driver must hold its queues
# unpaused (no eviction left). Then the workload goes on from its gate: its doorbells reach its
# queues, every byte is checked to the last step, and its checksum is an uninterrupted run's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"

run_to_gate
GPU=$(gpu_of_minor 128)
BEFORE=$(query "$WPID")
grep -qx "process running evictions 0" <<<"$BEFORE" || fail "the workload's process is not running before the dumps: $BEFORE"

# FAULT (NAME ERRNO, as ROOT/faults takes it) and what the plugin's error must say.
FAULTS=(
    "ioctl:PROCESS_INFO EIO|\(kfd backend, pause\): .*pausing the GPU queues of process $WPID .*PROCESS_INFO failed \(Input/output error\)"
    "ioctl:CHECKPOINT ENOMEM|\(kfd backend, checkpoint\): .*checkpointing the KFD state of process $WPID .*CHECKPOINT failed \(Cannot allocate memory\)"
    "openRenderNode EACCES|\(kfd backend, dump file\): .*GPU $GPU: cannot open render node /dev/dri/renderD128 for SDMA copies \(Permission denied\)"
    "deviceInitialize ENODEV|\(kfd backend, dump file\): .*GPU $GPU: amdgpu_device_initialize failed \(No such device\)"
    "boImportDmabuf ENODEV|\(kfd backend, dump file\): .*of GPU $GPU .*GPU $GPU: amdgpu_bo_import of a BO's dmabuf failed \(No such device\)"
    "boFromUserMem ENOMEM|\(kfd backend, dump file\): .*GPU $GPU: amdgpu_create_bo_from_user_mem of the staging buffer failed \(Cannot allocate memory\)"
    "submitSdma EIO|\(kfd backend, dump file\): .*of GPU $GPU .*GPU $GPU: amdgpu_cs_submit of an SDMA copy failed \(Input/output error\)"
    "waitFence ETIME|\(kfd backend, dump file\): .*of GPU $GPU .*GPU $GPU: waiting for an SDMA copy \(amdgpu_cs_query_fence_status\) failed \(Timer expired\)"
)
after_failed_dump() {
    local fault=$1 state
    remove_link_remaps # a failed dump may leave its link of the thunk's semaphore
    state=$(query "$WPID")
    grep -qx "process running evictions 0" <<<"$state" || fail "$fault: the workload's queues are left paused: $state"
    [ "$(grep -c "^queue [a-z]* $GPU " <<<"$state")" = 2 ] || fail "$fault: the workload lost its queues: $state"
}
dumps_failed_by_faults "$WORK/dump" --link-remap

RPID=$WPID # the same process goes on
finish_restored "$GPU"
end_driver
note "kfd driver dump faults: $n dumps each failed by one driver call, each named in criu's log with its step, GPU and errno; the workload ran on unpaused and ended with checksum $GOT"
