#!/usr/bin/env bash
# Compressed checkpoints (issue 23 item 2), with real criu: the inference-shaped workload dumped
# with content-compression=zstd (--leave-running), then with lz4 against that dump
# (parent-images): every contents file is packed (amdgpu-packed-*, which CRIU's own plugin does
# not read), the first takes less disk than the same dump uncompressed, image verify decodes and
# checks every BO, and after a GPU reset the second restores from its compressed chain and
# finishes with the checksum of an uninterrupted run. The workload steps until the scenario is
# done with it (--stop-file: a fixed number of steps could end before the third dump under load);
# the restored one takes a step and stops, the stop file there by then. Its output is /dev/null
# (it runs on after the dumps): its steps are seen as its queue's completed commands, one fill
# and then one more per step (one rewritten buffer of ten).
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 10 --size 2M --shape inference)

start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
wait_for_gpu_commands "$ROOT" 1 4 # step 3
criu_dump "$WORK/plain" "$WPID" --leave-running || fail "the uncompressed dump failed"
CRIU_AMDGPU_CONTENT_COMPRESSION=zstd criu_dump "$WORK/z1" "$WPID" --leave-running ||
    fail "the zstd dump failed"
wait_for_gpu_commands "$ROOT" 1 $(($(gpu_commands_completed "$ROOT") + 1)) # a step more
CRIU_AMDGPU_CONTENT_COMPRESSION=lz4 CRIU_AMDGPU_PARENT_IMAGES=../z1 \
    criu_dump "$WORK/z2" "$WPID" --leave-running || fail "the lz4 dump against z1 failed"

for d in z1 z2; do
    ls "$WORK/$d"/amdgpu-drm-pages-* >/dev/null 2>&1 &&
        fail "$d: compressed contents under CRIU's own names"
    n=$(ls "$WORK/$d"/amdgpu-packed-* | wc -l)
    [ "$n" = 10 ] || fail "$d holds $n packed contents files, not one per BO (10)"
done
plain=$(allocated_bytes "$WORK"/plain/amdgpu-drm-pages-*)
packed=$(allocated_bytes "$WORK"/z1/amdgpu-packed-*)
[ "$packed" -lt "$plain" ] || fail "zstd took $packed bytes on disk, the same dump uncompressed $plain"
note "zstd: $packed bytes of contents on disk, uncompressed (holes left out) $plain"
"$TOOL" image verify "$WORK/z2" >"$WORK/verify.txt" || fail "image verify z2: $(cat "$WORK/verify.txt")"
"$TOOL" image show "$WORK/z2" | grep -q "compressed: 10 contents file(s)" ||
    fail "image show does not say z2 is compressed"

kill -0 "$WPID" 2>/dev/null || fail "the original did not keep running through the dumps"
touch "$WORK/stop"
wait_gone "$WPID" 60
expect_stopped_result "$ROOT" "the original after the dumps" "${ARGS[@]}"
restore_stopped "$WORK/z2" "restored from the compressed chain"
note "restored from lz4 against zstd after a GPU reset: checksum $GOT"
