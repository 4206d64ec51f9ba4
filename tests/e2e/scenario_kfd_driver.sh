#!/usr/bin/env bash
# The KFD path under real criu (issue 50): kfd-driver-workload, an unmodified program on Debian's
# libhsakmt (AMD's thunk), runs on the user-space KFD driver (tests/kfd/DRIVER.md) with VRAM,
# GTT and userptr buffers, an AQL and an SDMA queue and a signal event; criu dumps it at a known
# step with our plugin on the kfd backend (option kfd-driver), the machine is reset (its driver
# ended, a new one started on an empty root: nothing of the old memory, queues or files is left),
# optionally with other gpu_ids (RESTORE_GPU_ID_BASE), and criu restores it as a new process. The
# driver must then hold the restored queues on the workload's rings on the new GPU and its
# signaled event; the workload carries on, checking every byte of its buffers at each step and
# ringing its doorbells, which the driver must find in each restored queue's doorbell; it
# allocates more, waits on its event, frees everything through the thunk's old handles, and
# prints the checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
DRIVER_DIR=$BUILD_DIR/tests/kfd/driver
PRELOAD=$DRIVER_DIR/libkfd_driver_preload.so
ROOT=$WORK/kfd-machine # the driver's root: root-owned and not world-writable, as kfd-driver wants
STEPS=8

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
# query PID: the driver's queues and events of PID (kfd-driver-query).
query() { "$DRIVER_DIR/kfd-driver-query" "$ROOT" "$1" || fail "the driver has nothing of process $1"; }
# workload ARGS...: the workload on the machine, the thunk's calls through the driver's interposer.
workload() { env LD_PRELOAD="$PRELOAD" "$DRIVER_DIR/kfd-driver-workload" "$@"; }

export CRIU_AMDGPU_KFD_DRIVER=$ROOT CRIU_AMDGPU_KFD_SYSFS_ROOT=$ROOT/sysfs
start_driver
EXPECTED=$(workload --steps "$STEPS" | awk '/^checksum /{print $2}')
[ -n "$EXPECTED" ] || fail "the uninterrupted run printed no checksum"

rm -f "$WORK/go" "$WORK/end"
start_workload "$WORK/out.txt" env LD_PRELOAD="$PRELOAD" "$DRIVER_DIR/kfd-driver-workload" \
    --steps "$STEPS" --wait-at 3 --go-file "$WORK/go" --end-file "$WORK/end"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go" 20
OLD_GPU=$(query "$WPID" | awk '$1 == "queue" {print $3; exit}')
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
criu_dump "$WORK/img" "$WPID" --link-remap || fail "criu dump failed"
wait_gone "$WPID" 10
require_core "$WORK/img/dump.log"
grep -q "kfd: file $ROOT/files/[0-9]*/kfd (id [0-9]*) claimed" "$WORK/img/dump.log" ||
    fail "the plugin did not claim the workload's /dev/kfd"
grep -q "kfd: file $ROOT/files/[0-9]*/renderD[0-9]* (id [0-9]*) claimed" "$WORK/img/dump.log" ||
    fail "the plugin did not claim the workload's render node"
ls "$WORK/img" | grep -q '^amdgpu-kfd-' || fail "no KFD image written"

end_driver
if [ -n "${RESTORE_GPU_ID_BASE:-}" ]; then start_driver --gpu-id-base "$RESTORE_GPU_ID_BASE"; else start_driver; fi
criu_restore "$WORK/img" --link-remap
# Right after the restore (the workload still waits at its gate): both queues on the workload's
# rings, on the GPU it was restored onto, and its event still signaled.
AFTER=$(query "$RPID")
want_gpu=$(printf '0x%x' "${RESTORE_GPU_ID_BASE:-$OLD_GPU}")
for kind in compute sdma; do
    ring=$(awk -v k="$kind" '$1 == "queue" && $2 == k {print $3}' "$WORK/out.txt")
    grep -qx "queue $kind $want_gpu $ring [0-9a-z]*" <<<"$AFTER" ||
        fail "no restored $kind queue on ring $ring of GPU $want_gpu: $AFTER"
done
[ "$(grep -c '^queue ' <<<"$AFTER")" = 2 ] || fail "the restored process has other queues: $AFTER"
event=$(awk '$1 == "event" {print $2}' "$WORK/out.txt")
grep -qx "event $event signaled" <<<"$AFTER" || fail "event $event is not restored signaled: $AFTER"

touch "$WORK/go"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/end" 20
read -r _ COMPUTE SDMA < <(grep '^rang ' "$WORK/out.txt")
RUNG=$(query "$RPID")
grep -qx "queue compute $want_gpu [0-9a-fx]* $COMPUTE" <<<"$RUNG" ||
    fail "the compute queue's doorbell does not hold $COMPUTE, the value rung after the restore: $RUNG"
grep -qx "queue sdma $want_gpu [0-9a-fx]* $SDMA" <<<"$RUNG" ||
    fail "the SDMA queue's doorbell does not hold $SDMA, the value rung after the restore: $RUNG"
touch "$WORK/end"
wait_gone "$RPID" 20
grep -q '^done$' "$WORK/out.txt" || fail "the restored workload failed: $(tail -3 "$WORK/out.txt")"
GOT=$(awk '/^checksum /{print $2}' "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
[ -z "$("$DRIVER_DIR/kfd-driver-query" "$ROOT" "$RPID" 2>/dev/null | grep -E "^(queue|event) ")" ] || fail "the driver still holds queues or events of the ended workload"
end_driver
note "kfd driver: dumped at step 3 on GPU $OLD_GPU, restored onto GPU $want_gpu, every byte checked to step $STEPS, doorbells $COMPUTE/$SDMA in the restored queues, checksum $GOT"
