#!/usr/bin/env bash
# A render-node-only process under real criu (issue 51, item 4), on the amdgpu-drm backend.
# kfd-driver-render-client runs what Mesa runs on Debian's unmodified libdrm_amdgpu, preloaded
# with the user-space driver's interposer, on a machine of render nodes only (kfd-driver
# --no-kfd: no /dev/kfd, as a kernel or container without KFD): device init, a GTT BO and a VRAM
# BO the CPU maps, each with known bytes, a VRAM BO made as Mesa makes its images
# (VM_ALWAYS_VALID | NO_CPU_ACCESS) filled by an SDMA copy through amdgpu_cs_submit_raw2 that
# signals a syncobj, a copy back through amdgpu_cs_submit with a BO list, a GPU context and a
# syncobj that are the second of each (the first freed). criu 4.3 dumps it with our plugin, whose
# probe chooses the amdgpu-drm backend (option kfd-driver: the backend reaches the driver's
# render nodes through its KernelInterface), and the process is gone; the machine is reset (a new
# driver on an empty root), and criu restores it as a new process. It then finds every byte of
# its CPU-mapped BOs, its old context (QUERY_STATE2 of its id) and its old syncobj (signaled)
# by their numbers, and submits an SDMA copy of the Mesa-made VRAM BO on them, which signals the
# syncobj and brings every byte back; a syncobj it makes then gets number 1, freed before the dump
# (the restore's filler there is gone), and it ends.
#
# What this proves: the amdgpu-drm backend's dump and restore, under criu 4.3's hooks, of a
# process libdrm_amdgpu made (its GEM handles, VA mappings, CPU mappings restored by criu's
# restorer at the offsets the backend answers, contents of GTT, visible VRAM and Mesa's VRAM BOs,
# contexts and syncobjs at their numbers with the kernel's lowest-free rules as the fake render
# node keeps them), and that libdrm_amdgpu's state in the restored memory works against them.
# What only hardware can show: the kernel's own answers (the fake's ioctls are written after
# amdgpu_ctx.c, drm_syncobj.c and amdgpu_gem.c, not run from them), real GPU VM faults and
# residency, SDMA engines other than the COPY_LINEAR packets the driver executes, dma-bufs
# (the driver serves no PRIME: no BO is shared between processes here), and Mesa itself.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
CLIENT=$DRIVER_DIR/kfd-driver-render-client
NODE=/dev/dri/renderD128

start_driver --no-kfd
rm -f "$WORK/go"
start_workload "$WORK/out.txt" env LD_PRELOAD="$PRELOAD" "$CLIENT" "$NODE" --go-file "$WORK/go"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
grep -qx "syncobj 2" "$WORK/out.txt" || fail "the workload's syncobj is not number 2: $(cat "$WORK/out.txt")"

criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
log=$WORK/img/dump.log
require_core "$log"
grep -q "using backend amdgpu-drm (amdgpu render node $NODE answers GEM_LIST_HANDLES)" "$log" ||
    fail "the probe did not choose amdgpu-drm: $(grep -a 'backend' "$log" | tail -5)"
grep -q "kfd: file .* claimed" "$log" && fail "the kfd backend claimed a file of a render-node-only process"
grep -qE "amdgpu-drm: process [0-9]+ $ROOT/files/[0-9]+/renderD128: 5 BOs, 1 contexts, 1 syncobjs" "$log" ||
    fail "the dump did not find the process's 5 BOs, context and syncobj: $(grep -a 'amdgpu-drm: process' "$log")"
ls "$WORK/img" | grep -q '^amdgpu-renderD-[0-9]*\.img$' || fail "no render-node image written"

# The machine is switched off: nothing of the old files, BOs, contexts or syncobjs is left.
end_driver
start_driver --no-kfd
criu_restore "$WORK/img"
grep -q "using backend amdgpu-drm" "$WORK/img/restore.log" || fail "the restore did not use amdgpu-drm"
grep -qE "amdgpu-drm: file id [0-9]+: renderD128 -> /dev/dri/renderD128, 5 BOs, 1 contexts, 1 syncobjs" "$WORK/img/restore.log" ||
    fail "the restore did not recreate the file's 5 BOs, context and syncobj: $(grep -a 'amdgpu-drm: file id' "$WORK/img/restore.log")"
touch "$WORK/go"
wait_gone "$RPID" 20
for line in "going on" "gtt 262144 of 262144 bytes" "visible vram 262144 bytes" \
    "context flags 0x0" "syncobj 2 signaled" "after restore seq [0-9]+ copy 262144 of 262144 bytes" \
    "new syncobj 1" "ok"; do
    grep -qE "^$line\$" "$WORK/out.txt" || fail "the restored process did not print \"$line\": $(tail -3 "$WORK/out.txt")"
done
end_driver
note "kfd driver render node: a libdrm_amdgpu process of 5 BOs, context 2 and syncobj 2 dumped on amdgpu-drm by criu $CRIU_VERSION, restored as a new process on a new machine, every byte checked and an SDMA copy submitted on its old context and syncobj"
