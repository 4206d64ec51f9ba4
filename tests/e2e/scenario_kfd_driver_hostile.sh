#!/usr/bin/env bash
# Hostile restore on the KFD path (scenario_hostile_restore.sh's cell on the user-space KFD
# driver, tests/kfd/DRIVER.md): kfd-driver-workload, AMD's thunk, is dumped by real criu with our
# plugin at its gate after step 3, once plainly (--leave-running: CRIU's layout, a pages file per
# GPU) and once with content-encryption aes-256-gcm and zstd (a sealed file per BO); the machine
# is reset. Copies of the checkpoints are then crafted as a registry could serve them, in the
# ways that matter for a KFD image:
#   size       a BO's size in amdgpu-kfd-ID.img grown by a page: refused before any BO is made,
#              the pages checksum recorded for the GPU covering other bytes than its BOs
#              (kfd_images.cpp, checkPagesChecksums);
#   gpu        a BO moved to a gpu_id its image's device list does not have (readKfdImage);
#   offset     a BO's mmap offset in amdgpu-kfd-ID.img moved by 1 MiB: the process's mapping of the
#              BO, at the BO's address, then has another offset than the image records for it,
#              refused at UPDATE_VMA_MAP naming both offsets and the image (kfd_restore.cpp,
#              updateVmaMapImpl; answering "not ours" had criu open the recorded path itself:
#              "Can't open file .../files/ID/renderD128 on restore" on the driver). criu has then
#              consumed the link of the thunk's semaphore, which is put back for the next restore;
#   truncated  the GPU's pages file cut short by a page: refused before any BO is made, its
#              bytes after the size header not what its BOs hold (checkContentsSize; without it
#              the copy fails later on a short read, which this entry tells apart);
#   changed    a byte of the pages file flipped, its size kept: the GPU's XXH3-64 checksum
#              (restore_lane.cpp, verifyChecksum);
#   swapped    the frames of two BOs' sealed files of the encrypted checkpoint swapped, each file
#              keeping its size header, restored with the key: the AEAD of each frame, whose
#              associated data names its file and size (formats/content_cipher.h);
#   stripped   the encrypted checkpoint with its key image removed, restored where
#              content-private-key is set (formats/content_keys.cpp: such a node restores only
#              encrypted checkpoints; a checkpoint in the clear is refused by the same check).
# Each entry was checked to fail with its defence removed, but swapped (the AEAD cannot be removed
# without the encryption).
# Real criu restores each: it must fail within 60 s, criu's log naming the file and field, no
# process restored, nothing made beside the crafted copy, and the driver holding no KFD process
# (so no BO, queue or event) afterwards (lib.sh's restore_refused). Then the untouched plain
# checkpoint restores and the workload carries on as scenario_kfd_driver.sh's: every byte, the
# doorbells in its restored queues, the checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
CRAFT=$BUILD_DIR/tests/e2e/e2e-kfd-image-craft

run_to_gate
criu_dump "$WORK/img" "$WPID" --link-remap --leave-running || fail "the plain dump failed"
claimed "$WORK/img/dump.log"
make_content_keys
encrypted_dump "$WORK/sealed" "$WPID" --link-remap || fail "the encrypted dump (zstd, aes-256-gcm) failed"
wait_gone "$WPID" 10
# The link of the thunk's semaphore, which every restore opens (the offset case removes it): the
# --leave-running dump removed its own, the second made it again under the same name (the file's
# id in both).
keep_link_remap
end_driver
start_driver
GPU=$(gpu_of_minor 128)
no_processes_left

KFD=$(cd "$WORK/img" && ls amdgpu-kfd-*.img)
PAGES=$(cd "$WORK/img" && ls amdgpu-pages-*.img)
[ "$(wc -w <<<"$KFD $PAGES")" = 2 ] || fail "the plain dump holds not one KFD image and one pages file: $KFD $PAGES"
# A BO with contents in the pages file (VRAM or GTT: alloc_flags' VRAM 0x1 or GTT 0x2 bit).
BO=""
while read -r _ index _ size offset flags addr; do
    if ((flags & 3)); then BO=$index BO_SIZE=$size BO_OFFSET=$offset BO_ADDR=$addr && break; fi
done < <("$CRAFT" "$WORK/img/$KFD")
[ -n "$BO" ] || fail "$KFD lists no BO with contents: $("$CRAFT" "$WORK/img/$KFD")"
SEALED=($(cd "$WORK/sealed" && ls amdgpu-packed-kfd-bo-*))
[ "${#SEALED[@]}" -ge 2 ] || fail "the encrypted dump holds fewer than two sealed BO files: ${SEALED[*]}"
[ -f "$WORK/sealed/amdgpu-seal.img" ] || fail "the encrypted dump holds no key image"

# refused NAME WHAT [--key]: criu restore of the crafted copy NAME (with content-private-key set
# where --key is given) is refused naming WHAT (lib.sh's restore_refused).
refused() {
    (
        [ "${3:-}" != --key ] || export CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key
        restore_refused "$WORK/$1" "$2" --link-remap
    )
}

craft_copy "$WORK/img" offset "$CRAFT" "$KFD" "$BO" offset $((BO_OFFSET + 0x100000))
refused offset "kfd: the mapping at $BO_ADDR of "
grep -qE "has offset $BO_OFFSET, and $KFD records the BO mapped there at offset $(printf '0x%x' $((BO_OFFSET + 0x100000)))" \
    "$WORK/offset/restore.log" ||
    fail "the offset case does not name both offsets and $KFD: $(grep -a 'Error (amdgpu)' "$WORK/offset/restore.log")"
put_back_link_remap
craft_copy "$WORK/img" size "$CRAFT" "$KFD" "$BO" size $((BO_SIZE + 4096))
refused size "pages file $PAGES: its checksum covers"
craft_copy "$WORK/img" gpu "$CRAFT" "$KFD" "$BO" gpu_id 0x7777
refused gpu "image $KFD is inconsistent: BO $BO is on GPU 0x7777, which is not in its device list"
craft_copy "$WORK/img" truncated truncate -s -4096 "$PAGES"
refused truncated "image $PAGES is truncated: it holds"
craft_copy "$WORK/img" changed flip_byte "$PAGES" 4096
refused changed "$PAGES is corrupt"
# Each file keeps its size header (its first 8 bytes) and takes the other's frames.
swap_frames() {
    { head -c 8 "$1" && tail -c +9 "$2"; } >swap.1
    { head -c 8 "$2" && tail -c +9 "$1"; } >swap.2
    mv swap.1 "$1" && mv swap.2 "$2"
}
craft_copy "$WORK/sealed" swapped swap_frames "${SEALED[0]}" "${SEALED[1]}"
refused swapped "${SEALED[0]}: frame 0" --key
grep -q "${SEALED[0]}: frame 0 .*does not authenticate" "$WORK/swapped/restore.log" ||
    fail "the swapped frame was not refused by its authentication: $(grep -a 'Error (amdgpu)' "$WORK/swapped/restore.log")"
craft_copy "$WORK/sealed" stripped rm amdgpu-seal.img
refused stripped "amdgpu-seal.img is missing, and content-private-key is set" --key

criu_restore "$WORK/img" --link-remap
check_restored "$GPU"
finish_restored "$GPU"
end_driver
note "kfd driver hostile restore: 7 crafted checkpoints refused, each naming its file and field, none leaving a KFD process in the driver; then the untouched one restored, every byte checked, checksum $GOT"
