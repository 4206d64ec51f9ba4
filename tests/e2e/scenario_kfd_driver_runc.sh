#!/usr/bin/env bash
# runc on the KFD path (scenario_runc.sh's cell on the user-space KFD driver, tests/kfd/DRIVER.md):
# kfd-driver-workload, AMD's thunk, runs in a runc container (runc_lib.sh's bundle: pid, ipc, uts
# and mount namespaces, a read-only root with the host's /usr) given the machine's devices: the
# driver's files are block nodes of the machine's memory (a loop device, major 7) under ROOT, which
# the container's devices cgroup lets it open (b 7:* rwm); ROOT (the driver's socket, its files,
# sysfs) is reached through a bind mount of the scenario's work folder at its own path, where the
# workload's output and gate files lie too; the interposer is preloaded from the build tree
# (bound read-only), and the container has a /dev/shm of its own (the thunk's shared segment and
# named semaphore). `runc checkpoint` runs criu 4.3 with our plugin (its libdir and link-remap in
# the org.criu.config file; the driver's root through the environment runc passes to criu) at the
# workload's gate after step 3; the container is gone, the machine reset (a new driver on an
# emptied root), and `runc restore` brings it back. The driver must hold the restored queues on
# the workload's rings and its event signaled, the userptr bytes must be those dumped; the
# workload carries on checking every byte, its doorbells land in its restored queues, and it ends
# with the checksum of an uninterrupted run (kfd_driver_lib.sh's check_restored, finish_restored).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
source "$(dirname "$0")/runc_lib.sh"
# The bundle lies outside the work folder, which the container binds whole.
BUNDLE=$(mktemp -d "${TMPDIR:-/tmp}/criu-amdgpu-kfd-bundle.XXXXXX")
trap 'remove_container; remove_link_remaps; rm -rf "$BUNDLE"; cleanup' EXIT

start_driver
reference_run
CONF=$WORK/criu-runc.conf
printf 'libdir %s\nlink-remap\n' "$PLUGIN_DIR" >"$CONF"
BUNDLE_DEVICES='{"allow": true, "type": "b", "major": 7, "access": "rwm"}'
BUNDLE_MOUNTS='{"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "nodev", "mode=1777"]}'
rm -f "$WORK/go" "$WORK/end"
: >"$WORK/out.txt"
make_bundle "$BUNDLE" "$WORK" "$WORK/box" "$CONF" \
    /bin/sh -c "exec \"\$@\" >$WORK/out.txt 2>&1" workload \
    env LD_PRELOAD="$PRELOAD" CRIU_AMDGPU_KFD_DRIVER="$ROOT" CRIU_AMDGPU_KFD_SYSFS_ROOT="$ROOT/sysfs" \
    "$DRIVER_DIR/kfd-driver-workload" --steps "$STEPS" --wait-at 3 --go-file "$WORK/go" \
    --end-file "$WORK/end"
runc_run "$BUNDLE"
contained "$WPID" "the workload"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
USERPTR_DUMPED=$(userptr_digest "$WPID")
OLD_GPU=$(query "$WPID" | awk '$1 == "queue" {print $3; exit}')

runc_checkpoint "$WORK/img" "$WORK/dump-wd"
claimed "$WORK/dump-wd/dump.log"
grep -qF "values from $CONF" "$WORK/dump-wd/dump.log" || fail "criu did not read $CONF at the dump"
wait_gone "$WPID" 10
[ -z "$(runc --root "$RUNC_STATE" list -q)" ] || fail "the checkpointed container is still there"
end_driver
start_driver
GPU=$(gpu_of_minor 128)
no_processes_left

runc_restore "$BUNDLE" "$WORK/img" "$WORK/restore-wd"
contained "$RPID" "the restored workload"
grep -qF "values from $CONF" "$WORK/restore-wd/restore.log" || fail "criu did not read $CONF at the restore"
check_restored "$GPU"
finish_restored "$GPU"
end_driver
note "kfd driver in runc: checkpointed at step 3 on GPU $OLD_GPU, container gone, machine reset, restored onto GPU $GPU, every byte checked to step $STEPS, doorbells $COMPUTE/$SDMA in the restored queues, checksum $GOT"
