#!/usr/bin/env bash
# A BO shared between two render-node processes through a dma-buf, under real criu (issue 51,
# item 4's "a BO shared with a second process"), on the amdgpu-drm backend: the PRIME cell of
# scenario_kfd_driver_render.sh's matrix (e2e.kfd_driver_render_prime.criu-4.3), sharing its
# libraries. kfd-driver-prime-client (Debian's unmodified libdrm_amdgpu, preloaded with the
# user-space driver's interposer, on a machine of render nodes only: kfd-driver --no-kfd) forks
# before it touches the GPU; each process opens renderD128 as a DRM file of its own. The exporter
# allocates a GTT BO, maps it and writes its first half, exports it (amdgpu_bo_export, dma_buf_fd)
# and passes the dma-buf over a unix socket pair to the importer, keeping its own fd; the importer
# imports it (amdgpu_bo_import), maps it in its GPU VM and by the CPU, reads the first half,
# writes the second and closes its fd, as Mesa does. criu 4.3 dumps the tree with our plugin: two
# render-node files of one BO each, one memory written once (the exporter owns it, the importer's
# BO follows with the same share key, the dma-buf's inode), and the exporter's dma-buf fd, which
# criu hands to the plugin (DUMP_EXT_FILE) and the backend recognises as a dma-buf of that BO
# (amdgpu-dmabuf_<id>.img). The machine is reset (a new driver on an empty root) and criu restores
# the tree: the exporter's BO at its handle, published through criu's fdstore; the importer's
# import of it into its handle; the exporter's dma-buf fd exported again from its restored BO.
# That fd (4) is below libdrm_amdgpu's dup of the render fd (5), as in every libdrm process that
# exports after opening its device: criu asks for it first, and the plugin has criu ask again
# (retry_needed) once the render node is restored.
# Then each process finds every byte, a write by each is read by the other (one memory), the
# exporter's new export is the dma-buf it held (the same inode: one dma-buf per BO), and the
# importer's import of it is the BO it holds (its handle).
#
# What this proves: the amdgpu-drm backend's sharing of memory between processes (bo_shares.h,
# the share exchange over criu's fdstore, dma-buf fds and their images) under criu 4.3's hooks
# with two processes restored at once, and libdrm_amdgpu's PRIME calls on the driver. How the
# driver's dma-buf stands for the kernel's (tests/kfd/DRIVER.md, "PRIME"): an fd of a block node
# of the machine's memory (ROOT/files/ID/dmabuf), which criu hands to the plugins as it hands a
# block device of no subsystem of its own (files.c: dump_unsupp_fd); a kernel's dma-buf reaches
# the same hook where its inode has no file type (before 6.15's S_IFREG for anonymous inodes),
# and the backend tells one by its /proc link ("/dmabuf:", as CRIU's plugin does; the driver's by
# its node's path). What only hardware can show: the kernel's dma-buf (its inode, its pseudo
# file system, criu's handling of it on kernels where its inode is S_IFREG), a dma-buf of another
# device or of a VRAM BO the CPU cannot map (the SDMA path through a dma-buf), and Mesa itself.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
CLIENT=$DRIVER_DIR/kfd-driver-prime-client
NODE=/dev/dri/renderD128
FILES="$ROOT/files/[0-9]+/renderD128"

expect_lines() {
    local line
    for line in "$@"; do
        grep -qE "^$line\$" "$WORK/out.txt" || fail "the client did not print \"$line\": $(tail -4 "$WORK/out.txt")"
    done
}

start_driver --no-kfd
rm -f "$WORK/go"
start_workload "$WORK/out.txt" env LD_PRELOAD="$PRELOAD" "$CLIENT" "$NODE" --go-file "$WORK/go"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
expect_lines "exporter dma-buf one per BO" "exporter dma-buf size 65536" "exporter dma-buf maps the BO" \
    "exporter always-valid export Operation not permitted" "importer imported 65536 bytes at handle 1" \
    "importer sees the exporter's bytes" "exporter sees the importer's bytes"

criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
log=$WORK/img/dump.log
require_core "$log"
grep -q "using backend amdgpu-drm" "$log" || fail "the probe did not choose amdgpu-drm"
[ "$(grep -cE "amdgpu-drm: process [0-9]+ $FILES: 1 BOs, 0 contexts, 0 syncobjs" "$log")" = 2 ] ||
    fail "the dump did not find the two processes' files of one BO each: $(grep -a 'amdgpu-drm: process' "$log")"
grep -qE "amdgpu-drm: wrote amdgpu-dmabuf_[0-9]+\.img \(BO handle 1 of $FILES\)" "$log" ||
    fail "the exporter's dma-buf fd was not dumped as a dma-buf of its BO: $(grep -a 'dmabuf' "$log" | tail -5)"
pages=$(ls "$WORK/img" | grep -c '^amdgpu-drm-pages-' || true)
[ "$pages" = 1 ] || fail "the shared BO's memory was written $pages times, not once: $(ls "$WORK/img" | grep '^amdgpu-')"

end_driver
start_driver --no-kfd
criu_restore "$WORK/img"
rlog=$WORK/img/restore.log
[ "$(grep -cE "amdgpu-drm: file id [0-9]+: renderD128 -> /dev/dri/renderD128, 1 BOs, 0 contexts, 0 syncobjs" "$rlog")" = 2 ] ||
    fail "the restore did not recreate the two files: $(grep -a 'amdgpu-drm: file id' "$rlog")"
grep -qE "amdgpu-drm: file id [0-9]+: dma-buf of BO handle 1 of file id [0-9]+" "$rlog" ||
    fail "the exporter's dma-buf fd was not restored: $(grep -a 'dma-buf' "$rlog" | tail -5)"
# The exporter's dma-buf is its fd 4, below libdrm_amdgpu's dup of the render fd (5): criu asks
# for it first, and the plugin has criu ask again once the render node is restored.
grep -qE "amdgpu-drm: file id [0-9]+: amdgpu-dmabuf_[0-9]+\.img waits for its BO \(GEM handle 1\), not restored yet" "$rlog" ||
    fail "the dma-buf was not put off until its render node was restored: $(grep -a 'dmabuf' "$rlog" | tail -5)"
touch "$WORK/go"
wait_gone "$RPID" 20
expect_lines "exporter going on" "importer going on" "exporter bytes 65536 of 65536" "importer bytes 65536 of 65536" \
    "importer sees the exporter's write" "exporter sees the importer's write" \
    "exporter dma-buf after restore the one held" "importer import after restore handle 1 the BO held" \
    "importer ok" "ok"
end_driver
note "kfd driver render node (prime): a GTT BO shared by two libdrm_amdgpu processes through a dma-buf, dumped by criu $CRIU_VERSION as one memory with the exporter's dma-buf fd, restored on a new machine: every byte in both, a write by each seen by the other, the dma-buf the BO's"
