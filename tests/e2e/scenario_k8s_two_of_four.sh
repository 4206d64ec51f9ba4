#!/usr/bin/env bash
# A pod given two of a node's four GPUs (renderD128 and renderD129, as the device plugin gives
# them) runs a two-GPU job; CheckpointContainer while it runs, the checkpoint image, and the job
# restored as a new pod given the node's other two GPUs (renderD130 and renderD131): the restore
# maps the job's GPUs 0 and 1 onto them in that order, and the job finishes with the checksum of
# an uninterrupted run. (The many-GPU node of criu issue 2888, where a pod sees a subset.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
k8s_machine 4
ARGS=(--gpus 2 --buffers 2 --size 65536 --steps 300)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
same_machine() { :; }
k8s_move "$(gpu_devices 128 129)" "$(gpu_devices 130 131)" same_machine \
    "$WORKLOAD" --root "$ROOT" --dev-dir /dev "${ARGS[@]}" --step-ms 10
[ "$ROUND_CHECKSUM" = "$EXPECTED" ] ||
    fail "checksum after the restore $ROUND_CHECKSUM, uninterrupted run $EXPECTED"
grep -q "GPU 0x1000 -> 0x1222" "$WORK/restore.log" && grep -q "GPU 0x1111 -> 0x1333" "$WORK/restore.log" ||
    fail "the restore did not map GPUs 0x1000 and 0x1111 onto 0x1222 and 0x1333: $(grep -E 'GPU 0x' "$WORK/restore.log" | head -4)"
note "k8s: two of four GPUs, restored onto the other two; checksum $ROUND_CHECKSUM"
