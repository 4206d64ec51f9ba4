#!/usr/bin/env bash
# Scenario 3: restore onto another mock machine with the same GPU models but different gpu_ids and
# render minors and more GPUs than the workload used: GPUs are remapped, the checksum is right.
source "$(dirname "$0")/lib.sh"
SRC=$(make_machine source --gpus 2)
DST=$(make_machine destination --gpus 4 --gpu-id-base 0x4000 --render-minor-base 150)
ARGS=(--gpus 2 --buffers 2 --size 131072)

export CRIU_AMDGPU_MOCK_ROOT=$SRC
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$SRC" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 4/"
# -W moves criu's working directory away from the images: the plugin must still write there.
mkdir -p "$WORK/criu-wd"
criu_dump "$WORK/img" "$WPID" -W "$WORK/criu-wd" || fail "criu dump failed"
ls "$WORK/img" | grep -q '^amdgpu-renderD-' || fail "GPU images not in the image directory under -W"
ls "$WORK/criu-wd" | grep -q '^amdgpu-' && fail "GPU images written to criu's working directory"
wait_gone "$WPID" 10

export CRIU_AMDGPU_MOCK_ROOT=$DST
criu_restore "$WORK/img"
grep -qE "GPU 0x1000 -> 0x4[0-9a-f]{3}" "$WORK/img/restore.log" || fail "no remapping of GPU 0x1000 in the restore log"
STATUS=$("$TOOL" mock status --root "$DST")
grep -qE "context .* GPU 0x4[0-9a-f]{3} \(seen as 0x1000\)" <<<"$STATUS" || fail "no context on the destination: $STATUS"
grep -q "renderD15[0-9]" <<<"$STATUS" || fail "destination render minors not used: $STATUS"
finish_stopped "$SRC" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after remapped restore $GOT, expected $EXPECTED"
note "remap: restored onto $(grep -oE 'GPU 0x1000 -> 0x[0-9a-f]+' "$WORK/img/restore.log" | head -1), checksum $GOT"
