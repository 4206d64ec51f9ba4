#!/usr/bin/env bash
# Kubernetes through containerd's CRI with a GPU job that sees the whole mock machine: the pod's
# container uses the mock GPUs (its devices cgroup allows the mock's device number), is
# checkpointed with CheckpointContainer while it runs, the archive becomes a checkpoint image, node
# A goes away, and node B (another machine: four GPUs, other gpu_ids and render minors) restores it
# as a new pod; the plugin maps the job's two GPUs onto node B's and the job finishes with the
# checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
k8s_machine 2
ARGS=(--gpus 2 --buffers 2 --size 65536 --steps 300)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
# The whole machine: the node's /dev/kfd lets its devices cgroup allow the mock's device number;
# the workload is not told to look at /dev (no --dev-dir), so it uses every GPU of the machine.
devices=$(gpu_devices)
k8s_move "$devices" "$devices" other_node_machine \
    "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 10
[ "$ROUND_CHECKSUM" = "$EXPECTED" ] ||
    fail "checksum after the restore $ROUND_CHECKSUM, uninterrupted run $EXPECTED"
ls_archive_images | grep -q '^amdgpu-renderD-' || fail "no render-node image in the checkpoint archive"
grep -q "GPU 0x1000 -> 0x4" "$WORK/restore.log" && grep -q "GPU 0x1111 -> 0x4" "$WORK/restore.log" ||
    fail "the restore did not map the job's GPUs onto node B's: $(grep -E 'GPU 0x' "$WORK/restore.log" | head -3)"
note "k8s: GPU job checkpointed on node A, restored as a new pod on node B; checksum $ROUND_CHECKSUM"
