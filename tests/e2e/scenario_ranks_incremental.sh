#!/usr/bin/env bash
# Incremental and compressed checkpoints of a job of two ranks sharing GPU memory, with real
# criu: dumped with --leave-running, then again with lz4 against that dump (parent-images). Each
# rank's own file has its record and packed delta contents, the shared buffers are saved once by
# their owner; image verify follows the chain, and after a GPU reset the second dump restores
# both ranks. The original, then the restored ranks, stop through --stop-file (the restored ones
# find it there and stop after a step) with the checksums of an uninterrupted run of as many
# steps.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine source --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--ranks 2 --gpus 2 --size 262144)

start_workload /dev/null "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
sleep 1
criu_dump "$WORK/d1" "$WPID" --leave-running || fail "the first dump failed"
CRIU_AMDGPU_PARENT_IMAGES=../d1 CRIU_AMDGPU_CONTENT_COMPRESSION=lz4 \
    criu_dump "$WORK/d2" "$WPID" --leave-running || fail "the second dump (against d1) failed"
[ "$(ls "$WORK/d2" | grep -c '^amdgpu-chunks-')" = 2 ] ||
    fail "expected a chunk record per rank: $(ls "$WORK/d2" | grep amdgpu-)"
ls "$WORK/d2" | grep -q '^amdgpu-drm-pages-' && fail "contents under CRIU's own names: $(ls "$WORK/d2")"
[ "$(ls "$WORK/d2" | grep -c '^amdgpu-packed-delta-drm-pages-')" = 4 ] ||
    fail "expected 4 packed delta contents files (2 working + 2 shared buffers): $(ls "$WORK/d2" | grep amdgpu-)"
"$TOOL" image verify "$WORK/d2" >"$WORK/verify.txt" || fail "image verify d2: $(cat "$WORK/verify.txt")"

touch "$WORK/stop"
wait_gone "$WPID" 60
expect_stopped_result "$ROOT" "the original after the dumps" "${ARGS[@]}"
restore_stopped "$WORK/d2" "the ranks restored from the chain"
note "two ranks sharing memory restored from an lz4 delta against d1, stopped after ($STOPPED_AFTER): checksums $GOT"
