#!/usr/bin/env bash
# Reproduces criu issue 2888 (and the restore of issue 2723): a GPU job under Kubernetes, moved.
# A pod on node A is given one GPU the way AMD's device plugin gives it (CRI devices: the node's
# /dev/kfd and that GPU's render node, nothing else of /dev/dri; sysfs shows the whole machine):
# the second of two, renderD129. Its workload uses the GPUs it sees (--dev-dir /dev). The
# container is checkpointed with CheckpointContainer while it keeps running, the archive becomes
# a checkpoint image in the registry and node A goes away. Node B is another machine (four GPUs,
# other gpu_ids and render minors) whose device plugin gives the new pod its third GPU,
# renderD152: the restore maps the job's GPU onto it, and the job finishes with the checksum of
# an uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
k8s_machine 2
ARGS=(--gpus 1 --buffers 3 --size 65536 --steps 300)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
k8s_move "$(gpu_devices 129)" "$(gpu_devices 152)" other_node_machine \
    "$WORKLOAD" --root "$ROOT" --dev-dir /dev "${ARGS[@]}" --step-ms 10
[ "$ROUND_CHECKSUM" = "$EXPECTED" ] ||
    fail "checksum after the restore $ROUND_CHECKSUM, uninterrupted run $EXPECTED"
ls_archive_images | grep -q '^amdgpu-renderD-' || fail "no render-node image in the checkpoint archive"
grep -q "GPU 0x1111 -> 0x4222" "$WORK/restore.log" ||
    fail "the restore did not map GPU 0x1111 (renderD129) onto 0x4222 (renderD152): $(grep -E 'GPU 0x' "$WORK/restore.log" | head -3)"
note "k8s: checkpointed on renderD129, restored as a new pod on node B's renderD152; checksum $ROUND_CHECKSUM"
