#!/usr/bin/env bash
# Reproduces criu issue 2723's first report: a container that holds the GPU devices (given by the
# device plugin: /dev/kfd and one render node) but never opened them is checkpointed with
# CheckpointContainer and restored as a new pod on another node given another GPU. The plugin
# writes no GPU image and stays out of the restore; the job finishes with the checksum of an
# uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
k8s_machine 2
ARGS=(--steps 80 --step-ms 50)
EXPECTED=$(cpu_checksum "${ARGS[@]}")
k8s_move "$(gpu_devices 128)" "$(gpu_devices 151)" other_node_machine "$CPU_WORKLOAD" "${ARGS[@]}"
[ "$ROUND_CHECKSUM" = "$EXPECTED" ] ||
    fail "checksum after the restore $ROUND_CHECKSUM, uninterrupted run $EXPECTED"
if ls_archive_images | grep -q '^amdgpu-'; then
    fail "GPU images in the checkpoint of a container that never opened its GPU: $(ls_archive_images | grep '^amdgpu-')"
fi
grep -q "amdgpu_plugin: inert: the checkpoint did not use AMD GPUs" "$WORK/restore.log" ||
    fail "the plugin did not stay out of the restore ($WORK/restore.log)"
note "k8s: a container given a GPU it never opened, checkpointed and restored on another GPU; checksum $ROUND_CHECKSUM"
