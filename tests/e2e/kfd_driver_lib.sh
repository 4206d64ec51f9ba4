# Shared steps of the scenarios and benchmarks on the user-space KFD driver (tests/kfd/DRIVER.md):
# a machine at ROOT that can be switched off and on again, the thunk's /dev/shm link remaps, and
# criu with CRIU's own amdgpu plugin (UPSTREAM_PLUGIN) instead of ours. Sourced after lib.sh.
DRIVER_DIR=$BUILD_DIR/tests/kfd/driver
PRELOAD=$DRIVER_DIR/libkfd_driver_preload.so
ROOT=$WORK/kfd-machine # the driver's root: root-owned and not world-writable, as kfd-driver wants

# start_driver ARGS...: a new machine at ROOT (its driver, on an empty root); sets DRIVER_PID.
start_driver() {
    rm -rf "$ROOT"
    mkdir -m 755 "$ROOT"
    "$DRIVER_DIR/kfd-driver" "$ROOT" "$@" >"$WORK/driver.out" 2>&1 &
    DRIVER_PID=$!
    STARTED_PIDS+=("$DRIVER_PID")
    wait_for_line "$WORK/driver.out" "^ready loop" 20
}
# end_driver: the machine is switched off (its loop device goes with its driver).
end_driver() {
    kill -TERM "$DRIVER_PID"
    wait "$DRIVER_PID" || fail "kfd-driver ended with status $?: $(cat "$WORK/driver.out")"
}
# upstream_criu ARGS...: criu with CRIU's own plugin, alone in its folder, the driver's preload
# in criu.
UPSTREAM_DIR=$WORK/upstream-plugin
mkdir -p "$UPSTREAM_DIR"
[ -z "${UPSTREAM_PLUGIN:-}" ] || ln -s "$UPSTREAM_PLUGIN" "$UPSTREAM_DIR/amdgpu_plugin.so"
upstream_criu() { env LD_PRELOAD="$DRIVER_DIR/libkfd_driver_criu_preload.so" "$CRIU" "$@" -L "$UPSTREAM_DIR"; }
# Run once: the plugins of the scenario and CRIU's own plugin read the machine from here.
export CRIU_AMDGPU_KFD_DRIVER=$ROOT CRIU_AMDGPU_KFD_SYSFS_ROOT=$ROOT/sysfs
# upstream_claimed LOG: CRIU's plugin dumped the workload's /dev/kfd and render node.
upstream_claimed() {
    grep -q 'Plugin "amdgpu_plugin" (version 512 hooks' "$1" || fail "criu did not load CRIU's plugin ($1)"
    grep -q "amdgpu_plugin: Dump successful" "$1" || fail "CRIU's plugin did not dump the KFD file ($1)"
    grep -q "amdgpu_plugin: amdgpu-renderD-[0-9]*.img:Opened file for write" "$1" ||
        fail "CRIU's plugin did not dump the render node ($1)"
}
# upstream_restore_stopped LOG STATUS PIDFILE: CRIU's plugin restored the KFD file, every BO's
# contents and the render node, then skipped UPDATE_VMA_MAP of a driver's node (it knows device
# VMAs only as /dev/kfd and /dev/dri/renderD*, the paths criu records on a GPU machine; the
# driver's files are nodes under ROOT/files) and criu, mapping the recorded node of the machine
# that was switched off itself, stopped there: the stand-in's limit, not an error of the plugin.
upstream_restore_stopped() {
    local log=$1 rc=$2 pidfile=$3
    [ "$rc" -ne 0 ] || fail "criu restore with CRIU's plugin succeeded where it was seen to stop at UPDATE_VMA_MAP: check every byte now"
    [ ! -s "$pidfile" ] || fail "a failed restore left a process"
    grep -qE "amdgpu_plugin: Thread\[0x[0-9a-f]+\] done num_bos:[1-9][0-9]* ret:0" "$log" ||
        fail "CRIU's plugin did not restore the BO contents ($log)"
    grep -q "amdgpu_plugin: Restore successful" "$log" || fail "CRIU's plugin did not restore the KFD file ($log)"
    grep -q "amdgpu_plugin: Restoring RenderD amdgpu-renderD-" "$log" ||
        fail "CRIU's plugin did not restore the render node ($log)"
    grep -qE "amdgpu_plugin: Skipping unsupported path:$ROOT/files/[0-9]+/(renderD[0-9]+|kfd) " "$log" ||
        fail "CRIU's plugin did not skip the driver's VMA path ($log): $(grep -a 'Error' "$log" | tail -3)"
    grep -q "Can't open vma" "$log" || fail "criu did not stop at the skipped VMA ($log): $(grep -a 'Error' "$log" | tail -3)"
}

# The thunk maps its named POSIX semaphore through the file glibc made it in and renamed away
# (/dev/shm/sem.XXXXXX, "deleted"): criu dumps such a mapping only with --link-remap, as a link
# /dev/shm/link_remap.ID that the restore removes. One left by a failed run would fail the next
# dump ("Can't link remap ... File exists"): those this dump makes go at exit.
REMAPS_BEFORE=$(ls /dev/shm | grep '^link_remap\.' || true)
remove_link_remaps() {
    local f
    for f in $(ls /dev/shm | grep '^link_remap\.' || true); do
        grep -qx "$f" <<<"$REMAPS_BEFORE" || rm -f "/dev/shm/$f"
    done
}
trap 'remove_link_remaps; cleanup' EXIT
