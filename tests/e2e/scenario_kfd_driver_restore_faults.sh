#!/usr/bin/env bash
# Restore faults on the KFD path under real criu (issue 55 item 1's sample through real criu; the
# in-process sweep of every call is tests/kfd/fault_sweep_test.cpp): kfd-driver-workload, AMD's
# thunk, dumped by criu with our plugin at its gate after step 3, the machine reset; then criu
# restores it again and again, each time with one call of the user-space KFD driver failing once
# (ROOT/faults: the fake's failCall), a sample spread over the restore: the RESTORE ioctl, the
# SDMA engine's libdrm device, the import of a restored BO's dmabuf, the submission and the
# fence of a copy, and RESUME. Each restore must fail with the plugin's error naming the step,
# the GPU where the call is a GPU's, the call and its errno, and leave nothing of the process in
# the driver (no KFD process: its BOs, queues and events went with it). Then a restore without a
# fault carries on as scenario_kfd_driver.sh's does: every byte, the doorbells, the checksum.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"

run_to_gate
criu_dump "$WORK/img" "$WPID" --link-remap || fail "criu dump failed"
wait_gone "$WPID" 10
claimed "$WORK/img/dump.log"
end_driver
start_driver
GPU=$(gpu_of_minor 128)
no_processes_left

COPY="while copying bytes 0\.\.[0-9]+ of BO [0-9]+ \([A-Z]+, [0-9]+ bytes\) of GPU $GPU from amdgpu-pages-[0-9-]+\.img: GPU $GPU"
# FAULT (NAME ERRNO, as ROOT/faults takes it) and what the plugin's error must say. RESUME comes
# last: criu has restored the process then, and its restore removes the link of the thunk's
# semaphore that every restore needs (below).
FAULTS=(
    "ioctl:RESTORE EIO|\(kfd backend, restore file\): .*restoring the KFD state of amdgpu-kfd-[0-9]+\.img \(1 GPUs, [0-9]+ BOs\): AMDKFD_IOC_CRIU_OP RESTORE failed \(Input/output error\)"
    "deviceInitialize ENODEV|\(kfd backend, restore file\): .*GPU $GPU: amdgpu_device_initialize failed \(No such device\)"
    "boImportDmabuf ENOMEM|\(kfd backend, restore file\): .*$COPY: amdgpu_bo_import of a BO's dmabuf failed \(Cannot allocate memory\)"
    "submitSdma EIO|\(kfd backend, restore file\): .*$COPY: amdgpu_cs_submit of an SDMA copy failed \(Input/output error\)"
    "waitFence ETIME|\(kfd backend, restore file\): .*$COPY: waiting for an SDMA copy \(amdgpu_cs_query_fence_status\) failed \(Timer expired\)"
    "ioctl:RESUME EIO|\(kfd backend, resume\): while resuming process [0-9]+.*AMDKFD_IOC_CRIU_OP RESUME failed \(Input/output error\)"
)
# The link criu's restore opens for the thunk's semaphore: a restore that gets as far as RESUME
# removes it (kfd_driver_lib.sh's keep_link_remap, put_back_link_remap).
keep_link_remap
n=0
for entry in "${FAULTS[@]}"; do
    fault=${entry%%|*} want=${entry#*|}
    n=$((n + 1))
    echo "$fault" >"$ROOT/faults"
    rm -f "$WORK/img/r$n.pid"
    if run_criu restore -D "$WORK/img" -v4 -o "restore-$n.log" -d --pidfile "$WORK/img/r$n.pid" \
        --link-remap 2>/dev/null; then
        STARTED_PIDS+=("$(cat "$WORK/img/r$n.pid")")
        fail "the restore with $fault failing succeeded"
    fi
    grep -qE "Error \(amdgpu\): amdgpu_plugin $want" "$WORK/img/restore-$n.log" ||
        fail "$fault: the plugin's error does not say /$want/: $(grep 'Error' "$WORK/img/restore-$n.log" | tail -3)"
    [ ! -e "$ROOT/faults" ] || fail "$fault: the driver did not take its faults file"
    no_processes_left
    put_back_link_remap
done
grep -q "killed restored process .*: its GPU work could not be resumed" "$WORK/img/restore-$n.log" ||
    fail "the process restored without RESUME was not killed: $(grep 'Error' "$WORK/img/restore-$n.log" | tail -3)"

criu_restore "$WORK/img" --link-remap
check_restored "$GPU"
finish_restored "$GPU"
end_driver
note "kfd driver restore faults: $n restores each failed by one driver call, each named in criu's log with its step, GPU and errno, none leaving a KFD process in the driver; then restored, every byte checked, checksum $GOT"
