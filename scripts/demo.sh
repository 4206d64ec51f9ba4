#!/usr/bin/env bash
# The main job, for a new user on a fresh Debian bookworm machine: build everything, obtain a criu
# that runs here, then checkpoint a GPU workload in the middle of its computation with real criu,
# wipe the (mock) GPU as a reboot would, restore it, and compare its result with an uninterrupted
# run. Without an AMD GPU the workload runs on the mock GPU.
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== installing build dependencies (Debian packages)"
scripts/install-deps.sh
echo "== obtaining criu"
CRIU=$(scripts/get-criu.sh 2>/dev/null)
"$CRIU" --version | head -1
echo "== building"
source scripts/build-base.sh
export BUILD_DIR=${BUILD_DIR:-$BUILD_BASE/build}
scripts/build.sh -DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_TESTS=OFF >/dev/null
export CRIU
source tests/e2e/lib.sh

GPUS=2 BUFFERS=4 SIZE=$((8 << 20)) STEPS=40
ROOT=$(make_machine demo-machine --gpus $GPUS)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
echo "== mock GPU machine at $ROOT"
"$TOOL" mock status --root "$ROOT" | sed 's/^/   /'
ARGS=(--gpus $GPUS --buffers $BUFFERS --size $SIZE --steps $STEPS)
echo "== uninterrupted reference run: $GPUS GPUs x $BUFFERS buffers x $((SIZE >> 20)) MiB, $STEPS steps"
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
echo "   checksum $EXPECTED"

echo "== starting the workload (its state lives only in GPU buffers)"
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 150
wait_for_line "$WORK/out.txt" "step 10/"
echo "   pid $WPID is at $(grep -oE 'step [0-9]+/[0-9]+' "$WORK/out.txt" | tail -1)"

echo "== criu dump (the plugin pauses the GPU queues, saves buffers and queues, then criu ends the process)"
t0=$(date +%s.%N)
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
t1=$(date +%s.%N)
wait_gone "$WPID" 10
printf "   dumped in %.2f s; images: %s in %s files, of which GPU: %s\n" "$(awk "BEGIN{print $t1 - $t0}")" \
    "$(du -sh "$WORK/img" | cut -f1)" "$(ls "$WORK/img" | wc -l)" \
    "$(du -ch "$WORK"/img/amdgpu-* | tail -1 | cut -f1)"
ls -l "$WORK"/img/amdgpu-* | awk '{printf "     %-40s %10d bytes\n", $9, $5}' | sed "s|$WORK/img/||"

echo "== resetting the mock GPU (its memory is gone, as after a reboot)"
"$TOOL" mock reset --root "$ROOT" | sed 's/^/   /'

echo "== criu restore"
t0=$(date +%s.%N)
criu_restore "$WORK/img"
t1=$(date +%s.%N)
printf "   restored in %.2f s as pid %s; GPU mapping:\n" "$(awk "BEGIN{print $t1 - $t0}")" "$RPID"
grep -oE "GPU 0x[0-9a-f]+ -> 0x[0-9a-f]+" "$WORK/img/restore.log" | sort -u | sed 's/^/     /'
wait_for_line "$WORK/out.txt" "^checksum " 300
GOT=$(checksum_of "$WORK/out.txt")
echo "== result"
echo "   checksum of the uninterrupted run:     $EXPECTED"
echo "   checksum of the checkpointed run:      $GOT"
if [ "$GOT" = "$EXPECTED" ]; then
    echo "   identical: the workload survived checkpoint, GPU reset and restore"
else
    fail "the checksums differ"
fi
