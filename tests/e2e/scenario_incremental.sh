#!/usr/bin/env bash
# Incremental checkpoints (issue 23), with real criu: a workload shaped like an inference server
# (60% of its buffers weights, 30% never written, 10% rewritten at every step) is dumped three
# times with --leave-running, each dump against the one before (option parent-images). The second
# and third hold only what changed; image show and image verify follow the chain. A dump against a
# parent that fails (an injected fault, then a full disk) leaves the parent unchanged and the
# workload running, unpaused. A chain whose middle checkpoint is gone refuses to restore and names
# the missing record; put back, after a GPU reset, the third restores and finishes with the
# checksum of an uninterrupted run. The workload steps until the scenario is done with it
# (--stop-file); each restored one takes a step and stops, as the stop file is there by then.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 10 --size 2M --shape inference)

# fingerprint DIR: the checksums of the amdgpu files of DIR, to see that a failed dump left it be.
fingerprint() { (cd "$1" && sha256sum amdgpu-*); }
running_unpaused() {
    kill -0 "$WPID" 2>/dev/null || fail "$1: the workload is not running"
    if "$TOOL" mock status --root "$ROOT" | grep -q PAUSED; then
        fail "$1: the workload's GPU queues stayed paused"
    fi
}

start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
# The steps are counted on the GPU's queue (wait_for_gpu_commands: one command a step, the one
# buffer of ten rewritten): two steps, then a step more before each dump against its parent.
wait_for_gpu_commands "$ROOT" 1 2
criu_dump "$WORK/d1" "$WPID" --leave-running || fail "the first dump failed"
wait_for_gpu_commands "$ROOT" 1 $(($(gpu_commands_completed "$ROOT") + 1))
CRIU_AMDGPU_PARENT_IMAGES=../d1 criu_dump "$WORK/d2" "$WPID" --leave-running ||
    fail "the second dump (against d1) failed"
wait_for_gpu_commands "$ROOT" 1 $(($(gpu_commands_completed "$ROOT") + 1))
CRIU_AMDGPU_PARENT_IMAGES=../d2 criu_dump "$WORK/d3" "$WPID" --leave-running ||
    fail "the third dump (against d2) failed"
running_unpaused "after three dumps"

full=$(allocated_bytes "$WORK"/d1/amdgpu-drm-pages-*)
for d in d2 d3; do
    ls "$WORK/$d"/amdgpu-drm-pages-* >/dev/null 2>&1 &&
        fail "$d: an incremental dump wrote contents under CRIU's own names"
    delta=$(allocated_bytes "$WORK/$d"/amdgpu-delta-drm-pages-*)
    # One buffer of ten is rewritten between dumps: the delta holds it and nothing else.
    [ $((delta * 100)) -le $((full * 25)) ] ||
        fail "$d holds $delta bytes of contents, more than 25% of d1's $full"
    note "$d: $delta bytes of contents on disk, d1: $full"
done
grep -q "unchanged since the parent image, left out" "$WORK/d3/dump.log" ||
    fail "the third dump's log does not say what it left out"

"$TOOL" image verify "$WORK/d3" >"$WORK/verify.txt" || fail "image verify d3: $(cat "$WORK/verify.txt")"
grep -q "all sound" "$WORK/verify.txt" || fail "image verify d3: $(cat "$WORK/verify.txt")"
"$TOOL" image show "$WORK/d3" >"$WORK/show.txt" || fail "image show d3 failed: $(cat "$WORK/show.txt")"
grep -q "a chain of 3 checkpoints" "$WORK/show.txt" || fail "image show d3 does not show the chain: $(cat "$WORK/show.txt")"
note "image verify and image show follow the chain of three"

# A dump against d3 that fails: the fault is injected as the images are written.
before=$(fingerprint "$WORK/d3")
"$TOOL" mock fault --root "$ROOT" --op write-images --at 1 >/dev/null
CRIU_AMDGPU_PARENT_IMAGES=../d3 criu_dump "$WORK/d4" "$WPID" --leave-running &&
    fail "the dump with an injected fault succeeded"
"$TOOL" mock fault --root "$ROOT" --clear >/dev/null
[ "$(fingerprint "$WORK/d3")" = "$before" ] || fail "the failed dump changed its parent d3"
running_unpaused "after the failed dump"
note "a failed dump against d3 left d3 unchanged and the workload running"

# A dump against d3 onto a disk that fills up.
# (The image directory is the small disk itself: a parent is read only beside it.)
mkdir -p "$WORK/d5"
mount -t tmpfs -o size=2m tmpfs "$WORK/d5" || fail "cannot mount a small tmpfs"
FULL_MOUNT=$WORK/d5
trap 'umount "$FULL_MOUNT" 2>/dev/null || true; cleanup' EXIT
CRIU_AMDGPU_PARENT_IMAGES=../d3 criu_dump "$WORK/d5" "$WPID" --leave-running &&
    fail "the dump onto a full disk succeeded"
[ "$(fingerprint "$WORK/d3")" = "$before" ] || fail "the dump onto a full disk changed its parent d3"
running_unpaused "after the dump onto a full disk"
grep -q "amdgpu-delta-drm-pages-.*No space left on device" "$WORK/d5/dump.log" ||
    fail "the plugin's write did not meet the full disk: $(grep -m3 Error "$WORK/d5/dump.log")"
umount "$WORK/d5"
note "a dump onto a full disk failed, d3 unchanged, the workload running"

touch "$WORK/stop"
wait_gone "$WPID" 60
expect_stopped_result "$ROOT" "the original after the dumps" "${ARGS[@]}"

"$TOOL" mock reset --root "$ROOT" >/dev/null
mv "$WORK/d2" "$WORK/d2.away"
rc=0
run_criu restore -D "$WORK/d3" -v4 -o restore-broken.log -d --pidfile "$WORK/d3/restored.pid" || rc=$?
[ "$rc" -ne 0 ] || fail "d3 restored with its parent d2 gone"
grep -q "d2/amdgpu-chunks-[0-9]*.img: the parent image's chunk record is missing" "$WORK/d3/restore-broken.log" ||
    fail "the refused restore does not name d2's missing record: $(grep -E 'amdgpu' "$WORK/d3/restore-broken.log" | tail -5)"
"$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
    fail "the refused restore left GPU state behind: $("$TOOL" mock status --root "$ROOT")"
"$TOOL" image verify "$WORK/d3" >"$WORK/verify-broken.txt" && fail "image verify passed d3 with d2 gone"
note "with d2 gone, the restore of d3 is refused naming d2's record, and image verify fails"

mv "$WORK/d2.away" "$WORK/d2"
restore_stopped "$WORK/d3" "restored from the chain"
grep -q "is incremental: a chain of 3 checkpoints" "$WORK/d3/restore.log" ||
    fail "the restore of d3 did not follow the chain"
note "restored from a chain of three after a GPU reset: checksum $GOT"

# The chain made self-contained: it restores with its parents gone.
"$TOOL" image flatten "$WORK/d3" "$WORK/flat" >"$WORK/flatten.txt" || fail "image flatten: $(cat "$WORK/flatten.txt")"
mv "$WORK/d1" "$WORK/d1.away"
mv "$WORK/d2" "$WORK/d2.away"
ls "$WORK/flat"/amdgpu-delta-* >/dev/null 2>&1 && fail "the flattened checkpoint holds delta files"
"$TOOL" image verify "$WORK/flat" >"$WORK/verify-flat.txt" || fail "image verify flat: $(cat "$WORK/verify-flat.txt")"
restore_stopped "$WORK/flat" "restored from the flattened checkpoint"
grep -q "is incremental" "$WORK/flat/restore.log" && fail "the flattened checkpoint still follows a chain"
note "image flatten: the self-contained copy restored with d1 and d2 gone: checksum $GOT"
